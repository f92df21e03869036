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

The plan carries the check's contract options as ``specproof check`` takes them (``--adapter``; batched
``--rule``, ``--vocab``; tree ``--siblings``; generate ``--models``, the sampling flags, ``--new-tokens``), validated
once by :meth:`~specproof.harness.check.options.CheckOptions.build` (an option of another contract is a usage
error), and the target is loaded by :func:`specproof.harness.check.targets.load_target`, as the check loads it.

A ``check`` row (``KEY`` = ``check/TARGET/DTYPE/CONTRACT@DEVICE``, or ``check/TARGET/DTYPE/CONTRACT[OPTIONS]@DEVICE``
when an adapter or contract option is set, e.g. ``batched[rule=canonical]@cpu``: :func:`target_input`; two checks
that differ only in their options are two rows, never one compared with the other): ``verdict`` the check's (``pass``,
``fail``, ``underpowered``, ``inconclusive``; ``error`` when the target raised, hung or broke its output
contract); ``expected_exact`` true (your verifier is meant to be lossless); ``passed`` = not flagged (FAIL
and errors are flagged; UNDERPOWERED is not a finding: its row is a caveat, amber, as the catalogue's
underpowered rows are); ``figures``: the detectable TV (informational) and, when the check measured one,
``drift`` with its interval (:func:`drift_figure`); ``detail``: the diagnosis, the first findings, rows,
times, the check's *mode* (:data:`MODE_FIELDS`: level, rows per scenario, seed, stated power, alpha,
time budget), which :mod:`.compare` states when two files differ in it, and the options it ran under
(``adapter``; ``contract_options``: :meth:`~specproof.harness.check.options.CheckOptions.contract_values`).  ``hashes``:
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
           "target_table", "target_banner_lines", "has_targets", "source_hash", "MODE_FIELDS", "target_input", "TARGET_KIND",
           "options_text", "row_options"]

TARGET_KIND = "check"
MODE_FIELDS = ("level", "samples_per_scenario", "seed", "max_detectable_tv", "alpha", "time_budget")
"""The fields of a check row's detail that make its power and its rows: two rows differing in one are
measured in different modes (:mod:`.compare` states it instead of flagging a verdict change)."""


def options_text(adapter: str | None, values: Mapping[str, Any] | None) -> str:
    """The adapter and contract options of a check as one line, the adapter first, then the options by name:
    ``adapter=vllm-v1, rule=canonical``, sizes and modes joined by ``+`` (``vocab=4096+151936``), a sampling as
    its fields (``temperature=0.7, top_k=3``); ``""`` when none is set.  ``values``: :meth:`~specproof.harness.check.options.CheckOptions.contract_values`."""
    parts = [f"adapter={adapter}"] if adapter else []
    for name, value in sorted((values or {}).items()):  # sorted: the same text from a file written sorted
        if isinstance(value, Mapping):
            parts += [f"{key}={'>'.join(v) if isinstance(v, list) else v}" for key, v in sorted(value.items())]
        else:
            parts.append(f"{name}={'+'.join(map(str, value)) if isinstance(value, list) else value}")
    return ", ".join(parts)


def target_input(contract: str, device: str, options: str = "") -> str:
    """A check row's ``input``: ``CONTRACT@DEVICE``, or ``CONTRACT[OPTIONS]@DEVICE`` (:func:`options_text`), so keys
    differ by contract, options and device."""
    return f"{contract}[{options}]@{device}" if options else f"{contract}@{device}"


def row_options(row: Row) -> tuple[str | None, Any]:
    """``(adapter, contract options)`` a check row ran under; the options are None when the file did not record
    them (a check file written before they were)."""
    return row.detail.get("adapter"), row.detail.get("contract_options")


