"""``specproof campaign``: run a campaign file as one report, resuming from the cells already measured.

    specproof campaign FILE.toml [--out DIR] [--engine local|ray] [--address ADDR] [--workers N] [--quiet]

FILE.toml names implementations, dtypes, devices, pipelines with sampling settings, proofs, budgets and
the output folder (an example: docs/campaign.example.toml; every key: ``specproof.harness.report.campaign``):

    [campaign]  name = "nightly"   out = "nightly-report"   seed = 0   engine = "local"
    [budget]    samples = 16000   pipeline_rows = 4000   whitebox_vocabs = [256, 4096]   grid_scenarios = 5
    [[matrix]]  implementations = ["canonical-ratio-race"]   dtypes = ["float32", "bfloat16"]   devices = ["cpu", "cuda"]
    [[matrix]]  pipelines = ["canonical"]   sampling = [{temperature = 0.7, top_k = 3}]
    [proofs]    rules = "all"

Each cell (one implementation
in one dtype on one device, one pipeline under one sampling setting, one proof) is cached in
``DIR.cells/`` when it completes, keyed by what it measures and its source hash: a rerun skips the
cells already measured, and measures again a cell whose implementation changed.  The report
(``DIR/results.json``, ``report.md``, ``report.html``, with a campaign section) is published atomically
at the end.  Exit 0 when every implementation expected exact passed and every proof is as expected; 1
when some row is not as expected; 4 when a cell could not run (its device is not available here, or a
task was lost on Ray); 2 on a usage error (a bad file, key or value: nothing is run).  Ctrl-C and
SIGTERM stop the run and keep the previous report; the cells completed so far stay cached (exit 130).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specproof.harness.cli import check_engine, options

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "campaign", help="run a campaign file (implementations x dtypes x devices x sampling) as one resumable report",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE.toml", type=Path, help="the campaign file")
    options.add_out(parser, help="report folder (default: the file's campaign.out)", default=None, folder=True)
    options.add_quiet(parser, help="no progress bar")
    check_engine.add_options(parser, what="tasks")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from specproof.harness.report.campaign import load_campaign, run_campaign
    from specproof.harness.cli.report import prepare_out
    from specproof.harness.report.publish import write_report
    from specproof.harness.report.render import terminal_summary

    engine = check_engine.report_engine(args)
    campaign = load_campaign(args.file, engine if args.engine == "ray" else None)
    if campaign.engine.name == "ray":  # named by the file: Ray must be there before any work
        from specproof.harness.check.scale.ray_start import require_ray

        require_ray()
    if args.out is not None:
        campaign = replace(campaign, out=args.out)
    prepare_out(args, campaign.out, "campaign")
    try:
        with options.sigterm_as_interrupt():
            document = run_campaign(campaign, progress=not args.quiet, argv=sys.argv[1:])
            write_report(document, campaign.out)
    except KeyboardInterrupt:
        print(f"specproof campaign: interrupted; the report was not written (the previous one is kept); the cells "
              f"completed so far are in {campaign.cell_dir} and a rerun resumes from them", file=sys.stderr)
        return 130
    counts = document["campaign"]["counts"]
    print(f"campaign {campaign.name}: {len(campaign.cells)} cells: {counts['ran']} ran, {counts['cached']} cached, "
          f"{counts['unavailable']} unavailable, {counts['incomplete']} incomplete")
    print(terminal_summary(document, str(campaign.out)))
    summary = document["summary"]
    return 1 if summary["unexpected"] else 4 if summary["incomplete"] else 0
