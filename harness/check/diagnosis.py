"""The diagnosis of a FAIL: which runtime bug class the run's own evidence points to, in runtime words.

A check's findings say *what* differs (an event, a scenario, a position); a runtime engineer needs
*which mistake* makes it differ ("bonus token (position K+1) taken from the wrong row").  The
diagnosis is chosen from what the run observed, never from what a dtype or a scenario makes likely:

1. **Certain before statistical.**  Among certain findings, the one seen on the most rows wins (an
   injected ``u == 0`` flagging 18 of 512 rows explains more than one probability-0 token in 57,344
   rows).  A certain finding of the statistics is classified from the failing rows themselves
   (:class:`FailingCall`, kept by the driver): where the probability-0 token sits (a draft, the
   correction at position ``j <= K``, the bonus at ``K + 1`` after ``K`` accepted drafts) and whether
   another target row of the same round allows it (a row read at the wrong position) or none does
   (a law with mass on probability-0 tokens).  torch's float16 ``multinomial`` defect is named only
   when the run's draw record shows a float16 ``aten.multinomial`` and the token is one it drew.
   An injection finding is classified by the draw and the edge injected (a uniform of exactly 0).
2. **Statistical.**  A known incorrect rule is named when its exact law predicts the observed
   excess-set means within noise (its misfit, ``rows * sum KL`` over the excess sets, below the
   ``alpha`` quantile of the chi-square bound of Laurent and Massart 2000 for that many events; when
   several rules fit, the closest is named first and the others' classes as alternatives: a short run
   cannot tell apart rules whose laws agree on the excess sets it saw); else
   each finding is mapped to the class its family and position name (a correction floor, a tilt of
   every token, the bonus position ``K + 1``, another position) and the class with the most evidence
   (summed log e-values) wins.

Nothing here changes a verdict: the diagnosis explains a FAIL, the findings prove it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["BUG_CLASSES", "Diagnosis", "FailingCall", "diagnose", "classify_round_row"]

ZERO_TOKEN = "emitted a token of target probability 0 at its prefix"  # contracts.prepared.ZERO_TOKEN

# runtime bug class -> what the runtime did, in its own words
BUG_CLASSES: dict[str, str] = {
    "zero-draw-accepts": "a draw of exactly 0 accepts a probability-0 token (an acceptance test like u <= p/q "
                         "admits u == 0 where p(x) = 0)",
    "rejected-draft-emitted": "a rejected draft emitted: a draft token the target gives probability 0 is kept "
                              "(drafts after the first rejection kept, or an acceptance that ignores p(x) = 0)",
    "bonus-wrong-row": "bonus token (position K+1) taken from the wrong row: all K drafts accepted, then a token "
                       "the target's row K+1 rules out but another row of the round allows",
    "bonus-zero-mass": "bonus token (position K+1) drawn from a law with mass on tokens the target's row K+1 "
                       "gives probability 0",
    "correction-wrong-row": "correction token taken from the wrong target row: a token its own row rules out but "
                            "another row of the round allows (rows misaligned with the drafts, e.g. off by one)",
    "residual-zero-mass": "correction drawn from a residual with mass on tokens of target probability 0 (e.g. "
                          "clamp(p - q, min=tiny) renormalised)",
    "not-the-drafts": "tokens emitted after one that is not the draft: the output does not stop at the first "
                      "rejection",
    "multinomial-float16": "torch.multinomial in float16 on CPU picks a zero-weight token (torch's sampler, not "
                           "the rule; draw in float32)",
    "rejected-token-resampled-from-target": "rejected token resampled from the raw target p instead of the "
                                            "residual norm(max(0, p - q))",
    "top-choice-acceptance": "draft accepted only when it is the target's top choice (greedy or top-k acceptance) "
                             "instead of with probability min(1, p/q)",
    "lenient-acceptance": "acceptance more lenient than min(1, p/q) (drafts the target disfavours kept too often)",
    "ensemble-rule": "acceptance and correction mix the draft into the target (an ensemble rule), not min(1, p/q) "
                     "with the residual",
    "typical-acceptance": "typical acceptance (an entropy threshold) instead of min(1, p/q)",
    "correction-misses-residual": "correction token misses part of the residual max(0, p - q) (the residual taken "
                                  "from the wrong draft row, a stale buffer, or a reused uniform)",
    "every-token-tilted": "every token's law tilted the same way: a processor (temperature, top-k, top-p, min-p) "
                          "applied to one side only",
    "bonus-law": "bonus token (position K+1) drawn from another law than the target's row K+1 (the wrong row, or "
                 "a processor applied to the bonus row only)",
    "position-law": "the token law at one position of the round differs from the target's (its acceptance or its "
                    "correction)",
    "global-rng": "draws randomness the generator argument does not control (e.g. the global RNG)",
    "edge-breaks-contract": "an edge draw the generator can produce makes the verifier raise or break its output "
                            "contract",
    "zero-key-race": "a race key of exactly 0 (exponential draw) lets a zero-weight token win",
    "tiny-draw-key": "a key built from a uniform draw collapses at 0 and at its smallest values (e.g. -log(1 - u), "
                     "0 once 1 - u rounds to 1) and lets a token of weight 0 win: clamp the key, not the uniform",
    "unclassified": "a token the target rules out",
}

# the incorrect rules of the catalogue (proofs.laws.step_rules) -> their bug class
RULE_CLASSES = {"resample-from-target": "rejected-token-resampled-from-target", "top-k-accept": "top-choice-acceptance",
                "greedy": "top-choice-acceptance", "lenience": "lenient-acceptance", "ensemble": "ensemble-rule",
                "typical": "typical-acceptance", "canonical-le": "zero-draw-accepts"}


@dataclass
class FailingCall:
    """One target call in which a certain finding showed: enough to redo it bit for bit (the scenario's
    inputs ``batch`` and the generator ``seed``) and to see where it failed (``emitted``, the failing
    ``rows`` and their 1-based ``positions``)."""

    scenario: str
    label: str
    prepared: Any  # the PreparedScenario (arguments(batch, generator) rebuilds the target's inputs)
    batch: Any
    emitted: Any
    seed: int
    rows: np.ndarray
    positions: np.ndarray
    stream_row: int  # the stream's rows drawn before this call

    @property
    def k(self) -> int:
        return int(self.prepared.k)

    def inputs(self) -> tuple:
        """The target's arguments for this call, as fresh copies (generator seeded ``seed``)."""
        from specproof.harness.check.seeding import generator

        args = self.prepared.arguments(self.batch, generator(self.seed))
        return tuple(a.clone() if hasattr(a, "clone") and not _is_generator(a) else a for a in args)


