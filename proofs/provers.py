"""Proving or refuting one rule: the strategy shared by the catalogue and by user rules.

For a :class:`~specproof.proofs.rules.StepRule` (:func:`prove_step_rule`):

1. the every-``n`` proof (:func:`~specproof.proofs.every_size.prove_every_size`); when it succeeds,
   the direct z3 cross-check over ``n = 2..4``, the K-token exhaustive check and, for rules with an
   acceptance test, the measure lemma and its finite-grid notes are added: PROVED for all ``n``;
2. otherwise an exact counterexample search (seeds, then rational grids): REFUTED with the
   counterexample and the worst-case drift;
3. otherwise the direct z3 check for ``n = 2..4``: PROVED for those sizes, REFUTED when a counter-model
   survives exact re-evaluation, else INCONCLUSIVE (never counted as proved).

:func:`refutation` is step 2 for any :class:`~specproof.proofs.search.PairLaw`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping

import z3

from .backends.exact import ExactArith
from .backends.z3_backend import Z3Arith
from .every_size import direct_check, prove_every_size
from .outcomes import DEFAULT_RLIMIT, Obligation, ProofResult, Verdict, WorstCase, combine, solver_versions
from .rules import StepRule, step_law
from .search import PairLaw, evaluate, find_counterexample, project_to_simplex, simplex_grid, worst_case
from .solving import check_z3
from .theorems import sequence_exactness

__all__ = ["Settings", "step_pair_law", "prove_step_rule", "refutation", "drift", "measure_obligation",
           "grid_acceptance", "grid_notes"]

GRID_BITS = (8, 24)
"""Uniform grids for the notes: 2^-8 (bfloat16 uniforms on CPU) and 2^-24 (float32)."""


@dataclass(frozen=True)
class Settings:
    """Solver limit per check and whether to compute worst-case drift for refuted rules."""

    rlimit: int = DEFAULT_RLIMIT
    drift: bool = True


def step_pair_law(rule: StepRule) -> PairLaw:
    """A step rule's output law against the target ``p``."""
    return PairLaw(rule.name, ("p", "q"), lambda ar, laws: step_law(ar, rule, laws["p"], laws["q"]).output,
                   lambda ar, laws: laws["p"])


def _auto_den(law: PairLaw, n: int, cap: int) -> int | None:
    for den in (24, 16, 12, 10, 8, 6, 5, 4, 3, 2):
        if len(simplex_grid(n, den)) ** len(law.inputs) <= cap:
            return den
    return None


def drift(law: PairLaw, settings: Settings, *, certify: bool = True, sizes: Iterable[int] = (2, 3),
          caps: tuple[int, int] = (2500, 1000)) -> tuple[WorstCase, ...]:
    """Worst-case TV at small sizes: the finest grid with at most ``caps[0]`` points (then
    ``caps[1]``) and a z3-certified upper bound at the smallest size, grid lower bounds at the others."""
    out = []
    for i, n in enumerate(s for s in sizes if s >= law.min_n):
        cap = caps[min(i, 1)]
        den = _auto_den(law, n, cap)
        if den is None:
            continue
        found = worst_case(law, n, den=den, certify=certify and i == 0, rlimit=settings.rlimit // 8,
                           steps=4, cap=cap)
        if found is not None:
            out.append(found)
    return tuple(out)


def refutation(name: str, claim: str, law: PairLaw, settings: Settings, start: float, *,
               seeds: Iterable[Mapping[str, Any]] = (), sizes: Iterable[int] = (2, 3),
               obligations: Iterable[Obligation] = (), notes: Iterable[str] = (),
               certify: bool = True, drift_sizes: Iterable[int] = (2, 3),
               drift_caps: tuple[int, int] = (2500, 1000)) -> ProofResult | None:
    """REFUTED with an exact counterexample and the worst-case drift, or None if none was found."""
    found = find_counterexample(law, seeds=seeds, sizes=sizes)
    if found is None:
        return None
    worst = drift(law, settings, certify=certify, sizes=drift_sizes, caps=drift_caps) if settings.drift else ()
    obligation = Obligation("counterexample", "output law != target law at an exact point", Verdict.REFUTED,
                            "exact evaluation", 0.0, f"TV = {found.tv}")
    return ProofResult(rule=name, claim=claim, verdict=Verdict.REFUTED, method="exact counterexample search",
                       n=str(len(found.p)), seconds=time.perf_counter() - start,
                       versions=solver_versions(settings.rlimit), counterexample=found, worst_case=worst,
                       obligations=tuple(obligations) + (obligation,), notes=tuple(notes))


