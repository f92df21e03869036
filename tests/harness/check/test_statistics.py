"""The certain test's power formulas (harness.check.statistics): rows that see an impossible rate."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, strategies as st

from specproof.harness.check.stats.statistics import certain_rate_seen, rows_to_see_rate


@given(st.floats(1e-6, 1 - 1e-6), st.sampled_from([0.01, 1e-6]))
def test_rows_to_see_a_rate_are_the_fewest_whose_miss_probability_is_at_most_beta(rate, beta):
    n = rows_to_see_rate(rate, beta)
    assert (1 - rate) ** n <= beta * (1 + 1e-9)
    assert n == 1 or (1 - rate) ** (n - 1) > beta * (1 - 1e-9)
    assert certain_rate_seen(n, beta) <= rate * (1 + 1e-9)


@given(st.integers(1, 10**7))
def test_the_rate_seen_is_the_inverse(rows):
    r = certain_rate_seen(rows)
    assert 0 < r <= 1 and math.isclose((1 - r) ** rows, 0.01, rel_tol=1e-6)
    assert rows_to_see_rate(r) <= rows


def test_edges_and_a_simulated_miss_rate():
    assert certain_rate_seen(0) == 1.0 and rows_to_see_rate(1.0) == 1 and rows_to_see_rate(0.0) == math.inf
    assert rows_to_see_rate(0.018) == 254 and rows_to_see_rate(0.02) == 228  # the default bound's quotas
    rng = np.random.default_rng(0)
    n, rate = 228, 0.02
    missed = (rng.random((20_000, n)) >= rate).all(axis=1).mean()
    assert missed <= 0.01 + 4 * math.sqrt(0.01 * 0.99 / 20_000)
