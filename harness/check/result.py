"""What a check returns: the three-way verdict, findings, per-scenario power, and its text.

Verdict (:class:`Verdict`, the vocabulary's ``CheckVerdict``; the JSON field ``verdict`` holds its value):

* ``fail`` (exit 1) - at least one finding: an event the exact law rules out (certain), an event
  whose log e-value (anytime-valid, :mod:`.engine`) reached its share of the family-wise threshold,
  a probability-0 emission under RNG edge injection, or two same-seed runs of one batch that differ;
* ``underpowered`` (exit 3) - no finding, but the detectable TV (power 0.99) of some scenario exceeds
  ``max_detectable_tv``: the check could not have seen a deviation of the stated size;
* ``pass`` (exit 0) - no finding, and every scenario would have caught a deviation of total variation
  ``max_detectable_tv`` on a tested event with probability at least 0.99.
* ``inconclusive`` (exit 4) - a sharded check (``--engine ray``) lost a shard for good (its retries
  spent): the reason is stored, nothing is concluded (a certain finding made before still FAILs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from specproof.verdicts import CheckVerdict as Verdict  # the one verdict vocabulary
from specproof.harness.files.json_numbers import number_word
from specproof.harness.check.stats.eprocess import DRIFT_LEVEL

__all__ = ["Verdict", "Finding", "ScenarioReport", "CheckResult", "EXIT_CODES", "SHOWN_FINDINGS", "DEFAULT_MAX_DETECTABLE_TV", "DEFAULT_SAMPLES", "DEFAULT_TIMEOUT",
           "interlude_note"]

# defaults of check and specproof check (here, torch-free, so the CLI parser is cheap to build)
DEFAULT_SAMPLES = 200_000  # rows per scenario
DEFAULT_TIMEOUT = 120.0  # seconds per verifier call
DEFAULT_MAX_DETECTABLE_TV = 0.02  # the power a default check's PASS states
SHOWN_FINDINGS = 10  # findings printed by summary(); every stored one is in the JSON


EXIT_CODES = {Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.UNDERPOWERED: 3, Verdict.INCONCLUSIVE: 4}


def _number(x: float) -> str:
    return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 or x == 0 else f"{x:.3e}"


@dataclass(frozen=True)
class Finding:
    """One rejected event: where, what, how far, how sure (``statistic`` = log e-value in nats, ``inf`` when certain)."""

    scenario: str
    family: str
    event: str
    expected: float
    observed: float
    tolerance: float
    statistic: float
    critical: float
    rows: int
    exact_tv: float | None = None
    rule: str | None = None  # bug-class findings: the incorrect rule whose excess set this is
    position: int | None = None  # 1-based token position at which the event's law first differs
    note: str | None = None  # what the finding means for a runtime (e.g. a known sampler defect)
    sides: str = "both"  # the null the event holds a lossless system to (EventFamily.sides)
    rate: float | None = None  # RNG-injection findings: their rate bound per round on the real generator

    def as_json(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in self.__dict__.items()} | {
            "statistic": number_word(self.statistic)}

    @property
    def certain(self) -> bool:
        return math.isinf(self.statistic)

    def line(self) -> str:
        """The statistic in words: observed vs exact, the tolerance, the evidence and its threshold."""
        if self.family in ("reproducibility", "rng-injection"):
            return f"[{self.scenario}] {self.family}: {self.event}"
        where = f" at token position {self.position}" if self.position else ""
        if self.certain:
            evidence = "certain: the exact law gives it probability 0"
        else:
            evidence = (f"evidence {self.statistic:.1f} nats, threshold {self.critical:.1f} "
                        f"(log e-value past the tolerance band)")
        note = f"\n      -> {self.note}" if self.note else ""
        if self.sides == "lower":
            band = f" (less the dtype tolerance {self.tolerance:.3g})" if self.tolerance else ""
            law = f"every lossless rule gives at least {_number(self.expected)}{band}"
        elif self.sides == "upper":
            band = f" (plus the dtype tolerance {self.tolerance:.3g})" if self.tolerance else ""
            law = f"every lossless rule gives at most {_number(self.expected)}{band}"
        else:
            band = f" (dtype tolerance +/-{self.tolerance:.3g})" if self.tolerance else ""
            law = f"the exact law gives {_number(self.expected)}{band}"
        return (f"[{self.scenario}] {self.family}{where}: {self.event}: observed {_number(self.observed)} where "
                f"{law}; {evidence}; {self.rows} rows{note}")


@dataclass
class ScenarioReport:
    name: str
    vocab: int
    k: int
    rows: int
    events: int
    tolerance: float
    detectable_tv: float
    stopped_early: bool
    findings: list[Finding] = field(default_factory=list)
    rejected_events: int = 0
    bug_class_evidence: dict[str, float] = field(default_factory=dict)  # rule -> log e-value of its excess set
    # rule -> rows * sum over the excess sets of KL(observed mean || the rule's exact mean), nats
    bug_class_misfit: dict[str, float] = field(default_factory=dict)
    certainty_probe: bool = False  # only impossible outcomes tested; detectable_tv is the rate seen w.p. 0.99
    # [estimate, low, high] of the largest deviation on a two-sided tested event, TV units: the interval is
    # anytime-valid, 99% jointly over the check's scenarios (engine._Ledger.drift)
    drift: list[float] | None = None
    scope_reason: str | None = None  # why it ran no row: its exact law cannot be built for the dtype (out of scope)

    def as_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["findings"] = [f.as_json() for f in self.findings]
        return out


def vocab_text(sizes: Sequence[int], impossible_only: Sequence[int] = ()) -> str:
    """``V = 2..1000, 151936 (impossible outcomes only)``: the vocabulary sizes judged, those up to 1,000
    as one range; a larger size of ``impossible_only`` (judged by certainty probes alone) says so."""
    small = [v for v in sizes if v <= 1000]
    words = ([f"{small[0]}..{small[-1]}" if len(small) > 1 else str(small[0])] if small else [])
    return "V = " + ", ".join(words + [f"{v} (impossible outcomes only)" if v in impossible_only else str(v)
                                       for v in sizes if v > 1000])


def interlude_note(note: str | None, ran: bool, injected: bool, injection_ran: bool, stop_reason: str) -> str | None:
    """The injection line of a check whose reproducibility pair and injection run as the engine's
    interlude: ``note`` (the injection's own text, or why it cannot run here) or, when the interlude or
    the injection did not run, why.  ``injected``: the injection was to run on this device."""
    if not ran:
        why = {"fail-fast": "the statistics flagged the verifier first (fail-fast)",
               "settled": "the verdict was settled first (--collect-all runs it)"}.get(
            stop_reason, f"the run ended before it ({stop_reason})")
        if note is not None:
            return f"{note}; reproducibility check not run: {why}"
        return f"{'RNG edge injection and reproducibility check' if injected else 'Reproducibility check'} not run: {why}"
    if injected and not injection_ran:
        return "RNG edge injection not run: the reproducibility check flagged the verifier first (fail-fast)"
    return note


@dataclass
class CheckResult:
    """Verdict, findings, per-scenario reports, power and timing."""

    verdict: Verdict
    dtype: str
    device: str
    seed: int
    alpha: float
    samples: int
    rule: str | None
    scenarios: list[ScenarioReport]
    verifier_seconds: float
    harness_seconds: float
    max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV
    reproducibility: list[Finding] = field(default_factory=list)
    level: str = "default"  # "default", "thorough", or "samples" (fixed rows per scenario)
    stop_reason: str = "complete"  # "complete", "fail-fast", "settled" (the default stop) or "time-budget"
    rows_at_first_flag: int | None = None  # rows drawn when the first finding was made
    # every row the verifier had been called with by then (the reproducibility pair and the injection
    # counted whole when they ran before the first finding)
    verifier_rows_at_first_flag: int | None = None
    injection: dict[str, Any] | None = None  # the RNG edge injection's JSON (None: not run)
    injection_summary: str | None = None  # its text, or why it did not run
    injection_findings: list[Finding] = field(default_factory=list)
    time_budget: float | None = None
    inconclusive: str | None = None  # why a sharded check concluded nothing (a shard failed for good)
    contract: str = "batched"  # the check contract the target was checked under
    accept_rate: float | None = None  # --accept-rate: certain rare-draw findings up to this rate are accepted
    accepted_residues: list[Finding] = field(default_factory=list)  # those findings (not in findings)
    coverage: Any = None  # .contracts.coverage.Coverage: the acceptance sites a probability-0 token met
    band: dict[str, Any] | None = None  # which null band: precision.Band.as_json (basis, detail, assumptions)
    # the first call of each stream that showed each certain finding (diagnosis.FailingCall; not in the JSON)
    failing_calls: list[Any] = field(default_factory=list, repr=False)
    rerun: str | None = None  # the command reproducing the first finding bit for bit (replay.rerun_line)
    saved: list[str] = field(default_factory=list)  # files of the smallest failing case (replay.save_failure)
    _diagnosis: Any = field(default=None, repr=False, compare=False)  # diagnosed(), once settled
    _settled: bool = field(default=False, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        """PASS only: no finding and the stated power (``detectable_tv <= max_detectable_tv``)."""
        return self.verdict is Verdict.PASS

    @property
    def flagged(self) -> bool:
        """FAIL: at least one finding."""
        return self.verdict is Verdict.FAIL

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def findings(self) -> list[Finding]:
        """Every stored finding, strongest first (certain ones, then by evidence)."""
        out = [f for s in self.scenarios for f in s.findings] + list(self.reproducibility) + list(self.injection_findings)
        return sorted(out, key=lambda f: -f.statistic)

    @property
    def detectable_tv(self) -> float:
        """Worst (largest) per-scenario detectable TV of the statistical scenarios (every scenario when
        all are certainty probes): a guarantee that holds for each of them.  A probe's figure is the
        rate of probability-0 emissions it sees w.p. 0.99 (:meth:`summary`); the verdict reads both."""
        return max(s.detectable_tv for s in self._statistical())

    def _statistical(self) -> list[ScenarioReport]:
        """The statistical scenarios in scope (all of them when none is; every scenario for probes only)."""
        statistical = [s for s in self.scenarios if not s.certainty_probe]
        return [s for s in statistical if s.tolerance < self.max_detectable_tv] or statistical or list(self.scenarios)

    def out_of_scope(self) -> list[ScenarioReport]:
        """Statistical scenarios whose band is at least ``max_detectable_tv``: vacuous for the dtype, not judged
        (those whose exact law cannot be built for the dtype among them: their band is 1, ``scope_reason``)."""
        return [s for s in self.scenarios if not s.certainty_probe and s.tolerance >= self.max_detectable_tv]

    def drift(self) -> tuple[list[float], str] | None:
        """The overall drift figure ``[estimate, low, high]`` (the largest over the scenarios of each; the
        intervals hold jointly, so the overall one holds with them) and the scenario of the largest high end."""
        shown = [s for s in self.scenarios if s.drift is not None]
        if not shown:
            return None
        worst = max(shown, key=lambda s: s.drift[2])
        return [max(s.drift[i] for s in shown) for i in range(3)], worst.name

    def scope_line(self) -> str | None:
        out = self.out_of_scope()
        if not out:
            return None
        judged = [s for s in self.scenarios if s not in out]
        vocabs = sorted({s.vocab for s in judged})
        vacuous = [s for s in out if s.scope_reason is None]
        names = ", ".join(f"'{s.name}' (V = {s.vocab}, band {s.tolerance:.3g})" for s in vacuous[:4])
        more = f" and {len(vacuous) - 4} more" if len(vacuous) > 4 else ""
        why = [f"{names}{more}: the band is at least the bound {self.max_detectable_tv:g}, so no sample size "
               "reaches it there"] if vacuous else []
        why += [f"'{s.name}' (V = {s.vocab}, no row run): {s.scope_reason}" for s in out if s.scope_reason]
        return (f"Scope: {len(judged)} of {len(self.scenarios)} scenarios judged (V in {vocabs}); out of scope for "
                f"{self.dtype}: " + "; ".join(why))

    @property
    def rows(self) -> int:
        """Verifier rows consumed in total."""
        return sum(s.rows for s in self.scenarios)

    @property
    def harness_share(self) -> float:
        total = self.verifier_seconds + self.harness_seconds
        return self.harness_seconds / total if total else 0.0

    def shown_findings(self) -> list[Finding]:
        """The strongest findings, at most SHOWN_FINDINGS, one per (scenario, expected, observed): two
        families naming the same event (first token {2} and first 1 tokens = (2,)) are shown once."""
        seen: set[tuple[str, float, float]] = set()
        out = []
        for finding in self.findings:
            key = (finding.scenario, finding.expected, finding.observed)
            if key in seen:
                continue
            seen.add(key)
            out.append(finding)
            if len(out) == SHOWN_FINDINGS:
                break
        return out

    def evidence_by_rule(self) -> dict[str, float]:
        """Summed evidence (log e-values, nats, excess side only) of each bug class over the scenarios."""
        return self._summed_over_scenarios("bug_class_evidence")

    def misfit_by_rule(self) -> dict[str, float]:
        """How badly each known incorrect rule's exact law predicts the observed means of the excess
        sets, summed over the scenarios (nats: ``rows * sum_e KL(observed_e || predicted_e)``)."""
        return self._summed_over_scenarios("bug_class_misfit")

    def _summed_over_scenarios(self, tally: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.scenarios:
            for rule, nats in getattr(s, tally).items():
                out[rule] = out.get(rule, 0.0) + nats
        return out

    def _fail_qualifier(self) -> str:
        """`` (certain)``, or `` (certain, rare: ...)`` when every finding is a rare draw of known rate (its
        largest rate bound first: what a team weighs against ``--accept-rate``), else empty."""
        findings = self.findings
        rates = [f.rate for f in findings]
        if findings and all(r is not None for r in rates):
            return (f" (certain, rare: at most {max(rates):.2g} per round on the real generator; "
                    "--accept-rate accepts rates up to a stated bound)")
        return " (certain)" if any(f.certain for f in findings) else ""

    def diagnosed(self) -> Any:
        """The run's diagnosis (:func:`.diagnosis.diagnose`: the bug class its evidence points to), or None;
        computed once (:meth:`settle`)."""
        if not self._settled:
            from specproof.harness.check.diagnosis import diagnose

            self._diagnosis, self._settled = diagnose(self, self.failing_calls), True
        return self._diagnosis

    def settle(self) -> "CheckResult":
        """Fix the diagnosis now and drop the failing calls it was read from (their scenarios and tensors):
        what a supervised child sends back to the command is then the result alone.  Reading the
        diagnosis alone (:meth:`diagnosed`) keeps them, for :func:`.replay.save_failure`."""
        self.diagnosed()
        self.failing_calls = []
        return self

    def diagnosis(self) -> Finding | None:
        """The finding that carries the diagnosis (:meth:`diagnosed`)."""
        found = self.diagnosed()
        return None if found is None else found.finding

    def diagnosis_line(self) -> str | None:
        found = self.diagnosed()
        return None if found is None else found.line()

    def as_json(self) -> dict[str, Any]:
        found = self.diagnosed()
        best = None if found is None else found.finding
        return {
            "verdict": self.verdict.value, "contract": self.contract, "dtype": self.dtype, "device": self.device, "seed": self.seed,
            "alpha": self.alpha, "samples_per_scenario": self.samples, "rule": self.rule,
            "detectable_tv": self.detectable_tv, "max_detectable_tv": self.max_detectable_tv,
            "exit_code": self.exit_code, "rows": self.rows, "verifier_seconds": self.verifier_seconds,
            "harness_seconds": self.harness_seconds, "harness_share": self.harness_share,
            "diagnosis": None if best is None else best.as_json() | found.as_json(),
            "findings_total": len(self.findings),
            "reproducibility": [f.as_json() for f in self.reproducibility],
            "level": self.level, "stop_reason": self.stop_reason, "rows_at_first_flag": self.rows_at_first_flag,
            "verifier_rows_at_first_flag": self.verifier_rows_at_first_flag,
            "time_budget": self.time_budget, "injection": self.injection, "inconclusive": self.inconclusive,
            "injection_summary": self.injection_summary,  # also says when the injection or reproducibility did not run
            "rerun": self.rerun, "saved": self.saved,
            "accept_rate": self.accept_rate, "accepted_residues": [f.as_json() for f in self.accepted_residues],
            "scenarios": [s.as_json() for s in self.scenarios],
            "coverage": None if self.coverage is None else self.coverage.as_json(),
            "band": self.band, "out_of_scope": [s.name for s in self.out_of_scope()],
            "drift": None if self.drift() is None else dict(zip(("estimate", "low", "high"), self.drift()[0]))
            | {"scenario": self.drift()[1], "confidence": 1 - DRIFT_LEVEL},
            "vocab_sizes": self.vocab_sizes, "vocab_sizes_impossible_only": self.vocab_sizes_impossible_only,
        }

    @property
    def vocab_sizes(self) -> list[int]:
        """The vocabulary sizes judged (every scenario's ``V``), ascending."""
        return sorted({s.vocab for s in self.scenarios})

    @property
    def vocab_sizes_impossible_only(self) -> list[int]:
        """The sizes judged by certainty probes alone (impossible outcomes only: no event family there),
        ascending; the default batched suite's V = 151,936 (:func:`.contracts.batched.tiled.tiled_probe`)."""
        return sorted({s.vocab for s in self.scenarios}
                      - {s.vocab for s in self.scenarios if not s.certainty_probe})

    def summary(self, more: str | None = "in --json") -> str:
        """The text of the result; ``more``: where the findings past the first ten are (None: list them
        all, one line each, as a JUnit report wants them)."""
        rejected = sum(s.rejected_events for s in self.scenarios)
        events = sum(s.events for s in self.scenarios)
        worst = max(self._statistical(), key=lambda s: s.detectable_tv)
        basis = (self.band or {}).get("basis", "worst case")
        head = {
            Verdict.PASS: f"PASS: no drift beyond the band ({basis}) detected; a deviation of TV "
                          f"{self.max_detectable_tv:g} on a tested event is caught with probability 0.99",
            Verdict.FAIL: f"FAIL{self._fail_qualifier()}: the verifier's law differs from the exact reference",
            Verdict.UNDERPOWERED: f"UNDERPOWERED: nothing detected, but this run could miss a deviation of TV up "
                                  f"to {self.detectable_tv:.4g} (stated bound {self.max_detectable_tv:g})",
            Verdict.INCONCLUSIVE: f"INCONCLUSIVE: nothing concluded: {self.inconclusive}; rerun (the rows of a "
                                  "failed shard cannot be dropped without biasing the rest)",
        }[self.verdict]
        if self.accepted_residues and self.verdict is Verdict.PASS:
            head = (f"PASS (accepting rare draws up to {self.accept_rate:.3g} per round: "
                    f"{len(self.accepted_residues)} residues)") + head.removeprefix("PASS")
        scope = "" if self.coverage is None or not self.coverage.scope else f"; {self.coverage.scope}"
        lines = [f"{head} ({self.dtype} on {self.device}, {self.rows} rows, {len(self.scenarios)} scenarios, "
                 f"{vocab_text(self.vocab_sizes, self.vocab_sizes_impossible_only)}{scope})"]
        diagnosis = self.diagnosis_line()
        if diagnosis:
            lines.append(diagnosis)
        if self.band:
            lines.append(f"Band: {self.band['basis']}: {self.band['detail']}" + (
                f"; assumes {'; '.join(self.band['assumptions'])}" if self.band.get("assumptions") else ""))
        scope = self.scope_line()
        if scope:
            lines.append(scope)
        drift = self.drift()
        if drift is not None:
            (est, low, high), where = drift
            lines.append(f"Drift (largest deviation on a tested event, TV): {est:.3g}, 99% anytime-valid interval "
                         f"{low:.3g} to {high:.3g} (widest: {where}; per scenario in --json)")
        lines.append(f"Mismatched events: {rejected} / {events} ({100.0 * rejected / max(events, 1):.2f}%), "
                     f"family-wise false-alarm probability <= {self.alpha:g}")
        findings = self.findings
        shown = self.shown_findings() if more is not None else findings
        lines.extend("  " + finding.line() for finding in shown)
        if len(findings) > len(shown):
            lines.append(f"  ... {len(findings) - len(shown)} more {more}")
        lines.append(f"Detectable TV (power 0.99, deviation on a tested event): <= {self.detectable_tv:.4g} "
                     f"(worst scenario: {worst.name}; stated bound {self.max_detectable_tv:g})")
        for probe in (s for s in self.scenarios if s.certainty_probe and s is not worst):
            lines.append(f"  certainty probe '{probe.name}' ({probe.rows} rows): probability-0 tokens emitted in at "
                         f"least {probe.detectable_tv:.3g} of its rows are seen with probability 0.99")
        if self.verdict is Verdict.UNDERPOWERED:
            blind = self.out_of_scope()
            if blind and len(blind) == sum(not sc.certainty_probe for sc in self.scenarios):
                low, high = min(sc.tolerance for sc in blind), max(sc.tolerance for sc in blind)
                if any(sc.scope_reason for sc in blind):
                    lines.append("  every statistical scenario is out of scope for the dtype (Scope above): no "
                                 "sample size helps; check in a wider dtype")
                else:
                    lines.append(f"  the band alone ({low:.3g} to {high:.3g}) is at least the bound on every "
                                 "statistical scenario: no sample size reaches it; check in a wider dtype, or state "
                                 "the drift you accept with --max-drift")
            else:
                lines.append("  To reach the bound: raise --samples, or state a larger --max-detectable-tv")
        if self.rows_at_first_flag is not None:
            called = self.verifier_rows_at_first_flag
            lines.append(f"First finding after {self.rows_at_first_flag} rows"
                         + (f" ({called} verifier rows in all by then)"
                            if called is not None and called != self.rows_at_first_flag else "")
                         + {"fail-fast": " (stopped there: fail-fast)",
                            "settled": f" (stopped at {self.rows} rows: the verdict was settled; --collect-all "
                                       "runs every quota)"}.get(self.stop_reason, ""))
        if self.stop_reason == "time-budget":
            lines.append(f"Stopped by the time budget ({self.time_budget:g} s); the detectable TV above is what "
                         "the rows drawn by then could see")
        if self.injection_summary:
            lines.append(self.injection_summary)
        if self.accepted_residues:
            top = max(f.rate for f in self.accepted_residues if f.rate is not None)
            lines.append(f"Accepted residues (--accept-rate {self.accept_rate:.3g}): {len(self.accepted_residues)} "
                         f"certain findings whose real-generator rate is at most {top:.3g} per round; not part of "
                         "the verdict:")
            lines.extend(f"  accepted: {f.event}" for f in self.accepted_residues[:SHOWN_FINDINGS])
        if self.coverage is not None and self.verdict is not Verdict.FAIL:  # a FAIL needs no scope (JSON: kept)
            lines.extend(self.coverage.lines())
        lines.append(f"Time: verifier {self.verifier_seconds:.2f} s, harness {self.harness_seconds:.2f} s "
                     f"({100 * self.harness_share:.0f}% harness)")
        if self.flagged and self.rerun:
            lines.append(f"Rerun (reproduces the first finding bit for bit): {self.rerun}")
        if self.saved:
            lines.append(f"Smallest failing case saved: {', '.join(self.saved)} (run it: pytest {self.saved[-1]})")
        return "\n".join(lines)
