"""``specproof bench [--out DIR] [--quick] [--device cpu|cuda]``: the benchmarks of :mod:`.bench`.

Writes ``DIR/bench.json`` (schema in :mod:`.bench`) and ``DIR/bench.md``.  ``--quick`` is the CI
configuration (fewer vocabularies, smaller budgets and three seeds; proofs without worst-case drift);
``--device cuda`` adds the CUDA throughput figures and is a usage error where no CUDA device exists.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from specproof.harness.files.provenance import check_output_path

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench", help="benchmarks: exact reference, detection strength, throughput, proofs, scaling",
        description="Measure, in one run on this machine: the fast exact reference against plain "
                    "Fractions, the rows specproof and two baselines need to flag each zoo member, "
                    "check_verifier throughput and harness share, proof times, and fitted growth "
                    "exponents. Writes bench.json and bench.md.")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"),
                        help="output folder (default reports/bench)")
    parser.add_argument("--quick", action="store_true",
                        help="CI configuration: fewer sizes, smaller budgets, three seeds, no proof drift")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: also measure throughput on CUDA (CPU figures are always measured)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from specproof.harness.bench.run import BenchConfig, run_bench, write_bench  # torch, z3: only when benchmarking

    devices = ("cpu",) if args.device == "cpu" else ("cpu", "cuda")
    config = BenchConfig.quick(devices) if args.quick else BenchConfig.full(devices)
    config.validate()  # usage errors before any measurement or write
    check_output_path(args.out, "--out", folder=True)
    start = time.perf_counter()

    def say(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)

    data = run_bench(config, progress=say)
    json_path, md_path = write_bench(data, args.out)
    for name, goal in data["goals"].items():
        state = "not measured" if goal["met"] is None else ("met" if goal["met"] else "NOT met")
        print(f"goal {name}: {state}")
    print(f"total {data['total_seconds']:.1f} s; wrote {json_path} and {md_path}")
    return 0
