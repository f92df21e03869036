"""Counterexamples and worst-case drift for rules whose output law is a function of input laws.

A :class:`PairLaw` gives a rule's output law and the target it should equal as functions of a few
laws on the simplex (``p``, ``q``, sometimes ``r``), written once against
:class:`~specproof.proofs.arith.interface.Arith`; the output may be a vector or a sequence law (a dict).

* :func:`find_counterexample` - seeds first (the check vectors in algorithms.md), then exhaustive exact
  search over the rational grid ``{k/den}`` of the simplex, ``n = 2, 3``, ``den`` increasing; the
  first level with a counterexample returns its largest-TV point (ties: first in order).
* :func:`worst_case` - the largest TV over the grid (exact, attained: a lower bound on the maximum
  over the simplex), then for small ``n`` a certified upper bound: z3 shows ``TV > U`` unsatisfiable
  for real ``p, q`` in the simplex; while z3 finds points above the bound they are rationalised,
  re-evaluated exactly and raise the lower bound; bisection narrows ``[lower, upper]``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from specproof.proofs.arith.interface import Arith
from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Counterexample, Verdict, WorstCase
from specproof.proofs.engine.solvers import check_z3, model_fractions

__all__ = ["PairLaw", "simplex_grid", "law_distance", "evaluate", "find_counterexample", "worst_case",
           "project_to_simplex"]

Inputs = Mapping[str, tuple[Fraction, ...]]


@dataclass(frozen=True)
class PairLaw:
    """``output(ar, laws)`` and ``target(ar, laws)`` for laws named by ``inputs`` (vectors over one
    vocabulary).  ``extra(laws)`` adds replay data to a counterexample; ``min_n`` is the smallest
    vocabulary the rule is meaningful on."""

    name: str
    inputs: tuple[str, ...]
    output: Callable[[Arith, Mapping[str, Any]], Any]
    target: Callable[[Arith, Mapping[str, Any]], Any]
    params: Mapping[str, Any] = field(default_factory=dict)
    extra: Callable[[Inputs], Mapping[str, Any]] | None = None
    min_n: int = 2


def simplex_grid(n: int, den: int) -> list[tuple[Fraction, ...]]:
    """Every law on ``n`` tokens with entries in ``{0, 1/den, ..., 1}``, in lexicographic order."""
    out = []
    for cuts in itertools.combinations_with_replacement(range(den + 1), n - 1):
        parts = [b - a for a, b in zip((0,) + cuts, cuts + (den,))]
        out.append(tuple(Fraction(c, den) for c in parts))
    return out


def law_distance(ar: Arith, a: Any, b: Any) -> Any:
    """``TV(a, b) = 1/2 sum |a - b|`` for two vectors or two sequence laws (dicts; missing keys are 0)."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        keys = sorted(set(a) | set(b))
        a = tuple(a.get(k, ar.zero) for k in keys)
        b = tuple(b.get(k, ar.zero) for k in keys)
    diff = ar.sub(a, b)
    return ar.mul(ar.const(Fraction(1, 2)), ar.total(ar.maximum(diff, ar.sub(ar.zero, diff))))


def evaluate(law: PairLaw, laws: Inputs) -> Counterexample:
    """The exact output, target and TV at ``laws`` (as a Counterexample record; TV may be 0)."""
    ar = ExactArith()
    output, target = law.output(ar, laws), law.target(ar, laws)
    extra = dict(law.extra(laws)) if law.extra else {}
    for name in law.inputs:
        if name not in ("p", "q"):
            extra[name] = laws[name]
    return Counterexample(p=tuple(laws["p"]), q=tuple(laws["q"]), output=output, target=target,
                          tv=law_distance(ar, output, target), params=dict(law.params), extra=extra)


def _grid_points(law: PairLaw, n: int, den: int, cap: int) -> Iterable[dict[str, tuple[Fraction, ...]]] | None:
    grid = simplex_grid(n, den)
    if len(grid) ** len(law.inputs) > cap:
        return None
    return (dict(zip(law.inputs, combo)) for combo in itertools.product(grid, repeat=len(law.inputs)))


