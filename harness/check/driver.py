"""``check``: the one orchestration of every contract (batched, tree, generate).

``check(target, contract=..., **options)`` validates the options once (:class:`.options.CheckOptions`),
asks the contract's module (:mod:`.contracts`) for its suite and each scenario prepared
(:class:`.contracts.prepared.PreparedScenario`: exact law, event families, band, inputs, calling
convention), and then, the same way for every contract:

1. the output contract on every call (:class:`.calls.Caller`; a violation is a usage error, exit 2);
2. the statistics: one :class:`Stream` per scenario handed to the one engine (:func:`.engine.run_streams`:
   anytime-valid e-processes, family-wise ``alpha``, rows where the evidence grows); an impossible
   outcome (a token of target probability 0 at its prefix, a path off the drafts or the tree) is a
   certain finding;
3. reproducibility: one batch of the first statistical scenario twice, with same-seeded generators
   (in a certainty probe every acceptance is decided, so a global-RNG draw would change nothing there);
   outputs that differ are a finding;
4. RNG edge injection (CPU; :mod:`.intercept.injection`) on the contract's injection scenarios: a known fraction
   of the target's random draws replaced by values the real generator produces at its edges; a
   probability-0 emission or a broken contract under them is a certain, reproducible finding.

Order.  The streams run first until they have drawn as many rows as 3 and 4 cost (the engine's
``interlude``: the pair, then the injection, its passes x rows per pass), then those, then the rest of
the streams: a bug the statistics see sooner is flagged without paying for them, and a rare-draw or
global-RNG bug they cannot see is flagged after at most twice their rows (the doubling argument).
``fail_fast`` only stops the run at the first finding; until then a run with and without it draws the
same rows at a fixed depth (``rows_at_first_flag``; ``verifier_rows_at_first_flag`` adds the
interlude's rows, whole, when it came first).  A target slower than about ``INJECTION_SECONDS /
(passes x rows)`` per row gets passes sized from its calls so far (so that the interlude takes about
``INJECTION_SECONDS``, a tenth of a ``time_budget`` when smaller; at least ``INJECTION_MIN_ROWS`` a
pass and, without a ``time_budget``, at least the rows that keep every acceptance site's miss within
:data:`.coverage.COVERAGE_AIM`, so that a loaded machine does not thin the coverage, unless one call
of them would exceed its share of ``timeout``: the coverage then states the smaller figure), and a
``time_budget`` sets quotas from the clock, so two runs may differ there.  Under a ``time_budget``
the interlude also ends within its share (:class:`.calls.Deadline`): the pair shrinks to fit (to
``REPRODUCIBILITY_MIN_ROWS`` rows at least), and a pass that would end past the share is skipped and
listed (the injection's verdict is then ``incomplete``), so the whole check ends near the budget.  The
interlude's rows are its own and its findings certain, so the order changes no false-alarm bound; it also
runs when a Ray shard fails for good.

Depth.  ``level="default"`` gives each scenario the rows its hardest event needs for a detectable TV of
``0.9 * max_detectable_tv``; ``"thorough"`` a quarter of it with at least 200,000 rows per scenario;
``samples`` fixes the rows per scenario; ``budget`` the stream rows in all (:func:`rows_per_scenario`);
``time_budget`` the seconds.  The verdict (:func:`.engine.verdict_for`) is FAIL on any finding,
UNDERPOWERED when a scenario cannot see ``max_detectable_tv``, else PASS; INCONCLUSIVE when a Ray shard
failed for good and nothing certain was found.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.calls import Caller, Deadline, resolve_device
from specproof.harness.check.contracts.coverage import rows_for_aim
from specproof.harness.check.contracts.prepared import PreparedScenario
from specproof.harness.check.diagnosis import FailingCall
from specproof.harness.check.replay import rerun_line, target_name
from specproof.harness.check.stats.engine import EngineRun, RowBatch, run_streams, verdict_for
from specproof.harness.check.intercept.injection import InjectionResult, run_injection, scenario_passes
from specproof.harness.check.options import MIN_ROWS, CheckOptions
from specproof.harness.check.intercept.precision import choose_band
from specproof.harness.check.scale.ray_engine import ShardFailure
from specproof.harness.check.result import CheckResult, Finding, ScenarioReport, Verdict, interlude_note
from specproof.harness.check.seeding import call_seed, generator, pair_seed, stream_seed
from specproof.harness.check.stats.statistics import rows_to_see_rate

__all__ = ["check", "run_check", "Stream", "stream_numbers", "rows_per_scenario", "smallest_budget",
           "REPRODUCIBILITY_ROWS", "SETTLE_FACTOR", "INJECTION_SECONDS", "INJECTION_MIN_ROWS", "PROBE_STREAMS", "injection_passes"]

REPRODUCIBILITY_ROWS = 256
INJECTION_SECONDS = 8.0  # the interlude's share of a check, for slow targets
INJECTION_MIN_ROWS = 64
SETTLE_FACTOR = 3.0  # after a first statistical finding at N rows, 3N more rows settle the diagnosis, then stop
PROBE_STREAMS = 1 << 20  # the first certainty probe's stream number
IRREPRODUCIBLE = ("draws randomness that the generator argument does not control (e.g. the global RNG); "
                  "fix: pass generator=generator to every random call")


def check(target: Callable[..., Any], contract: str = "batched", *, in_process: bool = True,
          save_failure: Any = None, **options: Any) -> CheckResult:
    """Check ``target`` against the exact reference under ``contract`` (``"batched"``, ``"tree"`` or
    ``"generate"``; module docstring).  ``options`` are :class:`.options.CheckOptions`' fields: ``dtype``,
    ``device``, ``seed``, ``samples`` | ``budget`` | ``time_budget`` | ``level``, ``max_detectable_tv``,
    ``max_drift`` (the null band in TV; default derived, :mod:`.intercept.precision`), ``alpha``, ``timeout``, ``fail_fast``,
    ``inject``, ``progress``, ``scenarios``, and the contract's own
    (batched ``rule``; tree ``siblings``; generate ``models``, ``sampling``, ``new_tokens``).

    ``target`` is executed in this process with the caller's rights.  ``timeout``: seconds per call
    (enforced on the main thread on POSIX only; see :mod:`.calls`); ``hard_timeout``: end the process
    (exit 2) when the target ignores it.  ``engine``: an entered :class:`.ray_engine.RayEngine` draws the
    rows on Ray (a shard that fails for good makes the verdict INCONCLUSIVE, never PASS).
    ``in_process=False``: the check runs in a supervised child (:mod:`.supervise`; the pytest fixtures'
    default), where the target's ``os._exit``, death, hang, lingering thread or ``chdir`` is a
    :class:`.supervise.SupervisedError` naming it, and ``timeout`` is enforced on any thread.
    ``save_failure``: a folder where a plain pytest test reproducing the FAIL is written
    (:func:`.replay.save_failure`: a certain finding's smallest failing case, else a fixed-row check of
    the flagged scenario; the target runs again there, in the same process as the check)."""
    built = CheckOptions.build(contract, **options)
    if in_process:
        return _checked_and_saved(target, built, save_failure, settle=False)
    from specproof.harness.check.supervise import supervised

    if built.engine is not None:
        raise SpecproofInputError("in_process", "False with an engine entered in this process (a Ray connection "
                                  "does not cross into a child)", "pass in_process=True with engine=")
    return supervised(lambda: _checked_and_saved(target, built, save_failure, settle=True),
                      getattr(target, "__qualname__", None) or "target")


def _checked_and_saved(target: Callable[..., Any], options: CheckOptions, save_failure: Any,
                       settle: bool) -> CheckResult:
    """:func:`run_check`, then the smallest failing case saved (``save_failure``), then (``settle``) the
    diagnosis fixed (:meth:`CheckResult.settle`: a supervised child sends back the result without its
    failing calls)."""
    result = run_check(target, options)
    if save_failure is not None and result.flagged:
        from specproof.harness.check.replay import save_failure as save

        result.saved = [str(p) for p in save(result, target, save_failure, options=options) or ()]
    return result.settle() if settle else result


def stream_numbers(suite: Sequence[Any]) -> list[int]:
    """The number that seeds each scenario's rows: statistical scenarios are numbered among themselves
    (0, 1, ...) and certainty probes from ``PROBE_STREAMS``, so adding a probe to a suite leaves the
    rows of every statistical scenario, and so a seeded run's statistics, as they were."""
    counts = [0, 0]
    out = []
    for scenario in suite:
        kind = int(bool(getattr(scenario, "certainty_probe", False)))
        out.append(counts[kind] + kind * PROBE_STREAMS)
        counts[kind] += 1
    return out


