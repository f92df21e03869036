"""The opaque interface user rules run on: every Python-level operation is refused with the Arith
method to use, value kinds are checked, and every backend sees the same behaviour."""

import operator
from fractions import Fraction as F

import pytest

from specproof.proofs import ExactArith, RuleUsageError, StepRule, step_law
from specproof.proofs.engine.every_size import GenericCoordinateArith
from specproof.proofs.claims.opaque import guard_rule
from specproof.proofs.laws.step_rules import canonical_acceptance, canonical_residual_weight

P, Q = (F(1, 2), F(1, 2)), (F(1), F(0))


def _law(acceptance=canonical_acceptance, residual_weight=canonical_residual_weight, ar=None):
    rule = guard_rule(StepRule("r", "exact", "", acceptance, residual_weight))
    ar = ar or ExactArith()
    return step_law(ar, rule, *((ar.p, ar.q) if isinstance(ar, GenericCoordinateArith) else (P, Q)))


@pytest.mark.parametrize("op, method", [
    (operator.add, "ar.add"), (operator.sub, "ar.sub"), (operator.mul, "ar.mul"), (operator.truediv, "ar.safe_div"),
    (operator.lt, "ar.lt"), (operator.le, "ar.le"), (operator.gt, "ar.gt"), (operator.ge, "ar.ge"),
    (operator.eq, "ar.eq"), (operator.pow, "ar.mul"),
])
def test_python_operators_name_the_arith_method(op, method):
    with pytest.raises(RuleUsageError, match=method.replace(".", r"\.")):
        _law(acceptance=lambda ar, p, q: op(p, q))
    with pytest.raises(RuleUsageError, match=method.replace(".", r"\.")):
        _law(acceptance=lambda ar, p, q: op(p, 1))


@pytest.mark.parametrize("use, what", [
    (len, r"len\(\)"), (list, "iteration"), (bool, r"bool\(\)"), (hash, r"hash\(\)"), (float, "int"),
    (lambda v: v[0], "indexing"), (lambda v: isinstance(v, tuple), "isinstance"), (abs, r"abs\(\)"),
    (operator.neg, "unary -"),
])
def test_python_inspection_is_refused_in_every_backend(use, what):
    def acceptance(ar, p, q):
        use(p)
        return canonical_acceptance(ar, p, q)

    for ar in (ExactArith(), GenericCoordinateArith()):
        with pytest.raises(RuleUsageError, match=what):
            _law(acceptance=acceptance, ar=ar)


def test_kinds_are_checked():
    with pytest.raises(RuleUsageError, match="got a condition"):
        _law(acceptance=lambda ar, p, q: ar.add(ar.lt(p, q), p))
    with pytest.raises(RuleUsageError, match="mixes a logarithm and a number"):
        _law(acceptance=lambda ar, p, q: ar.select(ar.lt(ar.log(p), q), p, q))
    with pytest.raises(RuleUsageError, match="select between a condition and a number"):
        _law(acceptance=lambda ar, p, q: ar.select(ar.lt(p, q), ar.lt(p, q), p))
    with pytest.raises(RuleUsageError, match="returned a logarithm"):
        _law(acceptance=lambda ar, p, q: ar.log(p))


def test_values_from_another_call_are_refused():
    kept = []

    def acceptance(ar, p, q):
        if kept:
            return ar.add(kept[0], p)
        kept.append(p)
        return canonical_acceptance(ar, p, q)

    _law(acceptance=acceptance)
    with pytest.raises(RuleUsageError, match="another call"):
        _law(acceptance=acceptance)


def test_a_caught_backend_error_still_fails_the_call():
    """The generic coordinate refuses ordering; a rule that catches that cannot behave differently there."""
    def residual_weight(ar, p, q):
        try:
            ar.mass_ahead(p, ar.one)
        except TypeError:
            return canonical_residual_weight(ar, p, q)
        return p

    with pytest.raises(TypeError, match="not interpretable on a generic coordinate"):
        _law(residual_weight=residual_weight, ar=GenericCoordinateArith())
    assert _law(residual_weight=residual_weight).output == (F(3, 4), F(1, 4))  # raw p where ordering works


def test_guarded_values_equal_the_unguarded_rule():
    plain = step_law(ExactArith(), StepRule("c", "exact", "", canonical_acceptance, canonical_residual_weight), P, Q)
    assert _law().output == plain.output == P
