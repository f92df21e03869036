"""Calling the user's verifier: time limit, its own exceptions, and the output contract.

The verifier runs in this process, with the user's rights (it is imported and executed).  Time limit
per call (POSIX, main thread): ``SIGALRM`` raises :class:`_Alarm`, a ``BaseException`` that code
catching ``Exception`` cannot swallow.  A verifier that catches ``BaseException`` and keeps running
defeats the alarm; for that case ``hard_exit=True`` (the CLI) arms a watchdog thread that, ``grace``
seconds after the limit, prints the error and ends the process with exit 2 (nothing has been written:
the JSON is written only after the run).  Through the API (``hard_exit=False``) the alarm is re-raised
every ``grace`` seconds and the call is refused as soon as it returns.  Off the main thread, or
without ``SIGALRM``, no limit can be enforced in-process (stated in ``check``'s docstring).
:class:`Caller` is the one way the check, the reproducibility pair and the injection call the target.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable

import torch

from specproof.errors import SpecproofInputError
from specproof.harness.check.supervise import watch


__all__ = ["ContractViolation", "VerifierError", "Caller", "call_verifier", "validate_output", "check_timeout",
           "resolve_device", "readable_copy", "Deadline", "REPRODUCIBILITY_MIN_ROWS"]

REPRODUCIBILITY_MIN_ROWS = 8  # the fewest rows a reproducibility pair runs on when a time budget shrinks it

GRACE_SECONDS = 5.0
BUDGET_GRACE = 1.0  # a call may run past the end of a time budget by this, or a tenth of the budget, before it hangs
HANG_FACTOR = 4.0  # ... or by this many times its expected seconds (the target's measured rate)


class ContractViolation(SpecproofInputError):
    """The verifier's output breaks the batched contract (a usage error: exit 2)."""


class VerifierError(SpecproofInputError):
    """The verifier raised, exited, or ran past its time limit (a usage error: exit 2)."""


class _Alarm(BaseException):
    """Raised by the time limit's signal handler (not an Exception: ``except Exception`` lets it by)."""


def check_timeout(timeout: float | None, argument: str = "timeout") -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise SpecproofInputError(argument, f"{timeout!r} is not a finite number of seconds > 0",
                                  "pass seconds, e.g. 120")


def _timed_out(timeout: float, scenario: str) -> VerifierError:
    return VerifierError("verify", f"did not return within {timeout:g} s on scenario '{scenario}' "
                         "(the harness's time limit)", "fix the hang or raise the time limit (--timeout)")


def call_verifier(verify: Callable[..., Any], args: tuple, timeout: float | None, scenario: str,
                  hard_exit: bool = False) -> Any:
    """``verify(*args)`` under the time limit; every failure of the user's code is a VerifierError."""
    import signal

    if timeout is None or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "SIGALRM"):
        return _guarded(verify, args, scenario)
    fired = [False]

    def on_alarm(signum: int, frame: Any) -> None:
        fired[0] = True
        raise _Alarm

    watchdog = None
    if hard_exit:
        def kill() -> None:
            print(f"specproof check: error: verify: did not return within {timeout:g} s on scenario "
                  f"'{scenario}' and ignored the interrupt (it catches BaseException); stopped the process. "
                  "Fix: let KeyboardInterrupt/BaseException propagate, or raise --timeout",
                  file=sys.stderr, flush=True)
            os._exit(2)

        watchdog = threading.Timer(timeout + GRACE_SECONDS, kill)
        watchdog.daemon = True
        watchdog.start()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout, GRACE_SECONDS)  # re-fires if swallowed
    try:
        out = _guarded(verify, args, scenario)
    except _Alarm:
        raise _timed_out(timeout, scenario) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if watchdog is not None:
            watchdog.cancel()
    if fired[0]:  # the verifier swallowed the alarm and returned late
        raise _timed_out(timeout, scenario)
    return out


def _guarded(verify: Callable[..., Any], args: tuple, scenario: str) -> Any:
    try:
        return verify(*args)
    except SpecproofInputError:
        raise
    except SystemExit as err:  # sys.exit() in user code must not become the tool's exit code
        raise VerifierError("verify", f"called sys.exit({err.code!r}) on scenario '{scenario}'",
                            "return the emitted tokens instead of exiting") from None
    except Exception as err:  # the verifier's own failure (its own TimeoutError included)
        raise VerifierError("verify", f"raised {type(err).__name__}: {err} on scenario '{scenario}'",
                            "make the verifier accept the batched contract's inputs",
                            "".join(traceback.format_exception(err))) from None


