"""Facts about sums over the vocabulary, machine-checked for every ``n`` by induction on ``n``.

A sum over ``n`` tokens is defined recursively, term by term (what :meth:`Arith.total` computes)::

    S_f(0) = 0,    S_f(m + 1) = S_f(m) + f(m + 1)

Over *uninterpreted* sequences ``f, g_1..g_k : Int -> Real`` and constants ``c_1..c_k``, z3 checks the
base case ``n = 0`` and the induction step ``n -> n + 1`` of

* linearity (:func:`linearity`): if ``f(i) = sum_j c_j g_j(i)`` for every ``i``, then
  ``S_f(n) = sum_j c_j S_{g_j}(n)``;
* monotonicity (:func:`monotonicity`): if ``f(i) >= 0`` for every ``i``, then ``S_f(n) >= 0`` and
  ``f(i) <= S_f(n)`` for ``1 <= i <= n``;
* support (:func:`support`): if ``f, g >= 0`` and ``f(i) > 0 => g(i) > 0`` for every ``i``, then
  ``S_f(n) > 0 => S_g(n) > 0``.

Base and step give the fact for every ``n`` (induction on the naturals: the one principle used and not
itself run through a solver).  These obligations are about sequences, so they hold for every rule; what
ties a rule to them is its pointwise lemma (``F1``, ``F2``, ``T1``, ...), checked on the rule's own
definition, together with the :class:`~specproof.proofs.arith.interface.Arith` contract that every operation other
than ``total`` and ``mass_ahead`` acts coordinate by coordinate (so a vector's entry at token ``i`` is
the generic-coordinate term evaluated at ``p(i), q(i)``).
"""

from __future__ import annotations

import time
from typing import Any

import z3

from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Basis, Obligation, Verdict, combine
from specproof.proofs.engine.solvers import check_z3

__all__ = ["linearity", "monotonicity", "support", "sum_step"]


class _Sums:
    """Uninterpreted sequences and their recursive sums in one z3 context."""

    def __init__(self) -> None:
        self.ar = Z3Arith()
        self.n = z3.Int("n", self.ar.ctx)
        self.i = z3.Int("i", self.ar.ctx)

    def sequence(self, name: str) -> tuple[Any, Any]:
        """``(f, S_f)`` as z3 functions ``Int -> Real``."""
        ints, reals = z3.IntSort(self.ar.ctx), z3.RealSort(self.ar.ctx)
        return z3.Function(name, ints, reals), z3.Function(f"S_{name}", ints, reals)

    def definition(self, f: Any, s: Any) -> list[Any]:
        """The recursive definition at the step: ``S(0) = 0`` and ``S(n+1) = S(n) + f(n+1)``."""
        return [s(0) == 0, s(self.n + 1) == s(self.n) + f(self.n + 1)]

    def everywhere(self, body: Any) -> Any:
        return z3.ForAll([self.i], body(self.i))


def _record(name: str, statement: str, checks: list[Obligation], start: float) -> Obligation:
    verdict = combine(o.verdict for o in checks)
    detail = "; ".join(f"{o.name}: {o.verdict.value} ({o.detail})" for o in checks)
    return Obligation(name, statement, verdict, "z3 induction on n (uninterpreted sequences)",
                      time.perf_counter() - start, detail, Basis.MACHINE)


def linearity(terms: int, *, rlimit: int = DEFAULT_RLIMIT) -> Obligation:
    """``f = sum_{j<terms} c_j g_j`` pointwise implies ``S_f(n) = sum_j c_j S_{g_j}(n)``, every ``n``."""
    start = time.perf_counter()
    z = _Sums()
    f, s_f = z.sequence("f")
    gs = [z.sequence(f"g{j}") for j in range(terms)]
    cs = [z.ar.real(f"c{j}") for j in range(terms)]
    pointwise = z.everywhere(lambda i: f(i) == z3.Sum([c * g(i) for c, (g, _) in zip(cs, gs)]))
    definitions = z.definition(f, s_f) + [d for g, s in gs for d in z.definition(g, s)]
    claim = (lambda m: s_f(m) == z3.Sum([c * s(m) for c, (_, s) in zip(cs, gs)]))
    base = check_z3("base n=0", "", z.ar, definitions, claim(0), rlimit=rlimit).obligation
    step = check_z3("step n -> n+1", "", z.ar, definitions + [pointwise, z.n >= 0, claim(z.n)],
                    claim(z.n + 1), rlimit=rlimit).obligation
    return _record(f"linearity of finite sums ({terms} terms)",
                   f"f(i) = sum_j c_j g_j(i) for all i (j < {terms}, constants c_j) => "
                   "sum_{i<=n} f(i) = sum_j c_j sum_{i<=n} g_j(i), every n", [base, step], start)


