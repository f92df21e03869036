"""The one statistical engine: anytime-valid event tests over streams, with adaptive allocation.

Every contract (batched, tree, generate) hands :func:`run_streams` one :class:`Stream` per scenario:
its event families (:mod:`.events`: exact expectations ``P(A)`` and per-row contributions ``Y`` in
``[0, 1]``), its null band ``tau``, and ``draw(n)``, which runs the system under test on ``n`` fresh rows
and returns their counts (:class:`RowBatch`).

Tests.  Each side of each event carries the e-process of :mod:`.eprocess`; an outcome no lossless
system can produce (a zero-tolerance event, or one the stream reports as impossible) is a certain
finding.  The false-alarm budget ``alpha`` is split into shares ``a`` over every side of every event of
every stream (:func:`alpha_shares`: a fixed weight per family kind, then evenly), so ``sum a <= alpha``.

Allocation.  A screening pass gives every stream ``SCREEN_ROWS`` rows (4).  Then the next batch goes
to the stream whose best event is closest to its threshold once that score ``log E / ln(1/a)``
reaches ``FOCUS``, sized to the rows its evidence growth predicts it needs.  Until then screening
deepens by doubling batches (4, 8, 16, ...) ordered by evidence: of the streams within
``SCREEN_LEAD`` (4x) of the least-seen one (rows over quota), the highest score goes first, so a
stream that shows something is seen deeper first, at most three doublings ahead (chosen on the
bench's measure, fail-fast test rows / N*, in scratch runs, over: the least-seen stream first, no
lead limit, FOCUS 0.2, focus on ``max log E - ln K``, an e-process pooled over the streams, and
later SCREEN_ROWS 1 or 2, SCREEN_LEAD 2 or 8, APPROACH_SHARE 0.35, MIN_APPROACH_BATCH 4 (no gain on
the median over 60 seeds) and a score from ``n KL`` of the observed means).
Once the leader's score reaches ``APPROACH`` its batches shrink to half its predicted need (at least
``MIN_APPROACH_BATCH`` rows), so a failing run stops a few rows past its crossing.  A stream
stops at its first rejection or its quota; the run stops when every stream has, at the first
rejection with ``fail_fast``, or when ``time_budget`` is spent.  A *certainty probe* (a stream with
``certainty_probe`` set and no events) tests impossible outcomes only: its quota is the rows that see
one of per-row rate ``r`` (the detectable TV aimed at) with probability 0.99, ``ceil(ln 0.01 / ln(1 -
r))``, at most the fixed ``rows``, and its detectable TV is that rate (``statistics.certain_rate_seen``).

Theorem (family-wise guarantee of the adaptive procedure).  If the system is lossless within the
band (every stream's rows are i.i.d., with ``|E[Y_e] - P(A_e)| <= band_e`` for every two-sided event,
``E[Y_e] >= P(A_e) - band_e`` for every floor, ``EventFamily.sides == "lower"``, and ``E[Y_e] <=
P(A_e) + band_e`` for every ceiling, ``sides == "upper"``), then ``P(any finding) <= alpha`` whatever
the allocation, batch sizes, stopping rule or time budget.
Proof.  Zero-tolerance events and impossible outcomes have probability 0 under the null, so they never
fire.  Fix a stream and picture its rows as one infinite i.i.d. sequence, drawn in order; the
allocation only decides how far into each sequence the run reads, and it reads every sequence in
order.  For one tested side of one event (a floor's upper side and a ceiling's lower side are never
tested) the bets of both e-processes are fixed before the batch they apply to, so each is a
nonnegative supermartingale in that stream's row count (:mod:`.eprocess`), and so is their mean
``E``; by Ville's inequality the probability that ``E`` *ever* reaches ``1/a`` along the infinite
sequence is at most ``a``, which bounds the probability that it reaches it at any of the
(data-dependent) times the run reads it.  A union bound over all sides gives ``sum a <= alpha``.
Nothing else is tested.  QED.  (Independence of the streams is not needed.)

Power.  A stream run to its planned quota keeps the fixed-sample Chernoff power at the threshold
``ln(2/a)`` (the design e-process); its detectable TV is ``tau`` plus the shift the design process
detects with probability 0.99 on the stream's hardest event (mean nearest 1/2).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.stats.eprocess import DRIFT_LEVEL, LN2, SideEvidence, confidence_radius
from specproof.harness.check.events.family import BET_PRODUCT_FAMILY, FLOOR_FAMILY, EventFamily
from specproof.harness.check.progress import RowProgress
from specproof.harness.check.result import Finding, ScenarioReport, Verdict
from specproof.harness.check.stats.statistics import (bernoulli_kl_array, certain_rate_seen, rows_to_see_rate,
                                                samples_for_shift)

__all__ = ["RowBatch", "Stream", "EngineRun", "run_streams", "verdict_for", "alpha_shares", "plan_quota",
           "in_scope", "largest_deviation", "LEVELS", "SCREEN_ROWS", "SCREEN_LEAD", "MAX_BATCH", "FAMILY_WEIGHTS",
           "band_edges"]

SCREEN_ROWS = 4
SCREEN_LEAD = 4  # while screening, a stream within 4x of the least-seen one may double (so up to 8x ahead)
FOCUS = 0.15  # a stream whose best log-evidence reaches this share of its threshold is followed first
APPROACH, APPROACH_SHARE = 0.4, 0.5  # a leader this close to its threshold gets this share of its predicted need
MIN_APPROACH_BATCH, MAX_BATCH = 8, 8192
MAX_EXTENSIONS = 3  # re-plans of a time budget whose quotas were met early
MAX_FINDINGS_PER_STREAM = 100
# share of alpha per family kind (normalised over the kinds present): the bug-class excess sets are
# the most powerful single events against known bugs, so they get the largest share per event
FAMILY_WEIGHTS = {"bug-class": 4.0, "first-token": 3.0, "lossless": 3.0, "later-token": 3.0,
                  FLOOR_FAMILY: 3.0, BET_PRODUCT_FAMILY: 3.0}
OTHER_FAMILY_WEIGHT = 3.0


@dataclass(frozen=True)
class Level:
    """A check depth: the detectable TV its quotas aim for (a factor of ``max_detectable_tv``) and the
    rows per stream it may spend."""

    name: str
    tv_factor: float
    min_rows: int
    max_rows: int


LEVELS = {
    "ci": Level("ci", 0.9, 256, 20_000),  # a test suite's preset: max_detectable_tv CI_MAX_DETECTABLE_TV (options)
    "default": Level("default", 0.9, 1_024, 200_000),
    "thorough": Level("thorough", 0.25, 200_000, 4_000_000),
}


@dataclass
class RowBatch:
    """What ``draw`` returns: per family, the counts of row keys; rows showing impossible outcomes."""

    rows: int
    counts: list[np.ndarray]
    impossible: dict[str, int] = field(default_factory=dict)
    first_position: dict[str, int] = field(default_factory=dict)


class Stream(Protocol):
    name: str
    vocab: int
    k: int
    families: list[EventFamily]
    tolerance: float

    def draw(self, rows: int) -> RowBatch: ...


@dataclass
class EngineRun:
    reports: list[ScenarioReport]
    rows: int
    seconds: float
    stop_reason: str  # "complete", "fail-fast", "settled" or "time-budget"
    rows_at_first_flag: int | None
    interlude_before_first_flag: bool = False  # the interlude ran, and no finding had been made before it


def _family_kind(family: EventFamily) -> str:
    return family.name if family.name in FAMILY_WEIGHTS else "other"


def alpha_shares(streams: Sequence[Stream], alpha: float) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """``ln(1/a)`` of the upper and lower side of every event, per stream and family (``inf`` where a
    side cannot reject or the event is tested exactly).  ``sum a <= alpha`` (module docstring)."""
    sides: dict[str, int] = {}
    masks = []
    for stream in streams:
        per = []
        for fam in stream.families:
            hi, lo = band_edges(fam, stream.tolerance)
            up = (~fam.zero_tolerance) & (hi < 1.0) & (fam.sides != "lower")
            down = (~fam.zero_tolerance) & (lo > 0.0) & (fam.sides != "upper")
            kind = _family_kind(fam)
            sides[kind] = sides.get(kind, 0) + int(up.sum() + down.sum())
            per.append((kind, up, down))
        masks.append(per)
    weights = {kind: FAMILY_WEIGHTS.get(kind, OTHER_FAMILY_WEIGHT) for kind, n in sides.items() if n}
    total = sum(weights.values())
    out = []
    for per in masks:
        row = []
        for kind, up, down in per:
            log_thr = math.log(total * sides[kind] / (alpha * weights[kind])) if kind in weights else math.inf
            row.append((np.where(up, log_thr, np.inf), np.where(down, log_thr, np.inf)))
        out.append(row)
    return out


def band_edges(fam: EventFamily, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P(A) + band, P(A) - band)`` per event (``EventFamily.band``), clipped to [0, 1];
    zero-tolerance events get no band."""
    tol = fam.band(tau)
    return np.minimum(1.0, fam.expected + tol), np.maximum(0.0, fam.expected - tol)


