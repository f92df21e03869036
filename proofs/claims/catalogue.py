"""The catalogue of verifier rules with their expected verdicts, and user rules.

:func:`catalogue` lists one :class:`CatalogueEntry` per rule: every registered
:class:`~specproof.proofs.laws.step_rules.StepRule` (so the exact reference evaluates the very definition that
is proved), then the rules with other structure (sampler-match, block verification and its
early-break misimplementation, recursive rejection sampling, SpecTr, drafts from ``r``, processors).
An ``exact`` claim expects PROVED, a ``not-exact`` claim REFUTED.

User rules
----------
Write a rule in a Python file using only :class:`~specproof.proofs.arith.interface.Arith` operations (``ar.add``,
``ar.minimum``, ``ar.safe_div``, ``ar.relu``, ...) and wrap it in a ``StepRule``::

    # my_rule.py
    from specproof.proofs import StepRule

    def acceptance(ar, p, q):            # A(x): probability that a drafted x is accepted
        return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))

    def residual_weight(ar, p, q):       # unnormalised law of the correction token
        return ar.relu(ar.sub(p, q))

    my_rule = StepRule(name="my-rule", claim="exact", description="...",
                       acceptance=acceptance, residual_weight=residual_weight)

then ``specproof prove --rule my_rule.py:my_rule`` (or :func:`prove_rule` with
:func:`load_user_rule`).  The file is imported, and each rule function called exactly once on
symbolic opaque values, only inside a child process (:mod:`.child_trace`); the calls are recorded as
a graph (:mod:`specproof.proofs.arith.graph`) that every engine evaluates instead of the rule's code.
Only Arith operations work on the values (:mod:`.opaque`), division only as ``ar.safe_div``.  A name
that is a catalogue name up to Unicode confusables is refused (:mod:`.rule_names`).  A :class:`CatalogueEntry` with only a ``prove``
is refused (its own ``prove`` is not a proof specproof can check); one with a ``step_rule`` is proved
as that rule.

:func:`prove_entry` runs one entry under the settings' time budget (a child process).  Entries with
other structure return the verdict :func:`~specproof.proofs.engine.verdicts.settle` derives from their
prover's obligations, whoever calls them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

from specproof.proofs.arith.interface import Arith
from specproof.proofs.laws.block import Tables, block_continued_law, block_target_law
from specproof.errors import SpecproofInputError
from specproof.proofs.arith.graph import Graph
from specproof.proofs.engine.isolation import run_with_budget
from specproof.proofs.claims.opaque import RuleUsageError, trace_rule, traced_rule
from specproof.proofs.claims.rule_names import check_rule_name
from specproof.proofs.engine.results import DEFAULT_TIMEOUT, ProofResult
from specproof.proofs.laws.processors import PLACEMENTS, PROCESSORS, draft_from_r_law, processed_law
from specproof.proofs.claims.pipeline import Settings, prove_step_rule, refutation
from specproof.proofs.laws.step_rules import StepRule, step_rules
from specproof.proofs.engine.verdicts import settle
from specproof.proofs.engine.counterexamples import PairLaw
from specproof.proofs.claims.structured import (BLOCK_CHECK_VECTOR, prove_block, prove_processor_both_sides, prove_recursive_rejection,
                         prove_sampler_match, prove_spectr)

__all__ = ["CatalogueEntry", "catalogue", "get_entry", "step_rule_entry", "prove_rule", "prove_all",
           "prove_entry", "load_user_rule", "resolve_rule", "STEP_RULE_SEEDS"]

F = Fraction
STEP_RULE_SEEDS: dict[str, tuple[dict[str, tuple[Fraction, ...]], ...]] = {
    "resample-from-target": ({"p": (F(1, 2), F(1, 2)), "q": (F(1), F(0))},),
    "top-k-accept": ({"p": (F(1, 2), F(3, 10), F(1, 5)), "q": (F(1, 5), F(3, 10), F(1, 2))},),
    "greedy": ({"p": (F(2, 3), F(1, 3)), "q": (F(1, 2), F(1, 2))},),
}
"""The check vectors of algorithms.md, tried before any grid search."""


@dataclass(frozen=True)
class CatalogueEntry:
    """One rule: its claim and how to prove or refute it (``prove(settings) -> ProofResult``)."""

    name: str
    claim: str
    description: str
    source: str
    prove: Callable[[Settings], ProofResult]
    step_rule: StepRule | None = None
    user: bool = False
    trace: Graph | None = None


def step_rule_entry(rule: StepRule, seeds: tuple[Mapping[str, Any], ...] = (), *, user: bool = False,
                    trace: Graph | None = None) -> CatalogueEntry:
    """A catalogue entry for a single-step rule.  A user-written rule is traced once (here, unless its
    ``trace`` comes from a child process) and every engine then evaluates the trace, never its code."""
    if user:
        trace = trace_rule(rule) if trace is None else trace
        rule = traced_rule(rule, trace)
    return CatalogueEntry(rule.name, rule.claim, rule.description, rule.source,
                          lambda settings: prove_step_rule(rule, settings, seeds=seeds), rule, user, trace)


def _refute(name: str, law: PairLaw, seeds: tuple[Mapping[str, Any], ...] = (), *, sizes: tuple[int, ...] = (2, 3),
            certify: bool = True, notes: tuple[str, ...] = (), drift_sizes: tuple[int, ...] = (2, 3),
            drift_caps: tuple[int, int] = (2500, 1000)) -> Callable[[Settings], ProofResult]:
    def prove(settings: Settings) -> ProofResult:
        return refutation(name, "not-exact", law, settings, time.perf_counter(), seeds=seeds, sizes=sizes,
                          certify=certify, notes=notes, drift_sizes=drift_sizes, drift_caps=drift_caps)
    return prove


def _early_break_law() -> PairLaw:
    k = BLOCK_CHECK_VECTOR["k"]

    def output(ar: Arith, laws: Mapping[str, Any]) -> Any:
        return block_continued_law(ar, Tables.context_free(laws["p"], laws["q"], k), early_break=True)

    def target(ar: Arith, laws: Mapping[str, Any]) -> Any:
        return block_target_law(ar, Tables.context_free(laws["p"], laws["q"], k))

    def tables(laws: Mapping[str, Any]) -> dict[str, Any]:
        t = Tables.context_free(laws["p"], laws["q"], k)
        return {"tables": {"vocab": t.vocab, "k": t.k, "target": dict(t.target), "draft": dict(t.draft)}}

    return PairLaw("block-early-break", ("p", "q"), output, target, params={"k": k}, extra=tables)


def _draft_from_r_law() -> PairLaw:
    return PairLaw("draft-from-r", ("p", "q", "r"), lambda ar, L: draft_from_r_law(ar, L["p"], L["q"], L["r"]),
                   lambda ar, L: L["p"])


def _processor_law(processor: str, placement: str) -> PairLaw:
    proc = PROCESSORS[processor]
    return PairLaw(f"processor-{placement}:{processor}", ("p", "q"),
                   lambda ar, L: processed_law(ar, L["p"], L["q"], proc, placement)[0],
                   lambda ar, L: processed_law(ar, L["p"], L["q"], proc, placement)[1],
                   params={"processor": processor, "placement": placement})


_PLACEMENT_TEXT = {
    "both-sides": "accept and correct with (P(p), P(q)); drafts from P(q)",
    "target-only": "accept and correct with (P(p), raw q) while drafts follow P(q)",
    "draft-only": "accept and correct with (raw p, P(q)); target is P(p)",
}


def _structured_entries() -> list[CatalogueEntry]:
    cv = BLOCK_CHECK_VECTOR
    entries = [
        CatalogueEntry("sampler-match", "exact", "draw y ~ p, accept iff x == y, emit y either way",
                       "public thread (algorithms.md section 6)", prove_sampler_match),
        CatalogueEntry("block", "exact", "block verification: weights w_i, stop probabilities h_i, "
                       "tau = max{i : eta_i <= h_i}", "Sun et al. 2024", prove_block),
        CatalogueEntry("block-early-break", "not-exact", "block verification that stops at the first failing h_i",
                       "misimplementation (algorithms.md section 3)",
                       _refute("block-early-break", _early_break_law(), ({"p": cv["p"], "q": cv["q"]},),
                               sizes=(2,), certify=False, drift_sizes=(2,), drift_caps=(400, 400),
                               notes=("worst case: z3 is not asked to certify (nonlinear with nested "
                                      "divisions; it exceeds any practical rlimit)",))),
        CatalogueEntry("rrs-with-replacement", "exact", "recursive rejection sampling, k i.i.d. drafts",
                       "SpecInfer (Miao et al. 2024)", lambda s: prove_recursive_rejection(s, replacement=True)),
        CatalogueEntry("rrs-without-replacement", "exact", "recursive rejection sampling, drafts without "
                       "replacement (q renormalised without the rejected draft)", "EAGLE-style multi-draft",
                       lambda s: prove_recursive_rejection(s, replacement=False)),
        CatalogueEntry("spectr-kseq", "exact", "SpecTr K-SEQ with rho solving 1 - (1-beta)^k = rho beta",
                       "Sun et al. 2023", prove_spectr),
        CatalogueEntry("draft-from-r", "not-exact", "drafts sampled from r, verified with q: "
                       "P = r min(1,p/q) + [1 - sum r min(1,p/q)] norm(max(0,p-q))",
                       "processed vs raw logits; bf16 draft sampling vs fp32 q",
                       _refute("draft-from-r", _draft_from_r_law())),
    ]
    for placement in PLACEMENTS:
        for processor in PROCESSORS:
            name = f"processor-{placement}:{processor}"
            if placement == "both-sides":
                prove = (lambda s, proc=processor: prove_processor_both_sides(s, proc))
                claim = "exact"
            else:
                prove = _refute(name, _processor_law(processor, placement))
                claim = "not-exact"
            entries.append(CatalogueEntry(name, claim, f"{processor}: {_PLACEMENT_TEXT[placement]}",
                                          "algorithms.md section 7", prove))
    # every caller (prove, report, bench) gets the verdict decide() derives from the obligations
    return [dataclasses.replace(e, prove=_settled(e.prove)) for e in entries]


def _settled(prove: Callable[[Settings], ProofResult]) -> Callable[[Settings], ProofResult]:
    return lambda settings: settle(prove(settings))


def catalogue() -> tuple[CatalogueEntry, ...]:
    """Every rule with its expected verdict: the registered step rules, then the structured ones."""
    steps = [step_rule_entry(rule, STEP_RULE_SEEDS.get(rule.name, ())) for rule in step_rules()]
    return tuple(steps + _structured_entries())


def get_entry(name: str) -> CatalogueEntry:
    """A catalogue entry by name; unknown names raise :class:`SpecproofInputError`."""
    entries = {e.name: e for e in catalogue()}
    if name not in entries:
        raise SpecproofInputError("rule", f"unknown rule {name!r}",
                                  f"choose one of: {', '.join(entries)}; or pass path/to/file.py:name")
    return entries[name]


def load_user_rule(spec: str, timeout: float = DEFAULT_TIMEOUT) -> CatalogueEntry:
    """``path/to/file.py:name`` -> the StepRule (or CatalogueEntry with a step rule) that file defines as
    ``name``, imported and traced in a child process within ``timeout`` seconds (:mod:`.child_trace`);
    this process never runs the file's code."""
    from specproof.proofs.claims.child_trace import trace_file  # it imports this module (CatalogueEntry)

    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise SpecproofInputError("--rule", f"{spec!r} is not PATH.py:NAME", "write e.g. my_rules.py:my_rule")
    traced = trace_file(path_text, name, spec, timeout)
    check_rule_name(traced["name"], traced["name_type"], spec, {e.name for e in catalogue()})
    for field in ("claim", "description", "source"):
        if traced[field] is None:
            raise SpecproofInputError("--rule", f"{spec}: {field} is not a string", f"pass {field}='...' as text")
    if traced["claim"] not in ("exact", "not-exact"):
        raise SpecproofInputError("--rule", f"{traced['name']}.claim is {traced['claim']!r}",
                                  "use 'exact' or 'not-exact'")
    graph: Graph = traced["graph"]
    placeholder = graph.function("acceptance")
    rule = StepRule(traced["name"], traced["claim"], traced["description"], placeholder,  # type: ignore[arg-type]
                    placeholder, source=traced["source"], tags=tuple(traced["tags"]))  # type: ignore[arg-type]
    return step_rule_entry(rule, user=True, trace=graph)


