"""Your own verifiers in a report: one ``check`` row per target, dtype and device, and ``check`` files as reports.

``specproof report TARGET [TARGET ...] [--contract C] [--dtypes D,...] [--devices DEV,...]`` and a campaign's
``targets = [...]`` plan one task per (target, dtype, device) (:func:`target_tasks`).  Each task runs the one
driver, :func:`specproof.harness.check.driver.check`, exactly as ``specproof check TARGET --dtype D
--device DEV`` does (same options, same default depth, same seed), and turns its
:class:`~specproof.harness.check.result.CheckResult` into a row of kind ``check`` (:func:`check_row`).

What "a target in another dtype" means: the check's inputs, ``draft_probs`` and ``target_probs`` (``p`` and
``q``; for a tree or pipeline contract the contract's own inputs), are handed to the target in the
requested dtype on the requested device (``CheckOptions.dtype``/``device``: the contract's module builds
them so); whatever the target does inside (upcasting, float32 uniforms) is its own.  The exact reference,
and so the verdict, is that of the inputs as rounded to that dtype, with that dtype's derived tolerance.

A ``check`` row (``KEY`` = ``check/TARGET/DTYPE/CONTRACT@DEVICE``): ``verdict`` the check's (``pass``,
``fail``, ``underpowered``, ``inconclusive``; ``error`` when the target raised, hung or broke its output
contract); ``expected_exact`` true (your verifier is meant to be lossless); ``passed`` = not flagged (FAIL
and errors are flagged; UNDERPOWERED is not a finding: its row is a caveat, amber, as the catalogue's
underpowered rows are); ``figures``: the detectable TV (informational) and, when the check measured one,
``drift`` with its interval (:func:`drift_figure`); ``detail``: the diagnosis, the first findings, rows,
times and the check's *mode* (:data:`MODE_FIELDS`: level, rows per scenario, seed, stated power, alpha,
time budget), which :mod:`.compare` states when two files differ in it.  ``hashes``:
``implementation`` the sha256 of the target's source file (what a commit changes), ``reference`` the
check's own code, ``input`` the contract and suite.

:func:`check_file_document` reads a ``specproof check --json`` file as a one-row report document with the
same key, so ``specproof compare`` takes two check files (or a check file and a report) of the same
target.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from specproof.errors import SpecproofInputError

from specproof.harness.files.kinds import CHECK, REPORT
from specproof.harness.files.number_text import fmt
from specproof.harness.report.plan import TaskOutcome, TaskSpec
from specproof.harness.report.rows import Figure, Hashes, Row, rows_of
from specproof.harness.report.schema import bytes_hash, definition_hash, expected_outcome

__all__ = ["TargetPlan", "target_tasks", "run_target_task", "check_row", "drift_figure", "check_file_document",
           "target_table", "target_banner_lines", "has_targets", "source_hash", "MODE_FIELDS", "target_input", "TARGET_KIND", "load_checked_target"]

TARGET_KIND = "check"
MODE_FIELDS = ("level", "samples_per_scenario", "seed", "max_detectable_tv", "alpha", "time_budget")
"""The fields of a check row's detail that make its power and its rows: two rows differing in one are
measured in different modes (:mod:`.compare` states it instead of flagging a verdict change)."""


def target_input(contract: str, device: str) -> str:
    """A check row's ``input``: ``CONTRACT@DEVICE`` (so keys differ by contract and device)."""
    return f"{contract}@{device}"


