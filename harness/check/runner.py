"""``check_verifier``: is a batched verifier lossless (and does it conform to a named rule)?

For each scenario (:mod:`.scenarios`) the harness drafts ``x_1..x_K`` from the rounded draft law,
builds ``draft_probs [B,K,V]`` / ``target_probs [B,K+1,V]`` in the dtype under test on the device
under test, calls ``verify(draft_probs, target_probs, draft_token_ids, generator)`` and checks:

1. the output contract (shape ``[B,K+1]``, int64, ids in ``[-1, V)``, no ``-1`` holes, at least one
   token) - a violation is a usage error (:class:`ContractViolation`);
2. impossible events, with zero tolerance: an emitted token the target gives probability exactly 0
   at its prefix, or emitted tokens before the last that are not the drafted ones;
3. event families (:mod:`.events`) with Chernoff tests (:mod:`.statistics`): family-wise false-alarm
   probability at most ``alpha`` (default 1e-6) over all events, scenarios and sequential looks,
   with the dtype's derived tolerance (:mod:`.tolerances`) as the null band.

4. reproducibility: one batch is run twice with same-seeded generators and fresh copies of the
   inputs; outputs that differ (a verifier using the global RNG, not ``generator``) are a finding.

Sequential: rows arrive in four looks (1/8, 1/4, 1/2, all of the samples), interleaved over the
scenarios; a scenario stops at the first look that rejects (the whole run too with ``fail_fast``).
The result reports, per scenario, the smallest total variation a deviation concentrated on a tested
event must have to be detected with probability 0.99; the verdict (:mod:`.check_result`) is PASS only
when that is at most ``max_detectable_tv`` everywhere, else UNDERPOWERED (or FAIL on a finding).
The verifier gets its own copies of the inputs: the harness never reads back what it was handed.

Layer: harness.check (2); imports proofs, harness.exact and harness.check.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable

import numpy as np
import torch

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import StepRule, get_step_rule

from specproof.harness.check.calls import (ContractViolation, VerifierCaller, VerifierError, check_timeout,
                                           resolve_device)
from specproof.harness.check.result import (DEFAULT_MAX_DETECTABLE_TV, DEFAULT_SAMPLES, DEFAULT_TIMEOUT, CheckResult, Finding,
                           ScenarioReport, Verdict)
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.check.events import EventFamily, build_families, emitted_lengths
from specproof.harness.check.scenarios import Realisation, Scenario, default_suite
from specproof.harness.check.statistics import chernoff_statistics, critical_value, detectable_shift
from specproof.harness.exact.tolerances import round_tolerance

__all__ = ["check_verifier", "CheckResult", "Finding", "ScenarioReport", "ContractViolation",
           "VerifierError", "Verdict", "DEFAULT_SAMPLES", "DEFAULT_TIMEOUT", "DEFAULT_MAX_DETECTABLE_TV", "LOOKS",
           "impossible_rows"]

LOOKS = (1 / 8, 1 / 4, 1 / 2, 1.0)
MAX_FINDINGS_PER_SCENARIO = 100  # stored (JSON); summary() prints the strongest SHOWN_FINDINGS
REPRODUCIBILITY_ROWS = 256


def _test_family(family: EventFamily, counts: np.ndarray, n: int, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observed means, per-event tolerance, statistic) for one family: :func:`.statistics.chernoff_statistics`."""
    observed = counts @ family.matrix / n
    tol = np.where(family.zero_tolerance, 0.0, tau)
    return observed, tol, chernoff_statistics(family.expected, observed, n, tol)


