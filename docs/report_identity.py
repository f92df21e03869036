"""Are two reports the same measurement?  (docs/scaling.md: the local engine against Ray.)

    python docs/report_identity.py A/results.json B/results.json

Prints the rows of each, the keys in one only or whose rows differ once the timing fields are removed
(``specproof.harness.report.compare.rows_differing_beyond_timing``), and whether ``zoo``, ``skipped``,
``incomplete`` and the summary are identical.  Exit 0 when everything is, 1 otherwise.
"""

from __future__ import annotations

import sys

from specproof.harness.report.compare import rows_differing_beyond_timing
from specproof.harness.report.schema import load_results


def main(argv: list[str]) -> int:
    base, current = (load_results(path) for path in argv[:2])
    differing = rows_differing_beyond_timing(base, current)
    print(f"rows: {len(base['rows'])} and {len(current['rows'])}; differing beyond timing: {len(differing)}")
    for key in differing[:20]:
        print(f"  {key}")
    same = [field for field in ("zoo", "skipped", "incomplete", "summary") if base.get(field) == current.get(field)]
    print(f"identical: {', '.join(same) or 'none'} of zoo, skipped, incomplete, summary")
    return 0 if not differing and len(same) == 4 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
