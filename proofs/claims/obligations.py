"""A single-step rule as its obligations, each with the evidence the engines found for it.

:func:`step_evidence` turns a :class:`~specproof.proofs.laws.step_rules.StepRule` into three goals (see
:mod:`.verdicts`), every one always attempted, so no component of the rule can be skipped:

* **well-formed** - for every ``x`` and every input law: ``0 <= A(x) <= 1`` where ``q(x) > 0``,
  ``w(x) >= 0``, and every argument of ``ar.log`` in ``A``, ``w`` or the test is ``>= 0`` (where the
  z3 reading of logarithms is the real one).  Every ``n``: z3 on a generic coordinate (``p(x), q(x)`` range over ``[0, 1]``,
  any other sum is an arbitrary real).  Otherwise bounded: z3 over the simplex, ``n = 2..4``.
  Witness: an exact point that violates it, with the TV of the clamped rule (``A`` clamped to
  ``[0, 1]``, ``w`` to ``w >= 0``);
* **acceptance law** (rules with an ``acceptance_test``) - ``P_u(test) = A`` for every ``n``
  (:func:`~specproof.proofs.engine.acceptance_law.measure_obligation`); when that is not proved the rule
  that runs has ``A := P_u(test)``, computed exactly, and is searched for a witness;
* **output law** - ``output == p``.  Every ``n``: the every-size composition
  (:func:`~specproof.proofs.engine.every_size.prove_every_size`; its obligations, not its verdict), with
  the direct z3 checks ``n = 2..4`` and the K-token check as cross-checks.  Otherwise bounded: the
  direct z3 check over ``n = 2..4``.  Witness: exact counterexample search (always run), or a z3
  counter-model that survives exact re-evaluation.

The every-``n`` route's lemmas are shown when the route is abandoned, but they are lemmas of a
proof technique, not of the claim (``w = 2 max(0, p - q)`` is exact although ``q A + w = p`` fails),
so only the route that is taken is the goal's evidence.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping

import z3

from specproof.proofs.engine.acceptance_law import TestLawUnavailable, measure_obligation, running_rule
from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.engine.every_size import GenericCoordinateArith, direct_check, prove_every_size
from specproof.proofs.engine.results import Basis, Counterexample, Obligation, Verdict
from specproof.proofs.laws.step_rules import StepRule, step_law
from specproof.proofs.engine.counterexamples import PairLaw, evaluate, find_counterexample, project_to_simplex, simplex_grid
from specproof.proofs.engine.solvers import check_z3, model_fractions
from specproof.proofs.claims.theorems import sequence_exactness
from specproof.proofs.engine.verdicts import Goal

__all__ = ["StepEvidence", "step_evidence", "step_pair_law", "BOUNDED_SIZES", "TEST_SEEDS"]

BOUNDED_SIZES = (2, 3, 4)
WIDE_N = 5
"""Beyond the bounded sizes, the exact witness search also tries ``n = 5`` (coarse grids) for rules
without an every-``n`` proof: a rule that is wrong only from ``n = 5`` on is then REFUTED."""
F = Fraction
TEST_SEEDS: tuple[dict[str, tuple[Fraction, ...]], ...] = (
    {"p": (F(1, 2), F(1, 2)), "q": (F(1), F(0))}, {"p": (F(1), F(0)), "q": (F(1, 2), F(1, 2))},
    {"p": (F(1, 3), F(2, 3)), "q": (F(2, 3), F(1, 3))}, {"p": (F(1, 4), F(3, 4)), "q": (F(3, 4), F(1, 4))})
"""Points tried first when looking for a witness against an acceptance test's law."""
_WIDE_LAWS = ((F(1, 5),) * 5, (F(2, 5), F(1, 5), F(1, 5), F(1, 10), F(1, 10)),
              (F(1, 10), F(1, 10), F(1, 5), F(1, 5), F(2, 5)))
WIDE_SEEDS = tuple({"p": a, "q": b} for a in _WIDE_LAWS for b in _WIDE_LAWS if a != b)
"""Laws on ``n = 5`` with five distinct positive entries' ranks, tried before the coarse ``n = 5`` grid
(whose entries ``k/4`` leave some token at 0)."""


@dataclass
class StepEvidence:
    """Goals, cross-checks, the witness (with the law it refutes, for drift) and notes."""

    goals: list[Goal] = field(default_factory=list)
    checks: list[Obligation] = field(default_factory=list)
    shown: list[Obligation] = field(default_factory=list)
    witness: Counterexample | None = None
    witness_law: PairLaw | None = None
    witness_kind: str = ""
    notes: list[str] = field(default_factory=list)


