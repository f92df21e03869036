"""harness/exact/tolerances.py: the check's band is the verifier's round tolerance plus the drafts' drift."""

from fractions import Fraction

from specproof.harness.exact.tolerances import (check_tolerance, draft_sampling_tolerance, round_tolerance,
                                                step_tolerance)


def test_the_check_band_adds_the_harness_draws_of_its_k_drafts():
    """``tau_64 = g + V g / 2 + (V + 3) u`` with ``g = u = 2^-53``; K drafts add ``K tau_64``."""
    vocab, k = 1000, 4
    tau_64 = Fraction(1, 2**53) * (1 + vocab // 2 + vocab + 3)
    assert step_tolerance("float64", vocab) == tau_64
    assert draft_sampling_tolerance(vocab, k) == k * tau_64
    assert check_tolerance("float32", vocab, k) == round_tolerance("float32", vocab, k) + k * tau_64
    assert check_tolerance("float64", vocab, k) == (k + 1) * tau_64 + k * tau_64
    assert check_tolerance("bfloat16", vocab, k) == 1  # capped: vacuous at that size