def _is_generator(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Generator)


def classify_round_row(draft_ids: np.ndarray, target_probs: np.ndarray, emitted: np.ndarray,
                       multinomial_float16: bool = False) -> str:
    """The bug class of one batched row that emitted a probability-0 token: ``draft_ids [K]``,
    ``target_probs [K+1, V]`` (the rows the verifier was given), ``emitted [K+1]`` (-1 padded)."""
    k = int(draft_ids.shape[0])
    length = int((emitted >= 0).sum())
    for j in range(length):
        token = int(emitted[j])
        if j < length - 1 and j < k and token != int(draft_ids[j]):
            return "not-the-drafts"
        if target_probs[j, token] > 0:
            continue
        drafted = j < k and token == int(draft_ids[j])
        if drafted:
            return "rejected-draft-emitted"
        elsewhere = bool((target_probs[:, token] > 0).any())
        bonus = j == k
        if elsewhere:
            return "bonus-wrong-row" if bonus else "correction-wrong-row"
        if multinomial_float16:
            return "multinomial-float16"
        return "bonus-zero-mass" if bonus else "residual-zero-mass"
    return "unclassified"


@dataclass(frozen=True)
class Diagnosis:
    """The bug class the evidence points to, the finding that carries it, and why it was chosen."""

    bug_class: str
    finding: Any  # result.Finding
    why: str
    position: int | None = None
    k: int | None = None
    alternatives: tuple[str, ...] = ()  # other bug classes the run's evidence fits as well as ``bug_class``

    @property
    def words(self) -> str:
        if not self.alternatives:
            return BUG_CLASSES[self.bug_class]
        return ("either " + ", or ".join(BUG_CLASSES[c] for c in (self.bug_class, *self.alternatives))
                + " (each fits this run's evidence; more rows tell them apart)")

    def line(self) -> str:
        f = self.finding
        at = ""
        if self.position:
            at = f" at token position {self.position} of the round"
            if self.k is not None and self.position == self.k + 1:
                at += f" (the bonus position K+1, K = {self.k})"
        return f"Diagnosis: {self.words}; seen on scenario '{f.scenario}'{at}; {self.why}"

    def as_json(self) -> dict[str, Any]:
        return {"bug_class": self.bug_class, "alternatives": list(self.alternatives), "words": self.words,
                "why": self.why, "position": self.position, "k": self.k, "line": self.line()}


