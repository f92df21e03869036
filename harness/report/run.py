"""``specproof report``: proofs, drift matrix, statistical checks and your targets' checks in one versioned
document.

:func:`run_report` plans the tasks (:mod:`.plan`: one per implementation, dtype and input, per proof, per
pipeline, per target, dtype and device), runs them (:mod:`.execute`: local worker processes or Ray), and
assembles the ``results.json`` document (:mod:`.schema`) with the zoo's verdicts (:mod:`.zoo`) and the
summary (:mod:`.analysis`).  What each task measures is :mod:`.measure`'s (the catalogue's rows),
:mod:`.pipelines`' and :mod:`.targets`'; :func:`.publish.write_report` renders ``report.md`` and a
self-contained ``report.html`` (:mod:`.render`) and publishes all three atomically (the previous report or
the new one, never a mix).
"""

from __future__ import annotations

import time
from typing import Any

from specproof.harness.files.kinds import REPORT
from specproof.harness.files.provenance import provenance
from specproof.harness.report.analysis import summarise
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.execute import ProgressBar, ReportEngine, execute_tasks
from specproof.harness.report.pipelines import pipeline_tasks
from specproof.harness.report.plan import TaskSpec, plan, select_records
from specproof.harness.report.schema import validate
from specproof.harness.report.targets import TargetPlan, target_tasks
from specproof.harness.report.zoo import zoo_verdicts

__all__ = ["run_report"]


def run_report(config: ReportConfig, *, records: list[Any] | None = None, progress: bool = True,
               stream: Any = None, argv: list[str] | None = None, engine: ReportEngine = ReportEngine(),
               targets: TargetPlan | None = None) -> dict[str, Any]:
    """Measure everything ``config`` asks for and return the ``results.json`` document (schema 2).

    ``records``: implementation records to measure instead of the registry's (tests pass degraded
    ones; locally they run in this process).  ``engine``: where the tasks run (:class:`ReportEngine`).
    ``targets``: the user's own verifiers, one check per target, dtype and device (:mod:`.targets`),
    beside the catalogue when ``config.catalogue`` (else alone)."""
    config = config.validated()
    start = time.perf_counter()
    chosen: list[Any] = []
    tasks: list[TaskSpec] = []
    skipped: list[dict[str, Any]] = []
    if config.catalogue:
        chosen = select_records(config, records)
        tasks, skipped = plan(config, chosen)
        more_tasks, more_skipped = pipeline_tasks(config)
        tasks, skipped = tasks + more_tasks, skipped + more_skipped
    if targets is not None:
        targets = targets.validated()
        tasks = target_tasks(targets) + tasks
    bar = ProgressBar(sum(t.cost for t in tasks), len(tasks), progress, stream)
    try:
        outcomes = execute_tasks(config, tasks, chosen, bar, engine)
    finally:
        bar.close()
    rows: dict[str, Any] = {}
    timing: dict[str, float] = {}
    incomplete: list[dict[str, Any]] = []
    for outcome in outcomes:  # completion order: rows carry their own keys
        for row in outcome.rows:
            if row["key"] in rows:
                raise AssertionError(f"two rows with key {row['key']!r}")
            rows[row["key"]] = row
            timing[row["kind"]] = timing.get(row["kind"], 0.0) + row["seconds"]
        skipped.extend(outcome.skipped)
        incomplete.extend(outcome.incomplete)
    timing = {k: round(v, 2) for k, v in sorted(timing.items())}
    timing["wall"] = round(time.perf_counter() - start, 2)
    dtypes = list(config.dtypes)
    document = REPORT.envelope({
        "config": config.as_json() | ({"targets": targets.as_json()} if targets is not None else {}),
        "rows": dict(sorted(rows.items())),
        "zoo": zoo_verdicts(chosen, rows, skipped),
        "skipped": sorted(skipped, key=lambda s: (s["implementation"] or "", s["dtype"] or "", s["reason"])),
        "incomplete": sorted(incomplete, key=lambda s: (s["implementation"], s["dtype"] or "", s["input"])),
        "timing": timing,
    }, provenance(device=config.device, dtypes=dtypes, seeds=[config.seed],
                  extra={"command": "report", "argv": list(argv or []), "mode": config.mode,
                         **engine.as_json()})).to_json()
    document["summary"] = summarise(document)
    validate(document, "report")
    return document
