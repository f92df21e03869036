"""The one place a verdict is decided: from all the evidence gathered for a rule's obligations.

A claim is a list of :class:`Goal` s (for a step rule: well-formedness, the acceptance test's law, the
output law); each goal is a conjunction of :class:`~specproof.proofs.engine.results.Obligation` s, the
evidence an engine produced for it.  ``checks`` are cross-checks (a bounded z3 check beside an
every-``n`` proof): they cannot widen the scope, but a failed one still counts.  ``witness`` is an
exact counterexample, already re-evaluated in exact rationals.  :func:`decide`, in order:

1. a witness, or any REFUTED obligation: REFUTED when a witness exists, else INCONCLUSIVE (a solver
   counter-model that did not survive exact re-evaluation is not a refutation);
2. any VACUOUS obligation: VACUOUS;  3. a goal with no evidence, or any INCONCLUSIVE: INCONCLUSIVE;
4. everything PROVED: BOUNDED when some goal rests on a bounded check (scope: its sizes), else
   PROVED for every ``n``; obligations whose basis is an assumption are listed, with their source.

No engine returns a verdict of its own; :func:`settle` re-derives the verdict of a result that a
structured prover assembled from its obligations.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from specproof.proofs.engine.results import Assumption, Basis, Counterexample, Obligation, ProofResult, Verdict

__all__ = ["Goal", "Decision", "decide", "settle", "EVERY_N"]

EVERY_N = "every n"


@dataclass(frozen=True)
class Goal:
    """One component of a claim; ``sizes`` names the sizes a bounded route checked (e.g. ``"2..4"``)."""

    name: str
    obligations: tuple[Obligation, ...]
    sizes: str = ""


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    scope: str
    assumptions: tuple[Assumption, ...]
    reason: str


def _names(obligations: Iterable[Obligation]) -> str:
    return ", ".join(f"{o.name} ({o.detail})" if o.detail else o.name for o in obligations)


def decide(goals: Sequence[Goal], *, witness: Counterexample | None = None,
           checks: Sequence[Obligation] = (), every_size: str = EVERY_N) -> Decision:
    """Verdict, scope, assumptions and reason from all the evidence (rules in the module docstring).

    ``every_size`` words the scope of a proof for every size (a structured prover's own ``n``)."""
    every = [o for g in goals for o in g.obligations] + list(checks)
    refuted = [o for o in every if o.verdict == Verdict.REFUTED]
    if witness is not None:
        return Decision(Verdict.REFUTED, f"n = {len(witness.p)} (exact witness)", (),
                        f"refuted: {_names(refuted)}" if refuted else "exact witness")
    if refuted:
        return Decision(Verdict.INCONCLUSIVE, "none", (),
                        f"refuted by a solver but no exact witness survived re-evaluation: {_names(refuted)}")
    vacuous = [o for o in every if o.verdict == Verdict.VACUOUS]
    if vacuous:
        return Decision(Verdict.VACUOUS, "none", (), f"assumptions unsatisfiable: {_names(vacuous)}")
    empty = [g.name for g in goals if not g.obligations]
    if not goals or empty:
        return Decision(Verdict.INCONCLUSIVE, "none", (),
                        f"no evidence for: {', '.join(empty) or 'any component'}")
    open_ = [o for o in every if o.verdict != Verdict.PROVED]
    if open_:
        return Decision(Verdict.INCONCLUSIVE, "none", (), f"not settled: {_names(open_)}")
    assumptions = tuple(dict.fromkeys(Assumption(o.statement or o.name, o.source or "unstated")
                                      for o in every if o.basis == Basis.ASSUMPTION))
    bounded = [g for g in goals if any(o.basis == Basis.BOUNDED for o in g.obligations)]
    if bounded:
        scope = f"{_common_sizes([g.sizes or 'some sizes' for g in bounded])} (bounded)"
        return Decision(Verdict.BOUNDED, scope, assumptions,
                        f"checked only for those sizes: {', '.join(g.name for g in bounded)}")
    scope = every_size if not assumptions else f"{every_size}, under {len(assumptions)} assumption(s)"
    return Decision(Verdict.PROVED, scope, assumptions, "")


def _common_sizes(sizes: list[str]) -> str:
    """``"n = 2..3"`` for sizes ``"2..4"`` and ``"2..3"`` (every goal holds up to the smallest upper end);
    other wordings are joined."""
    ranges = [re.fullmatch(r"(\d+)(?:\.\.(\d+))?", s) for s in sizes]
    if all(ranges):
        lo = max(int(m.group(1)) for m in ranges)  # type: ignore[union-attr]
        hi = min(int(m.group(2) or m.group(1)) for m in ranges)  # type: ignore[union-attr]
        return f"n = {lo}..{hi}" if hi > lo else f"n = {hi}"
    return " and ".join(sorted(set(sizes)))


def settle(result: ProofResult) -> ProofResult:
    """Re-derive a structured prover's verdict with :func:`decide`.

    Its obligations are one goal; its counterexample is the witness, except for a theorem (whose
    counterexample is part of its statement).  When the prover itself reported PROVED for every size (``n``
    starting with ``all``), its bounded obligations are cross-checks; otherwise they are the goal's
    evidence and the scope is ``n``."""
    obligations = tuple(result.obligations)
    claims_all = result.verdict == Verdict.PROVED and result.n.startswith("all")
    bounded = tuple(o for o in obligations if o.basis == Basis.BOUNDED)
    main = tuple(o for o in obligations if o.basis != Basis.BOUNDED) if claims_all and \
        len(bounded) < len(obligations) else obligations
    checks = bounded if main is not obligations else ()
    sizes = result.n.split(" (")[0]  # the prover's own words on n, without its commentary
    # a theorem's counterexample is part of what it states (e.g. "greedy is not a sampling rule")
    witness = None if result.claim == "theorem" else result.counterexample
    decision = decide([Goal(result.rule, main, sizes=sizes)], witness=witness, checks=checks,
                      every_size=EVERY_N if result.n == "all" else sizes)
    reason = decision.reason if decision.verdict != Verdict.PROVED else ""
    if result.reason and decision.verdict not in (Verdict.PROVED, Verdict.BOUNDED):
        reason = f"{result.reason}; {reason}" if reason and reason not in result.reason else result.reason
    return dataclasses.replace(result, verdict=decision.verdict, scope=decision.scope,
                               assumptions=decision.assumptions, reason=reason)