def _draws(result: Any) -> list[dict[str, Any]]:
    return list((result.injection or {}).get("draw_records", []))


def _multinomial_float16(result: Any) -> bool:
    """The run's own draw record shows a float16 torch.multinomial on CPU."""
    return any(d.get("op") == "aten.multinomial" and d.get("dtype") == "float16" and d.get("device") == "cpu"
               for d in _draws(result))


def _certain_rows(finding: Any) -> int:
    return int(round(finding.observed * finding.rows)) if finding.family != "rng-injection" else 0


def _injection_class(record: dict[str, Any], records: Sequence[dict[str, Any]] = ()) -> str:
    """The bug class of one injection finding; ``records``: every finding of the run (a uniform's zero edge
    that flags together with its smallest positive one, in the same scenario and problem, is a key that
    collapses at tiny draws, not an acceptance test admitting ``u == 0``)."""
    kind, label, problem = record.get("kind"), record.get("label"), record.get("problem", "")
    if kind is None:
        return "unclassified"
    if problem != ZERO_TOKEN and "contract" in problem:
        return "edge-breaks-contract"
    if kind == "multinomial":
        return "multinomial-float16" if "float16" in str(record.get("edges")) else "zero-key-race"
    if kind in ("uniform", "tl.rand") and label in ("zero", "smallest-positive"):
        tiny = {r.get("label") for r in records if r.get("kind") == kind and r.get("scenario") == record.get("scenario")
                and r.get("problem") == problem}
        if {"zero", "smallest-positive"} <= tiny:
            return "tiny-draw-key"
    if kind in ("uniform", "tl.rand") and label == "zero":
        return "zero-draw-accepts"
    if kind == "exponential" and label == "zero":
        return "zero-key-race"
    return "unclassified"


def _certain(result: Any, certain: list[Any], calls: Sequence[FailingCall]) -> Diagnosis:
    """The certain finding seen on the most rows, classified from its rows or its injected draw."""
    injected = list((result.injection or {}).get("findings", []))
    scored = []
    for f in certain:
        if f.family == "rng-injection":
            record = next((r for r in injected if f.event.startswith(f"{r['scenario']}: {r['problem']}")
                           and r.get("label") is not None and f"is {r['label']}" in f.event), None)
            rows = record["flagged_rows"] if record else 1
            scored.append((rows, f, record))
        elif f.family == "reproducibility":
            scored.append((int(round(f.observed * f.rows)), f, None))
        else:
            scored.append((_certain_rows(f), f, None))
    rows, best, record = max(scored, key=lambda s: s[0])
    if best.family == "reproducibility":
        return Diagnosis("global-rng", best, f"two same-seeded runs differ in {rows} of {best.rows} rows")
    if best.family == "rng-injection":
        cls = _injection_class(record or {}, injected)
        return Diagnosis(cls, best, f"certain: {best.event}")
    seen = f"certain: {rows} of {best.rows} rows emitted a token the target rules out"
    call = next((c for c in calls if c.scenario == best.scenario and c.label == best.event), None) or \
        next((c for c in calls if c.scenario == best.scenario), None)
    if call is None or not hasattr(call.prepared, "real"):
        return Diagnosis("unclassified", best, seen, best.position)
    draft_ids, target_probs = call.batch.numpy(), call.inputs()[1].float().numpy()
    emitted = np.asarray(call.emitted)
    classes = [classify_round_row(draft_ids[r], target_probs[r], emitted[r], _multinomial_float16(result))
               for r in call.rows]
    cls = max(sorted(set(classes)), key=classes.count)
    row = int(call.rows[classes.index(cls)])
    example = f"e.g. drafts {draft_ids[row].tolist()} -> emitted {emitted[row].tolist()}"
    return Diagnosis(cls, best, f"{seen} ({example})", best.position, call.k)


