"""What is claimed and proved: the rule catalogue, the theorems, user rules.

Layer: proofs (top of it). May import every other proofs subpackage.
"""