def _user_entry(obj: StepRule | CatalogueEntry, spec: str) -> CatalogueEntry:
    """A user's rule given in this process (the API): its name must be new and printable; a StepRule
    (or an entry's ``step_rule``) is traced once and proved by the pipeline.  A CatalogueEntry's own
    ``prove`` function is not a proof specproof can check, so an entry without a step rule is refused."""
    check_rule_name(obj.name, type(obj.name).__name__, spec, {e.name for e in catalogue()})
    if obj.claim not in ("exact", "not-exact"):
        raise SpecproofInputError("--rule", f"{obj.name}.claim is {obj.claim!r}", "use 'exact' or 'not-exact'")
    rule = obj if isinstance(obj, StepRule) else obj.step_rule
    if rule is None:
        raise SpecproofInputError("--rule", f"{spec} is a CatalogueEntry with its own prove function, which "
                                  "specproof cannot check", "define the rule as a StepRule(...)")
    return step_rule_entry(dataclasses.replace(rule, name=obj.name, claim=obj.claim), user=True)


def resolve_rule(rule: str | StepRule | CatalogueEntry, timeout: float = DEFAULT_TIMEOUT) -> CatalogueEntry:
    """A catalogue name, ``path.py:name`` (traced in a child within ``timeout`` seconds), a StepRule or
    a CatalogueEntry as a CatalogueEntry."""
    if isinstance(rule, CatalogueEntry):
        if rule.user:
            return rule
        official = rule.step_rule is None or any(rule.step_rule is r for r in step_rules())
        if official and rule.name in {e.name for e in catalogue()}:
            return get_entry(rule.name)  # the catalogue's own entry: its prover, not a look-alike's
        return _user_entry(rule, rule.name)
    if isinstance(rule, StepRule):
        if any(rule is r for r in step_rules()):
            return step_rule_entry(rule, STEP_RULE_SEEDS.get(rule.name, ()))
        return _user_entry(rule, rule.name)
    if isinstance(rule, str) and rule.rpartition(":")[0].endswith(".py"):
        return load_user_rule(rule, timeout)
    if isinstance(rule, str):
        return get_entry(rule)
    raise SpecproofInputError("rule", f"{type(rule).__name__} is not a rule", "pass a name, StepRule or CatalogueEntry")


