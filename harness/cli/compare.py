"""``specproof compare BASELINE CURRENT``: row-by-row marks between two report results (for CI).

    specproof compare BASELINE CURRENT [--fail-on worse|new-failure] [--json PATH] [--all]

BASELINE and CURRENT are ``results.json`` files of ``specproof report`` (or the folders holding them), or
``specproof check --json`` files of the same target (a check file compares with a report's row of that
target, contract, dtype and device; files with no row in common are a usage error); older schemas are
migrated, newer ones refused.  Rows of your own targets are marked only for a changed verdict (a new
FAIL is ``!``) or a drift interval that moved beyond both runs' intervals; checks run in different modes
(seed, rows, level, stated power) are stated, and a PASS/UNDERPOWERED change between them is ``x``.  Each row gets a mark: ``!`` new failure, ``*`` fixed,
``+`` worse, ``-`` better, ``x`` not comparable (the implementation, rule, reference or input hash
differs, or the row is in one file only), blank unchanged; thresholds are derived from the dtype (white-box
bounds, grid tolerance) and from the statistical run's detectable TV, never from noise (see
``specproof.harness.report.compare``).  Marked rows are printed (every row with ``--all``).

Exit 1 on a regression, 0 otherwise.  ``--fail-on worse`` (the default) counts ``!`` and ``+``;
``--fail-on new-failure`` counts ``!`` only.  A ``+`` needs a figure to grow beyond its derived
tolerance while the verdict stays the same, so the default never fails on noise.  Exit 2 on usage
errors: a missing or unreadable file, a file of a newer schema, a bad ``--json`` path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import COMPARE
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options
from specproof.harness.report.compare import FAIL_ON, MARKS, compare_documents, load_for_compare

__all__ = ["add_parser", "run", "SCHEMA"]

SCHEMA = COMPARE.schema


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compare", help="compare two report results row by row (! new failure, + worse, ...); for CI",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", type=Path, metavar="BASELINE",
                        help="baseline results.json (or its folder), or a specproof check --json file")
    parser.add_argument("current", type=Path, metavar="CURRENT",
                        help="current results.json (or its folder), or a check file of the same target")
    parser.add_argument("--fail-on", choices=sorted(FAIL_ON), default="worse",
                        help="what exits 1: 'worse' (! and +, default) or 'new-failure' (! only)")
    options.add_json(parser, help="write the comparison as JSON (atomically)")
    parser.add_argument("--all", action="store_true", help="print unchanged rows too")
    parser.set_defaults(handler=run)
    return parser


def _head(document: dict[str, Any]) -> str:
    prov = document["provenance"]
    git = prov.get("git", {})
    commit = str(git.get("commit") or "unknown")[:12] + ("+dirty" if git.get("dirty") else "")
    return f"{commit} {prov.get('date', '?')} {prov.get('device')} ({document['config'].get('mode')})"


def run(args: argparse.Namespace) -> int:
    options.check_options(args, inputs=tuple(p / "results.json" if p.is_dir() else p
                                             for p in (args.baseline, args.current)))
    baseline = load_for_compare(args.baseline, "BASELINE")
    current = load_for_compare(args.current, "CURRENT")
    comparison = compare_documents(baseline, current)
    print(f"baseline: {_head(baseline)}")
    print(f"current:  {_head(current)}")
    for note in comparison.notes:
        print(f"note: {note}")
    shown = [r for r in comparison.rows if args.all or r.mark != " "]
    if shown:
        print(f"{'':3}{'baseline':<22} {'current':<22} row")
        for row in shown:
            print(row.line())
    counts = comparison.counts()
    print(f"{len(comparison.rows)} rows: " + ", ".join(f"{counts[m]} {m.strip() or 'unchanged'} ({MARKS[m]})"
                                                         for m in ("!", "*", "+", "-", "x") if counts[m])
          + ("" if any(counts[m] for m in "!*+-x") else "nothing changed"))
    regressed = comparison.regressed(args.fail_on)
    print(f"{'REGRESSION' if regressed else 'no regression'} (--fail-on {args.fail_on}: "
          f"{' or '.join(FAIL_ON[args.fail_on])})")
    if args.json:
        write_envelope(args.json, COMPARE, {"baseline": {"path": str(args.baseline), "head": _head(baseline)},
                                            "current": {"path": str(args.current), "head": _head(current)},
                                            "fail_on": args.fail_on, "regressed": regressed, **comparison.as_json()},
                       provenance(extra={"command": "compare", "argv": sys.argv[1:]}))
    return 1 if regressed else 0
