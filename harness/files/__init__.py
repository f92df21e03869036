"""What specproof writes: provenance, JSON envelopes, atomic writes."""