@dataclass(frozen=True)
class TargetPlan:
    """What a report checks of the user's own code: ``targets`` (``pkg.module:fn`` or ``path.py:fn``)
    under ``contract`` in each of ``dtypes`` on each of ``devices``, with the check's options
    (``samples`` None: the check's default depth; ``time_budget`` seconds per check)."""

    targets: tuple[str, ...]
    contract: str = "batched"
    dtypes: tuple[str, ...] = ("float32",)
    devices: tuple[str, ...] = ("cpu",)
    seed: int = 0
    samples: int | None = None
    time_budget: float | None = None
    max_detectable_tv: float | None = None
    vocab: tuple[int, ...] | None = None  # batched: sizes of the tiled scenarios (specproof check --vocab)

    def check_options(self) -> dict[str, Any]:
        """The options every check of the plan gets besides dtype and device (CheckOptions' names)."""
        out: dict[str, Any] = {"seed": self.seed}
        if self.samples is not None:
            out["samples"] = self.samples
        if self.time_budget is not None:
            out["time_budget"] = self.time_budget
        if self.max_detectable_tv is not None:
            out["max_detectable_tv"] = self.max_detectable_tv
        if self.vocab:
            out["vocab"] = tuple(self.vocab)
        return out

    def validated(self) -> "TargetPlan":
        """Options checked once, before any target runs (a usage error names the flag)."""
        from specproof.harness.check.options import CheckOptions
        from specproof.harness.exact.dtypes import dtype_name

        if not self.targets:
            raise SpecproofInputError("TARGET", "none given", "name a verifier, e.g. mypkg.spec:verify")
        dtypes = tuple(dict.fromkeys(dtype_name(d) for d in self.dtypes))
        for device in self.devices:
            if device not in ("cpu", "cuda"):
                raise SpecproofInputError("--devices", f"unknown device {device!r}", "use cpu and/or cuda")
        try:
            CheckOptions.build(self.contract, **self.check_options())
        except SpecproofInputError as err:
            flag = {"samples": "--samples", "time_budget": "--time-budget", "seed": "--seed",
                    "max_detectable_tv": "--max-detectable-tv", "contract": "--contract",
                    "vocab": "--vocab"}.get(err.argument,
                                                                                               err.argument)
            raise SpecproofInputError(flag, err.problem, err.fix) from None
        return TargetPlan(tuple(dict.fromkeys(self.targets)), self.contract, dtypes,
                          tuple(dict.fromkeys(self.devices)), self.seed, self.samples, self.time_budget,
                          self.max_detectable_tv, CheckOptions.build(self.contract, **self.check_options()).vocab)

    def as_json(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "contract": self.contract, "dtypes": list(self.dtypes),
                "devices": list(self.devices), "seed": self.seed, "samples": self.samples,
                "time_budget": self.time_budget, "max_detectable_tv": self.max_detectable_tv,
                "vocab": None if not self.vocab else list(self.vocab)}


def load_checked_target(spec: str, contract: str) -> Any:
    """The target named ``spec``, imported and checked against ``contract``'s signature (usage errors name
    TARGET): the report refuses a wrong target before it measures anything."""
    from specproof.harness.check.contracts import get_contract
    from specproof.loading import load_object

    return get_contract(contract, "--contract").check_signature(load_object(spec, "TARGET"), "TARGET")


def target_tasks(plan: TargetPlan) -> list[TaskSpec]:
    """One task per (target, dtype, device); the params carry the check's options (picklable)."""
    params = tuple(sorted({"contract": plan.contract, **plan.check_options()}.items()))
    return [TaskSpec(TARGET_KIND, target, dtype, target_input(plan.contract, device), params, cost=10.0)
            for target in plan.targets for dtype in plan.dtypes for device in plan.devices]


@functools.lru_cache(maxsize=None)
def _check_code_hash() -> str:
    from specproof.harness.check.driver import run_check

    return definition_hash("check", run_check)


def source_hash(fn: Any) -> str | None:
    """sha256 of the file defining ``fn`` (what a commit of the user's code changes; None: no file)."""
    try:
        path = inspect.getsourcefile(inspect.unwrap(fn))
    except TypeError:
        path = None
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def drift_figure(result: Any) -> tuple[Figure, dict[str, Any]] | None:
    """The check's measured drift, if it carries one (``CheckResult.as_json()["drift"]``: ``estimate`` and
    its anytime-valid interval ``low``/``high`` at ``confidence``, in TV units).  The figure is
    informational (no threshold): :mod:`.compare` reads its interval, and marks a move only when the two
    intervals are disjoint."""
    drift = result.as_json().get("drift") if hasattr(result, "as_json") else None
    if drift is None:
        return None
    figure = Figure.of(float(drift["estimate"]), None, "measured drift on tested events (informational; compare "
                       "reads its interval)", None)
    return figure, {"estimate": float(drift["estimate"]), "lower": float(drift["low"]),
                    "upper": float(drift["high"]), "confidence": drift["confidence"], "scenario": drift["scenario"]}