def step_pair_law(rule: StepRule) -> PairLaw:
    """A step rule's output law against the target ``p``."""
    return PairLaw(rule.name, ("p", "q"), lambda ar, laws: step_law(ar, rule, laws["p"], laws["q"]).output,
                   lambda ar, laws: laws["p"])


def _bounded(obligation: Obligation) -> Obligation:
    return dataclasses.replace(obligation, basis=Basis.BOUNDED)


def _sizes() -> str:
    return f"{BOUNDED_SIZES[0]}..{BOUNDED_SIZES[-1]}"


# -- well-formedness ---------------------------------------------------------------------------------
def _vector(value: Any, n: int) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,) * n


def violation(rule: StepRule, p: tuple[Fraction, ...], q: tuple[Fraction, ...]) -> str:
    """Where ``rule`` is not a sampling rule at exact ``(p, q)`` (empty when it is one)."""
    ar = ExactArith()
    accept, weight = _vector(rule.acceptance(ar, p, q), len(p)), _vector(rule.residual_weight(ar, p, q), len(p))
    for x, (a, w, qx) in enumerate(zip(accept, weight, q)):
        if qx > 0 and not 0 <= a <= 1:
            return f"A({x}) = {a} is not a probability (q({x}) = {qx})"
        if w < 0:
            return f"w({x}) = {w} < 0"
    return ""


def clamped(rule: StepRule) -> StepRule:
    """``A`` clamped to ``[0, 1]`` and ``w`` to ``w >= 0``: what a runtime's sampler would do."""
    return dataclasses.replace(
        rule, name=f"{rule.name} (clamped)", acceptance_test=None,
        acceptance=lambda ar, p, q: ar.clamp(rule.acceptance(ar, p, q), ar.zero, ar.one),
        residual_weight=lambda ar, p, q: ar.relu(rule.residual_weight(ar, p, q)))


def _wf_witness(rule: StepRule, models: Iterable[Mapping[str, tuple[Fraction, ...]]]) -> Counterexample | None:
    """The first grid level (``n = 2, 3``; ``den = 1..6``) with a violation gives its point of largest
    clamped TV (ties: first in order); else a rationalised z3 model that violates it."""
    law = step_pair_law(clamped(rule))
    levels = [list(_grid([(n, den)])) for n, dens in ((2, range(1, 7)), (3, range(1, 7)), (WIDE_N, range(1, 4)))
              for den in dens] + [list(models)]
    for points in levels:
        best: Counterexample | None = None
        for laws in points:
            where = violation(rule, laws["p"], laws["q"])
            if where:
                found = evaluate(law, laws)
                if best is None or found.tv > best.tv:
                    best = dataclasses.replace(found, extra={**found.extra, "not_a_sampling_rule": where})
        if best is not None:
            return best
    return None


def _grid(n_den: Iterable[tuple[int, int]]) -> Iterable[dict[str, tuple[Fraction, ...]]]:
    for n, den in n_den:
        grid = simplex_grid(n, den)
        for p in grid:
            for q in grid:
                yield {"p": p, "q": q}


def _wf_every_n(rule: StepRule, rlimit: int) -> list[Obligation] | None:
    ar = GenericCoordinateArith()
    p, q, u = ar.p, ar.q, ar.real("u")
    try:
        accept, weight = rule.acceptance(ar, p, q), rule.residual_weight(ar, p, q)
        if rule.acceptance_test is not None:
            rule.acceptance_test(ar, u, p, q)
    except TypeError:
        return None
    domain = [p >= 0, p <= 1, q >= 0, q <= 1, u >= 0, u < 1]
    method = "z3 pointwise, generic coordinate"
    return [check_z3("W1 (acceptance is a probability)", "0 <= A(x) <= 1 wherever q(x) > 0, every n", ar,
                     domain + [q > 0], z3.And(accept >= 0, accept <= 1), rlimit=rlimit, method=method).obligation,
            check_z3("W2 (residual weight is non-negative)", "w(x) >= 0, every n", ar, domain, weight >= 0,
                     rlimit=rlimit, method=method).obligation,
            check_z3("W3 (logarithms are defined)", "every argument of ar.log is >= 0, every n", ar, domain,
                     ar.all_of([a >= 0 for a in ar.log_arguments]), rlimit=rlimit, method=method).obligation]


