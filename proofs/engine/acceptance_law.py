"""The law of a rule's acceptance test: ``P_u(test(u, p(x), q(x)))`` for ``u ~ U[0, 1)``.

* :func:`measure_obligation` - for every ``p(x) in [0, 1]``, ``q(x) in (0, 1]`` and ``u in [0, 1)``
  (z3 on a generic coordinate, so a test that sums over the vocabulary sees an arbitrary sum):
  ``u < A => test`` and ``u > A => not test``.  Then ``{u : test}`` is ``[0, A)`` up to the point
  ``A`` and ``P(test) = clamp(A, 0, 1)``, which is ``A`` once well-formedness ``0 <= A <= 1`` holds.
* :func:`test_probability` - the exact ``P(test)`` per token at rational laws ``p, q``: the test evaluated in
  sympy with ``u`` a symbol is a boolean combination of relations in ``u``; its solution set within
  ``[0, 1)`` is a finite union of intervals whose Lebesgue measure sympy computes exactly (None when
  that measure is not rational).
* :func:`running_rule` - the rule that runs: the test's exact law in place of ``A``.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Callable

import sympy
import z3

from specproof.proofs.arith.interface import Arith
from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.arith.sympy_backend import SympyArith
from specproof.proofs.engine.every_size import GenericCoordinateArith
from specproof.proofs.engine.results import Obligation
from specproof.proofs.laws.step_rules import StepRule
from specproof.proofs.engine.solvers import check_z3

__all__ = ["measure_obligation", "test_probability", "running_rule", "TestLawUnavailable"]


class TestLawUnavailable(Exception):
    """The exact law of an acceptance test could not be computed at some point."""


def measure_obligation(rule: StepRule, rlimit: int) -> Obligation:
    """``P_u(test) = A`` pointwise, for every vocabulary size (statement in the module docstring)."""
    ar = GenericCoordinateArith()
    u, p, q = ar.real("u"), ar.p, ar.q
    accept = rule.acceptance(ar, p, q)
    test = rule.acceptance_test(ar, u, p, q)  # type: ignore[misc]
    goal = z3.And(z3.Implies(u < accept, test), z3.Implies(u > accept, z3.Not(test)))
    return check_z3(f"measure ({rule.name})",
                    "{u in [0,1): test(u)} equals [0, A) up to the point u = A, so P(test) = A "
                    "for q(x) > 0 (q(x) = 0 is never proposed)", ar,
                    [u >= 0, u < 1, p >= 0, p <= 1, q > 0, q <= 1], goal, rlimit=rlimit,
                    method="z3 pointwise, generic coordinate").obligation


def _as_boolean(e: Any) -> Any:
    """A Piecewise whose branches are conditions, as ``Or(And(c, a), And(Not c, b))``."""
    if isinstance(e, sympy.Piecewise):
        (a, c), (b, _) = e.args[0], e.args[1]
        return sympy.Or(sympy.And(c, _as_boolean(a)), sympy.And(sympy.Not(c), _as_boolean(b)))
    if isinstance(e, (sympy.And, sympy.Or, sympy.Not)):
        return e.func(*(_as_boolean(a) for a in e.args))
    return e


def _measure(cond: Any, where: str) -> Fraction:
    """``P_u(cond)`` for ``u ~ U[0, 1)``, exactly (raises :class:`TestLawUnavailable`)."""
    cond = _as_boolean(cond)
    unit = sympy.Interval.Ropen(0, 1)
    try:
        if cond is sympy.true or cond is sympy.false:
            measure = sympy.Integer(1 if cond is sympy.true else 0)
        else:
            measure = sympy.sympify(sympy.Intersection(cond.as_set(), unit).measure)
    except Exception as err:  # sympy cannot solve this form
        raise TestLawUnavailable(f"sympy cannot solve the test at {where}: {err}") from None
    if not isinstance(measure, sympy.Rational):
        raise TestLawUnavailable(f"P(test) at {where} is {measure}, not rational")
    return Fraction(int(measure.p), int(measure.q))


def test_probability(test: Callable[..., Any], p: tuple[Fraction, ...],
                     q: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
    """Exact ``P_u(test(u, p, q)(x))`` for every token ``x`` with ``q(x) > 0`` (0 elsewhere), ``u ~ U[0, 1)``.

    The test sees the whole laws (tuples), so a vocabulary sum or rank inside it means what it means at
    run time; a per-token evaluation would read ``total(v)`` as ``v(x)``."""
    ar = SympyArith()
    u = sympy.Symbol("u", real=True)
    conds = test(ar, u, tuple(ar.const(x) for x in p), tuple(ar.const(x) for x in q))
    if not isinstance(conds, tuple):
        conds = (conds,) * len(p)
    if len(conds) != len(p):
        raise TestLawUnavailable(f"the test returned {len(conds)} conditions for {len(p)} tokens")
    return tuple(_measure(c, f"p={tuple(map(str, p))}, q={tuple(map(str, q))}, token {x}") if qx > 0
                 else Fraction(0) for x, (c, qx) in enumerate(zip(conds, q)))


def running_rule(rule: StepRule) -> StepRule:
    """``rule`` as it runs: ``A(x) = P_u(test)`` computed exactly (exact backend only; elsewhere a
    TypeError, the engines' "not interpretable here")."""
    test = rule.acceptance_test
    assert test is not None

    def acceptance(ar: Arith, p: Any, q: Any) -> Any:
        if not isinstance(ar, ExactArith) or not isinstance(p, tuple) or not isinstance(q, tuple):
            raise TypeError("the exact law of an acceptance test is computed at rational points only")
        return test_probability(test, p, q)

    return dataclasses.replace(rule, name=f"{rule.name} (as run: P(test) for A)", acceptance=acceptance,
                               acceptance_test=None)
