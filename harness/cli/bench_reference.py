"""``specproof bench-reference [--vocab V ...] [--repeats R] [--seed S] [--out FILE]``: the former
spelling of ``specproof bench --only reference``, kept as an alias.

Same options, same run (:func:`specproof.harness.cli.bench.run_reference`); only ``--out`` differs:
here it names the file (default ``reports/bench/reference.json``), there the folder that gets
``reference.json``.

Layer: cli (level 5); imports harness.cli.bench and harness.cli.options.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specproof.harness.cli import options
from specproof.harness.cli.bench import add_reference_options, run_reference

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench-reference", help="time the exact reference: fast path vs plain Fractions (= bench --only reference)",
        description="Time the exact reference's fast path against the plain per-element Fraction "
                    "path on float32 Dirichlet(0.3) laws, and check that they agree exactly. "
                    "The same as `specproof bench --only reference`.")
    add_reference_options(parser)
    options.add_seed(parser)
    options.add_out(parser, help="output file (default reports/bench/reference.json)",
                    default=Path("reports/bench/reference.json"), folder=False)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return run_reference(args, args.out)
