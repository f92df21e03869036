"""The opaque interface user rules are traced on: every Python-level operation is refused with the
Arith method to use, value kinds are checked, each function runs once, and every backend evaluates
the same trace."""

import operator
from fractions import Fraction as F

import pytest

from specproof.proofs import ExactArith, RuleUsageError, StepRule, step_law
from specproof.proofs.engine.every_size import GenericCoordinateArith
from specproof.proofs.claims.opaque import trace_rule, traced_rule
from specproof.proofs.laws.step_rules import canonical_acceptance, canonical_residual_weight

P, Q = (F(1, 2), F(1, 2)), (F(1), F(0))


def _law(acceptance=canonical_acceptance, residual_weight=canonical_residual_weight, ar=None):
    plain = StepRule("r", "exact", "", acceptance, residual_weight)
    rule = traced_rule(plain, trace_rule(plain))
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

    def residual_weight(ar, p, q):
        return ar.add(kept[0], p)

    def acceptance(ar, p, q):
        kept.append(p)
        return canonical_acceptance(ar, p, q)

    with pytest.raises(RuleUsageError, match="another call"):
        _law(acceptance=acceptance, residual_weight=residual_weight)


def test_each_function_runs_exactly_once_and_every_backend_reads_the_same_trace():
    """A rule that counts its calls, or catches an engine's error, cannot show engines different laws:
    it runs once, and the generic coordinate and the exact engine both evaluate that one trace."""
    calls = []

    def residual_weight(ar, p, q):
        calls.append(1)
        try:
            ar.mass_ahead(p, ar.one)
        except TypeError:
            return p
        return canonical_residual_weight(ar, p, q) if len(calls) == 1 else p

    plain = StepRule("r", "exact", "", canonical_acceptance, residual_weight)
    graph = trace_rule(plain)
    rule = traced_rule(plain, graph)
    assert calls == [1]
    assert step_law(ExactArith(), rule, P, Q).output == P
    generic = GenericCoordinateArith()  # it cannot rank: the unused ranking is not evaluated there either
    weight = rule.residual_weight(generic, generic.p, generic.q)
    assert str(weight) == str(canonical_residual_weight(generic, generic.p, generic.q))
    assert calls == [1]
    assert "mass_ahead" not in graph.show()  # the unused ranking was recorded but is not reachable


def test_a_called_property_names_the_fix():
    with pytest.raises(RuleUsageError, match=r"ar\.one, not ar\.one\(\)"):
        _law(acceptance=lambda ar, p, q: ar.minimum(ar.one(), p))


def test_values_hold_nothing_a_rule_can_read():
    seen = []

    def acceptance(ar, p, q):
        seen.append(([name for name in ("_value", "_inner", "_kind", "_session", "__dict__") if hasattr(p, name)],
                     vars(ar)))
        return canonical_acceptance(ar, p, q)

    _law(acceptance=acceptance)
    assert seen == [([], {})]


def test_guarded_values_equal_the_unguarded_rule():
    plain = step_law(ExactArith(), StepRule("c", "exact", "", canonical_acceptance, canonical_residual_weight), P, Q)
    assert _law().output == plain.output == P
