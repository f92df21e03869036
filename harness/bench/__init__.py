"""Benchmarks: exact reference speed, detection strength, throughput, scaling."""