def _wf_bounded(rule: StepRule, rlimit: int) -> tuple[list[Obligation], list[dict[str, tuple[Fraction, ...]]]]:
    obligations, models = [], []
    for n in BOUNDED_SIZES:
        ar = Z3Arith()
        p, q = ar.vector("p", n), ar.vector("q", n)
        statement = (f"0 <= A(x) <= 1 where q(x) > 0, w(x) >= 0 and every log argument >= 0, over {n} "
                     "symbolic tokens")
        u = ar.real("u")
        try:
            accept = _vector(rule.acceptance(ar, p, q), n)
            weight = _vector(rule.residual_weight(ar, p, q), n)
            if rule.acceptance_test is not None:
                rule.acceptance_test(ar, u, p, q)
        except TypeError as err:
            obligations.append(Obligation(f"W n={n}", statement, Verdict.INCONCLUSIVE, "z3 direct", 0.0, str(err),
                                          basis=Basis.BOUNDED))
            continue
        goal = ar.all_of([z3.Implies(qx > 0, z3.And(a >= 0, a <= 1)) for a, qx in zip(accept, q)]
                         + [w >= 0 for w in weight] + [a >= 0 for a in ar.log_arguments])
        check = check_z3(f"W n={n}", statement, ar, [ar.simplex(p), ar.simplex(q), u >= 0, u < 1], goal,
                         rlimit=rlimit, method="z3 direct")
        obligations.append(_bounded(check.obligation))
        if check.model is not None:
            values = model_fractions(check.model, p + q)
            models.append({"p": project_to_simplex(values[:n]), "q": project_to_simplex(values[n:])})
    return obligations, models


def _well_formed(rule: StepRule, rlimit: int, ev: StepEvidence) -> None:
    every = _wf_every_n(rule, rlimit)
    if every is not None and all(o.verdict == Verdict.PROVED for o in every):
        ev.goals.append(Goal("well-formed", tuple(every)))
        return
    ev.shown += every or []
    bounded, models = _wf_bounded(rule, rlimit)
    witness = _wf_witness(rule, models)
    kept, sizes = _proved_prefix(bounded, ev)
    obligations = tuple(kept)
    if witness is not None:
        obligations += (Obligation("W (exact witness)", "0 <= A <= 1 where q > 0 and w >= 0", Verdict.REFUTED,
                                   "exact evaluation", 0.0, f"{witness.extra['not_a_sampling_rule']}; not a "
                                   f"sampling rule; clamped, TV = {witness.tv}"),)
        _set_witness(ev, witness, step_pair_law(clamped(rule)), "not a sampling rule")
    ev.goals.append(Goal("well-formed", obligations, sizes=sizes))


_WITNESS_RANK = {"not a sampling rule": 0, "the acceptance test's law": 1, "output law": 1}
"""A law witness (the output law, or the acceptance test's law) is preferred to a well-formedness one."""


def _set_witness(ev: StepEvidence, witness: Counterexample, law: PairLaw | None, kind: str) -> None:
    """Keep the most telling witness: a law witness before a well-formedness one, then the largest TV
    (the first found on a tie)."""
    if ev.witness is None or (_WITNESS_RANK[kind], witness.tv) > (_WITNESS_RANK[ev.witness_kind], ev.witness.tv):
        ev.witness, ev.witness_law, ev.witness_kind = witness, law, kind


# -- acceptance test ---------------------------------------------------------------------------------
def _acceptance_law(rule: StepRule, rlimit: int, seeds: Iterable[Mapping[str, Any]], ev: StepEvidence) -> bool:
    """Adds the goal; True when the rule that runs is the rule with acceptance ``A``."""
    if rule.acceptance_test is None:
        return True
    try:
        lemma = measure_obligation(rule, rlimit)
    except TypeError as err:
        lemma = Obligation(f"measure ({rule.name})", "P_u(test) = A for q(x) > 0", Verdict.INCONCLUSIVE,
                           "z3 pointwise, generic coordinate", 0.0, f"not interpretable: {err}")
    obligations: tuple[Obligation, ...] = (lemma,)
    if lemma.verdict != Verdict.PROVED:
        law = step_pair_law(running_rule(rule))
        found = find_counterexample(law, seeds=[*seeds, *TEST_SEEDS], sizes=(2, 3), dens=(1, 2, 3, 4), cap=400,
                                    skip=(TestLawUnavailable,))
        if found is None:
            ev.notes.append("acceptance test: no witness where its exact law could be computed (points where "
                            "P_u(test) is irrational or sympy cannot solve the test are skipped)")
        else:
            ar = ExactArith()
            found = dataclasses.replace(found, extra={
                **found.extra, "acceptance_test_law": running_rule(rule).acceptance(ar, found.p, found.q),
                "acceptance": _vector(rule.acceptance(ar, found.p, found.q), len(found.p))})
            obligations += (Obligation("acceptance test law (exact witness)",
                                       "the rule as run, A := P_u(test), reproduces p", Verdict.REFUTED,
                                       "exact measure of {u : test} (sympy) and exact evaluation", 0.0,
                                       f"TV = {found.tv}"),)
            _set_witness(ev, found, None, "the acceptance test's law")
    ev.goals.append(Goal("acceptance law", obligations))
    return lemma.verdict == Verdict.PROVED


