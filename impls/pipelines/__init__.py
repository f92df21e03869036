"""Whole speculative-decoding pipelines behind the ``generate`` contract: the exact canonical pipeline,
its lossless variants, and one mutant per bug class reported in the runtimes' trackers.

Layer: impls (the code under test); may import impls and proofs.laws (rule names); never the harness.
"""
