"""``check_verifier``: is a batched verifier lossless (and does it conform to a named rule)?

For each scenario (:mod:`.scenarios`) the harness drafts ``x_1..x_K`` from the rounded draft law,
builds ``draft_probs [B,K,V]`` / ``target_probs [B,K+1,V]`` in the dtype under test on the device
under test, calls ``verify(draft_probs, target_probs, draft_token_ids, generator)`` and checks:

1. the output contract (shape ``[B,K+1]``, int64, ids in ``[-1, V)``, no ``-1`` holes, at least one
   token) - a violation is a usage error (:class:`ContractViolation`);
2. RNG edge injection (on by default, CPU; :mod:`.injection`): the verifier runs under an interception
   of its random draws that replaces a known fraction of them by values the real generator produces
   at its edges (0, the smallest and largest grid values); a probability-0 emission or a broken
   contract under an injected value is a certain, reproducible finding with its exact per-draw rate;
3. impossible events, with zero tolerance: an emitted token the target gives probability exactly 0
   at its prefix, or emitted tokens before the last that are not the drafted ones;
4. event families (:mod:`.events`) with anytime-valid tests (:mod:`.engine`, :mod:`.eprocess`):
   family-wise false-alarm probability at most ``alpha`` (default 1e-6) over all events, scenarios
   and every batch at which the evidence is read, with the dtype's derived tolerance plus the
   harness's float64 drafts' own drift (:func:`.tolerances.check_tolerance`) as the null band; rows
   go adaptively to the scenario whose evidence grows;
5. reproducibility: one batch is run twice with same-seeded generators and fresh copies of the
   inputs; outputs that differ (a verifier using the global RNG, not ``generator``) are a finding.

Depth: ``level="default"`` gives each scenario the rows its hardest event needs for a detectable TV
of ``0.9 * max_detectable_tv`` (default 0.02); ``"thorough"`` aims at a quarter of it with at least
200,000 rows per scenario; ``samples`` fixes the rows per scenario; ``time_budget`` spends a number
of seconds.  The result reports, per scenario, the smallest total variation a deviation concentrated
on a tested event must have to be detected with probability 0.99; the verdict (:mod:`.result`) is
PASS only when that is at most ``max_detectable_tv`` everywhere, else UNDERPOWERED (or FAIL on a
finding).  The verifier gets its own copies of the inputs: the harness never reads back what it was
handed.

Order.  The streams run first until they have drawn as many rows as the checks that draw rows of
their own would (the engine's ``interlude``: the reproducibility pair, then the injection, its passes
x rows per pass), then those, then the rest of the streams: a bug the statistics see sooner is flagged
without paying for them, and a rare-draw or global-RNG bug the statistics cannot see is flagged after
at most twice their rows (the doubling argument).  ``fail_fast`` only stops the run at the first
finding; until then a run with and without it draws the same rows at a fixed depth, so the first
finding comes after the same rows (``rows_at_first_flag``; ``verifier_rows_at_first_flag`` adds the
interlude's rows, whole, when it came first).  Exceptions: a verifier slower than about 0.68 ms per row
gets passes sized from its calls so far (so that the interlude takes about ``INJECTION_SECONDS``, a
tenth of a ``time_budget`` when smaller; at least ``INJECTION_MIN_ROWS`` a pass, so without a budget a
verifier slower than about 5 ms a row takes longer), and a ``time_budget`` sets quotas from the clock,
so two runs may differ there.  Under a ``time_budget`` the interlude also ends within its share
(:class:`.calls.Deadline`): the pair shrinks to fit (to ``REPRODUCIBILITY_MIN_ROWS`` rows at least),
and a pass that would end past the share is skipped and listed in the summary (the injection's
verdict is then ``incomplete``), so the whole check ends near the budget (past it by at most a batch
of the streams, or a finding's rerun).  The interlude's rows are its own and its findings certain, so
the order changes no false-alarm bound; it also runs when a Ray shard fails for good.

Layer: harness.check (2); imports proofs, harness.exact and harness.check.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import StepRule, get_step_rule

from specproof.harness.check.calls import (ContractViolation, Deadline, VerifierCaller, VerifierError,
                                           check_run_arguments, resolve_device)
from specproof.harness.check.engine import LEVELS, EngineRun, RowBatch, run_streams, verdict_for
from specproof.harness.check.events import EventFamily, build_families, impossible_rows
from specproof.harness.check.ray_engine import ShardFailure
from specproof.harness.check.injection import inject_check
from specproof.harness.check.result import (DEFAULT_MAX_DETECTABLE_TV, DEFAULT_SAMPLES, DEFAULT_TIMEOUT, CheckResult,
                                            Finding, ScenarioReport, Verdict, interlude_note)
from specproof.harness.check.scenarios import Realisation, Scenario, default_suite
from specproof.harness.check.statistics import rows_to_see_rate
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.tolerances import check_tolerance

__all__ = ["check_verifier", "CheckResult", "Finding", "ScenarioReport", "ContractViolation",
           "VerifierError", "Verdict", "DEFAULT_SAMPLES", "DEFAULT_TIMEOUT", "DEFAULT_MAX_DETECTABLE_TV",
           "impossible_rows", "BatchedStream", "LEVELS", "rows_per_scenario", "smallest_budget"]

REPRODUCIBILITY_ROWS = 256
INJECTION_ROWS = 512  # rows per injection pass in a check (an edge flags 3-32 of 512 rows in the zoo)
INJECTION_SECONDS = 8.0  # the injection's share of a default check, for slow verifiers
INJECTION_PASSES = 28  # passes of inject_check on the default scenarios (1 baseline + 6 edges, 4 scenarios)
INJECTION_MIN_ROWS = 64
MIN_ROWS = 64  # the fewest rows per scenario a check accepts (samples, or what a budget gives)
INTERLUDE_PASSES = INJECTION_PASSES + 2  # the injection's passes and the reproducibility pair (each at most a pass)
ZERO_TOKEN = "emitted a token of target probability 0 at its prefix"
MISMATCH = "emitted tokens before the last that are not the drafted ones"


def check_verifier(verify: Callable[..., Any], *, dtype: Any = "float32", device: str = "cpu",
                   samples: int | None = None, budget: int | None = None, seed: int = 0,
                   alpha: float = 1e-6, rule: str | StepRule | None = None,
                   scenarios: list[Scenario] | None = None, batch_size: int = 8192,
                   timeout: float | None = DEFAULT_TIMEOUT, fail_fast: bool = False,
                   max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV,
                   progress: bool | Callable[[str], None] | None = None,
                   hard_timeout: bool = False, level: str = "default", time_budget: float | None = None,
                   inject: bool = True, engine: Any = None) -> CheckResult:
    """Check a batched-contract verifier against the exact reference (module docstring).

    ``verify`` is executed in this process with the caller's rights.
    ``level``: ``"default"`` or ``"thorough"`` (rows per scenario from the power they must reach);
    ``samples``: rows per scenario instead; ``budget``: total stream rows, split evenly over
    the statistical scenarios after a certainty probe's few (:func:`rows_per_scenario`; the
    reproducibility pair and the injection come on top; at least :func:`smallest_budget`); ``time_budget``:
    seconds to spend (rows where the evidence grows, quotas equalising the detectable TV).
    ``rule``: also require the emission law of this single-step rule (e.g. ``"canonical"``).
    ``timeout``: seconds allowed per verifier call (default 120; enforced on the main thread on POSIX
    only; ``None`` for no limit; see :mod:`.calls` for verifiers that catch ``BaseException``).
    ``hard_timeout``: end the process (exit 2) when a verifier ignores the time limit (the CLI's choice).
    Limit: without it, a verifier that catches ``BaseException`` in a loop is never stopped (the verifier
    runs in this process, not in a killable child); one that catches it once is refused when it returns.
    ``max_detectable_tv``: the power a PASS must have; a run that cannot see this TV is UNDERPOWERED.
    ``progress``: ``None`` a bar when stderr is a terminal, ``True``/``False`` bar or silence, or a
    callable receiving one line per batch.
    ``fail_fast``: stop the whole run at the first finding (``CheckResult.rows`` then counts the rows
    it took to flag the verifier; ``rows_at_first_flag`` is recorded either way).
    ``inject``: run the RNG edge injection (CPU only; reported as not run elsewhere) after the
    streams' first rows and the reproducibility pair (module docstring: Order).
    ``engine``: ``None`` (rows drawn here) or an entered :class:`.ray_engine.RayEngine` (rows drawn by
    Ray tasks; a shard that fails for good makes the verdict INCONCLUSIVE, never PASS)."""
    dtype = dtype_name(dtype)
    if samples is not None and budget is not None:
        raise SpecproofInputError("samples", "both samples and budget given", "pass one of them")
    if time_budget is not None and (samples is not None or budget is not None):
        raise SpecproofInputError("time_budget", "given with samples or budget", "pass one of them")
    check_run_arguments(seed, max_detectable_tv, timeout)
    rule_record = get_step_rule(rule) if rule is not None else None
    if scenarios is not None:
        suite = list(scenarios)
    elif rule_record is not None and rule_record.name == "greedy":
        suite = [s.greedy() for s in default_suite()]  # greedy is lossless for temperature-0 targets
    else:
        suite = default_suite()
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        raise SpecproofInputError("budget", f"{budget!r} is not a whole number of rows", "pass an int, e.g. 100_000")
    per_scenario = samples if samples is not None else (
        rows_per_scenario(budget, suite, max_detectable_tv) if budget is not None else None)
    if per_scenario is not None and per_scenario < MIN_ROWS:
        if samples is None:
            raise SpecproofInputError("budget", f"{budget} rows give {per_scenario} rows per scenario: too few",
                                      f"use at least {smallest_budget(suite, max_detectable_tv)} rows "
                                      f"({MIN_ROWS} per statistical scenario)")
        raise SpecproofInputError("samples", f"{per_scenario} rows per scenario is too few",
                                  f"use at least {MIN_ROWS} rows per scenario")
    if not 0 < alpha < 1:
        raise SpecproofInputError("alpha", f"{alpha} is not in (0, 1)", "use e.g. 1e-6")
    if batch_size < 1:
        raise SpecproofInputError("batch_size", f"{batch_size} < 1", "use a positive batch size")
    if level not in LEVELS:
        raise SpecproofInputError("level", f"{level!r} is not a level", f"use one of {sorted(LEVELS)}")
    torch_device = resolve_device(device)

    start = time.perf_counter()
    call = VerifierCaller(verify, torch_device, timeout, hard_timeout)
    streams = [BatchedStream(number, *_prepared(scenario, dtype, str(torch_device), rule_record), dtype,
                             batch_size, seed, call)
               for number, scenario in zip(stream_numbers(suite), suite)]
    injection, injection_note, inconclusive = None, None, None
    reproducibility: list[Finding] = []
    interlude_rows = 0  # verifier rows the interlude (reproducibility pair, injection) called
    inject_here = inject and torch_device.type == "cpu"
    if inject and not inject_here:
        injection_note = f"RNG edge injection not run: its edge model covers torch's CPU generator, not {torch_device.type}"
    share = INJECTION_SECONDS if time_budget is None else min(INJECTION_SECONDS, 0.1 * time_budget)
    reserved = share if inject_here else share * 2 / INTERLUDE_PASSES  # the reproducibility pair's part alone
    repro_cap = min(REPRODUCIBILITY_ROWS, per_scenario or REPRODUCIBILITY_ROWS)

    def pass_rows() -> int:
        """Rows per injection pass (and at most per reproducibility run): INJECTION_ROWS, fewer for a
        slow verifier (timed on the calls so far) so that the interlude takes about ``share`` seconds."""
        per_row = call.seconds_per_row()
        return int(min(INJECTION_ROWS, max(INJECTION_MIN_ROWS, share / (INTERLUDE_PASSES * max(per_row, 1e-9)))))

    def interlude_cost() -> int:
        """The interlude's verifier rows: the streams draw as many first (module docstring: Order)."""
        n = pass_rows()
        return 2 * min(repro_cap, n) + (n * INJECTION_PASSES if inject_here else 0)

    ran, pair_note = False, None  # whether the interlude ran (the engine calls it at most once); a skipped pair

    def run_interlude() -> bool:
        nonlocal injection, interlude_rows, ran, pair_note
        ran, before = True, call.rows
        # under a time budget the interlude ends within its share: what does not fit is skipped, and said
        deadline = None if time_budget is None else Deadline(reserved, call.seconds_per_row)
        pair = min(repro_cap, pass_rows()) if deadline is None else deadline.pair_rows(min(repro_cap, pass_rows()),
                                                                               share * 2 / INTERLUDE_PASSES)
        if pair:
            reproducibility.extend(_reproducibility(next((s for s in streams if not s.certainty_probe), streams[0]),
                                                    call, pair))
        else:
            pair_note = deadline.pair_skipped()
        interlude_rows = call.rows - before
        if inject_here and not (reproducibility and fail_fast):
            injection = inject_check(verify, dtype=dtype, device=str(torch_device), seed=seed, timeout=timeout,
                                     rows=pass_rows(), fail_fast=fail_fast, deadline=deadline)
            interlude_rows += injection.verifier_rows
        return bool(reproducibility) or bool(injection is not None and injection.findings)

    drawn = streams if engine is None else engine.shard(streams, verify, rule_record, timeout, batch_size)
    try:
        run = run_streams(drawn, alpha=alpha, rows=per_scenario, level=level,
                          max_detectable_tv=max_detectable_tv, fail_fast=fail_fast,
                          # the budget covers the whole check: the preparation is spent, the interlude's share kept
                          time_budget=None if time_budget is None else max(
                              1e-3, time_budget - (time.perf_counter() - start) - reserved),
                          progress=progress, interlude=(interlude_cost, run_interlude))
    except ShardFailure as failure:  # rows lost: nothing is concluded from the rest
        run, inconclusive = EngineRun([s.empty_report() for s in streams], 0, 0.0, "shard-failed", None), str(failure)
        if not ran and run_interlude():  # its findings are certain and need no shard
            run = EngineRun(run.reports, 0, 0.0, run.stop_reason, 0, True)
    finally:
        if engine is not None:
            engine.release()  # pieces submitted ahead and never read
    extra = list(reproducibility) + (_injection_findings(injection) if injection is not None else [])
    injection_note = interlude_note(injection_note, ran, inject_here, injection is not None, run.stop_reason)
    total = time.perf_counter() - start
    first = run.rows_at_first_flag
    called = None if first is None else first + (interlude_rows if run.interlude_before_first_flag else 0)
    verdict = verdict_for(run.reports, extra, max_detectable_tv)
    if inconclusive is not None and not extra:
        verdict = Verdict.INCONCLUSIVE
    return CheckResult(verdict=verdict, dtype=dtype, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=per_scenario or 0, rule=rule_record.name if rule_record else None,
                       scenarios=run.reports, verifier_seconds=call.seconds,
                       harness_seconds=total - call.seconds, max_detectable_tv=float(max_detectable_tv),
                       reproducibility=list(reproducibility), level=level if per_scenario is None else "samples",
                       stop_reason=run.stop_reason, rows_at_first_flag=first, verifier_rows_at_first_flag=called,
                       injection=None if injection is None else injection.as_json(),
                       injection_summary="\n".join(filter(None, [injection.summary() if injection is not None
                                                                  else injection_note, pair_note])) or None,
                       injection_findings=_injection_findings(injection) if injection is not None else [],
                       time_budget=time_budget, inconclusive=inconclusive)


def _injection_findings(injection: Any) -> list[Finding]:
    """Each injection finding as a certain :class:`Finding` (its text names the edge and its rate)."""
    return [Finding(f.scenario if hasattr(f, "scenario") else "injection", "rng-injection", f.describe(),
                    0.0, float(f.injected_rate), 0.0, math.inf, 0.0, injection.rows)
            for f in injection.findings]


def _reproducibility(state: "BatchedStream", call: VerifierCaller, per_scenario: int) -> list[Finding]:
    """One batch of a scenario, twice, with generators of the same seed (the first statistical one: in
    the certainty probe every acceptance is decided, ratios 0, 1 or 2, so an acceptance uniform drawn
    from the global RNG would change nothing there)."""
    n = min(REPRODUCIBILITY_ROWS, per_scenario)
    drafts = state.real.sample_drafts(n, torch.Generator().manual_seed(state.seed % (2**63)))
    seed = state.seed * 7_919 + 2**40
    first, second = call(state.real, drafts, seed), call(state.real, drafts, seed)
    differ = int((first != second).any(dim=1).sum())
    if not differ:
        return []
    return [Finding(state.real.scenario.name, "reproducibility",
                    f"two runs of the same {n}-row batch with same-seeded generators differ in {differ} rows: "
                    "the verifier draws randomness that the generator argument does not control (e.g. the "
                    "global RNG); fix: pass generator=generator to every random call",
                    0.0, differ / n, 0.0, math.inf, 0.0, n)]


PROBE_STREAMS = 1 << 20  # the first certainty probe's stream number


def stream_numbers(suite: list[Scenario]) -> list[int]:
    """The number that seeds each scenario's rows: statistical scenarios are numbered among themselves
    (0, 1, ...) and certainty probes from ``PROBE_STREAMS``, so adding a probe to a suite leaves the
    rows of every statistical scenario, and so a seeded run's statistics, as they were."""
    counts = [0, 0]
    out = []
    for scenario in suite:
        kind = int(scenario.certainty_probe)
        out.append(counts[kind] + kind * PROBE_STREAMS)
        counts[kind] += 1
    return out


_PREPARED: dict[tuple[int, str, str, str | None], tuple[Scenario, Realisation, list[EventFamily]]] = {}


def _split(suite: list[Scenario], max_detectable_tv: float) -> tuple[int, int, int | float]:
    """``(P, S, R)``: the suite's certainty probes, its statistical scenarios, and the rows a probe
    takes, ``R = rows_to_see_rate(max_detectable_tv)`` (:func:`.engine.plan_quota`)."""
    probes = sum(1 for s in suite if s.certainty_probe)
    return probes, len(suite) - probes, rows_to_see_rate(max_detectable_tv)


def rows_per_scenario(budget: int, suite: list[Scenario], max_detectable_tv: float) -> int:
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


def smallest_budget(suite: list[Scenario], max_detectable_tv: float) -> int:
    """The smallest ``budget`` whose :func:`rows_per_scenario` is at least ``MIN_ROWS`` (64): ``64 (P +
    S)`` when ``R >= 64`` (or without statistical scenarios), else ``P R + 64 S``."""
    probes, statistical, seen = _split(suite, max_detectable_tv)
    if seen >= MIN_ROWS or not statistical:
        return MIN_ROWS * len(suite)
    return int(probes * seen + MIN_ROWS * statistical)


def _prepared(scenario: Scenario, dtype: str, device: str,
              rule: StepRule | None) -> tuple[Realisation, list[EventFamily]]:
    """Realisation and event families of a scenario, cached: they are exact computations that do
    not depend on the verifier (the scenario is kept alive in the cache so its id stays unique)."""
    key = (id(scenario), dtype, device, rule.name if rule else None)
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not scenario:
        if len(_PREPARED) > 256:
            _PREPARED.clear()
        real = scenario.realise(dtype, device)
        hit = _PREPARED[key] = (scenario, real, build_families(real, rule))
    return hit[1], hit[2]


class BatchedStream:
    """One scenario of the batched contract as an engine stream (:mod:`.engine`): drafts from the
    rounded draft law, calls the verifier, returns the counts of every family's row keys."""

    impossible_labels = (ZERO_TOKEN, MISMATCH)

    def __init__(self, index: int, real: Realisation, families: list[EventFamily], dtype: str,
                 batch_size: int, seed: int, call: VerifierCaller):
        self.index, self.real, self.families, self.seed, self.dtype, self.call = index, real, families, seed, dtype, call
        self.name, self.vocab, self.k = real.scenario.name, real.vocab, real.k
        self.certainty_probe = real.scenario.certainty_probe  # only impossible outcomes (engine: plan_quota)
        self.tolerance = float(check_tolerance(dtype, real.vocab, real.k))
        self.draft_gen = torch.Generator().manual_seed((seed * 1_000_003 + index) % (2**63))
        # rows per call: at most ~2^25 probabilities per batch (128 MiB in float32)
        self.chunk = max(16, min(batch_size, (1 << 25) // ((2 * real.k + 1) * real.vocab)))
        self.rows = 0
        note = _zero_token_note(dtype, real)
        self.notes = {ZERO_TOKEN: note} if note else {}

    def draw(self, rows: int) -> RowBatch:
        """Run the verifier on ``rows`` fresh rows (in calls of at most ``chunk`` rows)."""
        real = self.real
        counts = [np.zeros(f.n_keys) for f in self.families]
        impossible = {ZERO_TOKEN: 0, MISMATCH: 0}
        first: dict[str, int] = {}
        done = 0
        while done < rows:
            n = min(self.chunk, rows - done)
            drafts = real.sample_drafts(n, self.draft_gen)
            emitted = self.call(real, drafts, self.seed * 7_919 + self.index * 104_729 + self.rows)
            zero_token, mismatch, positions = impossible_rows(emitted, drafts, real)
            for label, count, pos in zip((ZERO_TOKEN, MISMATCH), (zero_token, mismatch), positions):
                impossible[label] += count
                if pos:
                    first[label] = min(first.get(label, pos), pos)
            for fam, cnt in zip(self.families, counts):
                cnt += np.bincount(fam.key(emitted), minlength=fam.n_keys)
            done += n
            self.rows += n
        return RowBatch(done, counts, impossible, first)

    def empty_report(self) -> ScenarioReport:
        """The report of a stream never drawn (a fail-fast run stopped before the statistics)."""
        return ScenarioReport(self.name, self.vocab, self.k, 0, sum(f.size for f in self.families) + 2,
                              self.tolerance, 1.0, True, certainty_probe=self.certainty_probe)




def _zero_token_note(dtype: str, real: Realisation) -> str | None:
    """A probability-0 token in float16 on CPU: name torch's sampler defect (impls.sampler_probe)."""
    if dtype == "float16" and real.device.type == "cpu":
        from specproof.impls.sampler_probe import MULTINOMIAL_FLOAT16_DEFECT

        return f"if the verifier draws with torch.multinomial, this is a sampler defect: {MULTINOMIAL_FLOAT16_DEFECT}"
    return None
