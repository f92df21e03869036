"""Exact mathematics of the harness: exact conversion, the exact reference, the certified softmax, dtype-derived tolerances."""