@dataclass(frozen=True)
class TargetPlan:
    """What a report checks of the user's own code: ``targets`` (``pkg.module:fn`` or ``path.py:fn``)
    under ``contract`` (None: batched, or the ``adapter``'s) in each of ``dtypes`` on each of ``devices``, with
    the check's options (``samples`` None: the check's default depth; ``time_budget`` seconds per check) and
    the contract's own, ``options`` (``CheckOptions`` names and values, the set ones: ``(("rule", "canonical"),)``)."""

    targets: tuple[str, ...]
    contract: str | None = None
    dtypes: tuple[str, ...] = ("float32",)
    devices: tuple[str, ...] = ("cpu",)
    seed: int = 0
    samples: int | None = None
    time_budget: float | None = None
    max_detectable_tv: float | None = None
    adapter: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def check_options(self) -> dict[str, Any]:
        """The options every check of the plan gets besides dtype and device (CheckOptions' names)."""
        out: dict[str, Any] = {"seed": self.seed}
        if self.samples is not None:
            out["samples"] = self.samples
        if self.time_budget is not None:
            out["time_budget"] = self.time_budget
        if self.max_detectable_tv is not None:
            out["max_detectable_tv"] = self.max_detectable_tv
        return out | dict(self.options)

    def built(self) -> Any:
        """The plan's options as the check builds them (:class:`~specproof.harness.check.options.CheckOptions`)."""
        from specproof.harness.check.options import CheckOptions
        from specproof.harness.check.targets import target_contract

        return CheckOptions.build(target_contract(self.contract, self.adapter), **self.check_options())

    def validated(self) -> "TargetPlan":
        """Options checked once, before any target runs, by ``CheckOptions.build`` (a usage error names the
        option as the API does: ``samples``, ``rule``, ...; the CLI and a campaign name their flag or key);
        the contract resolved (the adapter's, or batched) and the contract options normalised."""
        from specproof.harness.check.contracts import CONTRACT_OPTIONS
        from specproof.harness.exact.dtypes import dtype_name

        if not self.targets:
            raise SpecproofInputError("TARGET", "none given", "name a verifier, e.g. mypkg.spec:verify")
        dtypes = tuple(dict.fromkeys(dtype_name(d) for d in self.dtypes))
        for device in self.devices:
            if device not in ("cpu", "cuda"):
                raise SpecproofInputError("--devices", f"unknown device {device!r}", "use cpu and/or cuda")
        unknown = [name for name, _ in self.options if name not in CONTRACT_OPTIONS]
        if unknown:
            raise SpecproofInputError(unknown[0], "is not a contract option",
                                      f"use some of {', '.join(CONTRACT_OPTIONS)}")
        built = self.built()
        options = tuple((name, getattr(built, name)) for name in built.contract.options
                        if getattr(built, name) is not None)
        return TargetPlan(tuple(dict.fromkeys(self.targets)), built.contract.name, dtypes,
                          tuple(dict.fromkeys(self.devices)), self.seed, self.samples, self.time_budget,
                          self.max_detectable_tv, self.adapter, options)

    def options_text(self) -> str:
        """The plan's adapter and contract options as its rows' keys show them (:func:`options_text`)."""
        return options_text(self.adapter, self.built().contract_values())

    def as_json(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "contract": self.contract, "dtypes": list(self.dtypes),
                "devices": list(self.devices), "seed": self.seed, "samples": self.samples,
                "time_budget": self.time_budget, "max_detectable_tv": self.max_detectable_tv,
                "adapter": self.adapter, "contract_options": self.built().contract_values()}