def check_row(target: str, contract: str, device: str, result: Any, fn: Any = None,
              seconds: float = 0.0) -> dict[str, Any]:
    """The row of one finished check (module docstring); ``fn`` the target (for its source hash)."""
    verdict = getattr(result.verdict, "value", str(result.verdict))
    flagged = verdict == "fail"
    findings = result.findings
    figures = {"detectable_tv": Figure.of(result.detectable_tv, None, "informational (power 0.99)", result.dtype)}
    detail: dict[str, Any] = {
        "contract": contract, "device": device, "diagnosis": result.diagnosis_line(),
        "findings": [f.line() for f in findings[:5]], "findings_total": len(findings),
        "certain_findings": sum(1 for f in findings if f.certain), "rows": result.rows,
        "detectable_tv": result.detectable_tv, "stop_reason": result.stop_reason,
        "rows_at_first_flag": result.rows_at_first_flag, "injection_summary": result.injection_summary,
        "verifier_seconds": round(result.verifier_seconds, 3), "harness_seconds": round(result.harness_seconds, 3),
        "scenarios": len(result.scenarios), "vocab_sizes": result.vocab_sizes,
        "coverage": None if result.coverage is None else result.coverage.as_json()}
    detail.update({"level": result.level, "samples_per_scenario": result.samples, "seed": result.seed,
                   "max_detectable_tv": result.max_detectable_tv, "alpha": result.alpha,
                   "time_budget": result.time_budget})
    drift = drift_figure(result)
    if drift is not None:
        figures["drift"], detail["drift"] = drift
    return _row(target, result.dtype, contract, device, verdict, flagged, figures, detail,
                None if fn is None else source_hash(fn), seconds)


def _row(target: str, dtype: str, contract: str, device: str, verdict: str, flagged: bool,
         figures: dict[str, Figure], detail: dict[str, Any], source: str | None, seconds: float) -> dict[str, Any]:
    as_row = {"kind": TARGET_KIND, "passed": not flagged, "expected_exact": True, "detail": detail}
    return Row(TARGET_KIND, target, None, dtype, target_input(contract, device), True, not flagged,
               expected_outcome(as_row), verdict,
               Hashes(source, None, _check_code_hash(), bytes_hash([contract, device])),
               figures, detail, contract=contract, seconds=round(seconds, 3)).to_json()


def run_target_task(spec: TaskSpec) -> TaskOutcome:
    """One check of a user target (in this process or a worker): its row; an error row when the target
    raises, hangs or breaks its output contract (a usage error of the options is a skip)."""
    from specproof.harness.check.calls import ContractViolation, VerifierError
    from specproof.harness.check.driver import check

    start = time.perf_counter()
    contract, device = spec.input.rsplit("@", 1)[0], spec.input.rsplit("@", 1)[1]
    options = {k: v for k, v in spec.params if k != "contract"}
    outcome = TaskOutcome()
    fn = None
    try:
        fn = load_checked_target(spec.name, contract)
        result = check(fn, contract, dtype=spec.dtype, device=device, progress=False, **options)
        outcome.rows.append(check_row(spec.name, contract, device, result, fn, time.perf_counter() - start))
    except (VerifierError, ContractViolation, SpecproofInputError) as err:
        # the target broke (or its file no longer imports): a flagged row naming why, not a crash
        detail = {"contract": contract, "device": device, "error": f"{type(err).__name__}: {err}"[:500],
                  "seed": options.get("seed", 0)}
        outcome.rows.append(_row(spec.name, spec.dtype, contract, device, "error", True, {}, detail,
                                 None if fn is None else source_hash(fn), time.perf_counter() - start))
    outcome.seconds = time.perf_counter() - start
    return outcome


# -- check files as report documents -------------------------------------------------------------------

