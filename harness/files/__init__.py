"""What specproof writes: provenance, JSON envelopes, atomic writes.

Layer: files (beside exact). May import proofs.errors only.
"""
