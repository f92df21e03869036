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


def test_the_inputs_term_is_computed_only_where_the_derived_band_is_used():
    """Everything observed in the dtype is the worst case itself: ``T_in`` (an exact tree law per rule) is not
    computed; a finer role needs it."""
    from specproof.harness.exact.tolerances import Precision, composed_tolerance, step_tolerance

    def unused():
        raise AssertionError("T_in computed for the worst case")

    same = Precision("float16", "float16", Fraction(0))
    assert composed_tolerance("float16", 5, 4, precision=same, rows_tv=unused) == 4 * step_tolerance("float16", 5)
    finer = Precision("float32", "float32", Fraction(0))
    assert composed_tolerance("float16", 5, 4, precision=finer, rows_tv=lambda: Fraction(1, 1000)) < \
        4 * step_tolerance("float16", 5)
