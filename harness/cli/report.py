"""``specproof report``: a fidelity report of your verifiers, or of the built-in catalogue; write the report.

    specproof report [TARGET ...] [--contract C] [--adapter A] [CONTRACT OPTIONS] [--dtypes D,D ...]
                     [--devices DEV,DEV ...] [--catalogue]
                     [--out DIR] [--device cpu|cuda] [--impl NAME ...] [--quick] [--jobs N] [--samples N]
                     [--seed S] [--time-budget S] [--max-detectable-tv T] [--no-proofs] [--quiet]
                     [--engine local|ray] [--address ADDR] [--workers N]

With TARGETs (package.module:function or path.py:function, as for specproof check): one check of each
target per dtype and device, through the same driver and with the same defaults as ``specproof check
TARGET --dtype D --device DEV`` (the check's inputs p and q are given to the target in that dtype on that
device), with the check's contract options (--adapter; batched --rule, --vocab; tree --siblings; generate
--models, --temperature, --top-k, --top-p, --min-p, --new-tokens; a flag of another contract is a usage
error, as for check; the rows' keys name the adapter and the options set).  The report gives per dtype
and device the verdict, the measured drift with its interval when the check has one, the findings and
the time.  The built-in catalogue (proofs, implementations, zoo,
pipelines) is then left out unless --catalogue is given.  Default folder: specproof-report.  Without a
TARGET, the catalogue as before.

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

from specproof.errors import SpecproofInputError
from specproof.harness.cli import check_engine, options
from specproof.harness.report.config import ReportConfig, check_dependencies
from specproof.harness.report.publish import check_out_dir, write_report
from specproof.harness.report.run import run_report
from specproof.harness.report.publish import recover_previous
from specproof.harness.report.render import terminal_summary

__all__ = ["add_parser", "run", "prepare_out"]

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "report", help="run proofs, drift matrix and statistical checks; write results.json and a report",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help="your verifiers: package.module:function or path/to/file.py:function (imported and run "
                             "with your rights, as by specproof check)")
    parser.add_argument("--devices", metavar="DEV,DEV", help="devices for the TARGETs' checks (default cpu)")
    parser.add_argument("--catalogue", action="store_true",
                        help="with TARGETs: add the built-in catalogue (proofs, implementations, zoo) as its own "
                             "section")
    options.add_out(parser, help="output folder (default reports/<device>; specproof-report with TARGETs)",
                    default=None, folder=True)
    options.add_device(parser, help="device of the catalogue (default cpu)", choices=options.DEVICES)
    options.add_dtype(parser, help="dtypes to measure, space- or comma-separated (default: all four for the "
                                   "catalogue, float32 for TARGETs)", many=True)
    options.add_seed(parser)
    parser.add_argument("--time-budget", type=float, metavar="SECONDS",
                        help="seconds per check of a TARGET (default: the check's default depth)")
    parser.add_argument("--max-detectable-tv", type=float, metavar="TV",
                        help="the power a TARGET's PASS must have (default: the check's, 0.02)")
    parser.add_argument("--impl", nargs="+", metavar="NAME", help="only these implementations (default all)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller budget (2-3 minutes on a 2-core CPU; 155 s measured): no worst-case TV search, V up to 16,384, "
                             "1,000 rows per scenario, no compiled or third-party records")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPU count, at most 4)")
    parser.add_argument("--samples", type=int, default=None,
                        help="statistical rows per scenario (TARGETs: as specproof check --samples)")
    parser.add_argument("--no-proofs", action="store_true", help="skip the proof catalogue (implementations only)")
    options.add_quiet(parser, help="no progress bar")
    options.add_contract_options(parser, what="each TARGET")  # the check's own, as specproof check takes them
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


def _listed(values: list[str] | str | None) -> tuple[str, ...]:
    """``--dtypes float32,float16 bfloat16``: words, each possibly a comma list."""
    if values is None:
        return ()
    words = [values] if isinstance(values, str) else values
    return tuple(part.strip() for word in words for part in word.split(",") if part.strip())


def _target_plan(args: argparse.Namespace, quick_samples: int) -> Any:
    from specproof.harness.report.targets import TargetPlan

    samples = args.samples if args.samples is not None else quick_samples if args.quick else None
    if samples is not None and args.time_budget is not None:
        raise SpecproofInputError("--time-budget", "given with --samples or --quick", "pass one of them")
    chosen = tuple((name, value) for name, value in options.contract_options(args).items() if value is not None)
    try:
        return TargetPlan(tuple(args.targets), args.contract, _listed(args.dtypes) or ("float32",),
                          _listed(args.devices) or ("cpu",), args.seed, samples, args.time_budget,
                          args.max_detectable_tv, args.adapter, chosen).validated()
    except SpecproofInputError as err:  # CheckOptions names the API's option: name the flag
        raise options.flagged(err, args) from None


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"device": args.device, "seed": args.seed}
    if args.dtypes:
        overrides["dtypes"] = _listed(args.dtypes)
    if args.impl:
        overrides["implementations"] = tuple(args.impl)
    if args.jobs is not None:
        overrides["jobs"] = args.jobs
    if args.no_proofs:
        overrides["proofs"] = False
    if args.samples is not None:
        overrides["samples"] = args.samples
    targets = None
    if args.targets:
        overrides["catalogue"] = bool(args.catalogue)
        overrides.setdefault("dtypes", ("float32",))
    else:
        given = ([flag for flag, value in (("--catalogue", args.catalogue), ("--devices", args.devices),
                                           ("--time-budget", args.time_budget),
                                           ("--max-detectable-tv", args.max_detectable_tv))
                  if value not in (None, False)] + options.given_contract_flags(args))
        if given:
            raise SpecproofInputError(given[0], "applies to TARGETs, and none is given",
                                      "name your verifiers (specproof report mypkg.spec:verify ...) or drop the flag")
    config = ReportConfig.for_mode("quick" if args.quick else "default", **overrides).validated()
    if args.targets:
        targets = _target_plan(args, config.samples)
        from specproof.harness.check.targets import load_target

        for spec in targets.targets:  # a wrong TARGET is refused before anything is measured
            load_target(spec, targets.contract, targets.adapter)
    engine = check_engine.report_engine(args)  # --engine ray without Ray: exit 2 before any work
    out = args.out if args.out is not None else Path("specproof-report") if args.targets else \
        Path("reports") / args.device
    prepare_out(args, out, "report")
    with options.sigterm_as_interrupt():  # the workers are stopped and the previous report kept
        document = run_report(config, progress=not args.quiet, argv=sys.argv[1:], engine=engine, targets=targets)
        write_report(document, out)
    print(terminal_summary(document, str(out)))
    return 1 if document["summary"]["unexpected"] else 4 if document["summary"]["incomplete"] else 0
