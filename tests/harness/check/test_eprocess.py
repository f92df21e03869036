"""harness/check/stats/eprocess.py: the betting mixture is a supermartingale and gains on Rao-Blackwellised rows."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.harness.check.stats.eprocess import BET_FRACTIONS, SideEvidence, betting_growth
from specproof.harness.check.stats.statistics import bernoulli_kl


@st.composite
def null_laws(draw):
    """A law on a few values in [0, 1] and an edge mu at or above its mean."""
    size = draw(st.integers(1, 5))
    values = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    weights = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=size, max_size=size)))
    weights /= weights.sum()
    mean = float(weights @ values)
    mu = draw(st.floats(max(mean, 1e-6), 1.0 - 1e-6)) if mean < 1.0 - 1e-6 else None
    return values, weights, mu


@settings(max_examples=200, deadline=None)
@given(null_laws())
def test_every_bet_of_the_mixture_has_expected_factor_at_most_one_under_the_null(law):
    """``E[1 + (t / mu)(Y - mu)] = 1 + (t / mu)(E[Y] - mu) <= 1`` and every factor is positive."""
    values, weights, mu = law
    if mu is None:
        return
    factors = 1.0 + BET_FRACTIONS[None, :] / mu * (values[:, None] - mu)
    assert (factors > 0).all()
    assert (weights @ factors <= 1.0 + 1e-12).all()


def test_the_mixture_stays_below_its_threshold_under_a_null_law_over_many_runs():
    """Ville: P(sup E >= 1/a) <= a.  A law on {0, mu, 1} with mean mu read after every batch of 20
    rows for 2,000 rows, 1,000 runs, a = 0.05: the observed rate stays within its binomial bound."""
    rng = np.random.default_rng(11)
    mu, a, runs = 0.2, 0.05, 1000
    values = np.array([0.0, mu, 1.0])
    probs = np.array([0.5 * (1 - mu), 0.5, 0.5 * mu])  # mean 0.5 mu + 0.5 mu = mu
    matrix = values[:, None]
    crossed = 0
    for _ in range(runs):
        side = SideEvidence(np.array([mu]), np.array([math.log(1 / a)]), np.array([True]), matrix)
        side.plan(2000)
        for _ in range(100):
            counts = rng.multinomial(20, probs).astype(np.float64)
            side.update(counts @ matrix[:, 0:1], 20, counts)
            if side.rejected[0]:
                crossed += 1
                break
    # binomial(1000, 0.05): mean 50, sd 6.9; 5 sd above the mean
    assert crossed <= runs * a + 5 * math.sqrt(runs * a * (1 - a)), crossed


def test_the_mixture_is_the_mean_over_the_grid_of_the_per_row_products_of_its_definition():
    """Brute force from the definition, both sides, fractional and 0/1 contributions, two batches."""
    rng = np.random.default_rng(5)
    matrix = np.clip(rng.random((6, 5)) * (rng.random((6, 5)) > 0.3), 0, 1)
    matrix[0] = 1.0
    matrix[:, 2] = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]  # an event with no fractional entry, between two with some
    upper, lower = np.array([0.3, 0.5, 0.4, 0.05, 0.7]), np.array([0.2, 0.4, 0.3, 0.01, 0.6])
    up = SideEvidence(upper, np.full(5, 30.0), np.ones(5, bool), matrix)
    down = SideEvidence(1.0 - lower, np.full(5, 30.0), np.ones(5, bool), 1.0 - matrix)
    rows_y = []
    for _ in range(2):
        counts = rng.multinomial(40, np.full(6, 1 / 6)).astype(np.float64)
        sums = counts @ matrix
        up.update(sums, 40, counts)
        down.update(40 - sums, 40, counts)
        rows_y += [matrix[key] for key, c in enumerate(counts) for _ in range(int(c))]
    y = np.array(rows_y)  # [rows, events]
    for side, values, mu in ((up, y, upper), (down, 1.0 - y, 1.0 - lower)):
        logs = np.log1p(BET_FRACTIONS[None, None, :] * (values[:, :, None] - mu[None, :, None]) / mu[None, :, None])
        expect = np.log(np.exp(logs.sum(axis=0)).mean(axis=1))
        assert side.log_mixture == pytest.approx(expect, rel=1e-10, abs=1e-10)


def test_indicator_mode_and_a_zero_one_matrix_agree():
    mu = np.array([0.3, 0.6])
    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # three keys, two events
    a = SideEvidence(mu, np.full(2, 20.0), np.ones(2, bool))
    b = SideEvidence(mu, np.full(2, 20.0), np.ones(2, bool), matrix)
    for plan_rows in (100, 400):
        a.plan(plan_rows)
        b.plan(plan_rows)
        counts = np.array([20.0, 5.0, 15.0])
        sums = counts @ matrix
        a.update(sums, 40)
        b.update(sums, 40, counts)
    assert a.log_evidence == pytest.approx(b.log_evidence, abs=1e-9)


def test_a_row_at_the_edge_leaves_every_bet_unchanged():
    """A Rao-Blackwellised row whose contribution equals mu multiplies each bet by exactly 1, where the
    exponential bet exp(l Y - psi(l)) would shrink it."""
    mu = 0.25
    side = SideEvidence(np.array([mu]), np.array([20.0]), np.array([True]), np.array([[mu], [1.0]]))
    side.update(np.array([1000 * mu]), 1000, np.array([1000.0, 0.0]))
    assert side.log_mixture == pytest.approx([0.0], abs=1e-12)
    side.update(np.array([30.0]), 30, np.array([0.0, 30.0]))  # then 30 rows at Y = 1
    only_hits = SideEvidence(np.array([mu]), np.array([20.0]), np.array([True]))
    only_hits.update(np.array([30.0]), 30)
    assert side.log_mixture == pytest.approx(only_hits.log_mixture, abs=1e-12)


def test_on_indicators_the_best_grid_bet_grows_within_5_percent_of_the_bernoulli_kl():
    """The docstring's statement, swept over edges 1e-4..0.99 and optimal fractions 1.2e-3..0.975."""
    worst = 1.0
    for mu in np.geomspace(1e-4, 0.99, 25):
        for t in np.geomspace(1.2e-3, 0.975, 30):
            m = mu + t * (1 - mu)
            if m >= 1.0:
                continue
            growth = betting_growth(np.array([0.0, 1.0]), np.array([1 - m, m]), mu)
            kl = bernoulli_kl(m, mu)
            assert growth <= kl * (1 + 1e-9)
            worst = min(worst, growth / kl)
    assert worst >= 0.95, worst


def test_on_rao_blackwellised_rows_betting_beats_the_bernoulli_rate_of_the_same_mean():
    """Half the rows undecided (Y = the null mean 0.2), half decided with an excess (Y = 1 w.p. 0.5):
    mean 0.35.  The exponential bet sees only the mean (KL(0.35 || 0.2)); betting sees the decided half."""
    values = np.array([0.2, 0.0, 1.0])
    weights = np.array([0.5, 0.25, 0.25])
    growth = betting_growth(values, weights, 0.2)
    assert growth > 1.5 * bernoulli_kl(0.35, 0.2)
    assert growth == pytest.approx(0.5 * bernoulli_kl(0.5, 0.2), rel=0.06)
