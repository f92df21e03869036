"""Building blocks of the runtime-style implementations: acceptance tests, samplers, round bookkeeping."""
