"""Proving or refuting one rule: the pipeline shared by the catalogue and by user rules.

For a :class:`~specproof.proofs.laws.step_rules.StepRule`, :func:`prove_step_rule` is one pass:

1. :func:`~specproof.proofs.claims.obligations.step_evidence` - the rule's goals (well-formedness, the
   acceptance test's law, the output law), each with the evidence the engines found;
2. :func:`~specproof.proofs.engine.verdicts.decide` - the verdict, its scope and its assumptions, from all
   of that evidence at once;
3. for a REFUTED output law, the worst-case drift (:func:`drift`); for rules with an acceptance test,
   the finite-grid notes (:func:`grid_notes`).

:func:`refutation` is the witness search for any :class:`~specproof.proofs.engine.counterexamples.PairLaw` (rules
with other structure); it too only gathers evidence and lets :func:`decide` speak.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.claims.obligations import step_evidence, step_pair_law
from specproof.errors import SpecproofInputError
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Obligation, ProofResult, Verdict, WorstCase, solver_versions
from specproof.proofs.laws.step_rules import StepRule
from specproof.proofs.engine.counterexamples import PairLaw, find_counterexample, simplex_grid, worst_case
from specproof.proofs.engine.verdicts import Goal, decide

__all__ = ["Settings", "step_pair_law", "prove_step_rule", "refutation", "drift", "grid_acceptance",
           "grid_notes"]

GRID_BITS = (8, 24)
"""Uniform grids for the notes: 2^-8 (bfloat16 uniforms on CPU) and 2^-24 (float32)."""


@dataclass(frozen=True)
class Settings:
    """Solver limit per check, whether to compute worst-case drift for refuted rules, and the time
    budget per rule in seconds (None: run in this process without a limit; ``specproof prove``
    passes ``--timeout``, default :data:`~specproof.proofs.engine.results.DEFAULT_TIMEOUT`)."""

    rlimit: int = DEFAULT_RLIMIT
    drift: bool = True
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise SpecproofInputError("timeout", f"{self.timeout} is not a positive finite number of seconds",
                                      "pass e.g. 120")


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
               drift_caps: tuple[int, int] = (2500, 1000)) -> ProofResult:
    """The exact witness search as evidence: REFUTED with the counterexample and the worst-case
    drift, else INCONCLUSIVE (no counterexample on the grids is not a proof of exactness)."""
    sizes = tuple(sizes)
    found = find_counterexample(law, seeds=seeds, sizes=sizes)
    evidence = tuple(obligations)
    if found is not None:
        evidence += (Obligation("counterexample", "output law != target law at an exact point", Verdict.REFUTED,
                                "exact evaluation", 0.0, f"TV = {found.tv}"),)
    else:
        evidence += (Obligation("counterexample search", f"output law != target law on the grids, n in {sizes}",
                                Verdict.INCONCLUSIVE, "exact evaluation", 0.0,
                                "no counterexample on the searched grids (not a proof of exactness)"),)
    decision = decide([Goal("output law", evidence)], witness=found)
    worst = drift(law, settings, certify=certify, sizes=drift_sizes, caps=drift_caps) \
        if settings.drift and found is not None else ()
    return ProofResult(rule=name, claim=claim, verdict=decision.verdict, method="exact counterexample search",
                       n=str(len(found.p)) if found else ",".join(map(str, sizes)),
                       seconds=time.perf_counter() - start, versions=solver_versions(settings.rlimit),
                       counterexample=found, worst_case=worst, obligations=evidence, notes=tuple(notes),
                       reason=decision.reason if found is None else "", scope=decision.scope,
                       assumptions=decision.assumptions)


def grid_acceptance(rule: StepRule, p: Fraction, q: Fraction, bits: int) -> Fraction:
    """Exact ``P(test)`` at token 0 for ``u`` uniform on ``{k / 2^bits}``, the laws being
    ``(p, 1 - p)`` and ``(q, 1 - q)`` (whole vectors, so a sum over the vocabulary inside the test means
    what it means at run time).  The passing ``u`` form a prefix of the grid (the measure lemma), so a
    binary search over ``k`` counts them."""
    ar = ExactArith()
    size = 1 << bits
    laws = (p, 1 - p), (q, 1 - q)

    def passes(k: int) -> bool:
        cond = rule.acceptance_test(ar, Fraction(k, size), *laws)  # type: ignore[misc]
        return bool(cond[0] if isinstance(cond, tuple) else cond)

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


_METHOD = {"every n": "every n: z3 + sympy lemmas, sums abstracted; z3 direct n=2..4 cross-check",
           "bounded": "z3 direct over n symbolic tokens (bounded)"}


def prove_step_rule(rule: StepRule, settings: Settings = Settings(), *,
                    seeds: Iterable[Mapping[str, Any]] = ()) -> ProofResult:
    """Prove a single-step rule exact for every ``n``, bound it, or refute it with an exact witness."""
    start = time.perf_counter()
    ev = step_evidence(rule, settings.rlimit, seeds)
    decision = decide(ev.goals, witness=ev.witness, checks=ev.checks)
    obligations = tuple(o for g in ev.goals for o in g.obligations) + tuple(ev.checks) + tuple(ev.shown)
    notes = list(ev.notes)
    if rule.acceptance_test is not None and decision.verdict in (Verdict.PROVED, Verdict.BOUNDED):
        notes += grid_notes(rule)
    worst: tuple[WorstCase, ...] = ()
    if decision.verdict == Verdict.REFUTED and ev.witness_law is not None and settings.drift:
        worst = drift(ev.witness_law, settings)
    if decision.verdict == Verdict.REFUTED:
        method = f"exact witness ({ev.witness_kind})"
        n = str(len(ev.witness.p)) if ev.witness else ""
    elif decision.verdict == Verdict.BOUNDED:
        method, n = _METHOD["bounded"], decision.scope.removeprefix("n = ").removesuffix(" (bounded)")
    else:
        method, n = _METHOD["every n"], "all" if decision.verdict == Verdict.PROVED else "none"
    return ProofResult(rule.name, rule.claim, decision.verdict, method, n, time.perf_counter() - start,
                       solver_versions(settings.rlimit), counterexample=ev.witness, worst_case=worst,
                       reason=decision.reason if decision.verdict != Verdict.PROVED else "",
                       obligations=obligations, notes=tuple(notes), scope=decision.scope,
                       assumptions=decision.assumptions)