class _Ledger:
    """Running evidence of one stream: counts, impossible outcomes, both sides of every event."""

    def __init__(self, stream: Stream, thresholds: list[tuple[np.ndarray, np.ndarray]]):
        self.stream = stream
        self.rows = 0
        self.counts = [np.zeros(f.n_keys) for f in stream.families]
        self.impossible: dict[str, int] = {}
        self.first_position: dict[str, int] = {}
        self.sides = []
        for fam, (up_thr, down_thr) in zip(stream.families, thresholds):
            hi, lo = band_edges(fam, stream.tolerance)
            self.sides.append((SideEvidence(hi, up_thr, np.isfinite(up_thr), fam.matrix),
                               SideEvidence(1.0 - lo, down_thr, np.isfinite(down_thr), 1.0 - fam.matrix)))
        self.quota, self.done, self.rejected = 0, False, 0
        self.probe = bool(getattr(stream, "certainty_probe", False))
        self.findings: list[Finding] = []

    def plan(self, quota: int) -> None:
        self.quota = quota
        for up, down in self.sides:
            up.plan(max(quota - self.rows, 1))
            down.plan(max(quota - self.rows, 1))

    def fold(self, batch: RowBatch) -> None:
        for label, n in batch.impossible.items():
            if n:
                self.impossible[label] = self.impossible.get(label, 0) + int(n)
        for label, pos in batch.first_position.items():
            if pos:
                old = self.first_position.get(label, 0)
                self.first_position[label] = min(old, pos) if old else pos
        for fam, total, batch_counts, (up, down) in zip(self.stream.families, self.counts, batch.counts, self.sides):
            total += batch_counts
            sums = np.asarray(batch_counts, dtype=np.float64) @ fam.matrix
            up.update(sums, batch.rows, batch_counts)
            down.update(batch.rows - sums, batch.rows, batch_counts)
        self.rows += batch.rows

    def score(self) -> float:
        """How close the stream is to a finding: the best ``log E / ln(1/a)`` over its sides."""
        best = 0.0
        for up, down in self.sides:
            for side in (up, down):
                finite = np.isfinite(side.log_threshold)
                if finite.any():
                    best = max(best, float(np.max(side.log_evidence[finite] / side.log_threshold[finite])))
        return best

    def rows_to_cross(self) -> float:
        """Rows the leading side needs at its present growth rate (``inf`` without positive evidence)."""
        best = math.inf
        for up, down in self.sides:
            for side in (up, down):
                log_e = np.where(np.isfinite(side.log_threshold), side.log_evidence, -np.inf)
                e = int(np.argmax(log_e))
                if log_e[e] > 0 and self.rows:
                    best = min(best, (side.log_threshold[e] - log_e[e]) * self.rows / log_e[e])
        return best

    def evaluate(self) -> None:
        """Findings so far: certain ones, then sides whose evidence reached their threshold."""
        stream, rows = self.stream, max(self.rows, 1)
        findings = []
        notes = getattr(stream, "notes", {}) or {}
        for label, n in self.impossible.items():
            findings.append(Finding(stream.name, "impossible", label, 0.0, n / rows, 0.0, math.inf, 0.0, self.rows,
                                    position=self.first_position.get(label) or None, note=notes.get(label)))
        candidates = []
        for fam, counts, (up, down) in zip(stream.families, self.counts, self.sides):
            observed = counts @ fam.matrix / rows
            tol = fam.band(stream.tolerance)
            certain = fam.zero_tolerance & (observed > 0)
            for e in np.flatnonzero(certain):
                candidates.append((math.inf, 0.0, fam, int(e), float(observed[e]), 0.0))
            for side in (up, down):
                log_e = side.log_evidence
                for e in np.flatnonzero(side.rejected & ~certain):
                    candidates.append((float(log_e[e]), float(side.log_threshold[e]), fam, int(e),
                                       float(observed[e]), float(tol[e])))
        candidates.sort(key=lambda c: -c[0])
        self.rejected = len(findings) + len(candidates)
        kept = candidates[:MAX_FINDINGS_PER_STREAM]
        # the strongest finding of every flagged bug class is kept past the cap (the diagnosis reads them)
        named = {c[2].rules.get(c[3]) for c in kept}
        for c in candidates[MAX_FINDINGS_PER_STREAM:]:
            rule = c[2].rules.get(c[3])
            if rule is not None and rule not in named:
                kept.append(c)
                named.add(rule)
        for stat, thr, fam, e, observed, tol in kept:
            tv = fam.exact_tv.get(e)
            findings.append(Finding(stream.name, fam.name, fam.names[e], float(fam.expected[e]), observed, tol,
                                    stat, thr, self.rows, None if tv is None else float(tv), fam.rules.get(e),
                                    fam.positions.get(e), sides=fam.sides))
        self.findings = findings

    def drift(self, level: float) -> list[float] | None:
        """``[estimate, low, high]`` of ``D = max_e |E[Y_e] - P(A_e)|`` over the stream's two-sided events
        (TV units): ``low <= D <= high`` whenever every event's confidence sequence at level ``level / m``
        (:func:`.eprocess.confidence_radius`, ``m`` events) holds, so with probability ``>= 1 - level`` at
        every row count at once (union bound; ``|mu_e - P_e|`` lies within ``r`` of ``|mean_e - P_e|``).
        The estimate ``max_e |mean_e - P_e|`` is biased upwards by the noise (at most ``r``)."""
        events = sum(fam.size for fam in self.stream.families if fam.sides == "both")
        if not events or not self.rows or self.probe:
            return None
        radius = float(confidence_radius(self.rows, level / events))
        deviation = largest_deviation(self.stream.families, [counts / self.rows for counts in self.counts])
        return [deviation, max(0.0, deviation - radius), min(1.0, deviation + radius)]

    def report(self, stopped: bool, drift_level: float = DRIFT_LEVEL) -> ScenarioReport:
        stream = self.stream
        evidence, misfit = {}, {}
        for fam, counts, (up, _) in zip(stream.families, self.counts, self.sides):
            for e, rule in fam.rules.items():
                evidence[rule] = max(0.0, float(up.log_evidence[e]))
            if fam.predicted and self.rows:
                observed = np.clip(counts @ fam.matrix / self.rows, 0.0, 1.0)
                for rule, means in fam.predicted.items():
                    kl = bernoulli_kl_array(observed, np.clip(means, 1e-9, 1 - 1e-9))
                    misfit[rule] = misfit.get(rule, 0.0) + self.rows * float(kl.sum())
        return ScenarioReport(
            name=stream.name, vocab=stream.vocab, k=stream.k, rows=self.rows,
            events=sum(f.size for f in stream.families) + len(self.impossible_labels()),
            tolerance=float(stream.tolerance), detectable_tv=self.detectable_tv(), stopped_early=stopped,
            findings=self.findings, rejected_events=self.rejected, bug_class_evidence=evidence,
            bug_class_misfit=misfit, certainty_probe=self.probe, drift=self.drift(drift_level))

    def impossible_labels(self) -> list[str]:
        return list(getattr(self.stream, "impossible_labels", ())) or list(self.impossible)

    def hardest(self) -> tuple[int, int] | None:
        """(family, event) of the tested event whose mean is nearest 1/2 (the largest variance)."""
        best, where = math.inf, None
        for f, fam in enumerate(self.stream.families):
            if fam.sides != "both":  # the power statement is about two-sided events
                continue
            inner = np.flatnonzero((fam.expected > 0) & (fam.expected < 1) & ~fam.zero_tolerance)
            if inner.size:
                e = int(inner[np.argmin(np.abs(fam.expected[inner] - 0.5))])
                if abs(fam.expected[e] - 0.5) < best:
                    best, where = abs(fam.expected[e] - 0.5), (f, e)
        return where

    def detectable_tv(self) -> float:
        if self.probe:
            return certain_rate_seen(self.rows)
        where = self.hardest()
        if where is None:
            return float(min(1.0, self.stream.tolerance))
        up, down = self.sides[where[0]]
        shift = max(up.detectable_shift(where[1]), down.detectable_shift(where[1]))
        return float(min(1.0, self.stream.tolerance + shift))

    def rows_for_tv(self, target: float, cap: int) -> int:
        """Quota reaching detectable TV ``target`` on the hardest event (``cap`` when out of reach)."""
        if self.probe:
            return int(min(cap, rows_to_see_rate(target)))
        where = self.hardest()
        if where is None:
            return SCREEN_ROWS
        up, down = self.sides[where[0]]
        p = float(self.stream.families[where[0]].expected[where[1]])
        thr = min(up.log_threshold[where[1]], down.log_threshold[where[1]])
        if not math.isfinite(thr):
            return cap
        # a band wider than the target (bfloat16): no row count reaches it; spend the rows that see a
        # shift of ``target`` beyond the band instead of the cap
        shift = target - self.stream.tolerance if target > self.stream.tolerance else target
        return samples_for_shift(shift, p, float(thr) + LN2, self.stream.tolerance, limit=cap)


