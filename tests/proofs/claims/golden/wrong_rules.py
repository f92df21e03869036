"""Golden wrong rules: each claims "exact" and is not; none may come out PROVED."""

from fractions import Fraction

from specproof.proofs import StepRule
from specproof.proofs.laws.step_rules import canonical_acceptance as canonical_a
from specproof.proofs.laws.step_rules import canonical_residual_weight as canonical_w

F = Fraction


def division_test(ar, u, p, q):
    return ar.select(ar.eq(q, ar.zero), ar.lt(u, ar.zero), ar.lt(u, ar.safe_div(p, q, ar.zero)))


def _rule(name, acceptance=canonical_a, residual_weight=canonical_w, test=None):
    return StepRule(name=name, claim="exact", description="golden wrong rule", acceptance=acceptance,
                    residual_weight=residual_weight, acceptance_test=test)


def _vocabulary_size(ar, p):
    return ar.total(ar.add(ar.mul(p, ar.zero), ar.one))


# -- the examples ------------------------------------------------------------------------
swapped_test = _rule("w-swapped-test", test=lambda ar, u, p, q: ar.lt(ar.mul(u, p), q))
u_below_p = _rule("w-u-below-p", test=lambda ar, u, p, q: ar.lt(u, p))
acceptance_over_one = _rule("w-acceptance-over-one", acceptance=lambda ar, p, q: ar.safe_div(p, q, ar.zero))
negative_residual = _rule("w-negative-residual", residual_weight=lambda ar, p, q: ar.sub(p, q))
raw_p_from_v5 = _rule("w-raw-p-from-v5", residual_weight=lambda ar, p, q: ar.select(
    ar.lt(_vocabulary_size(ar, p), ar.const(5)), canonical_w(ar, p, q), p))
# -- wrong only at V >= 5 --------------------------------------------------------------------------
rank_four_raw_p = _rule("w-rank-four-raw-p", residual_weight=lambda ar, p, q: ar.select(
    ar.lt(ar.mass_ahead(p, ar.one), ar.const(4)), canonical_w(ar, p, q), p))
# -- wrong only where p(x) = 0 ---------------------------------------------------------------------
accept_zero_p = _rule("w-accept-zero-p", acceptance=lambda ar, p, q: ar.select(
    ar.eq(p, ar.zero), ar.one, canonical_a(ar, p, q)))
residual_zero_p = _rule("w-residual-zero-p", residual_weight=lambda ar, p, q: ar.add(
    canonical_w(ar, p, q), ar.select(ar.eq(p, ar.zero), ar.const(F(1, 10)), ar.zero)))
over_one_zero_p = _rule("w-over-one-zero-p", acceptance=lambda ar, p, q: ar.select(
    ar.eq(p, ar.zero), ar.const(2), canonical_a(ar, p, q)))
# -- swapped or weakened acceptance tests ----------------------------------------------------------
weakened_test = _rule("w-weakened-test", test=lambda ar, u, p, q: ar.lt(
    u, ar.add(ar.safe_div(p, q, ar.zero), ar.const(F(1, 10)))))
halved_test = _rule("w-halved-test", test=lambda ar, u, p, q: ar.lt(ar.mul(u, ar.const(2)),
                                                                     ar.safe_div(p, q, ar.zero)))
u_below_q = _rule("w-u-below-q", test=lambda ar, u, p, q: ar.lt(u, q))
swapped_log_test = _rule("w-swapped-log-test",
                         test=lambda ar, u, p, q: ar.lt(ar.add(ar.log(u), ar.log(p)), ar.log(q)))
squared_u_test = _rule("w-squared-u-test", test=lambda ar, u, p, q: ar.lt(ar.mul(u, u), ar.safe_div(p, q, ar.zero)))
squared_p_test = _rule("w-squared-p-test", test=lambda ar, u, p, q: ar.lt(ar.mul(u, q), ar.mul(p, p)))
# -- acceptance outside [0, 1] -----------------------------------------------------------------------
shifted_acceptance = _rule("w-shifted-acceptance",
                           acceptance=lambda ar, p, q: ar.add(canonical_a(ar, p, q), ar.const(F(1, 2))))
negative_acceptance = _rule("w-negative-acceptance",
                            acceptance=lambda ar, p, q: ar.sub(canonical_a(ar, p, q), ar.const(F(1, 10))))
steep_residual = _rule("w-steep-negative-residual", residual_weight=lambda ar, p, q: ar.sub(p, ar.mul(ar.const(2), q)))
# -- broken formulas ---------------------------------------------------------------------------------
raw_p = _rule("w-raw-p", residual_weight=lambda ar, p, q: p)
half_residual = _rule("w-half-residual", residual_weight=lambda ar, p, q: ar.relu(ar.sub(p, ar.mul(ar.const(F(1, 2)), q))))
double_acceptance = _rule("w-double-acceptance", acceptance=lambda ar, p, q: ar.minimum(
    ar.one, ar.safe_div(ar.mul(ar.const(2), p), q, ar.zero)))
swapped_residual = _rule("w-swapped-residual", residual_weight=lambda ar, p, q: ar.relu(ar.sub(q, p)))
swapped_acceptance = _rule("w-swapped-acceptance", acceptance=lambda ar, p, q: ar.minimum(
    ar.one, ar.safe_div(q, p, ar.zero)))
squared_acceptance = _rule("w-squared-acceptance", acceptance=lambda ar, p, q: ar.mul(
    canonical_a(ar, p, q), canonical_a(ar, p, q)))
step_acceptance = _rule("w-step-acceptance", acceptance=lambda ar, p, q: ar.select(
    ar.ge(p, q), ar.one, ar.zero))
smoothed_residual = _rule("w-smoothed-residual", residual_weight=lambda ar, p, q: ar.add(
    canonical_w(ar, p, q), ar.const(F(1, 100))))
lenient = _rule("w-lenient", acceptance=lambda ar, p, q: ar.minimum(ar.one, ar.safe_div(
    p, ar.mul(ar.const(F(1, 2)), q), ar.zero)))
accept_with_p = _rule("w-accept-with-p", acceptance=lambda ar, p, q: ar.minimum(ar.one, p))
resample_draft = _rule("w-resample-draft", residual_weight=lambda ar, p, q: q)
test_matches_wrong_a = _rule("w-test-and-a-both-doubled", acceptance=lambda ar, p, q: ar.minimum(
    ar.one, ar.safe_div(ar.mul(ar.const(2), p), q, ar.zero)),
    test=lambda ar, u, p, q: ar.lt(ar.mul(u, q), ar.mul(ar.const(2), p)))


def _backend_sniffing_weight(ar, p, q):
    """Canonical where ar.mass_ahead raises (the generic coordinate of the every-n proof), raw p where
    it works: the caught error is remembered, so every backend sees the same failure."""
    try:
        ar.mass_ahead(p, ar.one)
    except TypeError:
        return canonical_w(ar, p, q)
    return p


backend_sniffing = _rule("w-backend-sniffing", residual_weight=_backend_sniffing_weight)
