"""``specproof bench [--out DIR] [--quick] [--device cpu|cuda] [--seed S] [--only reference|drift]``.

Writes ``DIR/bench.json`` (schema in :mod:`specproof.harness.bench.run`) and ``DIR/bench.md``.
``--quick`` is the CI configuration (fewer vocabularies, smaller budgets and three seeds; proofs
without worst-case drift); ``--device cuda`` adds the CUDA throughput figures and is a usage error
where no CUDA device exists.  ``--only reference`` times the exact reference's fast path against plain
Fractions only (:mod:`specproof.harness.bench.reference`, ``--vocab``, ``--repeats``) and writes
``DIR/reference.json``; ``--only drift`` measures the goals on measured drift only
(:mod:`specproof.harness.bench.drift_goals`: half-precision checks against float32's time, and the drift
interval of a verifier computing in float16 / bfloat16 against the exact deviation of its law) and writes
``DIR/drift.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from specproof.harness.cli import options
from specproof.errors import SpecproofInputError

__all__ = ["add_parser", "add_reference_options", "run", "run_reference", "print_detection", "ONLY"]

ONLY = ("reference", "drift")
"""The parts ``--only`` can select."""


def add_reference_options(parser: argparse.ArgumentParser) -> None:
    """``--vocab`` and ``--repeats`` of the exact-reference timing (both spellings declare them here)."""
    from specproof.harness.bench.reference import DEFAULT_VOCABS  # numpy only; no torch, sympy or z3

    parser.add_argument("--vocab", type=int, nargs="+", default=None, metavar="V",
                        help=f"vocabulary sizes of the reference timing (default {' '.join(map(str, DEFAULT_VOCABS))})")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per size (default 5)")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench", help="benchmarks: exact reference, detection strength, throughput, proofs, scaling, check goals",
        description="Measure, in one run on this machine: the fast exact reference against plain "
                    "Fractions, the rows specproof and two baselines need to flag each zoo member "
                    "beside the oracle row count N* (the rows a sequential test that knows the member's "
                    "exact law needs against every lossless law; printed per member with rows / N*), "
                    "check throughput and harness share, proof times, fitted growth "
                    "exponents, and the check as a user runs it: the default check's seconds and "
                    "detectable TV, each member's default run against --fail-fast, and --time-budget 120 "
                    "at a one-row-at-a-time verifier's speed. Writes bench.json and bench.md "
                    "(--only reference: reference.json; --only drift: drift.json).")
    options.add_out(parser, help="output folder (default reports/bench)", default=Path("reports/bench"),
                    folder=True)
    parser.add_argument("--quick", action="store_true",
                        help="CI configuration: fewer sizes, smaller budgets, three seeds, no proof drift")
    options.add_device(parser, choices=options.DEVICES,
                       help="cuda: also measure throughput on CUDA (CPU figures are always measured)")
    options.add_seed(parser, help="seed of the reference inputs and throughput scenarios, in [0, 2^63) (default 0)")
    parser.add_argument("--only", choices=ONLY,
                        help="run one part only: 'reference' (the exact reference's timing), 'drift' (the goals "
                             "on measured drift: half-precision checks, drift intervals against exact laws)")
    add_reference_options(parser)
    options.add_quiet(parser, help="no progress lines on stderr")
    parser.set_defaults(handler=run)


def run_reference(args: argparse.Namespace, out: Path) -> int:
    """The exact-reference timing to ``out`` (a file): ``bench --only reference``."""
    from specproof.harness.bench import reference

    options.check_options(args)
    timing = argparse.Namespace(vocab=args.vocab or list(reference.DEFAULT_VOCABS),
                                repeats=5 if args.repeats is None else args.repeats, seed=args.seed, out=out)
    return reference._run(timing)


def run_drift(args: argparse.Namespace, out: Path) -> int:
    """The goals on measured drift to ``out`` (a file): ``bench --only drift``."""
    from specproof.harness.bench.drift_goals import HALF_DTYPES, drift_goals
    from specproof.harness.files.envelope import write_envelope
    from specproof.harness.files.kinds import BENCH_DRIFT
    from specproof.harness.files.provenance import check_output_path, provenance

    check_output_path(out, "--out")
    start = time.perf_counter()

    def say(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)

    result = drift_goals(seed=args.seed, progress=say)
    for dtype, row in result["half_precision_time"]["dtypes"].items():
        print(f"{result['half_precision_time']['target']} {dtype:9}: {row['verdict'].upper():12} "
              f"{row['rows']:>9,} rows {row['seconds']:7.1f} s  band {row['band']}")
    for dtype, block in result["pure_half_interval"]["dtypes"].items():
        for name, row in block["scenarios"].items():
            print(f"{result['pure_half_interval']['target']} {dtype:9} {name:32} exact deviation "
                  f"{row['exact_deviation']:.3g} in [{row['low']:.3g}, {row['high']:.3g}]: "
                  f"{'yes' if row['contains'] else 'NO'}  (grid TV {row['grid_tv']:.3g})")
    for name, goal in result["goals"].items():
        print(f"goal {name}: {'met' if goal['met'] else 'NOT met'} ({goal['measured']})")
    write_envelope(out, BENCH_DRIFT, {"result": result},
                   provenance(seeds=[args.seed], dtypes=["float32", *HALF_DTYPES]))
    print(f"wrote {out}")
    return 0


def print_detection(det: dict[str, Any]) -> None:
    """Per member: N* and each method's rows / N* (the bench.md detection table, as text), then the goals."""
    from specproof.harness.bench.render import MEMBER_COLUMNS, goal_lines, member_rows

    rows = [MEMBER_COLUMNS] + member_rows(det)
    widths = [max(len(r[i]) for r in rows) for i in range(len(MEMBER_COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    for member, reason in det["excluded"].items():
        print(f"{member}: excluded ({reason})")
    for line in goal_lines(det):
        print(f"goal: {line}")


def run(args: argparse.Namespace) -> int:
    if args.only == "reference":
        return run_reference(args, args.out / "reference.json")
    for flag, value in (("--vocab", args.vocab), ("--repeats", args.repeats)):
        if value is not None:
            raise SpecproofInputError(flag, "only the reference timing takes it",
                                      f"add --only reference, or drop {flag}")
    if args.only == "drift":
        if args.quick or args.device != "cpu":
            raise SpecproofInputError("--quick" if args.quick else "--device", "the drift goals have one "
                                      "configuration, on the CPU", "drop it with --only drift")
        options.check_options(args)
        return run_drift(args, Path(args.out) / "drift.json")
    from specproof.harness.bench.run import BenchConfig, run_bench, write_bench  # torch, z3: only when benchmarking

    devices = ("cpu",) if args.device == "cpu" else ("cpu", "cuda")
    config = BenchConfig.quick(devices) if args.quick else BenchConfig.full(devices)
    config = dataclasses.replace(config, seed=args.seed)
    config.validate()  # usage errors before any measurement or write
    options.check_options(args)
    start = time.perf_counter()

    def say(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)

    data = run_bench(config, progress=say)
    json_path, md_path = write_bench(data, args.out)
    print_detection(data["detection"])
    for name, goal in data["goals"].items():
        state = "not measured" if goal["met"] is None else ("met" if goal["met"] else "NOT met")
        print(f"goal {name}: {state}")
    print(f"total {data['total_seconds']:.1f} s; wrote {json_path} and {md_path}")
    return 0
