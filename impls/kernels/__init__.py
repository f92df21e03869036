"""Building blocks of the runtime-style implementations: acceptance tests, samplers, round bookkeeping.

Layer: impls (code under test). Never imports the harness.
"""