def largest_deviation(families: Sequence[EventFamily], key_laws: Sequence[np.ndarray]) -> float:
    """``max_e |E[Y_e] - P(A_e)|`` over the two-sided events of ``families`` (the deviation a check's drift
    figure estimates, :meth:`_Ledger.drift`), when each family's row key has law ``key_laws[f]`` (observed
    frequencies, or an exact law: the bench's check of the interval); 0 without a two-sided event."""
    return max((float(np.max(np.abs(law @ fam.matrix - fam.expected))) for fam, law in zip(families, key_laws)
                if fam.sides == "both" and fam.size), default=0.0)


def plan_quota(ledger: _Ledger, level: Level, max_detectable_tv: float, rows: int | None = None) -> int:
    """Rows per stream: ``rows`` when fixed, else enough for ``tv_factor * max_detectable_tv`` within
    the level's bounds; a certainty probe gets just enough (for ``max_detectable_tv`` itself, at most
    ``rows``, when the rows are fixed)."""
    if ledger.probe:
        return ledger.rows_for_tv(max_detectable_tv, rows) if rows is not None else \
            ledger.rows_for_tv(level.tv_factor * max_detectable_tv, level.max_rows)
    if rows is not None:
        return rows
    need = ledger.rows_for_tv(level.tv_factor * max_detectable_tv, level.max_rows)
    return int(min(level.max_rows, max(level.min_rows, need)))