def target_tasks(plan: TargetPlan) -> list[TaskSpec]:
    """One task per (target, dtype, device) of a validated plan; the params carry the check's options
    (picklable and hashable)."""
    text = plan.options_text()
    params = tuple(sorted({"contract": plan.contract, "adapter": plan.adapter, **plan.check_options()}.items()))
    return [TaskSpec(TARGET_KIND, target, dtype, target_input(plan.contract, device, text),
                     params + (("device", device),), cost=10.0)
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


def check_row(target: str, contract: str, device: str, result: Any, fn: Any = None, seconds: float = 0.0,
              adapter: str | None = None, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The row of one finished check (module docstring); ``fn`` the target (for its source hash); ``adapter`` and
    ``options`` (:meth:`~specproof.harness.check.options.CheckOptions.contract_values`) what it ran under."""
    verdict = getattr(result.verdict, "value", str(result.verdict))
    flagged = verdict == "fail"
    findings = result.findings
    figures = {"detectable_tv": Figure.of(result.detectable_tv, None, "informational (power 0.99)", result.dtype)}
    detail: dict[str, Any] = {
        "contract": contract, "device": device, "adapter": adapter, "contract_options": dict(options or {}),
        "diagnosis": result.diagnosis_line(),
        "findings": [f.line() for f in findings[:5]], "findings_total": len(findings),
        "certain_findings": sum(1 for f in findings if f.certain), "rows": result.rows,
        "detectable_tv": result.detectable_tv, "stop_reason": result.stop_reason,
        "rows_at_first_flag": result.rows_at_first_flag, "injection_summary": result.injection_summary,
        "verifier_seconds": round(result.verifier_seconds, 3), "harness_seconds": round(result.harness_seconds, 3),
        "scenarios": len(result.scenarios), "vocab_sizes": result.vocab_sizes,
        "vocab_sizes_impossible_only": result.vocab_sizes_impossible_only,
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
    """A check row; its input (and so its key) and its input hash name the adapter and contract options of
    ``detail`` (none recorded: none in the key)."""
    as_row = {"kind": TARGET_KIND, "passed": not flagged, "expected_exact": True, "detail": detail}
    text = options_text(detail.get("adapter"), detail.get("contract_options"))
    return Row(TARGET_KIND, target, None, dtype, target_input(contract, device, text), True, not flagged,
               expected_outcome(as_row), verdict,
               Hashes(source, None, _check_code_hash(), bytes_hash([contract, device] + ([text] if text else []))),
               figures, detail, contract=contract, seconds=round(seconds, 3)).to_json()


def run_target_task(spec: TaskSpec) -> TaskOutcome:
    """One check of a user target (in this process or a worker): its row; an error row when the target
    raises, hangs or breaks its output contract (a usage error of the options is a skip)."""
    from specproof.harness.check.calls import ContractViolation, VerifierError
    from specproof.harness.check.driver import check
    from specproof.harness.check.options import CheckOptions
    from specproof.harness.check.targets import load_target

    start = time.perf_counter()
    params = dict(spec.params)
    contract, device, adapter = params.pop("contract"), params.pop("device"), params.pop("adapter")
    values = CheckOptions.build(contract, **params).contract_values()
    outcome = TaskOutcome()
    fn = None
    try:
        fn, _ = load_target(spec.name, contract, adapter)
        result = check(fn, contract, dtype=spec.dtype, device=device, progress=False, **params)
        outcome.rows.append(check_row(spec.name, contract, device, result, fn, time.perf_counter() - start,
                                      adapter, values))
    except (VerifierError, ContractViolation, SpecproofInputError) as err:
        # the target broke (or its file no longer imports): a flagged row naming why, not a crash
        detail = {"contract": contract, "device": device, "adapter": adapter, "contract_options": values,
                  "error": f"{type(err).__name__}: {err}"[:500], "seed": params.get("seed", 0)}
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
    options = doc.get("contract_options")  # absent: a file written before they were recorded (unknown)
    detail: dict[str, Any] = {
        "contract": contract, "device": device, "adapter": doc.get("adapter"),
        "contract_options": dict(options) if isinstance(options, dict) else None,
        "diagnosis": (result.get("diagnosis") or {}).get("line"),
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


def _vocab_cell(sizes: Any, impossible_only: Any = None) -> str:
    """The vocabulary sizes a check judged, as the verdict line says them (``-`` for an error row)."""
    if not sizes:
        return "-"
    from specproof.harness.check.result import vocab_text

    return vocab_text(sizes, impossible_only or ()).removeprefix("V = ")


def _coverage_cell(coverage: Any) -> str:
    """``4 sites, zero coin missed w.p. <= 2.1e-11`` (and the sites not tested): the check's acceptance-site
    coverage (:mod:`specproof.harness.check.contracts.coverage`)."""
    if not coverage:
        return "-"
    text = f"{len(coverage['sites'])} sites, zero coin missed w.p. <= {coverage['worst_miss']:.2g}"
    if coverage.get("not_tested"):
        text += f"; not tested: {len(coverage['not_tested'])}"
    return text


def _target_label(row: Row) -> str:
    """``TARGET``, with its contract when not batched and its adapter and contract options when set:
    ``spec.py:verify (generate; temperature=0.7)``."""
    contract = row.detail.get("contract") or row.contract or "batched"
    text = options_text(*row_options(row))
    said = ([] if contract == "batched" else [contract]) + ([text] if text else [])
    return row.implementation + (f" ({'; '.join(said)})" if said else "")


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
        device = row.input.rsplit("@", 1)[1]
        lines.append([_target_label(row), row.dtype, device,
                      row.verdict.upper(), drift_text, fmt(row.detail.get("detectable_tv")), _finding_cell(row),
                      _vocab_cell(row.detail.get("vocab_sizes"), row.detail.get("vocab_sizes_impossible_only")),
                      _coverage_cell(row.detail.get("coverage")),
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
            text = options_text(*row_options(r))
            where += f" [{text}]" if text else ""
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
