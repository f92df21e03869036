"""Verifier rules and the laws they imply, each written once against the arithmetic interface.

Layer: proofs. May import proofs.arith and proofs.errors.
"""