def _fits_within_noise(misfit: float, events: int, alpha: float) -> bool:
    """``2 misfit`` below the ``alpha`` tail of a chi-square with ``events`` degrees of freedom
    (Laurent and Massart 2000: ``P(X >= d + 2 sqrt(d x) + 2 x) <= e^-x``)."""
    x = math.log(1 / alpha)
    return 2 * misfit <= events + 2 * math.sqrt(events * x) + 2 * x


def _statistical_class(finding: Any, k: int | None) -> str:
    from specproof.harness.check.events.family import BET_PRODUCT_FAMILY, FLOOR_FAMILY

    if finding.family == FLOOR_FAMILY:
        return "correction-misses-residual"
    if finding.family == BET_PRODUCT_FAMILY:
        return "every-token-tilted"
    if k is not None and finding.position == k + 1:
        return "bonus-law"
    return "position-law"


def diagnose(result: Any, calls: Sequence[FailingCall] = ()) -> Diagnosis | None:
    """The diagnosis of ``result`` (a :class:`.result.CheckResult`), None without findings (module
    docstring)."""
    findings = result.findings
    if not findings:
        return None
    certain = [f for f in findings if f.certain]
    if certain:
        return _certain(result, certain, calls)
    ks = {s.name: s.k for s in result.scenarios}
    misfit = result.misfit_by_rule()
    events: dict[str, int] = {}
    for s in result.scenarios:
        for rule in s.bug_class_misfit:
            events[rule] = events.get(rule, 0) + len(s.bug_class_evidence)
    flagged = sorted({f.rule for f in findings if f.rule is not None})
    fitting = [r for r in flagged if r in misfit and _fits_within_noise(misfit[r], events.get(r, 1), result.alpha)]
    if fitting:
        fitting.sort(key=lambda r: misfit[r])
        rule = fitting[0]
        best = max((f for f in findings if f.rule == rule), key=lambda f: f.statistic)
        nats = result.evidence_by_rule().get(rule, 0.0)
        cls = RULE_CLASSES.get(rule, "position-law")
        others = tuple(dict.fromkeys(c for c in (RULE_CLASSES.get(r, "position-law") for r in fitting[1:]) if c != cls))
        if len(fitting) == 1:
            why = (f"the exact law of the incorrect rule '{rule}' predicts the observed excess-set means within "
                   f"noise (misfit {misfit[rule]:.0f} nats over {events.get(rule, 0)} events; "
                   f"evidence {nats:.0f} nats)")
        else:
            fits = ", ".join(f"'{r}' (misfit {misfit[r]:.1f} nats over {events.get(r, 0)} events)" for r in fitting)
            why = (f"the exact laws of the incorrect rules {fits} each predict the observed excess-set means within "
                   f"noise; the closest is '{rule}' (evidence {nats:.0f} nats)")
        return Diagnosis(cls, best, why, best.position, ks.get(best.scenario), others)
    unpredicted = [r for r in flagged if r not in misfit]  # a family without exact predictions (tree mutants)
    if unpredicted:
        evidence = result.evidence_by_rule()
        rule = max(unpredicted, key=lambda r: evidence.get(r, 0.0))
        best = max((f for f in findings if f.rule == rule), key=lambda f: f.statistic)
        return Diagnosis(RULE_CLASSES.get(rule, "position-law"), best,
                         f"behaves like the incorrect rule '{rule}' (the most evidence of the flagged rules, "
                         f"{evidence.get(rule, 0.0):.0f} nats; no exact prediction of its means here)",
                         best.position, ks.get(best.scenario))
    totals: dict[str, float] = {}
    strongest: dict[str, Any] = {}
    for f in findings:
        if f.rule is not None:
            continue  # an excess set whose rule does not fit says only that the law differs
        cls = _statistical_class(f, ks.get(f.scenario))
        totals[cls] = totals.get(cls, 0.0) + f.statistic
        if cls not in strongest or f.statistic > strongest[cls].statistic:
            strongest[cls] = f
    if not totals:
        best = max(findings, key=lambda f: f.statistic)
        return Diagnosis("position-law", best, "no known rule's law fits the observed means", best.position,
                         ks.get(best.scenario))
    cls = max(sorted(totals), key=lambda c: totals[c])
    best = strongest[cls]
    count = sum(1 for f in findings if f.rule is None and _statistical_class(f, ks.get(f.scenario)) == cls)
    return Diagnosis(cls, best, f"{count} findings of this kind carry the most evidence ({totals[cls]:.0f} nats)",
                     best.position, ks.get(best.scenario))