def validate_output(emitted: Any, batch: int, k: int, vocab: int, scenario: str) -> torch.Tensor:
    """The output contract: ``[B, K+1]`` int64 on a real device, ids in ``[-1, V)``, no ``-1`` holes,
    at least one token per row.  Returns the output on the CPU."""
    def bad(problem: str, fix: str) -> ContractViolation:
        return ContractViolation("verify", f"on scenario '{scenario}' the output {problem}", fix)

    if not isinstance(emitted, torch.Tensor):
        raise bad(f"is a {type(emitted).__name__}, not a tensor", "return emitted [B, K+1] as a torch int64 tensor")
    if tuple(emitted.shape) != (batch, k + 1):
        raise bad(f"has shape {tuple(emitted.shape)}, expected {(batch, k + 1)}", "return [B, K+1]")
    if emitted.dtype != torch.int64:
        raise bad(f"has dtype {emitted.dtype}", "return int64 token ids")
    emitted = readable_copy(emitted, bad)
    if bool(((emitted < -1) | (emitted >= vocab)).any()):
        raise bad(f"has ids outside [-1, {vocab})", "emit token ids in range, -1 only as padding")
    present = emitted >= 0
    if not bool(present[:, 0].all()):
        raise bad("has rows that emit no token", "every round emits at least the correction/bonus token")
    if bool((present[:, 1:] & ~present[:, :-1]).any()):
        raise bad("has -1 holes (a token after a -1)", "pad with -1 only after the last emitted token")
    return emitted


def readable_copy(out: torch.Tensor, bad: Callable[[str, str], ContractViolation]) -> torch.Tensor:
    """A dense CPU copy of a target's output tensor, or ``bad(problem, fix)`` raised: a meta tensor holds
    no values, a sparse one is not a token tensor, and one that cannot be read on the CPU says why."""
    if out.device.type == "meta":
        raise bad("is on the meta device (it holds no values)", "return a tensor on the inputs' device")
    if out.layout != torch.strided:
        raise bad(f"is a {out.layout} tensor", "return an ordinary dense tensor (out.to_dense())")
    try:
        return out.detach().cpu().clone()
    except RuntimeError as err:
        raise bad(f"cannot be read on the CPU ({err})", "return an ordinary dense tensor") from None


def resolve_device(device: Any) -> torch.device:
    try:
        torch_device = torch.device(device)
    except (RuntimeError, TypeError):
        raise SpecproofInputError("device", f"unknown device {device!r}", "use 'cpu' or 'cuda'") from None
    if torch_device.type not in ("cpu", "cuda"):
        raise SpecproofInputError("device", f"{device!r}: the check runs on 'cpu' or 'cuda' only",
                                  "use --device cpu or --device cuda")
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        raise SpecproofInputError("device", "CUDA is not available here", "use --device cpu")
    return torch_device


