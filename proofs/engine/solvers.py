"""Checking one obligation: z3 (``assumptions => goal``) and sympy case splits.

:func:`check_z3` first checks that the assumptions are satisfiable (else VACUOUS), then that
``assumptions and not goal`` is unsatisfiable (PROVED), satisfiable (REFUTED, with the model as exact
rationals) or unknown (INCONCLUSIVE, with z3's reason).  Each check runs in a fresh solver in the
caller's own :class:`z3.Context` under a deterministic ``rlimit``.

:func:`prove_by_cases` is the sympy route for pointwise lemmas: every two-branch ``Piecewise`` (what
``minimum``, ``maximum`` and ``select`` become in :class:`~specproof.proofs.arith.SympyArith`) is
split on, innermost first, so each leaf is a rational function under a conjunction of branch
conditions.  A leaf passes when sympy reduces it to 0 and z3 confirms no denominator vanishes in its
branch, or when z3 shows the branch (with the assumptions and ``expr != 0``) is infeasible.  Every
combination of branches is visited, so the cases cover the domain by construction.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Iterable

import sympy
import z3

from specproof.proofs.arith.z3_backend import Z3Arith, z3_fraction
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Obligation, Verdict

__all__ = ["check_z3", "model_fractions", "sympy_to_z3", "prove_by_cases", "Z3Check"]


class Z3Check:
    """The result of :func:`check_z3`: the obligation record and, when REFUTED, the model."""

    def __init__(self, obligation: Obligation, model: z3.ModelRef | None):
        self.obligation = obligation
        self.model = model

    @property
    def verdict(self) -> Verdict:
        return self.obligation.verdict


def _solver(ar: Z3Arith, rlimit: int) -> z3.Solver:
    solver = z3.Solver(ctx=ar.ctx)
    solver.set("rlimit", rlimit)
    return solver


def check_z3(name: str, statement: str, ar: Z3Arith, assumptions: Iterable[Any], goal: Any, *,
             rlimit: int = DEFAULT_RLIMIT, method: str = "z3") -> Z3Check:
    """Prove ``assumptions => goal`` over the reals, checking the assumptions for satisfiability first."""
    start = time.perf_counter()
    assumptions = list(assumptions)
    first = _solver(ar, rlimit)
    first.add(*assumptions)
    sat_assumptions = first.check()
    if sat_assumptions == z3.unsat:
        return Z3Check(Obligation(name, statement, Verdict.VACUOUS, method, time.perf_counter() - start,
                                  "assumptions are unsatisfiable"), None)
    if sat_assumptions == z3.unknown:
        return Z3Check(Obligation(name, statement, Verdict.INCONCLUSIVE, method, time.perf_counter() - start,
                                  f"satisfiability of assumptions unknown: {first.reason_unknown()}"), None)
    solver = _solver(ar, rlimit)
    solver.add(*assumptions)
    solver.add(z3.Not(goal))
    answer = solver.check()
    seconds = time.perf_counter() - start
    if answer == z3.unsat:
        return Z3Check(Obligation(name, statement, Verdict.PROVED, method, seconds, "unsat"), None)
    if answer == z3.sat:
        return Z3Check(Obligation(name, statement, Verdict.REFUTED, method, seconds, "sat: counter-model"),
                       solver.model())
    return Z3Check(Obligation(name, statement, Verdict.INCONCLUSIVE, method, seconds,
                              f"unknown: {solver.reason_unknown()} (rlimit {rlimit})"), None)


def model_fractions(model: z3.ModelRef, terms: Iterable[Any]) -> tuple[Fraction, ...]:
    """Values of ``terms`` in ``model`` as Fractions (algebraic values rounded to 40 decimals)."""
    return tuple(z3_fraction(model.eval(t, model_completion=True)) for t in terms)


def sympy_to_z3(expr: Any, ar: Z3Arith, names: dict[str, Any] | None = None) -> Any:
    """A polynomial / rational sympy expression or relation as a z3 term over ``ar``'s context."""
    names = {} if names is None else names

    def conv(e: Any) -> Any:
        if e is sympy.true:
            return z3.BoolVal(True, ar.ctx)
        if e is sympy.false:
            return z3.BoolVal(False, ar.ctx)
        if isinstance(e, sympy.Symbol):
            if e.name not in names:
                names[e.name] = ar.real(e.name)
            return names[e.name]
        if isinstance(e, sympy.Rational):
            return ar.const(Fraction(int(e.p), int(e.q)))
        if isinstance(e, sympy.Add):
            return z3.Sum([conv(a) for a in e.args])
        if isinstance(e, sympy.Mul):
            out = conv(e.args[0])
            for a in e.args[1:]:
                out = out * conv(a)
            return out
        if isinstance(e, sympy.Pow) and e.exp.is_Integer:
            base, k = conv(e.base), int(e.exp)
            out = ar.const(1)
            for _ in range(abs(k)):
                out = out * base
            return out if k >= 0 else ar.const(1) / out
        rel = {sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b, sympy.Lt: lambda a, b: a < b,
               sympy.Le: lambda a, b: a <= b, sympy.Gt: lambda a, b: a > b, sympy.Ge: lambda a, b: a >= b}
        for cls, f in rel.items():
            if isinstance(e, cls):
                return f(conv(e.lhs), conv(e.rhs))
        if isinstance(e, sympy.And):
            return z3.And([conv(a) for a in e.args])
        if isinstance(e, sympy.Or):
            return z3.Or([conv(a) for a in e.args])
        if isinstance(e, sympy.Not):
            return z3.Not(conv(e.args[0]))
        if isinstance(e, sympy.ITE):
            return z3.If(conv(e.args[0]), conv(e.args[1]), conv(e.args[2]))
        raise TypeError(f"cannot translate {type(e).__name__} {e} to z3")

    return conv(expr)