def measure_obligation(rule: StepRule, rlimit: int) -> Obligation:
    """For ``u`` in ``[0, 1)``, ``p >= 0``, ``q > 0``: ``u < A => test`` and ``u > A => not test``, so
    ``{u : test}`` is ``[0, A)`` up to the single point ``A`` and has Lebesgue measure ``A``."""
    ar = Z3Arith()
    u, p, q = ar.real("u"), ar.real("p"), ar.real("q")
    accept = rule.acceptance(ar, p, q)
    test = rule.acceptance_test(ar, u, p, q)  # type: ignore[misc]
    goal = z3.And(z3.Implies(u < accept, test), z3.Implies(u > accept, z3.Not(test)))
    return check_z3(f"measure ({rule.name})",
                    "{u in [0,1): test(u)} equals [0, A) up to the point u = A, so P(test) = A = min(1, p/q) "
                    "for q > 0 (q = 0 is never proposed)", ar, [u >= 0, u < 1, p >= 0, p <= 1, q > 0, q <= 1],
                    goal, rlimit=rlimit, method="z3 pointwise").obligation


def grid_acceptance(rule: StepRule, p: Fraction, q: Fraction, bits: int) -> Fraction:
    """Exact ``P(test)`` for ``u`` uniform on ``{k / 2^bits}``.  The passing ``u`` form a prefix of the
    grid (the measure lemma), so a binary search over ``k`` counts them."""
    ar = ExactArith()
    size = 1 << bits

    def passes(k: int) -> bool:
        return bool(rule.acceptance_test(ar, Fraction(k, size), p, q))  # type: ignore[misc]

    lo, hi = 0, size  # passes(k) for k < lo; not for k >= hi
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(mid):
            lo = mid + 1
        else:
            hi = mid
    return Fraction(lo, size)


def grid_notes(rule: StepRule) -> list[str]:
    """Where the acceptance test differs from ``min(1, p/q)`` on a finite grid of uniforms."""
    notes = []
    for p, q in ((Fraction(0), Fraction(1, 2)), (Fraction(1, 4), Fraction(3, 4))):
        exact = min(Fraction(1), p / q)
        parts = [f"2^-{b}: {grid_acceptance(rule, p, q, b)}" for b in GRID_BITS]
        notes.append(f"finite grid u = k/2^b, p(x)={p}, q(x)={q}: P(accept) = {'; '.join(parts)} "
                     f"(over [0,1): {exact})")
    return notes


def _direct_sizes(rule: StepRule, settings: Settings, start: float, obligations: list[Obligation]) -> ProofResult:
    verdicts = []
    law = step_pair_law(rule)
    for n in (2, 3, 4):
        ob, refuted = direct_check(rule, n, rlimit=settings.rlimit, hint=False)
        obligations.append(ob)
        verdicts.append(ob.verdict)
        if refuted is not None:
            point = {"p": project_to_simplex(refuted.p), "q": project_to_simplex(refuted.q)}
            found = evaluate(law, point)
            if found.tv > 0:
                worst = drift(law, settings) if settings.drift else ()
                return ProofResult(rule.name, rule.claim, Verdict.REFUTED, "z3 counter-model, re-checked exactly",
                                   str(n), time.perf_counter() - start, solver_versions(settings.rlimit), found,
                                   worst, obligations=tuple(obligations))
            verdicts[-1] = Verdict.INCONCLUSIVE
    verdict = combine(verdicts)
    return ProofResult(rule.name, rule.claim, verdict, "z3 direct", "2..4", time.perf_counter() - start,
                       solver_versions(settings.rlimit), obligations=tuple(obligations),
                       reason="" if verdict == Verdict.PROVED else "direct z3 check did not settle every size")


def prove_step_rule(rule: StepRule, settings: Settings = Settings(), *,
                    seeds: Iterable[Mapping[str, Any]] = ()) -> ProofResult:
    """Prove a single-step rule exact for every ``n``, or refute it with an exact counterexample."""
    start = time.perf_counter()
    verdict, obligations, reason = prove_every_size(rule, rlimit=settings.rlimit)
    if verdict == Verdict.PROVED:
        f1 = all(o.verdict == Verdict.PROVED for o in obligations if o.name.startswith("F1"))
        for n in (2, 3, 4):
            obligations.append(direct_check(rule, n, rlimit=settings.rlimit, hint=f1)[0])
        obligations.append(sequence_exactness(rule))
        notes: list[str] = []
        if rule.acceptance_test is not None:
            obligations.append(measure_obligation(rule, settings.rlimit))
            notes = grid_notes(rule)
        cross = combine(o.verdict for o in obligations)
        if cross == Verdict.PROVED:
            return ProofResult(rule.name, rule.claim, Verdict.PROVED,
                               "every n: z3 + sympy lemmas, sums abstracted; z3 direct n=2..4", "all",
                               time.perf_counter() - start, solver_versions(settings.rlimit),
                               obligations=tuple(obligations), notes=tuple(notes))
        reason = "; ".join(f"{o.name}: {o.detail}" for o in obligations if o.verdict != Verdict.PROVED)
        if cross != Verdict.REFUTED:
            return ProofResult(rule.name, rule.claim, cross, "every n + cross-checks", "all",
                               time.perf_counter() - start, solver_versions(settings.rlimit),
                               obligations=tuple(obligations), reason=reason, notes=tuple(notes))
    refuted = refutation(rule.name, rule.claim, step_pair_law(rule), settings, start, seeds=seeds,
                         obligations=obligations, notes=[f"every-n route: {reason}"] if reason else [])
    if refuted is not None:
        return refuted
    return _direct_sizes(rule, settings, start, list(obligations))
