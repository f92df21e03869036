"""Issue 16's goals on the check as a user runs it, measured one after the other in the bench.

1. ``default_check``: ``specproof check specproof.impls:canonical_ratio_race --quiet --json F`` in a
   child process (the command a user types: interpreter start-up and imports included), its
   wall-clock seconds, verdict, rows and detectable TV.  Goal: PASS within ``DEFAULT_CHECK_SECONDS``
   (30) with a detectable TV of at most 0.02.  The goal is for an idle machine: the bench's
   provenance has the load average at its start and end.
2. ``default_vs_fail_fast``: per zoo member, seed 0, at the CLI's default depth: one run with
   ``fail_fast`` and one without.  The default run's verifier rows at its first finding are its own
   ``CheckResult.verifier_rows_at_first_flag`` (the streams' rows, and the reproducibility pair and
   the injection counted whole when they ran before the first finding); the fail-fast run's are every
   row its verifier was called with.  Goal: at most ``2 x``, for every member.  Beside it,
   ``same_calls_until_first_finding``: whether the fail-fast run's calls (batch shapes and drafted
   ids, in order) are the default run's first calls; for a verifier slower than about 0.68 ms per
   row the interlude sizes its passes from the calls so far, so two runs may differ.
   A member so slow that a default-depth run would take over ``PAIR_SECONDS`` (its fail-fast run's
   seconds per row on calls of at least ``AT_SCALE`` rows x ``DEFAULT_DEPTH_ROWS``: the
   one-row-at-a-time transformers adapter) is paired at the rows per scenario that fit in it
   (``samples`` in its entry; not the default depth).
3. ``time_budget``: per member, ``time_budget = 120`` s with ``fail_fast`` (the bench does not wait
   out a budget once a member is flagged), the member slowed to the seconds per row measured on the
   transformers adapter, which verifies one row at a time (over every default scenario, on calls of
   at least ``AT_SCALE`` rows): each call sleeps until it has taken ``rows x seconds_per_row``.
   Goal: every member whose exact total variation from the canonical law is at least 0.1 in the
   enumerable scenario where it is largest (:mod:`.oracle`, ``tv``) is flagged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from specproof.impls import get, implementations
from specproof.errors import SpecproofInputError

from specproof.harness.bench.detection import missing_extra
from specproof.harness.check.calls import ContractViolation, VerifierError
from specproof.harness.check.driver import check
from specproof.harness.check.contracts.batched.scenarios import default_suite

__all__ = ["check_goals", "RecordingVerifier", "SlowedVerifier", "DEFAULT_CHECK_SECONDS", "TIME_BUDGET_TV",
           "SPEED_SAMPLES"]

DEFAULT_CHECK_TARGET = "specproof.impls:canonical_ratio_race"
DEFAULT_CHECK_SECONDS, DEFAULT_CHECK_TV = 30.0, 0.02
DEFAULT_VS_FAIL_FAST = 2.0
TIME_BUDGET_SECONDS, TIME_BUDGET_TV = 120.0, 0.1
SPEED_SAMPLES = 2048  # rows per scenario of the one-row-at-a-time speed measurement
ONE_ROW_AT_A_TIME = "transformers-speculative-sampling"
CHILD_TIMEOUT = 600.0  # the child check is stopped past this (a hung default check is itself a finding)
DEFAULT_DEPTH_ROWS = 1_000_000  # about what the default depth draws on the default suite (0.93M for the race)
PAIR_SECONDS = 60.0  # a member slower than this at the default depth is paired at fewer rows per scenario
MIN_PAIR_SAMPLES = 1024
AT_SCALE = 256  # rows of a call long enough to time a verifier's cost per row


class RecordingVerifier:
    """Wraps a verifier; records ``(target shape, hash of the drafted ids)`` per call, in order, and
    the seconds spent inside it."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn, self.calls, self.call_seconds = fn, [], []

    def __call__(self, draft_probs: Any, target_probs: Any, draft_token_ids: Any, generator: Any) -> Any:
        self.calls.append((tuple(target_probs.shape), hash(draft_token_ids.cpu().numpy().tobytes())))
        start = time.perf_counter()
        try:
            return self.fn(draft_probs, target_probs, draft_token_ids, generator)
        finally:
            self.call_seconds.append(time.perf_counter() - start)

    def rows(self) -> int:
        return sum(shape[0] for shape, _ in self.calls)

    @property
    def seconds(self) -> float:
        return sum(self.call_seconds)

    def seconds_per_row_at_scale(self) -> float:
        """Seconds per row over the calls of at least ``AT_SCALE`` rows after the first (small calls
        pay a fixed cost per call, the first one the warm-up); all calls when there are none."""
        big = [i for i in range(1, len(self.calls)) if self.calls[i][0][0] >= AT_SCALE] or range(len(self.calls))
        rows = sum(self.calls[i][0][0] for i in big)
        return sum(self.call_seconds[i] for i in big) / rows if rows else 0.0