def _innermost_piecewise(exprs: Iterable[Any]) -> sympy.Piecewise | None:
    for e in exprs:
        for pw in sympy.preorder_traversal(e):
            if isinstance(pw, sympy.Piecewise) and not any(
                    isinstance(a, sympy.Piecewise) for arg in pw.args for part in arg
                    for a in sympy.preorder_traversal(part)):
                return pw
    return None


def prove_by_cases(name: str, statement: str, expr: Any, assumptions: Iterable[Any], *,
                   rlimit: int = DEFAULT_RLIMIT, max_leaves: int = 512) -> Obligation:
    """Prove ``expr == 0`` under sympy ``assumptions`` by splitting every two-branch Piecewise."""
    start = time.perf_counter()
    assumptions = list(assumptions)
    ar = Z3Arith()
    names: dict[str, Any] = {}
    z3_assumptions = [sympy_to_z3(a, ar, names) for a in assumptions]
    vacuous = check_z3(name, statement, ar, z3_assumptions, z3.BoolVal(False, ar.ctx), rlimit=rlimit)
    if vacuous.verdict == Verdict.VACUOUS:
        return Obligation(name, statement, Verdict.VACUOUS, "sympy case split", time.perf_counter() - start,
                          "assumptions are unsatisfiable")
    leaves = checked = 0
    stack: list[tuple[Any, list[Any]]] = [(sympy.sympify(expr), [])]
    while stack:
        e, conds = stack.pop()
        pw = _innermost_piecewise([e, *conds])
        if pw is not None:
            (a, c), (b, _) = pw.args[0], pw.args[1]
            for value, cond in ((a, c), (b, sympy.Not(c))):
                new_conds = [x.xreplace({pw: value}) for x in conds] + [cond]
                if sympy.false in new_conds:
                    continue
                stack.append((e.xreplace({pw: value}), [x for x in new_conds if x is not sympy.true]))
            continue
        leaves += 1
        if leaves > max_leaves:
            return Obligation(name, statement, Verdict.INCONCLUSIVE, "sympy case split",
                              time.perf_counter() - start, f"more than {max_leaves} cases")
        num, den = sympy.fraction(sympy.together(e))
        branch = z3_assumptions + [sympy_to_z3(c, ar, names) for c in conds]
        if sympy.expand(num) == 0:
            check = check_z3(name, statement, ar, branch, sympy_to_z3(sympy.Ne(den, 0), ar, names),
                             rlimit=rlimit)
            if check.verdict in (Verdict.PROVED, Verdict.VACUOUS):
                continue
            return Obligation(name, statement, Verdict.INCONCLUSIVE, "sympy case split",
                              time.perf_counter() - start, f"a denominator may vanish in case {conds}")
        checked += 1
        check = check_z3(name, statement, ar, branch + [sympy_to_z3(sympy.Ne(den, 0), ar, names)],
                         sympy_to_z3(sympy.Eq(num, 0), ar, names), rlimit=rlimit)
        if check.verdict in (Verdict.PROVED, Verdict.VACUOUS):
            continue
        return Obligation(name, statement, check.verdict, "sympy case split", time.perf_counter() - start,
                          f"case {conds}: {check.obligation.detail}")
    return Obligation(name, statement, Verdict.PROVED, "sympy case split", time.perf_counter() - start,
                      f"{leaves} cases, {checked} needed z3 to rule out their branch")
