"""Golden right rules, written as a rule designer would against the documented --rule interface."""

from fractions import Fraction

from specproof.proofs import StepRule


def canonical_a(ar, p, q):
    return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))


def canonical_w(ar, p, q):
    return ar.relu(ar.sub(p, q))


def _rule(name, acceptance=canonical_a, residual_weight=canonical_w, test=None):
    return StepRule(name=name, claim="exact", description="golden right rule", acceptance=acceptance,
                    residual_weight=residual_weight, acceptance_test=test)


canonical = _rule("g-canonical")
mul_test = _rule("g-mul-test", test=lambda ar, u, p, q: ar.lt(ar.mul(u, q), p))
log_test = _rule("g-log-test", test=lambda ar, u, p, q: ar.lt(ar.add(ar.log(u), ar.log(q)), ar.log(p)))
le_test = _rule("g-le-test", test=lambda ar, u, p, q: ar.select(ar.eq(q, ar.zero), ar.lt(u, ar.zero),
                                                                   ar.le(u, ar.safe_div(p, q, ar.zero))))
u_below_a = _rule("g-u-below-a", test=lambda ar, u, p, q: ar.lt(u, canonical_a(ar, p, q)))
negated_test = _rule("g-negated-test", test=lambda ar, u, p, q: ar.select(
    ar.ge(ar.mul(u, q), p), ar.lt(ar.one, ar.zero), ar.le(ar.zero, ar.zero)))
accept_unproposed = _rule("g-accept-unproposed",
                          acceptance=lambda ar, p, q: ar.minimum(ar.one, ar.safe_div(p, q, ar.one)))
reject_always = _rule("g-reject-always", acceptance=lambda ar, p, q: ar.zero, residual_weight=lambda ar, p, q: p)
over_max = _rule("g-p-over-max", acceptance=lambda ar, p, q: ar.safe_div(p, ar.maximum(p, q), ar.zero))
min_form = _rule("g-min-form", acceptance=lambda ar, p, q: ar.safe_div(ar.minimum(p, q), q, ar.zero),
                 residual_weight=lambda ar, p, q: ar.sub(p, ar.minimum(p, q)))
clamped = _rule("g-clamped", acceptance=lambda ar, p, q: ar.clamp(ar.safe_div(p, q, ar.zero), ar.zero, ar.one))
constant_return = _rule("g-constant-return", acceptance=lambda ar, p, q: 0, residual_weight=lambda ar, p, q: p)
# exact, but outside the every-n route: honest BOUNDED verdicts
scaled_residual = _rule("g-scaled-residual",
                        residual_weight=lambda ar, p, q: ar.mul(ar.const(2), canonical_w(ar, p, q)))
rank_noise = _rule("g-rank-noise", residual_weight=lambda ar, p, q: ar.add(
    canonical_w(ar, p, q), ar.mul(ar.zero, ar.mass_ahead(p, ar.one))))
prenormalised = _rule("g-prenormalised", residual_weight=lambda ar, p, q: ar.normalise(canonical_w(ar, p, q)))
half = _rule("g-half-constant", acceptance=lambda ar, p, q: ar.mul(ar.const(Fraction(1, 2)), ar.zero),
             residual_weight=lambda ar, p, q: ar.mul(ar.const(Fraction(1, 2)), p))