def check_file_document(data: dict[str, Any], source: str) -> dict[str, Any]:
    """A ``specproof check --json`` file (any schema this specproof reads) as a report document with
    one ``check`` row, keyed as a report's row of the same target, contract, dtype and device."""
    from specproof.harness.files.envelope import migrate_document
    from specproof.harness.report.schema import validate

    doc = migrate_document(data, CHECK, source)
    result = doc.get("result")
    if not isinstance(result, dict) or not isinstance(doc.get("target"), str):
        raise SpecproofInputError(source, "is a check file without its target or result", CHECK.fix)
    contract = doc.get("contract") or result.get("contract") or "batched"
    device = str(result.get("device", "cpu")).split(":")[0]
    verdict = str(result.get("verdict"))
    findings = [f for s in result.get("scenarios", []) for f in s.get("findings", [])]
    detail: dict[str, Any] = {
        "contract": contract, "device": device, "diagnosis": (result.get("diagnosis") or {}).get("line"),
        "findings_total": result.get("findings_total", len(findings)), "rows": result.get("rows"),
        "detectable_tv": result.get("detectable_tv"), "stop_reason": result.get("stop_reason"),
        "rows_at_first_flag": result.get("rows_at_first_flag"),
        "injection_summary": result.get("injection_summary"),
        "verifier_seconds": result.get("verifier_seconds"), "harness_seconds": result.get("harness_seconds"),
        "level": result.get("level"), "samples_per_scenario": result.get("samples_per_scenario"),
        "seed": result.get("seed"), "max_detectable_tv": result.get("max_detectable_tv"),
        "alpha": result.get("alpha"), "time_budget": result.get("time_budget")}
    figures = {}
    if isinstance(result.get("detectable_tv"), (int, float)):
        figures["detectable_tv"] = Figure.of(result["detectable_tv"], None, "informational (power 0.99)",
                                             result.get("dtype"))

    class _Stored:  # what drift_figure reads of a result
        def as_json(self) -> dict[str, Any]:
            return result

    drift = drift_figure(_Stored())
    if drift is not None:
        figures["drift"], detail["drift"] = drift
    row = _row(doc["target"], str(result.get("dtype")), contract, device, verdict, verdict == "fail", figures,
               detail, None, float(result.get("verifier_seconds") or 0) + float(result.get("harness_seconds") or 0))
    row["hashes"]["reference"] = None  # not recorded in a check file: unknown, not different
    row["hashes"]["implementation"] = None
    provenance = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
    out = REPORT.envelope({"config": {"mode": f"check ({result.get('level')})", "samples": None,
                                      "dtypes": [row["dtype"]], "seed": result.get("seed")},
                           "rows": {row["key"]: row}, "zoo": [], "skipped": [], "incomplete": [],
                           "timing": {"wall": row["seconds"]}, "from_check_file": True}, provenance).to_json()
    validate(out, source)
    return out


# -- what the report shows -----------------------------------------------------------------------------

def _status(row: Row) -> str:
    if row.verdict == "pass":
        return "expected"
    if row.verdict in ("underpowered", "inconclusive"):
        return "caveat"
    return "unexpected"


def _finding_cell(row: Row) -> str:
    from specproof.harness.report.analysis import Folded

    detail = row.detail
    if detail.get("error"):
        return detail["error"]
    if row.verdict == "fail":
        lines = [detail.get("diagnosis") or ""] + list(detail.get("findings") or [])
        more = detail.get("findings_total", 0) - len(detail.get("findings") or [])
        text = " / ".join(x for x in lines if x) + (f" / {more} more in results.json" if more > 0 else "")
        head = (detail.get("diagnosis") or "").removeprefix("Diagnosis: ")
        return Folded(text, (head[:110].rsplit(" ", 1)[0] + " ...") if len(head) > 110 else head) \
            if len(text) > 120 else text
    if row.verdict == "underpowered":
        return f"nothing found; the run could miss a TV up to {fmt(detail.get('detectable_tv'))} " \
               f"(stated {fmt(detail.get('max_detectable_tv'))})"
    return "-"


def _leading_clauses(text: str, limit: int) -> str:
    """``text`` cut after its last whole ``"; "``-separated clause within ``limit`` characters (the first
    clause whole however long), with ``" ..."`` where something was cut: a summary line never ends mid-clause
    ("... at token position")."""
    clauses = text.split("; ")
    kept = clauses[:1]
    for clause in clauses[1:]:
        if len("; ".join(kept + [clause])) > limit:
            break
        kept.append(clause)
    return "; ".join(kept) + (" ..." if len(kept) < len(clauses) else "")


def _ordered(document: dict[str, Any]) -> list[Row]:
    """The check rows by target, then dtype, each in the order the user named them (``--dtypes``; else
    narrowest first), then device."""
    from specproof.harness.report.analysis import DTYPE_ORDER

    plan = document["config"].get("targets") or {}
    targets, dtypes = list(plan.get("targets") or []), list(plan.get("dtypes") or []) + list(DTYPE_ORDER)
    rows = [r for r in rows_of(document) if r.kind == TARGET_KIND]
    return sorted(rows, key=lambda r: (targets.index(r.implementation) if r.implementation in targets else 99,
                                       r.implementation, dtypes.index(r.dtype) if r.dtype in dtypes else 99,
                                       r.input))