def monotonicity(*, rlimit: int = DEFAULT_RLIMIT) -> Obligation:
    """``f >= 0`` pointwise implies ``0 <= f(i) <= S_f(n)`` for ``1 <= i <= n``, every ``n``."""
    start = time.perf_counter()
    z = _Sums()
    f, s_f = z.sequence("f")
    nonneg = z.everywhere(lambda i: f(i) >= 0)

    def claim(m: Any) -> Any:
        return z3.And(s_f(m) >= 0, z.everywhere(lambda i: z3.Implies(z3.And(i >= 1, i <= m), f(i) <= s_f(m))))

    definitions = z.definition(f, s_f)
    base = check_z3("base n=0", "", z.ar, definitions, claim(0), rlimit=rlimit).obligation
    step = check_z3("step n -> n+1", "", z.ar, definitions + [nonneg, z.n >= 0, claim(z.n)], claim(z.n + 1),
                    rlimit=rlimit).obligation
    return _record("monotonicity of finite sums", "f(i) >= 0 for all i => sum_{i<=n} f(i) >= 0 and "
                   "f(i) <= sum_{i<=n} f(i) for 1 <= i <= n, every n", [base, step], start)


def support(*, rlimit: int = DEFAULT_RLIMIT) -> Obligation:
    """``f, g >= 0`` and ``f(i) > 0 => g(i) > 0`` pointwise imply ``S_f(n) > 0 => S_g(n) > 0``, every ``n``."""
    start = time.perf_counter()
    z = _Sums()
    f, s_f = z.sequence("f")
    g, s_g = z.sequence("g")
    premise = z.everywhere(lambda i: z3.And(f(i) >= 0, g(i) >= 0, z3.Implies(f(i) > 0, g(i) > 0)))

    def claim(m: Any) -> Any:
        return z3.And(s_g(m) >= 0, z3.Implies(s_f(m) > 0, s_g(m) > 0))

    definitions = z.definition(f, s_f) + z.definition(g, s_g)
    base = check_z3("base n=0", "", z.ar, definitions, claim(0), rlimit=rlimit).obligation
    step = check_z3("step n -> n+1", "", z.ar, definitions + [premise, z.n >= 0, claim(z.n)], claim(z.n + 1),
                    rlimit=rlimit).obligation
    return _record("support of finite sums", "f, g >= 0 and f(i) > 0 => g(i) > 0 for all i => "
                   "(sum_{i<=n} f(i) > 0 => sum_{i<=n} g(i) > 0), every n", [base, step], start)


def sum_step(name: str, statement: str, premises: str, *, terms: int = 2, monotone: bool = False,
             rlimit: int = DEFAULT_RLIMIT) -> list[Obligation]:
    """The obligations of one theorem's sum step: linearity with ``terms`` summands (and monotonicity),
    each named ``name (...)``, with ``statement`` saying what the step derives from ``premises``."""
    out = []
    lin = linearity(terms, rlimit=rlimit)
    out.append(Obligation(f"{name} (linearity)", f"{statement} [from {premises} by: {lin.statement}]",
                          lin.verdict, lin.method, lin.seconds, lin.detail, Basis.MACHINE))
    if monotone:
        mono = monotonicity(rlimit=rlimit)
        out.append(Obligation(f"{name} (monotonicity)", f"from {premises} by: {mono.statement}", mono.verdict,
                              mono.method, mono.seconds, mono.detail, Basis.MACHINE))
    return out
