"""White-box drift and the exact RNG-grid analysis.

Layer: drift. May import harness.exact, harness.check (scenarios), harness.files, proofs, impls.
"""