def _vocab_cell(sizes: Any) -> str:
    """The vocabulary sizes a check judged, as the verdict line says them (``-`` for an error row)."""
    if not sizes:
        return "-"
    from specproof.harness.check.result import vocab_text

    return vocab_text(sizes).removeprefix("V = ")


def _coverage_cell(coverage: Any) -> str:
    """``4 sites, zero coin missed w.p. <= 2.1e-11`` (and the sites not tested): the check's acceptance-site
    coverage (:mod:`specproof.harness.check.contracts.coverage`)."""
    if not coverage:
        return "-"
    text = f"{len(coverage['sites'])} sites, zero coin missed w.p. <= {coverage['worst_miss']:.2g}"
    if coverage.get("not_tested"):
        text += f"; not tested: {len(coverage['not_tested'])}"
    return text


def target_table(document: dict[str, Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """One line per check row (target, dtype, device): verdict, drift with its interval (a column only
    when some row has one), detectable TV, findings (the diagnosis first, long text folded), the
    vocabulary sizes judged, the acceptance-site coverage, rows and time; each line's colour (green PASS, amber UNDERPOWERED or INCONCLUSIVE, red FAIL or error)."""
    rows = _ordered(document)
    header = ["target", "dtype", "device", "verdict", "drift (interval)", "detectable TV", "findings", "V judged",
              "acceptance sites", "rows", "time (s)"]
    lines, colours = [], []
    for row in rows:
        drift = row.detail.get("drift")
        drift_text = "-" if not drift else (f"{fmt(drift['estimate'])} ({fmt(drift['lower'])} .. "
                                            f"{fmt(drift['upper'])})")
        contract, device = row.input.rsplit("@", 1)
        lines.append([row.implementation + ("" if contract == "batched" else f" ({contract})"), row.dtype, device,
                      row.verdict.upper(), drift_text, fmt(row.detail.get("detectable_tv")), _finding_cell(row),
                      _vocab_cell(row.detail.get("vocab_sizes")), _coverage_cell(row.detail.get("coverage")),
                      f"{row.detail['rows']:,}" if isinstance(row.detail.get("rows"), int) else "-",
                      "-" if row.seconds is None else f"{row.seconds:.1f}"])
        colours.append(_status(row))
    if len({line[2] for line in lines}) == 1:  # one device: said once, in the report's header lines
        header, lines = header[:2] + header[3:], [line[:2] + line[3:] for line in lines]
    return header, lines, colours


def target_banner_lines(document: dict[str, Any]) -> tuple[str, list[str], str] | None:
    """The answer for the user's targets: a headline, one line per target with its verdict in each dtype
    and device, and its tone: ``ok`` (all PASS), ``not-ok`` (some FAIL or error) or ``caveat`` (none
    fails, some could not state their power); None: the report has no check rows."""
    rows = _ordered(document)
    if not rows:
        return None
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    failing = counts.get("fail", 0) + counts.get("error", 0)
    if failing:
        headline = f"{failing} of {len(rows)} checks of your code FAIL"
    elif counts.get("pass", 0) == len(rows):
        headline = f"All {len(rows)} checks of your code PASS"
    else:
        headline = f"No check of your code FAILs; {len(rows) - counts.get('pass', 0)} of {len(rows)} could not " \
                   "state the power asked for"
    lines = []
    for target in dict.fromkeys(r.implementation for r in rows):
        own = [r for r in rows if r.implementation == target]
        parts = []
        for r in own:
            where = r.dtype + ("" if r.input.endswith("@cpu") else f" on {r.input.rsplit('@', 1)[1]}")
            parts.append(f"{where} {r.verdict.upper()}")
        lines.append(f"{target}: " + ", ".join(parts))
    causes: dict[tuple[str, str], list[str]] = {}  # one line per (target, cause), its dtypes named once
    for r in rows:
        if r.verdict in ("fail", "error"):
            why = r.detail.get("error") or (r.detail.get("diagnosis") or "").removeprefix("Diagnosis: ")
            causes.setdefault((r.implementation, _leading_clauses(why, 220)), []).append(r.dtype)
    lines += [f"{target} in {', '.join(dict.fromkeys(dtypes))}: {why}" for (target, why), dtypes in causes.items()]
    tone = "not-ok" if failing else "ok" if counts.get("pass", 0) == len(rows) else "caveat"
    return headline, lines, tone


def has_targets(document: dict[str, Any]) -> bool:
    return any(row.get("kind") == TARGET_KIND for row in document["rows"].values())
