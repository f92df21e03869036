"""Exactness of a single-step rule for every vocabulary size, by composing machine-checked steps.

The output law of :func:`~specproof.proofs.laws.step_rules.step_law` at a token ``x`` depends on ``p(x)``,
``q(x)`` and on two sums over the vocabulary, ``B = sum_y q(y) A(y)`` and ``S = sum_y w(y)``.  The
proof evaluates the rule's own definition on a *generic coordinate* (:class:`GenericCoordinateArith`:
a vector is the z3 term of its entry at ``x``; each ``total`` is a fresh variable) and then:

1. pointwise lemmas, for all reals ``p, q`` in ``[0, 1]`` (z3, and independently sympy case splits):
   ``F0``: ``0 <= A(x) <= 1`` where ``q(x) > 0`` (a probability);
   ``F1``: ``q(x) A(x) + w(x) = p(x)`` (for the canonical rule this is T1 with ``q A = min(p, q)``);
   ``F2``: ``w(x) >= 0``;
2. the sum step, the only one that depends on ``n``: summing ``F1`` gives ``B + S = sum p = 1`` (T2,
   ``1 - B = S``), and ``F2`` gives ``0 <= w(x) <= S``; linearity and monotonicity of finite sums are
   machine-checked for every ``n`` by induction (:mod:`.finite_sums`);
3. the composition, with ``B`` and ``S`` abstracted as real variables constrained only by step 2:
   ``output(x) = q(x) A(x) + (1 - B) w(x) / S = p(x)`` (``w / S := 0`` when ``S = 0``), plus its edge
   cases stated separately: ``p == q`` (zero residual mass), ``q(x) = 0``, ``p(x) = 0`` (never emitted).

Each assumption set is checked satisfiable first.  Since every real vector pair in the simplex
instantiates the abstraction, step 3 holds for every ``n``.  Rules the generic coordinate cannot
express (``mass_ahead``, logarithm sums) or whose lemmas fail get no all-``n`` proof here.

:func:`direct_check` is the cross-check: the whole law over ``n`` symbolic tokens, ``n = 2..4``.
"""

from __future__ import annotations

import time
from typing import Any

import sympy
import z3

from specproof.proofs.arith.sympy_backend import SympyArith
from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.engine.finite_sums import sum_step
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Basis, Obligation, Verdict, combine
from specproof.proofs.laws.step_rules import StepRule, step_law
from specproof.proofs.engine.solvers import check_z3, model_fractions, prove_by_cases

__all__ = ["GenericCoordinateArith", "SympyGenericCoordinate", "prove_every_size", "direct_check",
           "DirectRefutation"]


class GenericCoordinateArith(Z3Arith):
    """A vector is the z3 term of its entry at one generic token ``x``; ``total(v)`` is a fresh real
    (recorded with the term it sums; one per distinct term), except ``total(p) = total(q) = 1``."""

    name = "z3-generic-coordinate"

    def __init__(self, *, ranks: bool = False) -> None:
        super().__init__()
        self.p = self.real("p_x")
        self.q = self.real("q_x")
        self.totals: list[tuple[Any, Any]] = []
        self.ranks_allowed = ranks
        self.ranks: list[tuple[Any, Any, Any]] = []

    def total(self, v: Any) -> Any:
        v = self._lift(v)
        if z3.is_expr(v) and (z3.eq(v, self.p) or z3.eq(v, self.q)):
            return self.const(1)
        if not z3.is_expr(v):
            raise TypeError("a total of logarithms is not interpretable on a generic coordinate")
        for sigma, summand in self.totals:  # the same summand has the same sum
            if z3.eq(summand, v):
                return sigma
        sigma = self.fresh("sum")
        self.totals.append((sigma, v))
        return sigma

    def mass_ahead(self, key: Any, weight: Any) -> Any:
        """With ``ranks``: a fresh real (recorded with key and weight) the caller constrains; else refused."""
        if not self.ranks_allowed:
            raise TypeError("ordering over the vocabulary is not interpretable on a generic coordinate")
        ahead = self.fresh("ahead")
        self.ranks.append((ahead, self._lift(key), self._lift(weight)))
        return ahead


