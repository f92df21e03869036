"""The pipeline section of ``specproof report``: each whole pipeline of :data:`specproof.impls.pipelines.PIPELINES`
through the ``generate`` contract (:func:`~specproof.harness.check.driver.check`), in float32.

One ``pipeline`` row per pipeline, key ``pipeline/NAME/float32/SUITE``:

* lossless pipelines (canonical and its variants): the default suite, rows per scenario from the
  engine's quota for :data:`~.plan.REPORT_MAX_DETECTABLE_TV` (0.05; the quota aims at ``0.9 * 0.05``:
  about 12,000 rows per scenario, detectable TV 0.045); a PASS states that power;
* mutants: the default suite at the power of a default ``specproof check`` (0.02), ``fail_fast``: the
  run stops at its first rejecting look, so ``rows`` is the rows it took to flag (a mutant seen only
  by the RNG edge injection runs its full statistical quota first);
* transformers' real assisted generation (when transformers is importable): its off-support scenario
  (T = 0.7, top-k 3, a draft proposing processed-away tokens) at :data:`TRANSFORMERS_ROWS` rows with
  RNG edge injection, where ``u = 0`` accepting a removed draft is a certain finding; at these rows the
  statistical part states no power (about 20 rows/s, batch size 1).

``--quick`` runs :data:`QUICK_PIPELINES` only (the canonical pipeline and two mutants).  Config
overrides (``pipeline_rows``, ``pipeline_transformers_rows``) fix the rows per scenario (tests).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import time
from typing import Any

from specproof.errors import SpecproofInputError

from specproof.harness.report.analysis import fmt, row_colour, row_status
from specproof.harness.report.measure import REPORT_MAX_DETECTABLE_TV
from specproof.harness.report.plan import TaskOutcome, TaskSpec
from specproof.harness.report.rows import Figure, Hashes, Row, rows_of
from specproof.harness.report.schema import bytes_hash, definition_hash

__all__ = ["pipeline_tasks", "pipeline_task", "run_pipeline_task", "pipeline_row", "pipeline_scenarios", "suite_input", "pipeline_table", "pipeline_summary",
           "pipeline_summary_line", "QUICK_PIPELINES", "TRANSFORMERS_ROWS", "PIPELINE_DTYPE", "PIPELINE_TEXT"]

PIPELINE_DTYPE = "float32"
QUICK_PIPELINES = ("canonical", "default-target", "mixed-residual")
TRANSFORMERS_ROWS = 64  # per scenario: ~3 s of assisted generation; injection then ~100 s on one core
TRANSFORMERS_SCENARIO = "offsupport"
SUITE_INPUT = {"table": "generate-suite", "transformers": "transformers-offsupport"}
_COST = {"lossless": 5.0, "mutant": 3.0, "transformers": 50.0}  # about seconds / 2 (progress, ordering)


def _chosen(config: Any) -> list[Any]:
    from specproof.impls.pipelines import PIPELINES

    names = config.pipelines
    if names is None:
        names = QUICK_PIPELINES if config.mode == "quick" else tuple(r.name for r in PIPELINES)
    known = {r.name: r for r in PIPELINES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SpecproofInputError("pipelines", f"unknown pipeline(s) {', '.join(unknown)}",
                                  f"pass names from {', '.join(known)}")
    return [known[n] for n in names]


def pipeline_tasks(config: Any) -> tuple[list[TaskSpec], list[dict[str, Any]]]:
    """One task per chosen pipeline (module docstring); skips for a missing extra, with the reason."""
    tasks, skipped = [], []
    for record in _chosen(config):
        if record.needs_extra and importlib.util.find_spec(record.needs_extra) is None:
            skipped.append({"kind": "pipeline", "implementation": record.name, "dtype": PIPELINE_DTYPE,
                            "reason": f"needs {record.needs_extra}, which is not installed here: pip install "
                                      f"'specproof[{record.needs_extra}]' to measure it"})
            continue
        tasks.append(pipeline_task(record, config))
    return tasks, skipped


def pipeline_task(record: Any, config: Any, sampling: Any = None) -> TaskSpec:
    """The task of one pipeline row: its rows per scenario (transformers' own budget for its pipeline),
    the seed, and a campaign's ``sampling`` setting when there is one (input ``SUITE <setting>``)."""
    rows = config.pipeline_transformers_rows if record.models == "transformers" else config.pipeline_rows
    role = "transformers" if record.models == "transformers" else "lossless" if record.lossless else "mutant"
    params = (("rows", rows), ("seed", config.seed)) + ((("sampling", sampling),) if sampling is not None else ())
    return TaskSpec("pipeline", record.name, PIPELINE_DTYPE, suite_input(record, sampling), params, cost=_COST[role])


def pipeline_scenarios(record: Any, sampling: Any = None) -> list[Any]:
    """The scenarios a pipeline row runs: its suite, or the suite's distinct pairs under ``sampling``."""
    from specproof.harness.check.contracts.generate.scenarios import pipeline_suite, with_sampling

    if record.models == "transformers":
        from specproof.harness.check.contracts.generate.transformers.suite import transformers_suite

        suite = [s for s in transformers_suite() if s.name.split(" ")[0].endswith(TRANSFORMERS_SCENARIO)]
    else:
        suite = pipeline_suite()
    return with_sampling(suite, sampling, None)


def suite_input(record: Any, sampling: Any = None) -> str:
    """A pipeline row's input: the suite's name, with the campaign's sampling setting when there is one."""
    return SUITE_INPUT[record.models] + ("" if sampling is None else f" {sampling.describe()}")


@functools.lru_cache(maxsize=None)
def _reference_hash() -> str:
    from specproof.harness.check.driver import run_check
    from specproof.harness.check.contracts.generate.families import pipeline_families, pipeline_law

    return definition_hash("pipeline", run_check, pipeline_law, pipeline_families)


def _input_hash(scenarios: list[Any], seed: int, rows: int | None) -> str:
    return bytes_hash([f"seed={seed};rows={rows}"] + [f"{s.name};{s.sampling!r};{s.new_tokens};{s.pair.name}"
                                                       for s in scenarios])


def pipeline_row(record: Any, rows: int | None, seed: int, device: str, sampling: Any = None) -> dict[str, Any]:
    """Check one pipeline (module docstring) and return its row; ``sampling`` (a campaign's setting):
    the suite's distinct model pairs under that one setting instead (input ``SUITE <setting>``)."""
    from specproof.harness.check.calls import ContractViolation, VerifierError
    from specproof.harness.check.driver import check
    from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV

    start = time.perf_counter()
    fn = record.load()
    scenarios = pipeline_scenarios(record, sampling)
    where = suite_input(record, sampling)
    mutant = not record.lossless
    power = DEFAULT_MAX_DETECTABLE_TV if mutant else REPORT_MAX_DETECTABLE_TV
    detail: dict[str, Any] = {"role": "transformers" if record.models == "transformers" else
                              "mutant" if mutant else "lossless", "description": record.description,
                              "bug": record.bug, "mirrors": record.mirrors, "models": record.models, "seed": seed,
                              "rows_per_scenario": rows, "fail_fast": mutant, "max_detectable_tv": power,
                              "inject": True, "scenario_names": [s.name for s in scenarios]}
    try:
        result = check(fn, "generate", scenarios=scenarios, dtype=PIPELINE_DTYPE, device=device, seed=seed, samples=rows,
                                max_detectable_tv=power, fail_fast=mutant, progress=False)
    except (VerifierError, ContractViolation) as err:
        message = f"{type(err).__name__}: {err}"
        return _row(record, where, scenarios, seed, rows, passed=False, verdict="error", figures={},
                    detail={**detail, "error": message[:500], "rows": 0}, seconds=time.perf_counter() - start)
    findings = result.findings
    verdict = getattr(result.verdict, "value", result.verdict)
    flagged = verdict == "fail"
    excess = max((abs(f.observed - f.expected) - f.tolerance for f in findings if math.isfinite(f.statistic)),
                 default=0.0)
    certifiable = [s.detectable_tv for s in result.scenarios if s.tolerance < 1]
    resolution = max(certifiable) if certifiable else 1.0
    first = findings[0] if findings else None
    detail.update({
        "rows": result.rows, "rows_to_flag": result.rows if flagged and mutant else None,
        "detectable_tv": result.detectable_tv, "detectable_tv_certifiable": resolution,
        "vacuous_scenarios": [s.name for s in result.scenarios if s.tolerance >= 1],
        "first_finding": None if first is None else f"{first.scenario}: {first.family}",
        "findings": [f.line() for f in findings[:5]], "findings_total": len(findings),
        "certain_findings": sum(1 for f in findings if math.isinf(f.statistic)),
        "scenarios": [{"name": s.name, "rows": s.rows, "tolerance": s.tolerance, "detectable_tv": s.detectable_tv,
                       "findings": len(s.findings), "stopped_early": s.stopped_early} for s in result.scenarios],
        "alpha": result.alpha, "pipeline_seconds": round(result.verifier_seconds, 3),
        "harness_seconds": round(result.harness_seconds, 3)})
    figures = {"excess": Figure.of(max(0.0, excess), resolution, "detectable TV of the pipeline run", PIPELINE_DTYPE),
               "detectable_tv": Figure.of(result.detectable_tv, None, "informational", PIPELINE_DTYPE)}
    return _row(record, where, scenarios, seed, rows, passed=not flagged, verdict=verdict, figures=figures, detail=detail,
                seconds=time.perf_counter() - start)


def _row(record: Any, where: str, scenarios: list[Any], seed: int, rows: int | None, *, passed: bool, verdict: str,
         figures: dict[str, Figure], detail: dict[str, Any], seconds: float) -> dict[str, Any]:
    fn = record.load()
    return Row("pipeline", record.name, None, PIPELINE_DTYPE, where, record.lossless, passed,
               passed if record.lossless else not passed, verdict,
               Hashes(definition_hash(record.name, fn), None, _reference_hash(), _input_hash(scenarios, seed, rows)),
               figures, detail, contract="generate", seconds=round(seconds, 3)).to_json()


def run_pipeline_task(spec: TaskSpec, context: dict[str, Any]) -> TaskOutcome:
    """Run one pipeline task; a scenario the dtype or the models refuse is a skip with its reason."""
    from specproof.impls.pipelines import get_pipeline

    start = time.perf_counter()
    outcome = TaskOutcome()
    try:
        outcome.rows.append(pipeline_row(get_pipeline(spec.name), spec.param("rows"), spec.param("seed", 0),
                                         context.get("device", "cpu"), spec.param("sampling")))
    except SpecproofInputError as err:
        outcome.skipped.append({"kind": spec.kind, "implementation": spec.name, "dtype": spec.dtype,
                                "reason": str(err)})
    outcome.seconds = time.perf_counter() - start
    return outcome


# -- tables (pure functions of the document) ---------------------------------------------------------

PIPELINE_TEXT = (
    "Each whole pipeline (drafting, sampling parameters and verification together) through the generate "
    "contract in float32: does it sample from the processed target? Lossless pipelines run the default "
    f"suite at the engine's quota for a detectable TV of {REPORT_MAX_DETECTABLE_TV:g} (a PASS states that "
    "power); mutants run at the power of a default specproof check (0.02) with fail-fast, so their rows "
    "are the rows it took to flag them (RNG edge injection runs after the statistical quota); "
    "transformers' real assisted generation runs its off-support scenario with RNG edge injection at a "
    "few rows (about 20 rows per second at batch size 1).")


def pipeline_table(document: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """One line per pipeline row: expected, verdict, rows, rows to flag, seconds, detectable TV, first
    finding, cited report; and each line's colour (:func:`~.analysis.row_colour`)."""
    header = ["pipeline", "expected", "verdict", "rows", "rows to flag (fail-fast)", "seconds", "detectable TV",
              "first finding", "bug / cited report"]
    order = {"lossless": 0, "mutant": 1, "transformers": 2}
    rows = sorted((r for r in rows_of(document) if r.kind == "pipeline"),
                  key=lambda r: (order.get(r.detail.get("role"), 3), r.implementation))
    lines, statuses = [], []
    for row in rows:
        detail = row.detail
        status = row_status(row)
        verdict = row.verdict if status != "missed" else f"not caught ({row.verdict})"
        cited = "; ".join(x for x in (detail.get("bug"), detail.get("mirrors")) if x) or "-"
        to_flag = detail.get("rows_to_flag")
        lines.append([row.implementation, "lossless" if row.expected_exact else "not lossless", verdict,
                      f"{detail.get('rows', 0):,}", "-" if to_flag is None else f"{to_flag:,}",
                      fmt(row.seconds), fmt(detail.get("detectable_tv")), detail.get("first_finding") or "-", cited])
        statuses.append(row_colour(row))
    return header, lines, statuses


def pipeline_summary(document: dict[str, Any]) -> dict[str, Any]:
    """Counts of the pipeline rows: mutants caught, lossless pipelines passing (PASS with its power) or
    underpowered, and the verdict of transformers' assisted generation (None when not measured)."""
    rows = [r for r in rows_of(document) if r.kind == "pipeline"]
    mutants = [r for r in rows if r.detail.get("role") == "mutant"]
    good = [r for r in rows if r.expected_exact]
    third = [r for r in rows if r.detail.get("role") == "transformers"]
    return {"rows": len(rows), "mutants": len(mutants), "mutants_caught": sum(1 for r in mutants if not r.passed),
            "mutants_not_caught": sorted(r.implementation for r in mutants if r.passed),
            "lossless": len(good), "lossless_passing": sum(1 for r in good if row_status(r) == "pass"),
            "lossless_weak": sum(1 for r in good if row_status(r) == "weak"),
            "transformers": third[0].verdict if third else None}


def pipeline_summary_line(document: dict[str, Any]) -> str | None:
    """``pipelines: caught x/y mutants, lossless passing x/y`` (None without pipeline rows)."""
    counts = pipeline_summary(document)
    if not counts["rows"]:
        return None
    quick = " (--quick: the canonical pipeline and two mutants only)" if document["config"].get("mode") == "quick" \
        else ""
    weak = f", {counts['lossless_weak']} underpowered" if counts["lossless_weak"] else ""
    missed = f" (not caught: {', '.join(counts['mutants_not_caught'])})" if counts["mutants_not_caught"] else ""
    third = f"; transformers' assisted generation: {counts['transformers']}" if counts["transformers"] else ""
    return (f"pipelines (generate contract, {PIPELINE_DTYPE}): caught {counts['mutants_caught']}/{counts['mutants']} "
            f"mutants{missed}, lossless passing {counts['lossless_passing']}/{counts['lossless']}{weak}{third}{quick}")
