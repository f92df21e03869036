"""``specproof bench``: one run, one machine, every figure next to what it is compared against.

Sections (each measured in the same process, one after the other, never concurrently):

1. ``exact_reference`` - :func:`~specproof.harness.bench.reference.bench_exact_reference`: the fast
   exact reference against the plain per-element ``Fraction`` path on float32 Dirichlet(0.3) laws,
   outputs compared exactly; ``time ~ V^k`` fitted for each path.
2. ``detection`` - :func:`~specproof.harness.bench.detection.detection_benchmark`: rows each method
   (specproof and the two baselines of :mod:`.baselines`) needs to flag each zoo member, and each
   method's rows over the oracle row count ``N*`` (:mod:`.oracle`).
3. ``throughput`` - rows per second through ``check`` for the float32 ``canonical-ratio-race``
   implementation on one ``Scenario.random(V, K=4, classes=4)`` per vocabulary, and the harness's share
   of the time (``harness_seconds / (harness_seconds + verifier_seconds)``); ``exact_setup_seconds`` is
   the scenario's exact event laws alone (``realise`` + ``build_families``), timed separately.
   CPU always; CUDA as well with ``--device cuda`` (when no CUDA device is present the file says so).
4. ``proofs`` - seconds per catalogue entry (``entry.prove(Settings())``; ``--quick`` skips the
   worst-case drift of refuted rules) and for theorem T3 (single-step exactness for every n).
5. ``scaling`` - ``seconds ~ x^k`` fitted by least squares on ``log seconds`` against ``log x`` for each
   figure: exact reference (fast, plain) and exact event laws against V and K, check seconds per row
   against V and K (the K series at V = 1,024; the event laws enumerate ``C^(K+1)`` class sequences,
   so K stays at most 4 there).
6. ``check_goals`` - :func:`~specproof.harness.bench.check_goals.check_goals`: the CLI's default check
   of ``canonical-ratio-race`` (seconds, detectable TV), each zoo member's default run against its
   fail-fast run (verifier rows at the first finding), and ``--time-budget 120`` on each member slowed
   to the one-row-at-a-time transformers adapter's speed.

``bench.json`` (``SCHEMA = 1``; ``indent=2, sort_keys=True``; every row keyed by name, never by position)::

    schema: 1, kind: "bench", mode: "quick" | "full", total_seconds: float,
    provenance: {git: {commit, dirty}, versions, python, platform, cpu, cpu_count, device, ...,
                 load_average: {start, end}: [1, 5, 15 minute] or null},
    config: BenchConfig fields,
    exact_reference: {rows: {"V<vocab>": {vocab, fast_seconds, fast_seconds_median, plain_seconds,
                      speedup, outputs_agree_exactly, output_equals_target}},
                      fast_seconds_exponent, plain_seconds_exponent, seconds},
    detection: {methods: {name: description}, seeds, specproof_seeds, row_budget, time_limit_seconds, seconds,
                members: {member: {bug, mirrors, caught_by_grid_only,
                          methods: {method: {caught, median_rows (null: not caught), seconds,
                                    [median_test_rows,] [median_rows_in_flagging_scenario,]
                                    per_seed: {"<seed>": {rows, flag: {flagged, rows, statistic,
                                               threshold, how, rows_in_flagging_scenario, test_rows} | null,
                                               steps, largest_rows_tried, stopped, seconds}}}},
                          grid: {core, caught, verdict, scenario, tv, impossible_mass, crafted_rows,
                                 scenarios_analysed, seconds} | null,
                          oracle: {n_star, scenario, via ("kl" | "impossible"), n_star_vs_p_good,
                                   scenario_vs_p_good, in_goals, note, tv, tv_scenario,
                                   scenarios: {scenario: {n_star, via, kl, impossible_mass,
                                               n_star_vs_p_good, p_good_is_projection, tv}}} | null,
                          event_limit: {rows, growth, scenario, family, event, side, expected, bad_mean,
                                        edge, log_threshold} | null,
                          ratios_to_n_star: {method | "specproof_test": median rows / N* | null}}},
                excluded: {member: reason},
                oracle: {excluded_scenarios: {scenario: reason}, unmodelled, alpha, beta, seconds},
                false_alarms: {method: {flagged_seeds, seeds, detail}},
                chi_square_null: {trials, seed, looks, alpha_test, first_look_alarms, schedule_alarms,
                                  first_look_rate, schedule_rate},
                summary: {total, caught: {method: n}, specproof_grid_only: [member],
                          specproof_statistical_or_grid, specproof_missed: [member],
                          row_ratio_baseline_over_specproof: {baseline: {per_member: {member: ratio},
                              per_member_vs_flagging_scenario_rows, members_both_catch, min, median,
                              geometric_mean, caught_by_baseline_only}},
                          rows_over_n_star: {members, floor, outside_goals,
                                             method | "specproof_test": {median, max}},
                          goals: {all_caught | rows_vs_oracle | vs_chi_square:
                                  {statement, measured, met}}}},
    throughput: {implementation, k, classes, cuda_note,
                 devices: {"cpu" | "cuda": {"V<vocab>": {vocab, k, samples, rows, seconds,
                           verifier_seconds, harness_seconds, harness_share, rows_per_second,
                           exact_setup_seconds, verdict}}}},
    k_series: {implementation, vocab, rows: {"K<k>": {same fields as a throughput row}}},
    proofs: {settings: {rlimit, drift}, entries: {name: {claim, verdict, expected_verdict_met,
             seconds}}, theorems: {"T3": {verdict, seconds, statement}}, seconds},
    scaling: {figures: {name: {axis: "vocab" | "k", fixed: str, points: {"<x>": seconds},
              exponent}}},
    check_goals: {default_check: {command, seconds, exit_code, verdict, rows, detectable_tv, samples, note},
                  default_vs_fail_fast: {member: {fail_fast_rows, default_rows_at_first_finding,
                                         default_rows_total, same_calls_until_first_finding, flagged,
                                         rows_at_first_flag, raised, samples, seconds_per_row, ratio}},
                  time_budget: {seconds, one_row_at_a_time, seconds_per_row,
                                members: {member: {tv, tv_scenario, flagged, seconds, rows (every
                                                   verifier row), strongest (its finding's family), raised}}},
                  goals: {default_check | default_vs_fail_fast | time_budget: {statement, measured, met}},
                  seconds},
    goals: {name: {statement, measured, met (null: not measured in this mode)}}

``bench.md`` renders the same figures as a Markdown section (:mod:`.bench_render`).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from specproof.impls import get
from specproof.proofs.claims.catalogue import catalogue
from specproof.errors import SpecproofInputError
from specproof.proofs.engine.results import Verdict
from specproof.proofs.claims.pipeline import Settings
from specproof.proofs.claims.theorems import prove_theorem, theorems

from specproof.harness.bench.check_goals import SPEED_SAMPLES, TIME_BUDGET_SECONDS, check_goals
from specproof.harness.bench.detection import detection_benchmark
from specproof.harness.bench.reference import bench_exact_reference
from specproof.harness.bench.render import render_markdown
from specproof.harness.check.driver import check
from specproof.harness.check.contracts.batched.families import build_families
from specproof.harness.files.envelope import write_document
from specproof.harness.files.kinds import BENCH
from specproof.harness.files.provenance import atomic_write_text, provenance
from specproof.harness.check.contracts.batched.scenarios import Scenario
from specproof.harness.files.json_numbers import json_safe

__all__ = ["SCHEMA", "BenchConfig", "run_bench", "write_bench", "throughput_row", "fit_exponent",
           "THROUGHPUT_IMPLEMENTATION"]

SCHEMA = BENCH.schema
THROUGHPUT_IMPLEMENTATION = "canonical-ratio-race"
THROUGHPUT_K = 4
THROUGHPUT_CLASSES = 4
K_SERIES_VOCAB = 1024
REFERENCE_GOAL_VOCAB = 262_144
REFERENCE_GOAL_SPEEDUP = 25.0
REFERENCE_GOAL_SECONDS = 0.2
QUICK_GOAL_SECONDS = 180.0
SPECPROOF_SEEDS = 30  # the full bench's seeds of specproof's detection runs (the baselines keep 5)


@dataclass(frozen=True)
class BenchConfig:
    """Every knob of one run; :meth:`full` and :meth:`quick` are the two the CLI offers."""

    mode: str
    reference_vocabs: tuple[int, ...]
    reference_repeats: int
    detection_seeds: tuple[int, ...]
    detection_row_budget: int
    detection_time_limit: float | None
    throughput_samples: dict[int, int]  # vocabulary -> rows per check
    k_series: dict[int, int]  # K -> rows per check at V = K_SERIES_VOCAB
    proof_drift: bool
    detection_members: tuple[str, ...] | None = None  # None: the whole zoo
    proof_entries: tuple[str, ...] | None = None  # None: the whole catalogue
    devices: tuple[str, ...] = ("cpu",)
    seed: int = 0
    check_goal_samples: int | None = None  # None: the CLI's default depth (check_goals)
    check_goal_members: tuple[str, ...] | None = None  # None: the whole zoo
    check_goal_time_budget: float = TIME_BUDGET_SECONDS
    check_goal_speed_samples: int = SPEED_SAMPLES  # rows per scenario of the speed measurement (check_goals)
    detection_specproof_seeds: tuple[int, ...] | None = None  # None: detection_seeds (detection_benchmark)

    @classmethod
    def full(cls, devices: tuple[str, ...] = ("cpu",)) -> "BenchConfig":
        return cls("full", (4096, 32768, 131072, 262144), 5, (0, 1, 2, 3, 4), 1 << 18, 15.0,
                   {32: 262144, 1024: 65536, 32768: 4096, 131072: 1024}, {1: 65536, 2: 65536, 3: 65536, 4: 65536},
                   True, devices=devices, detection_specproof_seeds=tuple(range(SPECPROOF_SEEDS)))

    @classmethod
    def quick(cls, devices: tuple[str, ...] = ("cpu",)) -> "BenchConfig":
        return cls("quick", (4096, 32768, 262144), 3, (0, 1, 2), 1 << 16, 3.0,
                   {32: 16384, 1024: 4096, 32768: 256, 131072: 128}, {1: 4096, 2: 4096, 3: 4096, 4: 4096},
                   False, devices=devices, check_goal_samples=2048,
                   check_goal_members=("resample-from-target", "le-ratio-invcdf"), check_goal_time_budget=10.0)

    def validate(self) -> None:
        if self.mode not in ("quick", "full", "custom"):
            raise SpecproofInputError("mode", f"{self.mode!r} is unknown", "use 'quick', 'full' or 'custom'")
        if not self.reference_vocabs or any(v < 2 for v in self.reference_vocabs):
            raise SpecproofInputError("reference_vocabs", f"{self.reference_vocabs} has sizes below 2",
                                      "pass sizes like (4096, 262144)")
        if self.reference_repeats < 1:
            raise SpecproofInputError("reference_repeats", f"{self.reference_repeats} < 1", "pass at least 1")
        if not self.throughput_samples or any(v < 2 or s < 64 for v, s in self.throughput_samples.items()):
            raise SpecproofInputError("throughput_samples", "needs vocabularies >= 2 with >= 64 rows each",
                                      "pass e.g. {32: 4096}")
        if not self.k_series or any(k < 1 or k > 4 or s < 64 for k, s in self.k_series.items()):
            raise SpecproofInputError("k_series", "needs K in 1..4 (C^(K+1) exact events) with >= 64 rows",
                                      "pass e.g. {1: 2048, 4: 2048}")
        if self.check_goal_samples is not None and self.check_goal_samples < 64:
            raise SpecproofInputError("check_goal_samples", f"{self.check_goal_samples} < 64",
                                      "pass at least 64 rows per scenario, or None for the default depth")
        if not self.check_goal_time_budget > 0:
            raise SpecproofInputError("check_goal_time_budget", f"{self.check_goal_time_budget!r} is not positive",
                                      "pass e.g. 120")
        if self.check_goal_speed_samples < 64:
            raise SpecproofInputError("check_goal_speed_samples", f"{self.check_goal_speed_samples} < 64",
                                      f"pass at least 64 rows per scenario (the default is {SPEED_SAMPLES})")
        for device in self.devices:
            if device not in ("cpu", "cuda"):
                raise SpecproofInputError("--device", f"{device!r} is unknown", "use cpu or cuda")
            if device == "cuda" and not torch.cuda.is_available():
                raise SpecproofInputError("--device", "CUDA is not available on this machine",
                                          "run without --device cuda (the CPU figures are always measured)")


def fit_exponent(points: dict[int, float]) -> float | None:
    """Least-squares slope of ``log seconds`` against ``log x`` (None with fewer than two points)."""
    xs = [x for x, y in points.items() if y > 0]
    if len(xs) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log([points[x] for x in xs]), 1)[0])


def throughput_row(vocab: int, k: int, samples: int, device: str, seed: int) -> dict[str, Any]:
    """One ``check`` run of the float32 built-in implementation on ``Scenario.random``."""
    scenario = Scenario.random(f"throughput V{vocab} K{k}", vocab, k, seed=seed + vocab + 10 * k,
                               classes=min(THROUGHPUT_CLASSES, vocab))
    start = time.perf_counter()
    build_families(scenario.realise("float32", device))
    setup = time.perf_counter() - start
    verify = get(THROUGHPUT_IMPLEMENTATION).fn
    start = time.perf_counter()
    result = check(verify, dtype="float32", device=device, samples=samples, seed=seed,
                            scenarios=[scenario])
    seconds = time.perf_counter() - start
    return {"vocab": vocab, "k": k, "samples": samples, "rows": result.rows, "seconds": seconds,
            "verifier_seconds": result.verifier_seconds, "harness_seconds": result.harness_seconds,
            "harness_share": result.harness_share, "rows_per_second": result.rows / seconds,
            "exact_setup_seconds": setup, "verdict": result.verdict}


def _proofs(config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    settings = Settings(drift=config.proof_drift)
    entries = catalogue()
    if config.proof_entries is not None:
        names = {e.name for e in entries}
        unknown = sorted(set(config.proof_entries) - names)
        if unknown:
            raise SpecproofInputError("proof_entries", f"{', '.join(unknown)} are not catalogue entries",
                                      "choose names from specproof.proofs.claims.catalogue.catalogue()")
        entries = tuple(e for e in entries if e.name in config.proof_entries)
    start = time.perf_counter()
    out: dict[str, Any] = {}
    for entry in entries:
        say(f"proofs: {entry.name}")
        t0 = time.perf_counter()
        result = entry.prove(settings)
        expected = Verdict.PROVED if entry.claim == "exact" else Verdict.REFUTED
        out[entry.name] = {"claim": entry.claim, "verdict": result.verdict.value,
                           "expected_verdict_met": result.verdict == expected,
                           "seconds": time.perf_counter() - t0}
    say("proofs: T3")
    t0 = time.perf_counter()
    t3 = prove_theorem("T3")
    statement = next(t.statement for t in theorems() if t.name == "T3")
    return {"settings": {"rlimit": settings.rlimit, "drift": settings.drift}, "entries": out,
            "theorems": {"T3": {"verdict": t3.verdict.value, "seconds": time.perf_counter() - t0,
                                "statement": statement}},
            "seconds": time.perf_counter() - start}


def _scaling(reference: dict[str, Any], throughput: dict[str, Any], k_series: dict[str, Any]) -> dict[str, Any]:
    ref_rows = list(reference["rows"].values())
    cpu = list(throughput["devices"]["cpu"].values())
    ks = list(k_series["rows"].values())
    series = {
        "exact_reference_fast_seconds_vs_vocab": ("vocab", "one step, float32 Dirichlet(0.3)",
                                                  {r["vocab"]: r["fast_seconds"] for r in ref_rows}),
        "exact_reference_plain_seconds_vs_vocab": ("vocab", "one step, float32 Dirichlet(0.3)",
                                                   {r["vocab"]: r["plain_seconds"] for r in ref_rows}),
        "exact_event_laws_seconds_vs_vocab": ("vocab", f"K={THROUGHPUT_K}, C={THROUGHPUT_CLASSES}",
                                              {r["vocab"]: r["exact_setup_seconds"] for r in cpu}),
        "exact_event_laws_seconds_vs_k": ("k", f"V={K_SERIES_VOCAB}, C={THROUGHPUT_CLASSES}",
                                          {r["k"]: r["exact_setup_seconds"] for r in ks}),
        "check_seconds_per_row_vs_vocab": ("vocab", f"K={THROUGHPUT_K}, C={THROUGHPUT_CLASSES}, CPU",
                                           {r["vocab"]: r["seconds"] / r["rows"] for r in cpu}),
        "check_seconds_per_row_vs_k": ("k", f"V={K_SERIES_VOCAB}, C={THROUGHPUT_CLASSES}, CPU",
                                       {r["k"]: r["seconds"] / r["rows"] for r in ks}),
    }
    return {"figures": {name: {"axis": axis, "fixed": fixed, "points": {str(x): y for x, y in points.items()},
                               "exponent": fit_exponent(points)}
                        for name, (axis, fixed, points) in series.items()}}


def _goals(config: BenchConfig, data: dict[str, Any]) -> dict[str, Any]:
    row = data["exact_reference"]["rows"].get(f"V{REFERENCE_GOAL_VOCAB}")
    speedup = row["speedup"] if row else None
    fast = row["fast_seconds"] if row else None
    goals = {
        "reference_speedup_at_262144": {
            "statement": f"fast exact reference at least {REFERENCE_GOAL_SPEEDUP:g}x the plain Fraction path "
                         f"at V = {REFERENCE_GOAL_VOCAB:,}", "measured": speedup,
            "met": None if speedup is None else speedup >= REFERENCE_GOAL_SPEEDUP},
        "reference_fast_seconds_at_262144": {
            "statement": f"fast exact reference at most {REFERENCE_GOAL_SECONDS:g} s at V = {REFERENCE_GOAL_VOCAB:,}",
            "measured": fast, "met": None if fast is None else fast <= REFERENCE_GOAL_SECONDS},
    }
    for name, goal in data["detection"]["summary"]["goals"].items():
        goals[f"detection_{name}"] = goal
    for name, goal in data["check_goals"]["goals"].items():
        goals[f"check_{name}"] = goal
    if config.mode == "quick":
        goals["quick_run_seconds"] = {"statement": f"specproof bench --quick within {QUICK_GOAL_SECONDS:g} s",
                                      "measured": data["total_seconds"],
                                      "met": data["total_seconds"] <= QUICK_GOAL_SECONDS}
    return goals


def run_bench(config: BenchConfig, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure every section (module docstring) and return the ``bench.json`` document."""
    config.validate()
    say = progress or (lambda _msg: None)
    load_start = _load_average()
    start = time.perf_counter()
    say("exact reference: fast vs plain")
    t0 = time.perf_counter()
    reference = bench_exact_reference(config.reference_vocabs, repeats=config.reference_repeats, seed=config.seed)
    reference_doc = {"rows": {f"V{r['vocab']}": r for r in reference["rows"]},
                     **{k: v for k, v in reference.items() if k != "rows"}, "seconds": time.perf_counter() - t0}
    detection = detection_benchmark(seeds=config.detection_seeds, row_budget=config.detection_row_budget,
                                    time_limit=config.detection_time_limit, members=config.detection_members,
                                    progress=say, specproof_seeds=config.detection_specproof_seeds)
    devices: dict[str, Any] = {}
    for device in config.devices:
        throughput_row(32, 1, 64, device, config.seed)  # warm-up (first-call costs), not recorded
        devices[device] = {}
        for vocab, samples in sorted(config.throughput_samples.items()):
            say(f"throughput: {device} V={vocab}")
            devices[device][f"V{vocab}"] = throughput_row(vocab, THROUGHPUT_K, samples, device, config.seed)
    cuda_note = ("measured on CUDA too" if "cuda" in devices else
                 "CUDA not measured: " + ("no CUDA device on this machine" if not torch.cuda.is_available()
                                          else "run with --device cuda"))
    throughput = {"implementation": THROUGHPUT_IMPLEMENTATION, "k": THROUGHPUT_K, "classes": THROUGHPUT_CLASSES,
                  "devices": devices, "cuda_note": cuda_note}
    k_rows = {}
    for k, samples in sorted(config.k_series.items()):
        say(f"scaling: K={k}")
        k_rows[f"K{k}"] = throughput_row(K_SERIES_VOCAB, k, samples, "cpu", config.seed)
    k_series = {"implementation": THROUGHPUT_IMPLEMENTATION, "vocab": K_SERIES_VOCAB, "rows": k_rows}
    proofs = _proofs(config, say)
    checks = check_goals(oracle={name: m["oracle"] for name, m in detection["members"].items() if m["oracle"]},
                         members=config.check_goal_members, samples=config.check_goal_samples,
                         time_budget=config.check_goal_time_budget,
                         speed_samples=config.check_goal_speed_samples, progress=say)
    data: dict[str, Any] = BENCH.envelope({
        "mode": config.mode,
        "config": _config_json(config), "exact_reference": reference_doc, "detection": detection,
        "throughput": throughput, "k_series": k_series, "proofs": proofs, "check_goals": checks,
        "scaling": _scaling(reference_doc, throughput, k_series),
    }, provenance(device=config.devices[-1], dtypes=["float32"], seeds=sorted({config.seed, *config.detection_seeds,
                                                                       *(config.detection_specproof_seeds or ())}),
                  extra={"load_average": {"start": load_start, "end": _load_average()}})).to_json()
    data["total_seconds"] = time.perf_counter() - start
    data["goals"] = _goals(config, data)
    return json_safe(data)


def _load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (other processes share the CPU the timings are taken on)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _config_json(config: BenchConfig) -> dict[str, Any]:
    out = asdict(config)
    out["throughput_samples"] = {str(k): v for k, v in config.throughput_samples.items()}
    out["k_series"] = {str(k): v for k, v in config.k_series.items()}
    return out


def write_bench(data: dict[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``bench.json`` and ``bench.md`` into the folder ``out`` (atomically, each)."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise SpecproofInputError("--out", f"{folder} is a file", "pass a folder (it is created if missing)")
    json_path = write_document(folder / "bench.json", BENCH, data)
    md_path = atomic_write_text(folder / "bench.md", render_markdown(data))
    return json_path, md_path