class SympyGenericCoordinate(SympyArith):
    """The sympy twin of :class:`GenericCoordinateArith`: a vector is its entry at ``x`` (symbols
    ``p_x``, ``q_x``); ``total(p) = total(q) = 1`` and any other total is a fresh real symbol.  (A plain
    :class:`SympyArith` sums a scalar to itself, so ``total(p)`` there would be ``p_x``.)"""

    name = "sympy-generic-coordinate"

    def __init__(self) -> None:
        self.p, self.q = sympy.symbols("p_x q_x", real=True)
        self._fresh = 0

    def total(self, v: Any) -> Any:
        v = self._lift(v)
        if isinstance(v, sympy.Basic) and (v == self.p or v == self.q):
            return self.one
        if not isinstance(v, sympy.Basic):
            raise TypeError("a total of logarithms is not interpretable on a generic coordinate")
        self._fresh += 1
        return sympy.Symbol(f"sum_{self._fresh}", real=True)

    def mass_ahead(self, key: Any, weight: Any) -> Any:
        raise TypeError("ordering over the vocabulary is not interpretable on a generic coordinate")


def _sympy_lemma(rule: StepRule, name: str, statement: str, which: str, rlimit: int) -> Obligation | None:
    """The sympy case-split check of a pointwise lemma, or None when sympy cannot express the rule."""
    ar = SympyGenericCoordinate()
    p, q = ar.p, ar.q
    try:
        accept = rule.acceptance(ar, p, q)
        weight = rule.residual_weight(ar, p, q)
    except TypeError:
        return None
    domain = [p >= 0, p <= 1, q >= 0, q <= 1]
    if which == "F1":
        return prove_by_cases(name, statement, q * accept + weight - p, domain, rlimit=rlimit)
    if which == "F2":
        return prove_by_cases(name, statement, ar.relu(-weight), domain, rlimit=rlimit)
    return prove_by_cases(name, statement, ar.relu(-accept) + ar.relu(accept - 1), domain + [q > 0],
                          rlimit=rlimit)


def prove_every_size(rule: StepRule, *, rlimit: int = DEFAULT_RLIMIT,
                     with_sympy: bool = True) -> tuple[Verdict, list[Obligation], str]:
    """Try to prove ``output == p`` for every ``n``; returns (verdict, obligations, reason)."""
    ar = GenericCoordinateArith()
    p, q = ar.p, ar.q
    try:
        law = step_law(ar, rule, p, q)
    except TypeError as err:
        return Verdict.INCONCLUSIVE, [], f"not expressible on a generic coordinate: {err}"
    domain = [p >= 0, p <= 1, q >= 0, q <= 1]
    internal = [s for s, _ in ar.totals if not (z3.eq(s, law.acceptance_rate) or z3.eq(s, law.residual_mass))]
    if internal:
        return Verdict.INCONCLUSIVE, [], "the rule sums over the vocabulary inside A or w"
    obligations: list[Obligation] = []
    lemmas = {
        "F0": ("0 <= A(x) <= 1 wherever q(x) > 0", domain + [q > 0],
               z3.And(law.accept >= 0, law.accept <= 1)),
        "F1": ("q(x) A(x) + w(x) = p(x) for all p(x), q(x) in [0, 1]", domain,
               law.accepted_mass + law.residual_weight == p),
        "F2": ("w(x) >= 0 for all p(x), q(x) in [0, 1]", domain, law.residual_weight >= 0),
    }
    for key, (statement, assumptions, goal) in lemmas.items():
        check = check_z3(f"{key} (z3)", statement, ar, assumptions, goal, rlimit=rlimit, method="z3 pointwise")
        obligations.append(check.obligation)
        if with_sympy:
            sym = _sympy_lemma(rule, f"{key} (sympy)", statement, key, rlimit)
            if sym is not None:
                obligations.append(sym)
    if combine(o.verdict for o in obligations) != Verdict.PROVED:
        failed = [f"{o.name}: {o.verdict.value}" for o in obligations if o.verdict != Verdict.PROVED]
        # a failed lemma closes this route only; whether the rule is exact is for the search to settle
        return Verdict.INCONCLUSIVE, obligations, f"pointwise lemma not proved ({', '.join(failed)})"

    big_b, big_s = law.acceptance_rate, law.residual_mass
    sums = [big_b + big_s == 1, law.residual_weight <= big_s]
    obligations += sum_step("T2 (sum step)", "summing F1 (p = 1 q A + 1 w) over the vocabulary: "
                            "1 = sum_x p(x) = B + S; from F2 (w >= 0): 0 <= w(x) <= S", "F1, F2",
                            monotone=True, rlimit=rlimit)
    abstract = domain + [law.residual_weight >= 0] + sums
    same = check_z3("E1a (p == q gives w == 0)", "w(x) = 0 where p(x) = q(x)", ar, domain + [p == q],
                    law.residual_weight == 0, rlimit=rlimit, method="z3 pointwise")
    edges = [("T3 (composition)", "q(x)A(x) + (1 - B) w(x)/S = p(x) for every x, any n", [], law.output == p)]
    if same.verdict == Verdict.PROVED:
        obligations.append(same.obligation)
        edges.append(("E1 (p == q)", "p == q everywhere: output(x) = p(x) (S = 0: every w(y) = 0 by E1a, "
                      "and a sum of zeros is 0 by the linearity fact with c = 0)",
                      [p == q, big_s == 0], law.output == p))
    edges += [("E2 (q(x) = 0)", "a token never proposed is still emitted with probability p(x)",
               [q == 0], law.output == p),
              ("E3 (p(x) = 0)", "a token with p(x) = 0 is never emitted", [p == 0], law.output == 0)]
    for name, statement, extra, goal in edges:
        obligations.append(check_z3(name, statement, ar, abstract + extra, goal, rlimit=rlimit,
                                    method="z3, sums abstracted").obligation)
    verdict = combine(o.verdict for o in obligations)
    reason = "" if verdict == Verdict.PROVED else \
        f"composition not proved: {[o.name for o in obligations if o.verdict != Verdict.PROVED]}"
    return verdict, obligations, reason