def run_streams(streams: Sequence[Stream], *, alpha: float = 1e-6, rows: int | None = None,
                level: str = "default", max_detectable_tv: float = 0.02, time_budget: float | None = None,
                fail_fast: bool = False, settle: float | None = None,
                progress: bool | Callable[[str], None] | None = None,
                clock: Callable[[], float] = time.perf_counter,
                interlude: tuple[int | Callable[[], int], Callable[[], bool]] | None = None) -> EngineRun:
    """Test every stream (module docstring).  ``rows``: a fixed quota per stream; else the ``level``'s
    quota for ``max_detectable_tv``; ``time_budget``: seconds, quotas then set from the screening
    pass's throughput so that the run ends within it (the quotas equalise the streams' detectable TV).
    ``interlude``: ``(rows, run)``: ``run()`` is called once, when the streams have drawn ``rows``
    rows (a number, or a callable read after every batch; earlier when they are all done), unless a
    finding stopped the run first with ``fail_fast``; it returns whether it found something (the
    check's reproducibility pair and RNG edge injection: certain findings from rows of their own, so
    they spend no share of ``alpha`` and leave the streams' evidence alone).  ``time_budget`` counts
    the streams' seconds, not the interlude's (the caller keeps its share, or states the overrun).
    ``settle`` (without ``fail_fast``): stop once the verdict is settled, at a certain finding (of a
    stream or of the interlude) and, after a first statistical finding made at ``N`` rows, once ``settle
    x N`` more rows have gone to the other streams' evidence (reason ``"settled"``); None collects all."""
    if not streams:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    if not 0 < alpha < 1:
        raise SpecproofInputError("alpha", f"{alpha} is not in (0, 1)", "use e.g. 1e-6")
    if level not in LEVELS:
        raise SpecproofInputError("level", f"{level!r} is not a level", f"use one of {sorted(LEVELS)}")
    if time_budget is not None and not (math.isfinite(time_budget) and time_budget > 0):
        raise SpecproofInputError("time_budget", f"{time_budget!r} is not a positive number of seconds",
                                  "pass e.g. 30")
    start = clock()
    ledgers = [_Ledger(s, thr) for s, thr in zip(streams, alpha_shares(streams, alpha))]
    lvl = LEVELS[level]
    for ledger in ledgers:
        ledger.plan(plan_quota(ledger, lvl, max_detectable_tv, rows))
    bar = RowProgress(progress, sum(l.quota for l in ledgers))
    first_flag: int | None = None
    reason = "complete"
    drawn = 0
    pending = interlude
    paused, before_flag = 0.0, False  # the interlude's seconds; whether it ran before any finding
    certain_seen = False  # the interlude found something (its findings are certain)

    def elapsed() -> float:
        return clock() - start - paused

    def interlude_found(force: bool) -> bool:
        nonlocal pending, first_flag, paused, before_flag, certain_seen
        due = pending and (pending[0]() if callable(pending[0]) else pending[0])  # rows, or what a callable says
        if pending is None or (drawn < due and not force):
            return False
        run, pending = pending[1], None
        before_flag, begun = first_flag is None, clock()
        found = bool(run())
        paused += clock() - begun
        if found and first_flag is None:
            first_flag = drawn
        certain_seen = certain_seen or found
        return found

    def stop_reason() -> str | None:
        """Why the run stops after the last batch or interlude (None: it goes on)."""
        if first_flag is None:
            return None
        if fail_fast:
            return "fail-fast"
        if settle is None:
            return None
        if certain_seen or any(f.certain for l in ledgers for f in l.findings):
            return "settled"
        return "settled" if drawn >= first_flag * (1 + settle) else None

    def step(ledger: _Ledger, n: int) -> bool:
        nonlocal drawn, first_flag
        batch = ledger.stream.draw(n)
        ledger.fold(batch)
        drawn += batch.rows
        ledger.evaluate()
        if ledger.findings:
            ledger.done = True
            first_flag = drawn if first_flag is None else first_flag
        if ledger.rows >= ledger.quota:
            ledger.done = True
        bar.batch(ledger, batch.rows, sum(l.quota if not l.done else l.rows for l in ledgers))
        return bool(ledger.findings)

    try:
        for ledger in ledgers:  # screening: every stream is seen before any is followed
            step(ledger, min(SCREEN_ROWS, ledger.quota))
            if stop_reason():
                reason = stop_reason()
                break
        if reason == "complete" and time_budget is not None:
            _replan_for_budget(ledgers, time_budget - elapsed(), elapsed(), drawn)
        extensions = 0
        while reason == "complete":
            open_ = [l for l in ledgers if not l.done]
            if not open_ and time_budget is not None and extensions < MAX_EXTENSIONS:
                # every quota met with budget left (the screening pass's small calls under-estimate the
                # rate): plan the rest at the rate measured so far; the design bets change from here
                # on and the power statement counts only the rows after this plan (eprocess.plan)
                remaining = time_budget - elapsed()
                if remaining > 0.2 * time_budget:
                    extensions += 1
                    for ledger in ledgers:
                        ledger.done = bool(ledger.findings)
                    _replan_for_budget([l for l in ledgers if not l.done], remaining, elapsed(), drawn)
                    open_ = [l for l in ledgers if not l.done]
            if interlude_found(force=not open_) and stop_reason():
                reason = stop_reason()
                break
            if not open_:
                break
            if time_budget is not None and elapsed() >= time_budget:
                reason = "time-budget"
                break
            ledger, n = _next_batch(open_)
            step(ledger, n)
            reason = stop_reason() or reason
        if reason == "time-budget" and interlude_found(force=True) and fail_fast:
            reason = "fail-fast"
    finally:
        bar.close()
    level = DRIFT_LEVEL / max(1, sum(not l.probe for l in ledgers))  # the drift intervals: 99% jointly
    reports = [l.report(stopped=bool(l.findings) and l.rows < l.quota, drift_level=level) for l in ledgers]
    return EngineRun(reports, drawn, clock() - start, reason, first_flag, before_flag)


