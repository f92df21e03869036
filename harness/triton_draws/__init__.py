"""Rare draws in Triton kernels run by Triton's CPU interpreter: :mod:`.interception`.

Layer: harness (imports harness.exact and proofs.errors only); needs the ``triton`` extra at call time.
"""
