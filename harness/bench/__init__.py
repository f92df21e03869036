"""Benchmarks: exact reference speed, detection strength, throughput, scaling.

Layer: bench. May import check, drift, exact, files, report (rendering), proofs, impls.
"""