def _next_batch(open_: list[_Ledger]) -> tuple[_Ledger, int]:
    """The stream nearest a finding (if any is past FOCUS), else, of the streams within SCREEN_LEAD of
    the least-seen one (rows over quota), the one nearest a finding."""
    scores = {id(l): l.score() for l in open_}
    leader = max(open_, key=lambda l: scores[id(l)])
    if scores[id(leader)] >= FOCUS:
        need = leader.rows_to_cross()
        n = int(min(max(leader.rows, SCREEN_ROWS), max(64, 1.25 * need) if math.isfinite(need) else leader.rows))
        if scores[id(leader)] >= APPROACH and math.isfinite(need):  # near the threshold: do not overshoot
            n = int(min(n, max(MIN_APPROACH_BATCH, APPROACH_SHARE * need)))
        return leader, max(1, min(n, MAX_BATCH, leader.quota - leader.rows))
    least = min(l.rows / max(l.quota, 1) for l in open_)
    near = [l for l in open_ if l.rows / max(l.quota, 1) <= SCREEN_LEAD * least * (1 + 1e-9)]
    behind = min(near, key=lambda l: (-scores[id(l)], l.rows / max(l.quota, 1)))
    return behind, max(1, min(max(behind.rows, SCREEN_ROWS), MAX_BATCH, behind.quota - behind.rows))


