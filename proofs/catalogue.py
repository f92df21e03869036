"""The catalogue of verifier rules with their expected verdicts, and user rules.

:func:`catalogue` lists one :class:`CatalogueEntry` per rule: every registered
:class:`~specproof.proofs.rules.StepRule` (so the exact reference evaluates the very definition that
is proved), then the rules with other structure (sampler-match, block verification and its
early-break misimplementation, recursive rejection sampling, SpecTr, drafts from ``r``, processors).
An ``exact`` claim expects PROVED, a ``not-exact`` claim REFUTED.

User rules
----------
Write a rule in a Python file using only :class:`~specproof.proofs.arith.Arith` operations (``ar.add``,
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
:func:`load_user_rule`).  The file is imported (its code runs).  A :class:`CatalogueEntry` with its own
``prove`` function is accepted too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

from .arith import Arith
from .backends.exact import ExactArith
from .block import Tables, block_continued_law, block_target_law
from .errors import SpecproofInputError
from .loading import import_python_file
from .outcomes import ProofResult, Verdict, solver_versions
from .processors import PLACEMENTS, PROCESSORS, draft_from_r_law, processed_law
from .provers import Settings, prove_step_rule, refutation
from .rules import StepRule, step_law, step_rules
from .search import PairLaw
from .structured import (BLOCK_CHECK_VECTOR, prove_block, prove_processor_both_sides, prove_recursive_rejection,
                         prove_sampler_match, prove_spectr)

__all__ = ["CatalogueEntry", "catalogue", "get_entry", "step_rule_entry", "prove_rule", "prove_all",
           "load_user_rule", "resolve_rule", "STEP_RULE_SEEDS"]

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


def step_rule_entry(rule: StepRule, seeds: tuple[Mapping[str, Any], ...] = ()) -> CatalogueEntry:
    """A catalogue entry for a single-step rule (registered or user-written)."""
    return CatalogueEntry(rule.name, rule.claim, rule.description, rule.source,
                          lambda settings: prove_step_rule(rule, settings, seeds=seeds), rule)


def _refute(name: str, law: PairLaw, seeds: tuple[Mapping[str, Any], ...] = (), *, sizes: tuple[int, ...] = (2, 3),
            certify: bool = True, notes: tuple[str, ...] = (), drift_sizes: tuple[int, ...] = (2, 3),
            drift_caps: tuple[int, int] = (2500, 1000)) -> Callable[[Settings], ProofResult]:
    def prove(settings: Settings) -> ProofResult:
        start = time.perf_counter()
        found = refutation(name, "not-exact", law, settings, start, seeds=seeds, sizes=sizes, certify=certify,
                           notes=notes, drift_sizes=drift_sizes, drift_caps=drift_caps)
        if found is not None:
            return found
        return ProofResult(name, "not-exact", Verdict.INCONCLUSIVE, "exact counterexample search",
                           ",".join(map(str, sizes)), time.perf_counter() - start, solver_versions(settings.rlimit),
                           reason="no counterexample on the searched grids (not a proof of exactness)")
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
    return entries


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


def load_user_rule(spec: str) -> CatalogueEntry:
    """``path/to/file.py:name`` -> the StepRule (or CatalogueEntry) that file defines as ``name``."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise SpecproofInputError("--rule", f"{spec!r} is not PATH.py:NAME", "write e.g. my_rules.py:my_rule")
    module = import_python_file(path_text, "--rule")
    candidates = sorted(k for k, v in vars(module).items() if isinstance(v, (StepRule, CatalogueEntry)))
    if not hasattr(module, name):
        raise SpecproofInputError("--rule", f"{path_text!r} defines no {name!r}",
                                  f"choose one of: {', '.join(candidates) or '(no StepRule in the file)'}")
    obj = getattr(module, name)
    if isinstance(obj, CatalogueEntry):
        return obj
    if isinstance(obj, StepRule):
        if obj.claim not in ("exact", "not-exact"):
            raise SpecproofInputError("--rule", f"{name}.claim is {obj.claim!r}", "use 'exact' or 'not-exact'")
        _smoke_test(obj, spec)
        return step_rule_entry(obj)
    raise SpecproofInputError("--rule", f"{name!r} in {path_text!r} is a {type(obj).__name__}, not a StepRule",
                              "wrap acceptance/residual_weight functions in specproof.proofs.StepRule(...)")


def _smoke_test(rule: StepRule, spec: str) -> None:
    """Evaluate a user rule once, exactly, so a broken definition is a usage error before any proof."""
    p, q = (F(1, 2), F(1, 4), F(1, 4)), (F(1, 4), F(3, 4), F(0))
    try:
        output = step_law(ExactArith(), rule, p, q).output
    except Exception as err:  # the user's code: any error is a usage error
        raise SpecproofInputError("--rule", f"evaluating {spec} on exact laws failed: {type(err).__name__}: {err}",
                                  "write acceptance and residual_weight with Arith operations only") from None
    if not (isinstance(output, tuple) and len(output) == len(p) and all(isinstance(x, F) for x in output)):
        raise SpecproofInputError("--rule", f"{spec} gives {output!r}, not a vector of exact rationals",
                                  "return vectors built with Arith operations from p and q")


def resolve_rule(rule: str | StepRule | CatalogueEntry) -> CatalogueEntry:
    """A catalogue name, ``path.py:name``, a StepRule or a CatalogueEntry as a CatalogueEntry."""
    if isinstance(rule, CatalogueEntry):
        return rule
    if isinstance(rule, StepRule):
        return step_rule_entry(rule, STEP_RULE_SEEDS.get(rule.name, ()))
    if isinstance(rule, str) and rule.rpartition(":")[0].endswith(".py"):
        return load_user_rule(rule)
    if isinstance(rule, str):
        return get_entry(rule)
    raise SpecproofInputError("rule", f"{type(rule).__name__} is not a rule", "pass a name, StepRule or CatalogueEntry")


def prove_rule(rule: str | StepRule | CatalogueEntry, settings: Settings = Settings()) -> ProofResult:
    """Prove or refute one rule: a catalogue name, ``path.py:name``, a StepRule or a CatalogueEntry."""
    entry = resolve_rule(rule)
    result = entry.prove(settings)
    if result.claim != entry.claim:
        raise AssertionError(f"{entry.name}: prover reported claim {result.claim!r}, entry says {entry.claim!r}")
    return result


def prove_all(settings: Settings = Settings()) -> list[ProofResult]:
    """Every catalogue rule, in catalogue order."""
    return [entry.prove(settings) for entry in catalogue()]
