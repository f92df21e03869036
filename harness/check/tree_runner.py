"""``check_tree``: is a tree / multi-draft verifier lossless?  (``specproof check --contract tree``)

The verifier has the tree contract's signature (:mod:`.tree_contract`).  For each tree scenario
(:func:`.tree_scenarios.default_tree_suite`: i.i.d., distinct and top-k siblings, depth 1 and 3) the
harness draws node tokens from the exact sibling laws, hands the verifier its own copies of the
inputs and reads the emitted path back; then

1. the output contract (a violation is a usage error, exit 2);
2. the statistical test: one :mod:`.tree_streams` stream per scenario, all handed to the one engine
   (:func:`.engine.run_streams`: anytime-valid, family-wise ``alpha``), impossible outcomes certain;
3. reproducibility: one batch twice with same-seeded generators must give the same output;
4. RNG edge injection (CPU): the verifier runs under :class:`.injection.EdgeInjection`; any emitted
   token of target probability 0, any path leaving the tree, or any exception under an injected edge
   value the real generator produces is a certain finding.

The order is the batched check's (:mod:`.runner`, Order): the streams draw as many rows as 3 and 4
cost (for a verifier drawing uniforms: 2 x 256 + 5 scenarios x 4 passes x 1,024 rows), then 3 and 4
run as the engine's interlude, then the rest of the streams; ``fail_fast`` only stops at the first
finding, so a bug the statistics see is flagged without paying for 3 and 4.  Their passes are fixed
in size; under a ``time_budget`` they get the batched check's share of it (a tenth, at most
``INJECTION_SECONDS``), the streams the rest: the pair and the injection's passes shrink to fit it
(to ``REPRODUCIBILITY_MIN_ROWS`` and ``INJECTION_MIN_ROWS`` rows at least, at the verifier's speed
on the calls so far), and a pass that still does not fit by the interlude's :class:`.calls.Deadline`
is skipped and listed.

The verdict is the engine's (:func:`.engine.verdict_for`): FAIL on any finding, UNDERPOWERED when a
scenario cannot see ``max_detectable_tv``, else PASS.

Layer: harness.check (2); imports proofs, harness.exact and harness.check.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import torch

from specproof.proofs.errors import SpecproofInputError

from specproof.harness.check.calls import (ContractViolation, Deadline, VerifierError, check_run_arguments,
                                           resolve_device)
from specproof.harness.check.engine import LEVELS, run_streams, verdict_for
from specproof.harness.check.injection import DEFAULT_FRACTION, EdgeInjection, kinds_drawn, not_run_text
from specproof.harness.check.runner import INJECTION_MIN_ROWS, INJECTION_SECONDS
from specproof.harness.check.result import (DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT, CheckResult, Finding,
                                            interlude_note)
from specproof.harness.check.tree_contract import off_tree_rows
from specproof.harness.check.tree_scenarios import TreeRealisation, TreeScenario, default_tree_suite
from specproof.harness.check.tree_streams import TreeCaller, TreeStream, impossible_counts, tree_families
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.rng_edges import DRAW_KINDS, EDGE_LABELS

__all__ = ["check_tree", "tree_injection", "TREE_INJECTION_ROWS", "TREE_REPRODUCIBILITY_ROWS"]

TREE_INJECTION_ROWS = 1024
TREE_REPRODUCIBILITY_ROWS = 256
_PREPARED: dict[tuple[int, str, str], tuple[TreeScenario, TreeRealisation, list]] = {}


def _prepared(scenario: TreeScenario, dtype: str, device: str) -> tuple[TreeRealisation, list]:
    """Realisation and families, cached (exact computations independent of the verifier)."""
    key = (id(scenario), dtype, device)
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not scenario:
        if len(_PREPARED) > 64:
            _PREPARED.clear()
        real = scenario.realise(dtype, device)
        hit = _PREPARED[key] = (scenario, real, tree_families(real))
    return hit[1], hit[2]


def _bad_rows(real: TreeRealisation, batch: Any, emitted: torch.Tensor) -> np.ndarray:
    return (real.zero_positions(emitted) > 0) | (off_tree_rows(emitted, real.tree.parents, batch.node_tokens) > 0)


def _reproducibility(real: TreeRealisation, caller: TreeCaller, seed: int, rows: int) -> list[Finding]:
    batch = real.sample(rows, torch.Generator().manual_seed(seed % (2**63)))
    call_seed = seed * 7_919 + 2**40
    first, second = caller(real, batch, call_seed), caller(real, batch, call_seed)
    differ = int((first != second).any(dim=1).sum())
    if not differ:
        return []
    n = batch.rows
    return [Finding(real.scenario.name, "reproducibility",
                    f"two runs of the same {n}-row batch with same-seeded generators differ in {differ} rows: the "
                    "verifier draws randomness the generator argument does not control (e.g. the global RNG); "
                    "fix: pass generator=generator to every random call", 0.0, differ / n, 0.0, math.inf, 0.0, n)]


def tree_injection(reals: list[TreeRealisation], caller: TreeCaller, seed: int, *,
                   rows: int = TREE_INJECTION_ROWS, fraction: Fraction = DEFAULT_FRACTION,
                   kinds: tuple[str, ...] = DRAW_KINDS,
                   deadline: Deadline | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """Per scenario: a baseline pass recording the verifier's draws, then one pass per injectable kind
    seen and edge label writing that edge into ``fraction`` of the entries.  Rows failing (probability-0
    token, off-tree path) under injection and not in the baseline, or an exception under injection,
    are certain findings; each failing pass is run again to state whether it reproduces.  A pass that
    would end past ``deadline`` is skipped and listed under ``not_run``."""
    findings: list[Finding] = []
    seen: set[str] = set()
    passes, not_run = 0, []
    for index, real in enumerate(reals):
        if deadline is not None and not deadline.fits(rows):
            not_run.append(f"{real.scenario.name}: its baseline and edge passes")
            continue
        call_seed = (seed * 1_000_003 + index) % (2**63)
        batch = real.sample(rows, torch.Generator().manual_seed(call_seed))

        def run(mode: EdgeInjection) -> torch.Tensor:
            with torch.random.fork_rng(devices=[]):
                torch.random.default_generator.manual_seed(call_seed)  # a global-RNG verifier reproduces too
                with mode:
                    return caller(real, batch, call_seed)

        baseline = EdgeInjection()
        base_bad = _bad_rows(real, batch, run(baseline))
        passes += 1
        drawn = kinds_drawn(baseline.records, kinds)
        seen.update(drawn)
        for kind in drawn:
            for label in EDGE_LABELS[kind]:
                if deadline is not None and not deadline.fits(rows):
                    not_run.append(f"{real.scenario.name}: {kind} edge '{label}'")
                    continue
                passes += 1
                where = f"under the injected {kind} edge '{label}' ({fraction} of the draws)"
                try:
                    out = run(EdgeInjection(kind, label, fraction, call_seed))
                except (ContractViolation, VerifierError) as error:
                    findings.append(Finding(real.scenario.name, "rng-injection", f"{where}: {error}", 0.0, 1.0,
                                            0.0, math.inf, 0.0, rows))
                    continue
                new = _bad_rows(real, batch, out) & ~base_bad
                if not new.any():
                    continue
                counts, first = impossible_counts(real, batch, out)
                again = run(EdgeInjection(kind, label, fraction, call_seed))
                repro = "reproduces" if bool((again == out).all()) else "does NOT reproduce"
                row = int(np.flatnonzero(new)[0])
                what = "; ".join(f"{label_} ({n} rows)" for label_, n in counts.items() if n)
                findings.append(Finding(
                    real.scenario.name, "rng-injection",
                    f"{where}: {what}; e.g. node tokens {batch.node_tokens[row].tolist()} -> emitted "
                    f"{out[row].tolist()}; the pass {repro}", 0.0, float(new.sum()) / rows, 0.0, math.inf, 0.0,
                    rows, position=min(first.values()) if first else None))
    summary = {"scenarios": [r.scenario.name for r in reals], "rows": rows, "fraction": str(fraction),
               "passes": passes, "kinds_seen": sorted(seen), "findings": len(findings), "not_run": not_run}
    return findings, summary


def _injection_text(summary: dict[str, Any]) -> str:
    skipped = summary["not_run"]
    if skipped:
        state = f"{summary['findings']} findings" if summary["findings"] else "not flagged, incomplete"
        seen = f"{', '.join(summary['kinds_seen'])} draws seen" if summary["kinds_seen"] else "no draw recorded yet"
        return (f"RNG edge injection: {summary['passes']} passes run ({seen}, {summary['rows']} rows each): "
                f"{state}; " + not_run_text(skipped))
    if not summary["kinds_seen"]:
        return ("RNG edge injection: no injectable draw seen (the verifier draws nothing through torch.rand / "
                "exponential_ on the CPU); not flagged")
    state = f"{summary['findings']} findings" if summary["findings"] else "not flagged"
    return (f"RNG edge injection: {summary['passes']} passes over {len(summary['scenarios'])} tree scenarios "
            f"({', '.join(summary['kinds_seen'])} draws, {summary['rows']} rows each): {state}")


def check_tree(verify: Callable[..., Any], *, dtype: Any = "float32", device: str = "cpu", seed: int = 0,
               samples: int | None = None, level: str = "default", alpha: float = 1e-6,
               timeout: float | None = DEFAULT_TIMEOUT, fail_fast: bool = False,
               max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV, time_budget: float | None = None,
               progress: bool | Callable[[str], None] | None = None, inject: bool = True,
               scenarios: list[TreeScenario] | None = None, hard_timeout: bool = False) -> CheckResult:
    """Check a tree-contract verifier (module docstring).  ``samples``: fixed rows per scenario, else
    the ``level``'s quota for ``max_detectable_tv``; ``inject``: run the RNG edge injection (CPU only);
    ``timeout``: seconds per verifier call; ``hard_timeout``: end the process when a verifier ignores it."""
    name = dtype_name(dtype)
    check_run_arguments(seed, max_detectable_tv, timeout)
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 64):
        raise SpecproofInputError("samples", f"{samples!r} rows per scenario is too few", "use at least 64")
    if level not in LEVELS:
        raise SpecproofInputError("level", f"{level!r} is not a level", f"use one of {sorted(LEVELS)}")
    torch_device = resolve_device(device)
    suite = list(scenarios) if scenarios is not None else default_tree_suite()
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one tree scenario")
    start = time.perf_counter()
    prepared = [_prepared(s, name, str(torch_device)) for s in suite]
    reals = [real for real, _ in prepared]
    caller = TreeCaller(verify, torch_device, timeout, hard_timeout)
    extra: list[Finding] = []
    injection, injection_text, injection_findings, ran, interlude_rows = None, None, [], False, 0
    inject_here = inject and torch_device.type == "cpu"
    if inject and not inject_here:
        injection_text = f"RNG edge injection not run: its edge model covers torch's CPU generator, not {torch_device.type}"
    # the interlude's rows for a verifier drawing uniforms (a baseline pass and one pass per edge, per scenario)
    passes = len(reals) * (1 + len(EDGE_LABELS["uniform"])) if inject_here else 0
    share = None if time_budget is None else min(INJECTION_SECONDS, 0.1 * time_budget)
    pair_note = None
    cost = 2 * TREE_REPRODUCIBILITY_ROWS + passes * TREE_INJECTION_ROWS

    def run_interlude() -> bool:
        """The reproducibility pair, then the injection (module docstring: the order)."""
        nonlocal injection, injection_text, injection_findings, ran, interlude_rows, pair_note
        ran, before = True, caller.rows
        deadline = None if share is None else Deadline(share, caller.seconds_per_row)
        pair = TREE_REPRODUCIBILITY_ROWS if deadline is None else deadline.pair_rows(
            TREE_REPRODUCIBILITY_ROWS, share * 2 / (passes + 2))
        if pair:
            extra.extend(_reproducibility(reals[0], caller, seed, pair))
        else:
            pair_note = deadline.pair_skipped()
        if inject_here and not (extra and fail_fast):
            # under a time budget each pass shrinks (to INJECTION_MIN_ROWS at least) so that all fit the share
            rows = TREE_INJECTION_ROWS if deadline is None else int(min(TREE_INJECTION_ROWS, max(
                INJECTION_MIN_ROWS, share / ((passes + 2) * max(caller.seconds_per_row(), 1e-9)))))
            injection_findings, injection = tree_injection(reals, caller, seed, rows=rows, deadline=deadline)
            injection_text = _injection_text(injection)
        interlude_rows = caller.rows - before
        return bool(extra or injection_findings)

    streams = [TreeStream(real, caller, seed, index, families) for index, (real, families) in enumerate(prepared)]
    run = run_streams(streams, alpha=alpha, rows=samples, level=level, max_detectable_tv=max_detectable_tv,
                      # the budget covers the whole check: the preparation is spent, the interlude's share kept
                      time_budget=None if time_budget is None else max(
                          1e-3, time_budget - (time.perf_counter() - start) - share),
                      fail_fast=fail_fast, progress=progress, interlude=(cost, run_interlude))
    reports, rows_first, reason = run.reports, run.rows_at_first_flag, run.stop_reason
    injection_text = interlude_note(injection_text, ran, inject_here, injection is not None, reason)
    certain = extra + injection_findings
    called = None if rows_first is None else rows_first + (interlude_rows if run.interlude_before_first_flag else 0)
    verdict = verdict_for(reports, certain, max_detectable_tv)  # FAIL before reading reports when certain
    total = time.perf_counter() - start
    return CheckResult(verdict=verdict, dtype=name, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=samples or 0, rule=None, scenarios=reports, verifier_seconds=caller.seconds,
                       harness_seconds=total - caller.seconds, max_detectable_tv=float(max_detectable_tv),
                       reproducibility=extra, level=level if samples is None else "samples", stop_reason=reason,
                       rows_at_first_flag=rows_first, verifier_rows_at_first_flag=called,
                       injection=injection,
                       injection_summary="\n".join(filter(None, [injection_text, pair_note])) or None,
                       injection_findings=injection_findings, time_budget=time_budget)