def _replan_for_budget(ledgers: list[_Ledger], remaining: float, spent: float, drawn: int) -> None:
    """Quotas that fit ``remaining`` seconds at the screening pass's rate, split so that every stream
    reaches the same detectable TV (rows in proportion to each stream's rows for a reference TV)."""
    rate = drawn / max(spent, 1e-9)  # rows per second, harness included
    budget_rows = max(0, int(0.9 * remaining * rate))
    weights = [l.rows_for_tv(0.05, 10**8) for l in ledgers]
    total = sum(weights) or 1
    for ledger, w in zip(ledgers, weights):
        if not ledger.done:
            ledger.plan(ledger.rows + max(SCREEN_ROWS, budget_rows * w // total))
            ledger.done = ledger.rows >= ledger.quota


def in_scope(reports: Sequence[ScenarioReport], max_detectable_tv: float) -> list[ScenarioReport]:
    """The scenarios judged: certainty probes, and statistical scenarios whose band is below
    ``max_detectable_tv`` (a band at or above it is vacuous for the dtype: no row count reaches the bound
    there, so the scenario is out of scope, reported with its band, instead of deciding the verdict)."""
    return [r for r in reports if r.certainty_probe or r.tolerance < max_detectable_tv]


def verdict_for(reports: Sequence[ScenarioReport], extra_findings: Sequence[Finding],
                max_detectable_tv: float) -> Verdict:
    """FAIL on any finding (in any scenario); else UNDERPOWERED when no statistical scenario is in scope
    (:func:`in_scope`) or an in-scope one cannot see ``max_detectable_tv``; else PASS over the scope."""
    if any(r.findings for r in reports) or extra_findings:
        return Verdict.FAIL
    judged = in_scope(reports, max_detectable_tv)
    if any(not r.certainty_probe for r in reports) and all(r.certainty_probe for r in judged):
        return Verdict.UNDERPOWERED
    if max(r.detectable_tv for r in judged) > max_detectable_tv:
        return Verdict.UNDERPOWERED
    return Verdict.PASS