def prove_rule(rule: str | StepRule | CatalogueEntry, settings: Settings = Settings()) -> ProofResult:
    """Prove or refute one rule: a catalogue name, ``path.py:name``, a StepRule or a CatalogueEntry."""
    return prove_entry(resolve_rule(rule, settings.timeout or DEFAULT_TIMEOUT), settings)


def _crash(entry: CatalogueEntry) -> Callable[[str], BaseException]:
    def report(what: str) -> BaseException:
        if entry.user:
            first = what.strip().splitlines()[0] if what.strip() else what
            return RuleUsageError(f"rule {entry.name!r}", f"proving it failed: {first}",
                                  "the rule must return values built with Arith operations wherever p and q are laws "
                                  "(never raise or exit)")
        return RuntimeError(f"proving {entry.name} failed in its process: {what}")
    return report


def prove_entry(entry: CatalogueEntry, settings: Settings = Settings()) -> ProofResult:
    """One entry under the settings' time budget (user rules: every error is a usage error)."""
    def run() -> ProofResult:
        try:
            result = entry.prove(settings)
        except SpecproofInputError:
            raise
        except Exception as err:  # a user rule's code reached an engine in a way no guard caught
            if not entry.user:
                raise
            raise _crash(entry)(f"{type(err).__name__}: {err}") from None
        return result

    if settings.timeout is None:
        result = run()
    else:
        result = run_with_budget(entry.name, entry.claim, run, settings.timeout, settings.rlimit, _crash(entry))
    if result.claim != entry.claim:
        raise AssertionError(f"{entry.name}: prover reported claim {result.claim!r}, entry says {entry.claim!r}")
    return result


def prove_all(settings: Settings = Settings()) -> list[ProofResult]:
    """Every catalogue rule, in catalogue order."""
    return [prove_entry(entry, settings) for entry in catalogue()]
