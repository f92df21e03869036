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

Sequential: rows arrive in four looks (1/8, 1/4, 1/2, all of the samples), interleaved over the
scenarios; a scenario stops at the first look that rejects (the whole run too with ``fail_fast``).  The result reports, per scenario, the smallest total variation a deviation
concentrated on a tested event must have to be detected with probability 0.99.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.rules import StepRule, get_step_rule

from .convert import dtype_name
from .events import EventFamily, build_families, emitted_lengths
from .scenarios import Realisation, Scenario, default_suite
from .statistics import critical_value, detectable_shift
from .tolerances import round_tolerance

__all__ = ["check_verifier", "CheckResult", "Finding", "ScenarioReport", "ContractViolation",
           "VerifierError", "DEFAULT_SAMPLES", "LOOKS"]

DEFAULT_SAMPLES = 200_000
LOOKS = (1 / 8, 1 / 4, 1 / 2, 1.0)
MAX_FINDINGS_PER_SCENARIO = 5


class ContractViolation(SpecproofInputError):
    """The verifier's output breaks the batched contract (a usage error: exit 2)."""


class VerifierError(SpecproofInputError):
    """The verifier raised, or ran past its time limit (a usage error: exit 2)."""


@dataclass(frozen=True)
class Finding:
    """One rejected event: where, what, how far, how sure."""

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

    def as_json(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in self.__dict__.items()} | {
            "statistic": "inf" if math.isinf(self.statistic) else self.statistic}

    def line(self) -> str:
        tv = f", exact TV of this bug class {self.exact_tv:.4g}" if self.exact_tv is not None else ""
        stat = "certain (probability-0 event)" if math.isinf(self.statistic) else \
            f"N*KL {self.statistic:.1f} >= {self.critical:.1f}"
        return (f"[{self.scenario}] {self.family}: {self.event}: observed {self.observed:.6g} vs exact "
                f"{self.expected:.6g} (allowed +/-{self.tolerance:.3g}; {stat}; {self.rows} rows{tv})")


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

    def as_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["findings"] = [f.as_json() for f in self.findings]
        return out


@dataclass
class CheckResult:
    """Verdict ("pass"/"fail"), findings, per-scenario reports, power and timing."""

    verdict: str
    dtype: str
    device: str
    seed: int
    alpha: float
    samples: int
    rule: str | None
    scenarios: list[ScenarioReport]
    verifier_seconds: float
    harness_seconds: float

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self.scenarios for f in s.findings]

    @property
    def detectable_tv(self) -> float:
        """Worst (largest) per-scenario detectable TV: a guarantee that holds for every scenario."""
        return max(s.detectable_tv for s in self.scenarios)

    @property
    def rows(self) -> int:
        """Verifier rows consumed in total."""
        return sum(s.rows for s in self.scenarios)

    @property
    def harness_share(self) -> float:
        total = self.verifier_seconds + self.harness_seconds
        return self.harness_seconds / total if total else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "dtype": self.dtype, "device": self.device, "seed": self.seed,
            "alpha": self.alpha, "samples_per_scenario": self.samples, "rule": self.rule,
            "detectable_tv": self.detectable_tv, "rows": self.rows, "verifier_seconds": self.verifier_seconds,
            "harness_seconds": self.harness_seconds, "harness_share": self.harness_share,
            "scenarios": [s.as_json() for s in self.scenarios],
        }

    def summary(self) -> str:
        rejected = sum(s.rejected_events for s in self.scenarios)
        events = sum(s.events for s in self.scenarios)
        rows = self.rows
        head = "PASS: no drift beyond the dtype's tolerance detected" if self.passed else \
            "FAIL: the verifier's law differs from the exact reference"
        lines = [f"{head} ({self.dtype} on {self.device}, {rows} rows, {len(self.scenarios)} scenarios)",
                 f"Mismatched events: {rejected} / {events} ({100.0 * rejected / max(events, 1):.2f}%), "
                 f"family-wise false-alarm probability <= {self.alpha:g}"]
        for finding in self.findings:
            lines.append("  " + finding.line())
        worst = max(self.scenarios, key=lambda s: s.detectable_tv)
        lines.append(f"Detectable TV (power 0.99, deviation on a tested event): <= {self.detectable_tv:.4g} "
                     f"(worst scenario: {worst.name})")
        lines.append(f"Time: verifier {self.verifier_seconds:.2f} s, harness {self.harness_seconds:.2f} s "
                     f"({100 * self.harness_share:.0f}% harness)")
        return "\n".join(lines)