# -- output law --------------------------------------------------------------------------------------
def _direct(rule: StepRule, rlimit: int, hint: bool, ev: StepEvidence) -> list[Obligation]:
    law, out = step_pair_law(rule), []
    for n in BOUNDED_SIZES:
        ob, refuted = direct_check(rule, n, rlimit=rlimit, hint=hint)
        if refuted is not None:
            found = evaluate(law, {"p": project_to_simplex(refuted.p), "q": project_to_simplex(refuted.q)})
            if found.tv > 0:
                _set_witness(ev, found, law, "output law")
            else:
                ob = dataclasses.replace(ob, verdict=Verdict.INCONCLUSIVE,
                                         detail=ob.detail + "; the rationalised model is not a counterexample")
        out.append(_bounded(ob))
    return out


def _output_law(rule: StepRule, rlimit: int, seeds: Iterable[Mapping[str, Any]], runs_as_stated: bool,
                ev: StepEvidence) -> None:
    verdict_ignored, route, _ = prove_every_size(rule, rlimit=rlimit)
    del verdict_ignored  # an engine's verdict is not evidence; its obligations are
    every_n = bool(route) and all(o.verdict == Verdict.PROVED for o in route)
    law = step_pair_law(rule)
    found = find_counterexample(law, seeds=seeds, sizes=(2, 3))
    if found is None and not every_n:
        found = find_counterexample(law, seeds=WIDE_SEEDS, sizes=(WIDE_N,), dens=(1, 2, 3, 4))
    witness: tuple[Obligation, ...] = ()
    if found is not None:
        witness = (Obligation("counterexample", "output law != target law at an exact point", Verdict.REFUTED,
                              "exact evaluation", 0.0, f"TV = {found.tv}"),)
        if runs_as_stated:
            _set_witness(ev, found, law, "output law")
    if every_n:
        f1 = all(o.verdict == Verdict.PROVED for o in route if o.name.startswith("F1"))
        ev.checks += _direct(rule, rlimit, f1, ev) + [sequence_exactness(rule)]
        ev.goals.append(Goal("output law", tuple(route) + witness))
        return
    ev.shown += route
    ev.notes.append("every-n route not available: " + (
        ", ".join(f"{o.name}: {o.verdict.value}" for o in route if o.verdict != Verdict.PROVED) or
        "the rule is not expressible on a generic coordinate (ordering or sums inside A or w)"))
    if witness and runs_as_stated:  # refuted exactly: a bounded z3 check would add nothing
        ev.goals.append(Goal("output law", witness))
        return
    bounded, sizes = _proved_prefix(_direct(rule, rlimit, False, ev), ev)
    ev.goals.append(Goal("output law", tuple(bounded) + witness, sizes=sizes))


def _proved_prefix(checks: list[Obligation], ev: StepEvidence) -> tuple[list[Obligation], str]:
    """The bounded route's scope: sizes up to the first that z3 did not settle (shown, not evidence);
    with any REFUTED check, or none PROVED, every check stays evidence."""
    if any(o.verdict == Verdict.REFUTED for o in checks) or checks[0].verdict != Verdict.PROVED:
        return checks, _sizes()
    kept = list(itertools.takewhile(lambda o: o.verdict == Verdict.PROVED, checks))
    last = BOUNDED_SIZES[len(kept) - 1]
    for ob in checks[len(kept):]:
        ev.shown.append(ob)
        ev.notes.append(f"bounded scope stops at n = {last}: {ob.name} not settled ({ob.detail})")
    return kept, f"{BOUNDED_SIZES[0]}..{last}" if len(kept) > 1 else str(last)


def step_evidence(rule: StepRule, rlimit: int, seeds: Iterable[Mapping[str, Any]] = ()) -> StepEvidence:
    """Every goal of ``rule`` with its evidence (see the module docstring)."""
    seeds = tuple(seeds)
    ev = StepEvidence()
    _well_formed(rule, rlimit, ev)
    runs_as_stated = _acceptance_law(rule, rlimit, seeds, ev)
    _output_law(rule, rlimit, seeds, runs_as_stated, ev)
    return ev