class SlowedVerifier:
    """Wraps a verifier so that a call of ``B`` rows takes at least ``B x seconds_per_row`` (it sleeps
    the rest): a fast member given the speed of a one-row-at-a-time verifier, its law unchanged."""

    def __init__(self, fn: Callable[..., Any], seconds_per_row: float):
        self.fn, self.seconds_per_row = fn, seconds_per_row

    def __call__(self, draft_probs: Any, target_probs: Any, draft_token_ids: Any, generator: Any) -> Any:
        start = time.perf_counter()
        out = self.fn(draft_probs, target_probs, draft_token_ids, generator)
        rest = int(draft_token_ids.shape[0]) * self.seconds_per_row - (time.perf_counter() - start)
        if rest > 0:
            time.sleep(rest)
        return out


def _default_check(samples: int | None) -> dict[str, Any]:
    """The CLI's default check of the canonical race in a child process (module docstring, 1)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "check.json"
        args = ["check", DEFAULT_CHECK_TARGET, "--quiet"] + (["--samples", str(samples)] if samples is not None else [])
        command = "specproof " + " ".join(args)
        argv = [sys.executable, "-c", "import sys; from specproof.harness.cli.parser import main; sys.exit(main())",
                *args, "--json", str(out)]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"command": command, "seconds": time.perf_counter() - start, "exit_code": None, "verdict": None,
                    "rows": None, "detectable_tv": None, "samples": samples,
                    "note": f"stopped after {CHILD_TIMEOUT:g} s"}
        seconds = time.perf_counter() - start
        doc = json.loads(out.read_text()) if out.exists() else {}
    result = doc.get("result", doc)
    return {"command": command, "seconds": seconds, "exit_code": done.returncode,
            "verdict": result.get("verdict"), "rows": result.get("rows"),
            "detectable_tv": result.get("detectable_tv"), "samples": samples,
            "note": None if doc else f"no JSON written; stderr: {done.stderr[-300:]}"}


def _checked(recorded: "RecordingVerifier", **options: Any) -> dict[str, Any]:
    """``check(recorded, progress=False, **options)`` in brief: flagged, the rows at the first
    finding (the statistics' and every verifier row), the strongest finding's family.  A verifier
    that raises or breaks the contract on a valid input (the CLI's exit 2, naming it) is recorded as
    raised, at the rows it had been called with."""
    try:
        result = check(recorded, progress=False, **options)
    except (VerifierError, ContractViolation) as err:
        return {"flagged": True, "first": None, "called": recorded.rows(), "strongest": None,
                "raised": str(err)[:200]}
    return {"flagged": bool(result.findings), "first": result.rows_at_first_flag,
            "called": result.verifier_rows_at_first_flag, "raised": None,
            "strongest": result.findings[0].family if result.findings else None}


def _default_vs_fail_fast(fn: Callable[..., Any], samples: int | None) -> dict[str, Any]:
    """One fail-fast and one default run of a member (module docstring, 2)."""
    fast, full = RecordingVerifier(fn), RecordingVerifier(fn)
    quick = _checked(fast, samples=samples, fail_fast=True)
    per_row = fast.seconds_per_row_at_scale()
    if samples is None and per_row * DEFAULT_DEPTH_ROWS > PAIR_SECONDS:  # too slow for the default depth here
        samples = max(MIN_PAIR_SAMPLES, int(PAIR_SECONDS / per_row / len(default_suite())))
        fast = RecordingVerifier(fn)
        quick = _checked(fast, samples=samples, fail_fast=True)
    slow = _checked(full, samples=samples)
    default_rows = slow["called"] if quick["flagged"] and slow["flagged"] else None
    return {"fail_fast_rows": fast.rows(), "default_rows_at_first_finding": default_rows,
            "default_rows_total": full.rows(), "flagged": quick["flagged"] and slow["flagged"],
            "same_calls_until_first_finding": full.calls[:len(fast.calls)] == fast.calls,
            "rows_at_first_flag": [quick["first"], slow["first"]], "raised": slow["raised"] or quick["raised"],
            "samples": samples, "seconds_per_row": per_row,
            "ratio": None if default_rows is None else default_rows / max(fast.rows(), 1)}


def _seconds_per_row(samples: int) -> float | None:
    """Seconds per row inside the transformers adapter (one row at a time), over a short check's
    large calls; None when transformers is not installed."""
    record = get(ONE_ROW_AT_A_TIME)
    if missing_extra(record):
        return None
    timed = RecordingVerifier(record.fn)
    check(timed, samples=samples, inject=False, progress=False)
    return timed.seconds_per_row_at_scale()


def _time_budget(fn: Callable[..., Any], seconds_per_row: float, budget: float) -> dict[str, Any]:
    slowed = RecordingVerifier(SlowedVerifier(fn, seconds_per_row))
    start = time.perf_counter()
    out = _checked(slowed, time_budget=budget, fail_fast=True)
    return {"flagged": out["flagged"], "seconds": time.perf_counter() - start, "rows": slowed.rows(),
            "strongest": out["strongest"], "raised": out["raised"]}


def check_goals(*, oracle: dict[str, Any], members: tuple[str, ...] | None = None, samples: int | None = None,
                time_budget: float = TIME_BUDGET_SECONDS, speed_samples: int = SPEED_SAMPLES,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The three measurements and their goals (module docstring).  ``oracle``: the detection section's
    per-member oracle records (their ``tv``); ``samples``: rows per scenario instead of the default
    depth (a reduced run: the depth-bound goals are then not measured); ``members``: a subset;
    ``speed_samples``: rows per scenario of the one-row-at-a-time verifier's speed measurement."""
    if time_budget <= 0:
        raise SpecproofInputError("time_budget", f"{time_budget!r} is not positive", "pass e.g. 120")
    say = progress or (lambda _msg: None)
    zoo = [r for r in implementations(contract="batched", expected_exact=False)
           if (members is None or r.name in members) and not missing_extra(r)]
    start = time.perf_counter()
    say("check goals: default check (child process)")
    default = _default_check(samples)
    paired: dict[str, Any] = {}
    for record in zoo:
        say(f"check goals: default vs fail-fast: {record.name}")
        paired[record.name] = _default_vs_fail_fast(record.fn, samples)
    say("check goals: seconds per row of the one-row-at-a-time verifier")
    per_row = _seconds_per_row(speed_samples)
    budgeted: dict[str, Any] = {}
    for record in zoo if per_row is not None else []:
        say(f"check goals: time budget {time_budget:g} s: {record.name}")
        entry = oracle.get(record.name) or {}
        budgeted[record.name] = {"tv": entry.get("tv"), "tv_scenario": entry.get("tv_scenario"),
                                 **_time_budget(record.fn, per_row, time_budget)}
    return {"default_check": default, "default_vs_fail_fast": paired,
            "time_budget": {"seconds": time_budget, "one_row_at_a_time": ONE_ROW_AT_A_TIME,
                            "seconds_per_row": per_row, "members": budgeted},
            "goals": _goals(default, paired, budgeted, per_row, samples, time_budget),
            "seconds": time.perf_counter() - start}


def _goals(default: dict[str, Any], paired: dict[str, Any], budgeted: dict[str, Any], per_row: float | None,
           samples: int | None, budget: float) -> dict[str, Any]:
    depth = samples is None  # the depth-bound goals are about the default depth
    ok = default.get("verdict") == "pass" and default.get("detectable_tv") is not None
    ratios = [p["ratio"] for p in paired.values()]
    worst = None if not ratios or None in ratios else max(ratios)
    in_scope = {n: b for n, b in budgeted.items() if b["tv"] is not None and b["tv"] >= TIME_BUDGET_TV}
    return {
        "default_check": {
            "statement": f"default check of canonical-ratio-race at float32 (the CLI, start-up included): PASS "
                         f"within {DEFAULT_CHECK_SECONDS:g} s with a detectable TV <= {DEFAULT_CHECK_TV:g}",
            "measured": {"seconds": default["seconds"], "verdict": default.get("verdict"),
                         "detectable_tv": default.get("detectable_tv"), "rows": default.get("rows")},
            "met": None if not depth else bool(ok and default["seconds"] <= DEFAULT_CHECK_SECONDS
                                                and default["detectable_tv"] <= DEFAULT_CHECK_TV)},
        "default_vs_fail_fast": {
            "statement": f"the default CLI's first finding within {DEFAULT_VS_FAIL_FAST:g}x the verifier rows "
                         f"fail-fast needs, every zoo member (one too slow for the default depth here: at the "
                         f"rows per scenario that fit in {PAIR_SECONDS:g} s)",
            "measured": {"max_ratio": worst, "members": len(paired),
                         "not_flagged_or_not_paired": sum(1 for r in ratios if r is None)},
            "met": None if not depth or not paired else bool(worst is not None and worst <= DEFAULT_VS_FAIL_FAST)},
        "time_budget": {
            "statement": f"--time-budget {budget:g} at the speed of the one-row-at-a-time transformers adapter "
                         f"flags every zoo member whose exact TV is >= {TIME_BUDGET_TV:g} in the scenario where "
                         "it is largest",
            "measured": {"flagged": sum(1 for b in in_scope.values() if b["flagged"]),
                         "members_in_scope": len(in_scope),
                         "flagged_all_members": sum(1 for b in budgeted.values() if b["flagged"]),
                         "members": len(budgeted), "seconds_per_row": per_row},
            "met": None if per_row is None or budget != TIME_BUDGET_SECONDS or not in_scope
            else all(b["flagged"] for b in in_scope.values())},
    }