def _validate_output(emitted: Any, batch: int, k: int, vocab: int, scenario: str) -> torch.Tensor:
    def bad(problem: str, fix: str) -> ContractViolation:
        return ContractViolation("verify", f"on scenario '{scenario}' the output {problem}", fix)

    if not isinstance(emitted, torch.Tensor):
        raise bad(f"is a {type(emitted).__name__}, not a tensor", "return emitted [B, K+1] as a torch int64 tensor")
    if tuple(emitted.shape) != (batch, k + 1):
        raise bad(f"has shape {tuple(emitted.shape)}, expected {(batch, k + 1)}", "return [B, K+1]")
    if emitted.dtype != torch.int64:
        raise bad(f"has dtype {emitted.dtype}", "return int64 token ids")
    emitted = emitted.detach().cpu()
    if bool(((emitted < -1) | (emitted >= vocab)).any()):
        raise bad(f"has ids outside [-1, {vocab})", "emit token ids in range, -1 only as padding")
    present = emitted >= 0
    if not bool(present[:, 0].all()):
        raise bad("has rows that emit no token", "every round emits at least the correction/bonus token")
    if bool((present[:, 1:] & ~present[:, :-1]).any()):
        raise bad("has -1 holes (a token after a -1)", "pad with -1 only after the last emitted token")
    return emitted


def _kl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised Bernoulli KL(a || b) (inf where b cannot produce a)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * np.log(a / b), 0.0)
        t2 = np.where(a < 1, (1 - a) * np.log((1 - a) / (1 - b)), 0.0)
    out = t1 + t2
    out = np.where((b <= 0) & (a > 0), np.inf, out)
    out = np.where((b >= 1) & (a < 1), np.inf, out)
    return np.maximum(np.nan_to_num(out, nan=np.inf), 0.0)