def impossible_rows(emitted: torch.Tensor, drafts: torch.Tensor, real: Realisation) -> tuple[int, int, list[int]]:
    """Rows emitting a token of target probability 0 at its emitted prefix (read from the harness's own
    rounded tables, never from the verifier's inputs); rows whose leading tokens are not the drafts;
    the earliest 1-based token position of each kind (0 when none)."""
    n, width = emitted.shape
    lengths = emitted_lengths(emitted)
    positions = torch.arange(width)
    inside = positions < lengths.unsqueeze(1)
    tokens = emitted.clamp(min=0)
    classes = torch.cat([torch.zeros((n, 1), dtype=torch.int64), tokens[:, :-1] % real.classes], dim=1)
    probs = real.target[positions.expand(n, width), classes, tokens]
    zero_cells = inside & (probs == 0)
    before_last = positions[:-1] < (lengths - 1).unsqueeze(1)
    mismatch_cells = before_last & (emitted[:, :-1] != drafts)
    first = [int(cells.any(dim=0).nonzero()[0]) + 1 if bool(cells.any()) else 0
             for cells in (zero_cells, mismatch_cells)]
    return int(zero_cells.any(dim=1).sum()), int(mismatch_cells.any(dim=1).sum()), first


class _Progress:
    """One bar over every verifier row of the run (tqdm: percentage, rate, ETA), or messages."""

    def __init__(self, progress: Any, total: int):
        self.say = progress if callable(progress) else None
        self.bar = None
        if progress is None:
            progress = sys.stderr.isatty()
        if progress is True:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="rows", desc="specproof check", file=sys.stderr,
                            dynamic_ncols=True, unit_scale=True)

    def rows(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def look(self, name: str, rows: int, look: int, rejected: int, dropped: int) -> None:
        if self.bar is not None:
            if dropped:  # rows a stopped scenario will not run
                self.bar.total -= dropped
                self.bar.refresh()
            self.bar.set_postfix_str(f"look {look}/{len(LOOKS)}, {name}", refresh=False)
        elif self.say is not None:
            self.say(f"{name}: {rows} rows, look {look}/{len(LOOKS)}, {rejected} events rejected")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def check_verifier(verify: Callable[..., Any], *, dtype: Any = "float32", device: str = "cpu",
                   samples: int | None = None, budget: int | None = None, seed: int = 0,
                   alpha: float = 1e-6, rule: str | StepRule | None = None,
                   scenarios: list[Scenario] | None = None, batch_size: int = 8192,
                   timeout: float | None = DEFAULT_TIMEOUT, fail_fast: bool = False,
                   max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV,
                   progress: bool | Callable[[str], None] | None = None,
                   hard_timeout: bool = False) -> CheckResult:
    """Check a batched-contract verifier against the exact reference (module docstring).

    ``verify`` is executed in this process with the caller's rights.
    ``samples``: rows per scenario (default 200,000); or ``budget``: total rows split evenly.
    ``rule``: also require the emission law of this single-step rule (e.g. ``"canonical"``).
    ``timeout``: seconds allowed per verifier call (default 120; enforced on the main thread on POSIX
    only; ``None`` for no limit; see :mod:`.check_calls` for verifiers that catch ``BaseException``).
    ``hard_timeout``: end the process (exit 2) when a verifier ignores the time limit (the CLI's choice).
    Limit: without it, a verifier that catches ``BaseException`` in a loop is never stopped (the verifier
    runs in this process, not in a killable child); one that catches it once is refused when it returns.
    ``max_detectable_tv``: the power a PASS must have; a run that cannot see this TV is UNDERPOWERED.
    ``progress``: ``None`` a bar when stderr is a terminal, ``True``/``False`` bar or silence, or a
    callable receiving one line per scenario and look.
    ``fail_fast``: stop the whole run at the first look that rejects (``CheckResult.rows`` then
    counts the rows it took to flag the verifier)."""
    dtype = dtype_name(dtype)
    if samples is not None and budget is not None:
        raise SpecproofInputError("samples", "both samples and budget given", "pass one of them")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise SpecproofInputError("seed", f"{seed!r} is not an integer in [0, 2^63)", "pass e.g. 0")
    check_timeout(timeout)
    if not (isinstance(max_detectable_tv, (int, float)) and 0 < max_detectable_tv <= 1):
        raise SpecproofInputError("max_detectable_tv", f"{max_detectable_tv!r} is not in (0, 1]",
                                  f"use e.g. {DEFAULT_MAX_DETECTABLE_TV}")
    rule_record = get_step_rule(rule) if rule is not None else None
    if scenarios is not None:
        suite = list(scenarios)
    elif rule_record is not None and rule_record.name == "greedy":
        suite = [s.greedy() for s in default_suite()]  # greedy is lossless for temperature-0 targets
    else:
        suite = default_suite()
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    per_scenario = samples if samples is not None else (budget // len(suite) if budget else DEFAULT_SAMPLES)
    if per_scenario < 64:
        raise SpecproofInputError("samples", f"{per_scenario} rows per scenario is too few",
                                  "use at least 64 rows per scenario")
    if not 0 < alpha < 1:
        raise SpecproofInputError("alpha", f"{alpha} is not in (0, 1)", "use e.g. 1e-6")
    if batch_size < 1:
        raise SpecproofInputError("batch_size", f"{batch_size} < 1", "use a positive batch size")
    torch_device = resolve_device(device)

    start = time.perf_counter()
    realised = [_prepared(scenario, dtype, str(torch_device), rule_record) for scenario in suite]
    total_events = sum(f.size for _, fams in realised for f in fams) + 2 * len(realised)
    c = critical_value(alpha, total_events, len(LOOKS))
    states = [_ScenarioState(index, real, families, dtype, batch_size, seed)
              for index, (real, families) in enumerate(realised)]
    call = VerifierCaller(verify, torch_device, timeout, hard_timeout)
    bar = _Progress(progress, per_scenario * len(states))
    try:
        reproducibility = _reproducibility(states[0], call, per_scenario)
        halted = bool(reproducibility) and fail_fast
        # looks interleave the scenarios: every scenario gets 1/8 of its rows before any gets more, so a
        # bug visible in one scenario only is flagged after a fraction of the run
        for look, fraction in enumerate(LOOKS):
            if halted:
                break
            goal = max(1, int(round(per_scenario * fraction)))
            for state in states:
                if state.done:
                    continue
                state.advance(goal, call, bar)
                state.findings, state.rejected = _evaluate(state, c)
                dropped = 0
                if state.rejected:
                    state.done = True
                    state.stopped = look < len(LOOKS) - 1
                    dropped = per_scenario - state.rows
                bar.look(state.real.scenario.name, state.rows, look + 1, state.rejected, dropped)
                if state.rejected and fail_fast:
                    halted = True
                    break
    finally:
        bar.close()
    reports = [state.report(c) for state in states]
    total = time.perf_counter() - start
    if any(r.findings for r in reports) or reproducibility:
        verdict = Verdict.FAIL
    elif max(r.detectable_tv for r in reports) > max_detectable_tv:
        verdict = Verdict.UNDERPOWERED
    else:
        verdict = Verdict.PASS
    return CheckResult(verdict=verdict, dtype=dtype, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=per_scenario, rule=rule_record.name if rule_record else None,
                       scenarios=reports, verifier_seconds=call.seconds,
                       harness_seconds=total - call.seconds, max_detectable_tv=float(max_detectable_tv),
                       reproducibility=reproducibility)


def _reproducibility(state: "_ScenarioState", call: VerifierCaller, per_scenario: int) -> list[Finding]:
    """One batch of the first scenario, twice, with generators of the same seed."""
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


_PREPARED: dict[tuple[int, str, str, str | None], tuple[Scenario, Realisation, list[EventFamily]]] = {}


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


class _ScenarioState:
    """Running counts of one scenario during a check."""

    def __init__(self, index: int, real: Realisation, families: list[EventFamily], dtype: str,
                 batch_size: int, seed: int):
        self.index, self.real, self.families, self.seed, self.dtype = index, real, families, seed, dtype
        self.tau = float(round_tolerance(dtype, real.vocab, real.k))
        self.draft_gen = torch.Generator().manual_seed((seed * 1_000_003 + index) % (2**63))
        # rows per call: at most ~2^25 probabilities per batch (128 MiB in float32)
        self.chunk = max(16, min(batch_size, (1 << 25) // ((2 * real.k + 1) * real.vocab)))
        self.counts = [np.zeros(f.n_keys) for f in families]
        self.impossible = [0, 0]
        self.first_impossible = [0, 0]  # earliest token position of each impossible kind (0: none yet)
        self.rows = 0
        self.findings: list[Finding] = []
        self.rejected = 0
        self.evidence: dict[str, float] = {}  # bug-class rule -> N*KL of its excess set (excess side only)
        self.done = False
        self.stopped = False

    def advance(self, goal: int, call: VerifierCaller, bar: _Progress) -> None:
        """Run the verifier until ``goal`` rows."""
        real = self.real
        while self.rows < goal:
            n = min(self.chunk, goal - self.rows)
            drafts = real.sample_drafts(n, self.draft_gen)
            emitted = call(real, drafts, self.seed * 7_919 + self.index * 104_729 + self.rows)
            zero_token, mismatch, first = impossible_rows(emitted, drafts, real)
            self.impossible[0] += zero_token
            self.impossible[1] += mismatch
            self.first_impossible = [min(a, b) if a and b else a or b for a, b in zip(self.first_impossible, first)]
            for fam, cnt in zip(self.families, self.counts):
                cnt += np.bincount(fam.key(emitted), minlength=fam.n_keys)
            self.rows += n
            bar.rows(n)

    def report(self, c: float) -> ScenarioReport:
        expected_all = np.concatenate([f.expected for f in self.families])
        inner = expected_all[(expected_all > 0) & (expected_all < 1)]
        hardest = float(inner[np.argmin(np.abs(inner - 0.5))]) if inner.size else 0.5
        rows = max(self.rows, 1)
        return ScenarioReport(
            name=self.real.scenario.name, vocab=self.real.vocab, k=self.real.k, rows=self.rows,
            events=sum(f.size for f in self.families) + 2, tolerance=self.tau,
            detectable_tv=min(1.0, self.tau + detectable_shift(hardest, rows, c, self.tau)),
            stopped_early=self.stopped, findings=self.findings, rejected_events=self.rejected,
            bug_class_evidence=dict(self.evidence))


def _zero_token_note(state: _ScenarioState) -> str | None:
    """A probability-0 token in float16 on CPU: name torch's sampler defect (impls.sampler_probe)."""
    if state.dtype == "float16" and state.real.device.type == "cpu":
        from specproof.impls.sampler_probe import MULTINOMIAL_FLOAT16_DEFECT

        return f"if the verifier draws with torch.multinomial, this is a sampler defect: {MULTINOMIAL_FLOAT16_DEFECT}"
    return None


def _evaluate(state: _ScenarioState, c: float) -> tuple[list[Finding], int]:
    name, rows, tau = state.real.scenario.name, state.rows, state.tau
    findings: list[Finding] = []
    for count, first, label, note in zip(state.impossible, state.first_impossible,
                                         ("emitted a token of target probability 0 at its prefix",
                                          "emitted tokens before the last that are not the drafted ones"),
                                         (_zero_token_note(state), None)):
        if count:
            findings.append(Finding(name, "impossible", label, 0.0, count / rows, 0.0, math.inf, c, rows,
                                    position=first or None, note=note))
    rejected = len(findings)
    candidates = []
    for fam, cnt in zip(state.families, state.counts):
        observed, tol, stat = _test_family(fam, cnt, rows, tau)
        for e, rule in fam.rules.items():
            state.evidence[rule] = float(stat[e]) if observed[e] > fam.expected[e] else 0.0
        for e in np.flatnonzero(stat >= c):
            candidates.append((float(stat[e]), fam, int(e), float(observed[e]), float(tol[e])))
    rejected += len(candidates)
    candidates.sort(key=lambda item: -item[0])
    for stat, fam, e, observed, tol in candidates[:MAX_FINDINGS_PER_SCENARIO]:
        tv = fam.exact_tv.get(e)
        findings.append(Finding(name, fam.name, fam.names[e], float(fam.expected[e]), observed, tol, stat, c,
                                rows, None if tv is None else float(tv), fam.rules.get(e), fam.positions.get(e)))
    return findings, rejected
