"""Issue 41's goals on measured drift: ``specproof bench --only drift`` (writes ``drift.json``).

1. ``half_precision_time``: the runtime-style verifier ``upcast_ratio_race`` (probabilities in the dtype,
   float32 uniforms and float32 arithmetic, as runtimes write it) at the default depth, in-process, seed
   ``seed``, in float32, float16 and bfloat16: verdict, band basis, scenarios out of scope, rows and
   seconds.  Goal: float16 and bfloat16 PASS with the band derived from observed precision, no scenario
   out of scope, each within ``HALF_TIME_FACTOR`` (2) times float32's seconds.
2. ``pure_half_interval``: the canonical verifier whose whole arithmetic runs in the dtype
   (``canonical-ratio-invcdf``: uniforms from ``torch.rand`` in the dtype, acceptance and inverse CDF in
   it) at the default depth in float16 and bfloat16.  Per enumerable statistical scenario: the check's
   99% anytime-valid drift interval, and the exact value of what it covers, the largest deviation on the
   tested events (:func:`~specproof.harness.check.stats.engine.largest_deviation`) of the law the verifier
   realises.  That law is computed with no sampling: it is the exact grid law of the verifier's uniforms
   core ``canonical-ratio-uniforms`` (:func:`~specproof.harness.drift.grid.measure_grid`, on the same
   rounded scenario and torch's CPU uniform grid of the dtype), which ``canonical-ratio-invcdf`` calls on
   ``torch.rand`` uniforms.  Beside it, the grid's TV against the rule's ideal law on the renormalised
   pair (on the ``target sums below 1`` scenario the verifier reads unnormalised rows, so that TV measures
   the renormalisation, which no tested event sees).  Goal: every interval contains the exact deviation.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch

from specproof.impls import get
from specproof.impls.verifiers.upcast import upcast_ratio_race

from specproof.harness.check.contracts import batched
from specproof.harness.check.driver import check
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.stats.engine import largest_deviation
from specproof.harness.drift.grid import measure_grid
from specproof.harness.exact.tolerances import BAND_DERIVED

__all__ = ["drift_goals", "exact_deviation", "HALF_TIME_FACTOR", "RUNTIME_STYLE", "PURE_HALF", "HALF_DTYPES"]

HALF_TIME_FACTOR = 2.0
RUNTIME_STYLE = "specproof.impls.verifiers.upcast:upcast_ratio_race"
PURE_HALF = "canonical-ratio-invcdf"  # its uniforms core: canonical-ratio-uniforms
HALF_DTYPES = ("float16", "bfloat16")


def exact_deviation(prepared: Any, law: dict[tuple[int, ...], Any]) -> float:
    """The largest deviation on ``prepared``'s tested events of the exact emission ``law`` (sequence ->
    probability): each family's key law is the law's mass per row key."""
    seqs = list(law)
    emitted = torch.full((len(seqs), prepared.k + 1), -1, dtype=torch.int64)
    for row, seq in enumerate(seqs):
        emitted[row, :len(seq)] = torch.tensor(seq, dtype=torch.int64)
    weights = np.array([float(law[s]) for s in seqs])
    families = prepared.families
    key_laws = [np.bincount(fam.key(emitted), weights=weights, minlength=fam.n_keys) for fam in families]
    return largest_deviation(families, key_laws)


def _checked(fn: Callable[..., Any], dtype: str, seed: int) -> tuple[Any, float]:
    start = time.perf_counter()
    result = check(fn, dtype=dtype, seed=seed, progress=False)
    return result, time.perf_counter() - start


def _half_precision_time(seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    rows = {}
    for dtype in ("float32", *HALF_DTYPES):
        result, seconds = _checked(upcast_ratio_race, dtype, seed)
        rows[dtype] = {"verdict": result.verdict.value, "band": result.band["basis"], "rows": result.rows,
                       "seconds": seconds, "out_of_scope": [s.name for s in result.out_of_scope()],
                       "detectable_tv": result.detectable_tv}
        say(f"drift: {RUNTIME_STYLE} in {dtype}: {result.verdict.value.upper()}, {result.rows:,} rows, {seconds:.1f} s")
    base = rows["float32"]["seconds"]
    for dtype in HALF_DTYPES:
        rows[dtype]["ratio_to_float32"] = rows[dtype]["seconds"] / base if base else None
    met = all(rows[d]["verdict"] == "pass" and rows[d]["band"] == BAND_DERIVED and not rows[d]["out_of_scope"]
              and rows[d]["ratio_to_float32"] is not None and rows[d]["ratio_to_float32"] <= HALF_TIME_FACTOR
              for d in HALF_DTYPES)
    measured = "; ".join(f"{d}: {rows[d]['verdict'].upper()} ({rows[d]['band']}), {rows[d]['seconds']:.1f} s = "
                         f"{rows[d]['ratio_to_float32']:.2f}x float32's {base:.1f} s"
                         + (f", out of scope: {', '.join(rows[d]['out_of_scope'])}" if rows[d]["out_of_scope"] else "")
                         for d in HALF_DTYPES)
    goal = {"statement": f"{RUNTIME_STYLE} PASSes in float16 and bfloat16 at the default depth with the derived "
                         f"band, no scenario out of scope, within {HALF_TIME_FACTOR:g}x float32's time",
            "measured": measured, "met": met}
    return {"target": RUNTIME_STYLE, "seed": seed, "dtypes": rows, "goal": goal}


def _pure_half_interval(seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    verifier, core = get(PURE_HALF), get(get(PURE_HALF).uniforms_core)
    out: dict[str, Any] = {}
    misses, judged = [], 0
    for dtype in HALF_DTYPES:
        result, seconds = _checked(verifier.fn, dtype, seed)
        intervals = {s.name: s.drift for s in result.scenarios}
        options = CheckOptions.build("batched", dtype=dtype)
        scenarios = {}
        for scenario in batched.default_suite(options):
            prepared = batched.prepare(scenario, options, torch.device("cpu"))
            interval = intervals.get(scenario.name)
            if not prepared.real.enumerable or prepared.certainty_probe or interval is None:
                continue
            grid = measure_grid(core.fn, prepared.real, rule=verifier.rule)
            exact = exact_deviation(prepared, grid.law)
            contains = interval[1] <= exact <= interval[2]
            judged += 1
            if not contains:
                misses.append(f"{dtype} {scenario.name}")
            scenarios[scenario.name] = {"estimate": interval[0], "low": interval[1], "high": interval[2],
                                        "exact_deviation": exact, "grid_tv": float(grid.tv),
                                        "grid_verdict": grid.verdict.value, "contains": contains}
        out[dtype] = {"verdict": result.verdict.value, "rows": result.rows, "seconds": seconds, "scenarios": scenarios}
        say(f"drift: {PURE_HALF} in {dtype}: {result.verdict.value.upper()}, {len(scenarios)} enumerable scenarios, "
            f"{sum(s['contains'] for s in scenarios.values())} intervals contain the exact deviation")
    goal = {"statement": f"{PURE_HALF} (whole arithmetic in the dtype) gets, on each enumerable scenario in float16 "
                         "and bfloat16, a 99% drift interval containing the exact largest deviation on the tested "
                         "events of its law (exact grid law of its uniforms core)",
            "measured": f"{judged - len(misses)} of {judged} intervals contain it"
                        + (f"; missed: {', '.join(misses)}" if misses else ""),
            "met": bool(judged) and not misses}
    return {"target": PURE_HALF, "uniforms_core": core.name, "seed": seed, "dtypes": out, "goal": goal}


def drift_goals(seed: int = 0, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Both goals (module docstring), measured one after the other in this process."""
    say = progress or (lambda message: None)
    start = time.perf_counter()
    timing = _half_precision_time(seed, say)
    interval = _pure_half_interval(seed, say)
    return {"half_precision_time": timing, "pure_half_interval": interval,
            "goals": {"half_precision_time": timing["goal"], "pure_half_interval": interval["goal"]},
            "seconds": time.perf_counter() - start}