def find_counterexample(law: PairLaw, *, seeds: Iterable[Inputs] = (), sizes: Iterable[int] = (2, 3),
                        dens: Iterable[int] = (1, 2, 3, 4, 5, 6), cap: int = 6000,
                        skip: tuple[type[BaseException], ...] = ()) -> Counterexample | None:
    """Seeds first, then the grid; None when no point with TV > 0 was found (not a proof).

    Points where the rule's output is itself a law are preferred; one where it is not (a residual
    with no mass, say) is returned only if the whole search finds nothing else.  A point whose
    evaluation raises one of ``skip`` is passed over."""
    def at(laws: Inputs) -> Counterexample | None:
        try:
            return evaluate(law, laws)
        except skip:
            return None

    for seed in seeds:
        found = at(seed)
        if found is not None and found.tv > 0:
            return found
    fallback: Counterexample | None = None
    for n in sizes:
        if n < law.min_n:
            continue
        for den in dens:
            points = _grid_points(law, n, den, cap)
            if points is None:
                break
            best: Counterexample | None = None
            for laws in points:
                found = at(laws)
                if found is None or found.tv == 0:
                    continue
                if not _is_law(found.output):
                    fallback = fallback or found
                elif best is None or found.tv > best.tv:
                    best = found
            if best is not None:
                return best
    return fallback


def _is_law(output: Any) -> bool:
    values = list(output.values()) if isinstance(output, Mapping) else list(output)
    return all(v >= 0 for v in values) and sum(values, Fraction(0)) == 1


def project_to_simplex(values: Iterable[Fraction], max_den: int = 10**6) -> tuple[Fraction, ...]:
    """Round to denominators <= ``max_den``, clip at 0 and give the last entry the remaining mass
    (scaling down if the others already exceed 1): an exact law near a solver's model."""
    xs = [max(Fraction(0), Fraction(v).limit_denominator(max_den)) for v in values]
    head = sum(xs[:-1], Fraction(0))
    if head > 1:
        xs = [x / head for x in xs[:-1]] + [Fraction(0)]
    else:
        xs[-1] = 1 - head
    return tuple(xs)


def _certify(law: PairLaw, n: int, bound: Fraction, rlimit: int) -> tuple[Verdict, Inputs | None, str]:
    """Is ``TV > bound`` unsatisfiable over the real simplex?  (verdict PROVED = certified bound)."""
    ar = Z3Arith()
    laws = {name: ar.vector(name, n) for name in law.inputs}
    try:
        tv = law_distance(ar, law.output(ar, laws), law.target(ar, laws))
    except TypeError as err:
        return Verdict.INCONCLUSIVE, None, f"not z3-interpretable: {err}"
    check = check_z3("worst-case bound", f"TV <= {bound}", ar, [ar.simplex(v) for v in laws.values()],
                     tv <= ar.const(bound), rlimit=rlimit)
    if check.verdict == Verdict.REFUTED:
        point = {name: project_to_simplex(model_fractions(check.model, v)) for name, v in laws.items()}
        return Verdict.REFUTED, point, "z3 found a point above the bound"
    return check.verdict, None, check.obligation.detail


def worst_case(law: PairLaw, n: int, *, den: int, certify: bool = True, rlimit: int = DEFAULT_RLIMIT // 4,
               steps: int = 6, cap: int = 6000) -> WorstCase | None:
    """Largest exact TV over the grid at size ``n``; with ``certify``, a z3-certified upper bound."""
    points = _grid_points(law, n, den, cap)
    if points is None or n < law.min_n:
        return None
    best: Counterexample | None = None
    for laws in points:
        found = evaluate(law, laws)
        if best is None or found.tv > best.tv:
            best = found
    assert best is not None
    method = f"exact search over the grid 1/{den} of the simplex (lower bound, attained)"
    lower, upper, certified = best.tv, Fraction(1), False
    if not certify:
        return WorstCase(n, lower, upper, False, method + "; upper bound TV <= 1 (trivial)", best)
    lo, hi, note = lower, Fraction(1), ""  # sup TV >= lo (attained or z3-witnessed); sup TV <= hi
    target = lower
    for _ in range(steps):
        verdict, point, detail = _certify(law, n, target, rlimit)
        if verdict in (Verdict.PROVED, Verdict.VACUOUS):
            hi, certified = target, True
        elif verdict == Verdict.REFUTED and point is not None:
            lo = target  # a real point exceeds target
            found = evaluate(law, point)
            if found.tv > best.tv:
                best = found
            lo = max(lo, best.tv)
        else:
            note = f"; z3 stopped: {detail}"
            break
        if hi == best.tv:
            break
        target = (lo + hi) / 2
    lower, upper = best.tv, hi
    if certified:
        method += (f"; upper bound certified by z3 (TV > {upper} unsatisfiable over the real simplex)"
                   + ("" if upper == lower else f"; z3 saw points above {lo}"))
    else:
        method += f"; upper bound not certified (trivial TV <= 1){note}"
    return WorstCase(n, lower, upper, certified, method, best)