def _split(suite: Sequence[Any], max_detectable_tv: float) -> tuple[int, int, int | float]:
    """``(P, S, R)``: the suite's certainty probes, its statistical scenarios, and the rows a probe
    takes, ``R = rows_to_see_rate(max_detectable_tv)`` (:func:`.engine.plan_quota`)."""
    probes = sum(1 for s in suite if getattr(s, "certainty_probe", False))
    return probes, len(suite) - probes, rows_to_see_rate(max_detectable_tv)


def rows_per_scenario(budget: int, suite: Sequence[Any], max_detectable_tv: float) -> int:
    """Stream rows per scenario that spend at most ``budget`` stream rows in all (the reproducibility
    pair and the RNG edge injection come on top).  A certainty probe takes ``min(R, rows)`` (:func:`_split`),
    so when every scenario can have ``R`` rows the ``S`` statistical ones share what the ``P`` probes
    leave, ``(budget - P R) // S``; else (and for a suite of probes only) all get ``budget // (P + S)``."""
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    probes, statistical, seen = _split(suite, max_detectable_tv)
    if statistical and budget >= len(suite) * seen:
        return int((budget - probes * seen) // statistical)
    return budget // len(suite)


def smallest_budget(suite: Sequence[Any], max_detectable_tv: float) -> int:
    """The smallest ``budget`` whose :func:`rows_per_scenario` is at least ``MIN_ROWS`` (64): ``64 (P +
    S)`` when ``R >= 64`` (or without statistical scenarios), else ``P R + 64 S``."""
    probes, statistical, seen = _split(suite, max_detectable_tv)
    if seen >= MIN_ROWS or not statistical:
        return MIN_ROWS * len(suite)
    return int(probes * seen + MIN_ROWS * statistical)


def injection_passes(scenarios: int) -> int:
    """The injection passes the interlude plans for ``scenarios`` unrestricted scenarios: per scenario a baseline
    and one pass per edge of a target drawing uniforms and exponentials (1 + 3 + 3; a scenario declaring
    ``edge_labels`` takes fewer: :func:`.injection.scenario_passes`)."""
    return scenarios * scenario_passes()


class Stream:
    """One prepared scenario as an engine stream (:class:`.engine.Stream`): inputs from the harness's
    generator (:func:`.seeding.stream_seed`), the target called through the one :class:`.calls.Caller`
    with a generator seeded by the rows drawn so far (:func:`.seeding.call_seed`), and the counts of
    every family's row keys and impossible outcomes."""

    def __init__(self, number: int, prepared: PreparedScenario, caller: Caller, seed: int, batch_size: int):
        self.index, self.prepared, self.caller, self.seed = number, prepared, caller, seed
        self.name, self.vocab, self.k = prepared.name, prepared.vocab, prepared.k
        self.certainty_probe = prepared.certainty_probe
        self.tolerance = prepared.tolerance
        self.impossible_labels = tuple(prepared.impossible_labels)
        self.notes = prepared.notes
        self.input_gen = generator(stream_seed(seed, number))
        self.chunk = max(1, min(batch_size, prepared.max_call_rows))
        self.rows = 0
        self.failing: dict[str, FailingCall] = {}  # label -> the first call that showed it (diagnosis, replay)

    @property
    def families(self) -> list[Any]:
        return self.prepared.families

    def draw(self, rows: int) -> RowBatch:
        """Run the target on ``rows`` fresh rows (in calls of at most ``chunk`` rows)."""
        counts = [np.zeros(f.n_keys) for f in self.families]
        impossible = {label: 0 for label in self.impossible_labels}
        first: dict[str, int] = {}
        done = 0
        while done < rows:
            n = min(self.caller.rows_per_call(self.name, self.chunk), rows - done)  # sized from its rate
            if done and self.caller.next_call_ends_late(self.name, n):
                break  # the time budget includes the last batch: the rows drawn so far are the batch
            batch = self.prepared.sample(n, self.input_gen)
            seed = call_seed(self.seed, self.index, self.rows)
            emitted = self.caller(self.prepared, batch, seed)
            for label, positions in self.prepared.impossible(batch, emitted).items():
                hit = positions[positions > 0]
                impossible[label] += int(hit.size)
                if hit.size:
                    first[label] = min(first.get(label, int(hit.min())), int(hit.min()))
                    if label not in self.failing:
                        bad = np.flatnonzero(positions > 0)
                        self.failing[label] = FailingCall(self.name, label, self.prepared, batch, emitted, seed, bad,
                                                          positions[bad], self.rows)
            for fam, cnt in zip(self.families, counts):
                cnt += np.bincount(fam.key(emitted), minlength=fam.n_keys)
            done += n
            self.rows += n
        return RowBatch(done, counts, {k: v for k, v in impossible.items() if v}, first)

    def empty_report(self) -> ScenarioReport:
        """The report of a stream never drawn (a fail-fast run stopped before the statistics)."""
        return ScenarioReport(self.name, self.vocab, self.k, 0,
                              sum(f.size for f in self.families) + len(self.impossible_labels),
                              self.tolerance, 1.0, True, certainty_probe=self.certainty_probe)


class _NothingInScope(Exception):
    """Every scenario of a check is out of scope for its dtype (:func:`unbuilt_report`): nothing is drawn."""


def unbuilt_report(prepared: PreparedScenario, reason: str) -> ScenarioReport:
    """The report of a scenario out of scope because its exact law cannot be built for the dtype (``reason``):
    no row drawn, its band vacuous (1)."""
    return ScenarioReport(prepared.name, prepared.vocab, prepared.k, 0, 0, 1.0, 1.0, False, scope_reason=reason)


def _reproducibility(stream: Stream, caller: Caller, rows: int) -> list[Finding]:
    """One batch of ``stream``'s scenario, twice, with generators of the same seed."""
    # in calls sized from the target's rate (each part seeded by its first row, alike in both runs)
    per_call = caller.rows_per_call(stream.name, rows)
    parts = [(start, stream.prepared.sample(min(per_call, rows - start), generator(pair_seed(stream.seed, start))))
             for start in range(0, rows, per_call)] if per_call < rows else [(0, stream.prepared.sample(
                 rows, generator(stream.seed)))]
    first, second = (np.concatenate([np.asarray(caller(stream.prepared, batch, pair_seed(stream.seed, start)))
                                     for start, batch in parts]) for _ in range(2))
    differ = int((first != second).any(axis=1).sum())
    if not differ:
        return []
    return [Finding(stream.name, "reproducibility",
                    f"two runs of the same {rows}-row batch with same-seeded generators differ in {differ} rows: "
                    f"the target {IRREPRODUCIBLE}", 0.0, differ / rows, 0.0, math.inf, 0.0, rows)]


def _injection_findings(injection: InjectionResult,
                        accept_rate: float | None) -> tuple[list[Finding], list[Finding]]:
    """Each injection finding as a certain :class:`Finding` (its text names the edge and its rate; ``rate``
    holds its rate bound on the real generator), split into findings and the residues ``accept_rate``
    accepts: those whose rate bound is known and at most ``accept_rate`` (a finding of unknown rate is
    never accepted)."""
    findings: list[Finding] = []
    accepted: list[Finding] = []
    for f in injection.findings:
        bound = f.rate_bound
        finding = Finding(f.scenario, "rng-injection", f.describe(), 0.0, float(f.injected_rate), 0.0, math.inf,
                          0.0, injection.rows, rate=None if bound is None else float(bound))
        keep = accept_rate is None or bound is None or bound > Fraction(accept_rate)
        (findings if keep else accepted).append(finding)
    return findings, accepted


def _budget_overrun(time_budget: float | None, total: float, *callers: Any) -> str | None:
    """Why a check ended more than a tenth past its ``time_budget`` (None when it did not): it stops only
    between calls, and needs at least one per scenario (the screening pass) and per interlude run."""
    *callers, scenarios = callers
    if time_budget is None or total <= 1.1 * time_budget:
        return None
    calls = sum(c.calls for c in callers)
    longest = max(c.longest for c in callers)
    return (f"Time budget: the check took {total:.3g} s, {100 * (total / time_budget - 1):.0f}% past --time-budget "
            f"{time_budget:g} s: it stops only between calls of the target, needs at least one per scenario "
            f"({scenarios}) and per interlude run, and made {calls} calls of up to {longest:.3g} s; a larger budget "
            "or a faster call fits")


def run_check(target: Callable[..., Any], options: CheckOptions) -> CheckResult:
    """:func:`check` with options already built."""
    contract = options.contract
    contract.check_signature(target, "target")
    options = options.for_target(target)
    impl = contract.implementation()
    device = resolve_device(options.device)
    suite = list(options.scenarios) if options.scenarios is not None else impl.default_suite(options)
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    tv = options.max_detectable_tv
    per_scenario = options.samples if options.samples is not None else (
        rows_per_scenario(options.budget, suite, tv) if options.budget is not None else None)
    if options.budget is not None and per_scenario < MIN_ROWS:
        raise SpecproofInputError("budget", f"{options.budget} rows give {per_scenario} rows per scenario: too few",
                                  f"use at least {smallest_budget(suite, tv)} rows ({MIN_ROWS} per statistical "
                                  "scenario)")
    start = time.perf_counter()
    # a time budget bounds every call too: one that hangs past the budget's end (and a grace) is stopped
    ends_at = None if options.time_budget is None else start + options.time_budget
    caller = Caller(target, device, options.timeout, options.hard_timeout, ends_at, options.time_budget)
    prepared = [impl.prepare(s, options, device) for s in suite]
    # the precision probe's calls come first, under the same deadline, and count as verifier rows and time
    probe_caller = Caller(target, device, options.timeout, options.hard_timeout, ends_at, options.time_budget)
    band = choose_band(prepared, probe_caller, options)
    # a scenario whose exact law cannot be built for the dtype (.contracts.prepared) runs no row: out of scope
    unbuilt = [(p, why) for p in prepared if (why := getattr(p, "out_of_scope", None)) is not None]
    streams = [Stream(number, p, caller, options.seed, options.batch_size)
               for number, p in zip(stream_numbers(prepared), prepared) if all(p is not q for q, _ in unbuilt)]
    inject_here = options.inject and device.type in ("cpu", "cuda")  # generators with an edge model
    injection_note = None
    if options.inject and not inject_here:
        injection_note = (f"RNG edge injection not run: its edge models cover torch's CPU and CUDA generators, "
                          f"not {device.type}")
    subjects = impl.injection_scenarios(prepared, options, device) if inject_here else []
    passes = sum(scenario_passes(getattr(s, "edge_labels", None)) for s in subjects)  # ladders: their edge only
    interlude_passes = passes + 2  # the injection's passes and the reproducibility pair (each at most a pass)
    time_budget = options.time_budget
    share = INJECTION_SECONDS if time_budget is None else min(INJECTION_SECONDS, 0.1 * time_budget)
    reserved = share if subjects else share * 2 / interlude_passes  # the reproducibility pair's part alone
    repro_cap = min(REPRODUCIBILITY_ROWS, per_scenario or REPRODUCIBILITY_ROWS)
    injection_caller = Caller(target, device, options.timeout, options.hard_timeout, ends_at, options.time_budget)
    injection: InjectionResult | None = None
    reproducibility: list[Finding] = []
    interlude_rows = 0  # target rows the interlude (reproducibility pair, injection) called
    ran, pair_note = False, None  # whether the interlude ran (the engine calls it at most once); a skipped pair

    floor: list[int] = []  # computed at most once: the rows the coverage aim needs (the contract's sites)

    def coverage_floor() -> int:
        """Without a ``time_budget``, the rows per pass that keep every acceptance site's miss at most
        :data:`.coverage.COVERAGE_AIM` (at most the contract's rows): a pass sized from a loaded machine's
        speed would otherwise lose coverage; under a budget the clock decides and the figure is stated."""
        if not floor:
            covered = getattr(impl, "coverage", None)
            sites = () if covered is None or time_budget is not None else covered(suite, options, None, {}).sites
            floor.append(min(impl.INJECTION_ROWS, rows_for_aim([s.per_row for s in sites])))
        return floor[0]

    def pass_rows() -> int:
        """Rows per injection pass (and at most per reproducibility run): the contract's, fewer for a slow
        target (timed on the calls so far) so that the interlude takes about ``share`` seconds, but not below
        :func:`coverage_floor`; and one call of them within a share of ``timeout``
        (:meth:`.calls.Caller.rows_per_call`), which may cut a pass below the floor for a target slow per row
        (its coverage is then stated as run)."""
        per_row = caller.seconds_per_row()
        rows = int(min(impl.INJECTION_ROWS, max(INJECTION_MIN_ROWS, share / (interlude_passes * max(per_row, 1e-9)))))
        if subjects and rows < impl.INJECTION_ROWS:
            rows = max(rows, coverage_floor())
        return caller.rows_per_call("", rows)  # and one call of them within a share of --timeout

    def interlude_cost() -> int:
        """The interlude's target rows: the streams draw as many first (module docstring: Order)."""
        n = pass_rows()
        return 2 * min(repro_cap, n) + n * passes

    def run_interlude() -> bool:
        nonlocal injection, interlude_rows, ran, pair_note
        ran, before = True, caller.rows
        # under a time budget the interlude ends within its share: what does not fit is skipped, and said
        deadline = None if time_budget is None else Deadline(reserved, caller.seconds_per_row)
        pair = min(repro_cap, pass_rows()) if deadline is None else deadline.pair_rows(
            min(repro_cap, pass_rows()), share * 2 / interlude_passes)
        if pair:
            statistical = next((s for s in streams if not s.certainty_probe), streams[0])
            reproducibility.extend(_reproducibility(statistical, caller, pair))
        else:
            pair_note = deadline.pair_skipped()
        interlude_rows = caller.rows - before
        if subjects and not (reproducibility and options.fail_fast):
            # a scenario's finding settles the verdict (certain): the injection stops there unless --collect-all;
            # under --accept-rate a finding may be an accepted residue: the injection then runs every scenario
            settles = options.fail_fast or not options.collect_all
            injection = run_injection(subjects, injection_caller, dtype=options.dtype, seed=options.seed,
                                      rows=pass_rows(), fail_fast=settles and options.accept_rate is None,
                                      deadline=deadline)
            interlude_rows += injection.verifier_rows
        return bool(reproducibility) or bool(
            injection is not None and _injection_findings(injection, options.accept_rate)[0])

    engine = options.engine
    drawn = streams if engine is None or not streams else engine.shard(streams, target, options)
    inconclusive = None
    try:
        if not streams:  # every scenario out of scope (its law unbuilt): no row to draw, no interlude to run
            raise _NothingInScope
        run = run_streams(drawn, alpha=options.alpha, rows=per_scenario, level=options.level,
                          max_detectable_tv=tv, fail_fast=options.fail_fast,
                          settle=None if options.collect_all else SETTLE_FACTOR,
                          # the budget covers the whole check: the preparation is spent, the interlude's share kept
                          time_budget=None if time_budget is None else max(
                              1e-3, time_budget - (time.perf_counter() - start) - reserved),
                          progress=options.progress, interlude=(interlude_cost, run_interlude))
    except _NothingInScope:
        run = EngineRun([], 0, 0.0, "no scenario in scope", None)
    except ShardFailure as failure:  # rows lost: nothing is concluded from the rest
        run, inconclusive = EngineRun([s.empty_report() for s in streams], 0, 0.0, "shard-failed", None), str(failure)
        if not ran and run_interlude():  # its findings are certain and need no shard
            run = EngineRun(run.reports, 0, 0.0, run.stop_reason, 0, True)
    finally:
        if engine is not None:
            engine.release()  # pieces submitted ahead and never read
    injected, accepted = _injection_findings(injection, options.accept_rate) if injection is not None else ([], [])
    extra = list(reproducibility) + injected
    injection_note = interlude_note(injection.summary() if injection is not None else injection_note, ran,
                                    bool(subjects), injection is not None, run.stop_reason)
    total = time.perf_counter() - start
    first = run.rows_at_first_flag
    called = None if first is None else first + probe_caller.rows + (
        interlude_rows if run.interlude_before_first_flag else 0)
    reports = run.reports + [unbuilt_report(p, why) for p, why in unbuilt]
    verdict = verdict_for(reports, extra, tv)
    if inconclusive is not None and not extra:
        verdict = Verdict.INCONCLUSIVE
    spent = caller.seconds + injection_caller.seconds + probe_caller.seconds
    late = _budget_overrun(time_budget, total, caller, injection_caller, len(streams))
    rule = getattr(options.rule, "name", options.rule)
    covered = getattr(impl, "coverage", None)  # acceptance sites (.contracts.coverage), where a contract names them
    coverage = None if covered is None else covered(suite, options, injection, {s.name: s.rows for s in run.reports})
    return CheckResult(verdict=verdict, dtype=options.dtype, device=str(device), seed=options.seed,
                       alpha=options.alpha, samples=per_scenario or 0, rule=rule, scenarios=reports,
                       verifier_seconds=spent, harness_seconds=total - spent, max_detectable_tv=float(tv),
                       reproducibility=list(reproducibility),
                       level=options.level if per_scenario is None else "samples", stop_reason=run.stop_reason,
                       rows_at_first_flag=first, verifier_rows_at_first_flag=called,
                       injection=None if injection is None else injection.as_json(),
                       injection_summary="\n".join(filter(None, [injection_note, pair_note, late])) or None,
                       injection_findings=injected, time_budget=time_budget, inconclusive=inconclusive,
                       contract=contract.name, accept_rate=options.accept_rate, accepted_residues=accepted,
                       coverage=coverage, band=band.as_json(),
                       failing_calls=[c for s in streams for c in s.failing.values()],
                       rerun=rerun_line(target_name(target), options))