class Caller:
    """The one way a check calls its target: on one batch of a prepared scenario of any contract
    (:class:`.contracts.prepared.PreparedScenario`), with a generator seeded ``seed`` on the device,
    under the time limit; counts its seconds and rows, also over the calls of at least ``AT_SCALE``
    rows alone (a rate per row free of most per-call cost)."""

    AT_SCALE = 256
    CALL_SHARE = 0.25  # a call is sized to take at most this share of the time limit, at its scenario's measured rate

    def __init__(self, target: Callable[..., Any], device: torch.device, timeout: float | None, hard: bool,
                 ends_at: float | None = None, budget: float | None = None):
        self.target, self.device, self.timeout, self.hard = target, device, timeout, hard
        self.ends_at, self.budget = ends_at, budget  # a time budget bounds every call too (perf_counter)
        self.seconds = 0.0
        self.rows = 0
        self.scale_seconds, self.scale_rows = 0.0, 0
        self.by_scenario: dict[str, list[float]] = {}  # scenario -> [seconds, rows] of its calls
        self.calls, self.longest = 0, 0.0  # calls made; the longest one's seconds

    def seconds_per_row(self) -> float:
        """Seconds per row on the calls of at least ``AT_SCALE`` rows, else on every call (0 before any)."""
        if self.scale_rows:
            return self.scale_seconds / self.scale_rows
        return self.seconds / max(self.rows, 1)

    def rows_per_call(self, scenario: str, cap: int) -> int:
        """Rows for the next call on ``scenario``: ``cap``, fewer when its calls so far (else all calls)
        say that ``cap`` rows would take more than ``CALL_SHARE`` of the time limit, so that a correct but
        slow target is measured in smaller calls rather than stopped (only a call slow per row times out)."""
        seconds, rows = self.by_scenario.get(scenario, (self.seconds, self.rows))
        if self.timeout is None or not rows or seconds <= 0:
            return cap
        return max(1, min(cap, int(self.CALL_SHARE * self.timeout * rows / seconds)))

    def expected_seconds(self, scenario: str, rows: int) -> float:
        """A call's seconds at its scenario's measured rate (else every call's so far; 0 before any)."""
        seconds, done = self.by_scenario.get(scenario, (self.seconds, self.rows))
        return rows * seconds / done if done else 0.0

    def next_call_ends_late(self, scenario: str, rows: int) -> bool:
        """Under a time budget: a call of ``rows`` rows on ``scenario``, at its measured rate, would end
        past the budget's end (a stream then returns the rows it has, so the last batch fits the budget)."""
        return self.ends_at is not None and time.perf_counter() + self.expected_seconds(scenario, rows) > self.ends_at

    def __call__(self, subject: Any, batch: Any, seed: int) -> Any:
        from specproof.harness.check.seeding import generator

        gen = generator(seed, self.device)
        rows = subject.batch_rows(batch)
        t0 = time.perf_counter()
        limit = self.timeout
        grace = None if self.budget is None else max(BUDGET_GRACE, 0.1 * self.budget,
                                                      HANG_FACTOR * self.expected_seconds(subject.name, rows))
        by_budget = self.ends_at is not None and (limit is None or self.ends_at - t0 + grace < limit)
        if by_budget:  # a call that hangs past the budget's end; one as slow as the calls before it runs
            limit = max(grace, self.ends_at - t0 + grace)
        try:
            with watch(limit, f"scenario '{subject.name}'"):  # a supervised child's parent stops a call that hangs
                out = subject.invoke(self.target, batch, gen, limit, self.hard)
        except VerifierError as err:
            if by_budget and err.problem.startswith("did not return"):
                raise VerifierError("verify", f"did not return before the time budget ({self.budget:g} s) ran out, "
                                    f"on scenario '{subject.name}' ({rows} rows in that call)",
                                    "fix the hang, or raise --time-budget") from None
            raise
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        took = time.perf_counter() - t0
        self.seconds += took
        self.rows += rows
        self.calls += 1
        self.longest = max(self.longest, took)
        spent = self.by_scenario.setdefault(subject.name, [0.0, 0])
        spent[0] += took
        spent[1] += rows
        if rows >= self.AT_SCALE:
            self.scale_seconds += took
            self.scale_rows += rows
        return out


class Deadline:
    """The time a check's interlude (reproducibility pair, RNG edge injection) must end by under a
    ``time_budget``: a pass of ``n`` rows runs only if ``now + n x seconds_per_row() <= at`` (the rate
    measured on the target's calls so far, :meth:`Caller.seconds_per_row`); a pass that does
    not fit is skipped and reported, so the interlude ends within its share (past it by at most the
    rerun a finding needs to show that it reproduces)."""

    def __init__(self, seconds: float, seconds_per_row: Callable[[], float]):
        self.seconds = seconds
        self.at = time.perf_counter() + seconds
        self.seconds_per_row = seconds_per_row

    def fits(self, rows: int) -> bool:
        return time.perf_counter() + rows * self.seconds_per_row() <= self.at

    def pair_rows(self, rows: int, seconds: float) -> int:
        """Rows per run of a reproducibility pair of up to ``rows`` given ``seconds`` of the interlude:
        fewer so that both runs fit (at least ``REPRODUCIBILITY_MIN_ROWS``), 0 (not run) when that
        many would not fit before the deadline."""
        per_row = self.seconds_per_row()
        if per_row <= 0:
            return rows
        fit = int((self.at - time.perf_counter()) / (2 * per_row))
        return min(rows, fit, max(REPRODUCIBILITY_MIN_ROWS, int(seconds / (2 * per_row)))) \
            if fit >= REPRODUCIBILITY_MIN_ROWS else 0

    def pair_skipped(self) -> str:
        """Why no reproducibility pair ran (:meth:`pair_rows` gave 0)."""
        return (f"Reproducibility check not run: two runs of {REPRODUCIBILITY_MIN_ROWS} rows do not fit in the "
                f"interlude's share of the time budget ({self.seconds:.3g} s) at this verifier's speed; a "
                "larger --time-budget runs it")
