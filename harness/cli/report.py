"""``specproof report``: run the proofs, the drift matrix and the statistical checks; write the report.

    specproof report [--out DIR] [--device cpu|cuda] [--dtypes D ...] [--impl NAME ...] [--quick]
                     [--jobs N] [--samples N] [--no-proofs] [--quiet]
                     [--engine local|ray] [--address ADDR] [--workers N]

Writes ``DIR/results.json`` (schema 2, provenance, keyed rows), ``DIR/report.md`` and a self-contained
``DIR/report.html`` atomically (all three appear together or not at all), prints a short summary, and
shows a progress bar on stderr.  Exit 0 when every implementation expected exact passed every check and
every proof got its expected verdict; 1 when some did not (the report is written either way, and the
summary lists those rows); 4 when a task was lost for good on Ray (its retries spent: listed as
incomplete, its records not measured); 2 on a usage error (nothing is written), checked before the run: a bad
--out, a missing optional dependency (matplotlib: install the [report] extra).  A zoo member that no
check catches is reported, not an error.  SIGTERM and Ctrl-C stop the worker processes and keep the
previous report (exit 130).  ``--engine ray`` runs the same task plan as Ray tasks (on a local Ray
of ``--workers`` CPUs started and stopped by the command, or on the cluster at ``--address``) and
writes the same rows; ``--jobs`` then does not apply.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specproof.harness.cli import check_engine, options
from specproof.harness.report.run import ReportConfig, check_dependencies, check_out_dir, run_report, write_report
from specproof.harness.report.publish import recover_previous
from specproof.harness.report.render import terminal_summary

__all__ = ["add_parser", "run", "prepare_out"]

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "report", help="run proofs, drift matrix and statistical checks; write results.json and a report",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_out(parser, help="output folder (default reports/<device>)", default=None, folder=True)
    options.add_device(parser, help="device under test (default cpu)", choices=options.DEVICES)
    options.add_dtype(parser, help="dtypes to measure (default all four)", many=True)
    parser.add_argument("--impl", nargs="+", metavar="NAME", help="only these implementations (default all)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller budget (2-3 minutes on a 2-core CPU; 155 s measured): no worst-case TV search, V up to 16,384, "
                             "1,000 rows per scenario, no compiled or third-party records")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPU count, at most 4)")
    parser.add_argument("--samples", type=int, default=None, help="statistical rows per scenario")
    parser.add_argument("--no-proofs", action="store_true", help="skip the proof catalogue (implementations only)")
    options.add_quiet(parser, help="no progress bar")
    check_engine.add_options(parser, what="tasks")
    parser.set_defaults(handler=run)
    return parser


def prepare_out(args: argparse.Namespace, out: Path, command: str) -> None:
    """Before any measuring: refuse a bad report folder or a missing rendering dependency (exit 2), and
    put back a previous report a killed publish left hidden."""
    options.check_options(args, out=out)
    restored = recover_previous(out)
    if restored is not None:
        print(f"specproof {command}: restored the previous report {out} from {restored} (an interrupted publish)",
              file=sys.stderr)
    check_out_dir(out)
    check_dependencies()  # rendering's optional modules, before the run, not after it


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"device": args.device}
    if args.dtypes:
        overrides["dtypes"] = tuple(args.dtypes)
    if args.impl:
        overrides["implementations"] = tuple(args.impl)
    if args.jobs is not None:
        overrides["jobs"] = args.jobs
    if args.no_proofs:
        overrides["proofs"] = False
    if args.samples is not None:
        overrides["samples"] = args.samples
    config = ReportConfig.for_mode("quick" if args.quick else "default", **overrides).validated()
    engine = check_engine.report_engine(args)  # --engine ray without Ray: exit 2 before any work
    out = args.out if args.out is not None else Path("reports") / args.device
    prepare_out(args, out, "report")
    with options.sigterm_as_interrupt():  # the workers are stopped and the previous report kept
        document = run_report(config, progress=not args.quiet, argv=sys.argv[1:], engine=engine)
        write_report(document, out)
    print(terminal_summary(document, str(out)))
    return 1 if document["summary"]["unexpected"] else 4 if document["summary"]["incomplete"] else 0