def _test_family(family: EventFamily, counts: np.ndarray, n: int, tau: float, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observed means, per-event tolerance, statistic) for one family."""
    observed = counts @ family.matrix / n
    tol = np.where(family.zero_tolerance, 0.0, tau)
    hi = np.minimum(1.0, family.expected + tol)
    lo = np.maximum(0.0, family.expected - tol)
    with np.errstate(over="ignore", invalid="ignore"):
        stat = np.where(observed > hi, n * _kl(np.minimum(observed, 1.0), hi),
                        np.where(observed < lo, n * _kl(np.maximum(observed, 0.0), lo), 0.0))
    return observed, tol, stat


def _call(verify: Callable[..., Any], args: tuple, timeout: float | None, scenario: str) -> Any:
    if timeout is None:
        return _guarded(verify, args, scenario)
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        return _guarded(verify, args, scenario)

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return _guarded(verify, args, scenario, timeout)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _guarded(verify: Callable[..., Any], args: tuple, scenario: str, timeout: float | None = None) -> Any:
    try:
        return verify(*args)
    except TimeoutError:
        raise VerifierError("verify", f"did not return within {timeout:g} s on scenario '{scenario}'",
                            "fix the hang or raise the time limit (--timeout)") from None
    except SpecproofInputError:
        raise
    except Exception as err:  # the verifier's own failure, reported as a usage error
        raise VerifierError("verify", f"raised {type(err).__name__}: {err} on scenario '{scenario}'",
                            "make the verifier accept the batched contract's inputs") from None


def _impossible(emitted: torch.Tensor, drafts: torch.Tensor, target_rows: torch.Tensor) -> tuple[int, int]:
    """Rows emitting a probability-0 token at its prefix; rows whose leading tokens are not the drafts."""
    lengths = emitted_lengths(emitted)
    positions = torch.arange(emitted.shape[1])
    inside = positions < lengths.unsqueeze(1)
    probs = target_rows.cpu().gather(-1, emitted.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    zero_token = (inside & (probs == 0)).any(dim=1)
    before_last = positions[:-1] < (lengths - 1).unsqueeze(1)
    mismatch = (before_last & (emitted[:, :-1] != drafts)).any(dim=1)
    return int(zero_token.sum()), int(mismatch.sum())


def check_verifier(verify: Callable[..., Any], *, dtype: Any = "float32", device: str = "cpu",
                   samples: int | None = None, budget: int | None = None, seed: int = 0,
                   alpha: float = 1e-6, rule: str | StepRule | None = None,
                   scenarios: list[Scenario] | None = None, batch_size: int = 8192,
                   timeout: float | None = None, fail_fast: bool = False,
                   progress: Callable[[str], None] | None = None) -> CheckResult:
    """Check a batched-contract verifier against the exact reference (module docstring).

    ``samples``: rows per scenario (default 200,000); or ``budget``: total rows split evenly.
    ``rule``: also require the emission law of this single-step rule (e.g. ``"canonical"``).
    ``timeout``: seconds allowed per verifier call (main thread on POSIX).
    ``fail_fast``: stop the whole run at the first look that rejects (``CheckResult.rows`` then
    counts the rows it took to flag the verifier)."""
    dtype = dtype_name(dtype)
    if samples is not None and budget is not None:
        raise SpecproofInputError("samples", "both samples and budget given", "pass one of them")
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
    try:
        torch_device = torch.device(device)
    except RuntimeError:
        raise SpecproofInputError("device", f"unknown device {device!r}", "use 'cpu' or 'cuda'") from None
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        raise SpecproofInputError("device", "CUDA is not available here", "use --device cpu")
    say = progress or (lambda _msg: None)

    start = time.perf_counter()
    realised = [_prepared(scenario, dtype, str(torch_device), rule_record) for scenario in suite]
    total_events = sum(f.size for _, fams in realised for f in fams) + 2 * len(realised)
    c = critical_value(alpha, total_events, len(LOOKS))
    states = [_ScenarioState(index, real, families, dtype, batch_size, seed)
              for index, (real, families) in enumerate(realised)]
    verifier_seconds = 0.0
    halted = False
    # looks interleave the scenarios: every scenario gets 1/8 of its rows before any gets more, so a
    # bug visible in one scenario only is flagged after a fraction of the run
    for look, fraction in enumerate(LOOKS):
        goal = max(1, int(round(per_scenario * fraction)))
        for state in states:
            if state.done:
                continue
            verifier_seconds += state.advance(goal, verify, torch_device, timeout)
            state.findings, state.rejected = _evaluate(state.real.scenario.name, state.families,
                                                       state.counts, state.impossible, state.rows,
                                                       state.tau, c)
            say(f"{state.real.scenario.name}: {state.rows} rows, look {look + 1}/{len(LOOKS)}, "
                f"{state.rejected} events rejected")
            if state.rejected:
                state.done = True
                state.stopped = look < len(LOOKS) - 1
                if fail_fast:
                    halted = True
                    break
        if halted:
            break
    reports = [state.report(c) for state in states]
    total = time.perf_counter() - start
    verdict = "fail" if any(r.findings for r in reports) else "pass"
    return CheckResult(verdict=verdict, dtype=dtype, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=per_scenario, rule=rule_record.name if rule_record else None,
                       scenarios=reports, verifier_seconds=verifier_seconds,
                       harness_seconds=total - verifier_seconds)


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
        self.index, self.real, self.families, self.seed = index, real, families, seed
        self.tau = float(round_tolerance(dtype, real.vocab, real.k))
        self.draft_gen = torch.Generator().manual_seed(seed * 1_000_003 + index)
        # rows per call: at most ~2^25 probabilities per batch (128 MiB in float32)
        self.chunk = max(16, min(batch_size, (1 << 25) // ((2 * real.k + 1) * real.vocab)))
        self.counts = [np.zeros(f.n_keys) for f in families]
        self.impossible = [0, 0]
        self.rows = 0
        self.findings: list[Finding] = []
        self.rejected = 0
        self.done = False
        self.stopped = False

    def advance(self, goal: int, verify: Callable[..., Any], device: torch.device,
                timeout: float | None) -> float:
        """Run the verifier until ``goal`` rows; returns the seconds spent inside it."""
        real, name, spent = self.real, self.real.scenario.name, 0.0
        while self.rows < goal:
            n = min(self.chunk, goal - self.rows)
            drafts = real.sample_drafts(n, self.draft_gen)
            draft_rows, target_rows = real.rows(drafts)
            gen = torch.Generator(device=device).manual_seed(
                (self.seed * 7_919 + self.index * 104_729 + self.rows) % (2**63))
            t0 = time.perf_counter()
            out = _call(verify, (draft_rows, target_rows, drafts.to(device), gen), timeout, name)
            if device.type == "cuda":
                torch.cuda.synchronize()
            spent += time.perf_counter() - t0
            emitted = _validate_output(out, n, real.k, real.vocab, name)
            zero_token, mismatch = _impossible(emitted, drafts, target_rows)
            self.impossible[0] += zero_token
            self.impossible[1] += mismatch
            for fam, cnt in zip(self.families, self.counts):
                cnt += np.bincount(fam.key(emitted), minlength=fam.n_keys)
            self.rows += n
        return spent

    def report(self, c: float) -> ScenarioReport:
        expected_all = np.concatenate([f.expected for f in self.families])
        inner = expected_all[(expected_all > 0) & (expected_all < 1)]
        hardest = float(inner[np.argmin(np.abs(inner - 0.5))]) if inner.size else 0.5
        rows = max(self.rows, 1)
        return ScenarioReport(
            name=self.real.scenario.name, vocab=self.real.vocab, k=self.real.k, rows=self.rows,
            events=sum(f.size for f in self.families) + 2, tolerance=self.tau,
            detectable_tv=min(1.0, self.tau + detectable_shift(hardest, rows, c, self.tau)),
            stopped_early=self.stopped, findings=self.findings, rejected_events=self.rejected)


def _evaluate(name: str, families: list[EventFamily], counts: list[np.ndarray], impossible: list[int],
              rows: int, tau: float, c: float) -> tuple[list[Finding], int]:
    findings: list[Finding] = []
    for count, label in zip(impossible, ("emitted a token of target probability 0 at its prefix",
                                         "emitted tokens before the last that are not the drafted ones")):
        if count:
            findings.append(Finding(name, "impossible", label, 0.0, count / rows, 0.0, math.inf, c, rows))
    rejected = len(findings)
    candidates = []
    for fam, cnt in zip(families, counts):
        observed, tol, stat = _test_family(fam, cnt, rows, tau, c)
        for e in np.flatnonzero(stat >= c):
            candidates.append((float(stat[e]), fam, int(e), float(observed[e]), float(tol[e])))
    rejected += len(candidates)
    candidates.sort(key=lambda item: -item[0])
    for stat, fam, e, observed, tol in candidates[:MAX_FINDINGS_PER_SCENARIO]:
        tv = fam.exact_tv.get(e)
        findings.append(Finding(name, fam.name, fam.names[e], float(fam.expected[e]), observed, tol, stat, c,
                                rows, None if tv is None else float(tv)))
    return findings, rejected