class DirectRefutation:
    """A counter-model of the direct check, rationalised: ``p``, ``q`` as Fractions (may need the
    caller's exact re-check, since algebraic model values are rounded)."""

    def __init__(self, n: int, p: tuple, q: tuple):
        self.n, self.p, self.q = n, p, q


def direct_check(rule: StepRule, n: int, *, rlimit: int = DEFAULT_RLIMIT,
                 hint: bool = True) -> tuple[Obligation, DirectRefutation | None]:
    """z3 over ``n`` symbolic tokens: ``p, q`` in the simplex => ``output == p`` coordinate by coordinate.

    With ``hint``, the pointwise lemma ``q(x)A(x) + w(x) = p(x)`` is added per token to help the
    solver: pass it only once :func:`prove_every_size` has proved ``F1`` for this rule (an unproved
    hint could shrink the domain)."""
    ar = Z3Arith()
    p, q = ar.vector("p", n), ar.vector("q", n)
    try:
        law = step_law(ar, rule, p, q)
    except TypeError as err:
        return Obligation(f"direct n={n}", "", Verdict.INCONCLUSIVE, "z3 direct", 0.0, str(err),
                          Basis.BOUNDED), None
    assumptions = [ar.simplex(p), ar.simplex(q)]
    if hint:
        assumptions += [a + w == x for a, w, x in zip(law.accepted_mass, law.residual_weight, p)]
    start = time.perf_counter()
    verdicts, details = [], []
    for i in range(n):
        check = check_z3(f"direct n={n}", "", ar, assumptions, law.output[i] == p[i], rlimit=rlimit)
        verdicts.append(check.verdict)
        if check.verdict == Verdict.REFUTED:
            values = model_fractions(check.model, p + q)
            return (Obligation(f"direct n={n}", f"output == p over {n} symbolic tokens", Verdict.REFUTED,
                               "z3 direct", time.perf_counter() - start, f"coordinate {i}: counter-model",
                               Basis.BOUNDED),
                    DirectRefutation(n, values[:n], values[n:]))
        details.append(check.obligation.detail)
    verdict = combine(verdicts)
    return Obligation(f"direct n={n}", f"output == p over {n} symbolic tokens (simplex assumptions)",
                      verdict, "z3 direct" + (" + F1 hint" if hint else ""), time.perf_counter() - start,
                      "; ".join(sorted(set(details))) + f"; only n = {n}", Basis.BOUNDED), None
