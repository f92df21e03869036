"""Tables derived from a ``results.json`` document: drift per implementation and dtype, the half-type
split, proofs, the zoo.  Pure functions of the document, so a report renders the same from a fresh run
or from a stored file.

Half types.  A row in float16/bfloat16 that is flagged is split by what the same implementation does
on the same input in float64, where rounding is ``2^29`` times finer than in float32 and ``2^45`` than in
float16:

* *within the dtype's derived tolerance* - the row passes (TV at most its derived bound, no impossible
  mass): whatever drift it shows is what correct float code in that dtype may produce;
* *algorithmic bias* - flagged here **and** flagged in float64: the algorithm or its float formulation
  (``u <= p/q``, ``log u + log q < log p``, a clamped residual) deviates at every precision, even where the
  size of the deviation shrinks with it;
* *dtype-specific* - flagged here but within tolerance in float64: the precision itself (a coarser
  uniform grid, an absorbed logarithm, an underflow) causes it.

A row's *status* (:func:`row_status`) says what its verdict means: ``pass`` only for an unflagged row
with its power - a statistical PASS whose detectable TV is at most the check's ``max_detectable_tv``, a
white-box or grid row within its derived tolerance, a PROVED proof; ``fail`` for every flagged row (zoo
members included, grid ``impossible-mass`` too); ``weak`` for an unflagged row that could not see much
(UNDERPOWERED, a vacuous tolerance, a BOUNDED proof); ``missed`` for a known-bad member not caught;
``defect`` for an exact implementation under a known defect outside its code (torch's float16 sampler).

The report's colours say whether a row is *as expected* (:func:`row_colour`), not whether it was
flagged: ``expected`` (green) for an exact implementation passing with its power, a proof with its
expected verdict (a rule refuted as expected included) and a known-bad member that was caught;
``unexpected`` (red) for an implementation expected exact, or a proof, that is not as expected (what
makes ``specproof report`` exit 1); ``caveat`` (amber) for a row as expected that could not see much or
that a known defect outside the code touches (statuses ``weak``, ``missed``, ``defect``).
"""

from __future__ import annotations

from typing import Any, Mapping
from specproof.harness.exact.dtypes import DTYPE_NAMES, HALF_DTYPES
from specproof.harness.files.json_numbers import read_number
from specproof.harness.files.number_text import fmt
from specproof.harness.report.rows import Row, rows_of

__all__ = ["DTYPE_ORDER", "fmt", "proof_table", "COLOURS", "row_colour", "worst_colour", "Folded",
           "drift_tables", "half_type_split", "zoo_table",
           "unexpected_rows", "detectable_by_rule", "summarise", "row_status", "worst_status", "STATUSES",
           "sampler_findings", "ulp_text", "WEAK_LABEL"]

# statuses from best to worst; a table line takes its rows' worst
STATUSES = ("pass", "weak", "missed", "defect", "fail")
# colours from best to worst (module docstring); a table line takes its rows' worst
COLOURS = ("expected", "caveat", "unexpected")

DTYPE_ORDER = DTYPE_NAMES
HALF_TYPES = HALF_DTYPES
METHOD_OF_KIND = {"whitebox": "white-box", "grid": "grid", "statistical": "statistical"}


def _underpowered(row: Row) -> bool:
    """A statistical row that found nothing but could not see a TV of ``max_detectable_tv``."""
    detail = row.detail
    if str(row.verdict).lower() == "underpowered":
        return True
    limit = detail.get("max_detectable_tv")  # the power the check required (rows before it: none stated)
    detectable = float(detail.get("detectable_tv", 1.0))
    return detectable >= 1.0 or bool(detail.get("vacuous_scenarios")) or (limit is not None and detectable > limit)


def row_status(row: Row | Mapping[str, Any]) -> str:
    """One of :data:`STATUSES` for a row (a record, or its dict; module docstring)."""
    if not isinstance(row, Row):
        row = Row.from_json(row)
    verdict = str(row.verdict)
    if row.kind == "proof":
        return {"PROVED": "pass", "BOUNDED": "weak"}.get(verdict, "fail")
    detail = row.detail
    if detail.get("known_defect") and (row.passed or detail.get("certain_findings", 0) == detail.get(
            "findings_total", -1)):
        return "defect"  # unflagged, or flagged only by the defect's own signature (probability-0 emissions)
    if not row.passed:
        return "fail"
    if not row.expected_exact:
        return "missed"
    if row.kind in ("statistical", "pipeline") and _underpowered(row):
        return "weak"
    if row.kind == "whitebox" and row.detail.get("tolerance_vacuous"):
        return "weak"
    return "pass"


def row_colour(row: Row | Mapping[str, Any]) -> str:
    """One of :data:`COLOURS` for a row: whether it is as expected (module docstring)."""
    if not isinstance(row, Row):
        row = Row.from_json(row)
    if not row.as_expected and (row.expected_exact or row.kind == "proof"):
        return "unexpected"
    return "expected" if row_status(row) in ("pass", "fail") else "caveat"


def worst_colour(colours: list[str]) -> str:
    return max(colours, key=COLOURS.index) if colours else "expected"


class Folded(str):
    """A table cell whose full text is long: the HTML shows ``summary`` and folds the rest away
    (``<details>``); everywhere else it is the full string."""

    summary: str

    def __new__(cls, text: str, summary: str) -> "Folded":
        cell = super().__new__(cls, text)
        cell.summary = summary
        return cell


WEAK_LABEL = {"proof": "BOUNDED", "statistical": "underpowered", "whitebox": "with a vacuous tolerance",
              "pipeline": "underpowered"}


def worst_status(statuses: list[str]) -> str:
    return max(statuses, key=STATUSES.index) if statuses else "pass"


def ulp_text(rows: list[Row]) -> str:
    """Max ULP error of the output over white-box rows; zero-vs-non-zero entries said in words."""
    outputs = [r.detail.get("fields", {}).get("output", {}) for r in rows]
    mismatched = [o for o in outputs if o.get("zero_mismatches")]
    if not mismatched:
        return fmt(_max([r.figure_value("max_ulp_error") for r in rows]))
    elsewhere = _max([read_number(o.get("max_ulp_error_same_support")) for o in outputs])
    return (f"zero vs non-zero ({sum(o['zero_mismatches'] for o in mismatched)} entries on {len(mismatched)} "
            f"input(s)); {fmt(elsewhere)} elsewhere")


def _max(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def proof_table(document: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """Rule, claim, verdict, scope, as expected, method, worst-case TV and counterexample TV per proof row,
    and each row's colour (a scope with assumptions is :class:`Folded`).  BOUNDED is its own verdict (the
    scope names the sizes), never PROVED."""
    header = ["rule", "claim", "verdict", "scope", "as expected", "method", "worst-case TV (n: lower..upper)",
              "counterexample TV"]
    rows, statuses = [], []
    proofs = [r for r in rows_of(document) if r.kind == "proof"]
    for row in sorted(proofs, key=lambda r: (r.detail.get("order", 0), r.rule)):
        detail = row.detail
        worst = "; ".join(f"n={w['n']}: {fmt(w['lower_float'])}..{fmt(w['upper_float'])}"
                          + ("" if w["certified"] else " (upper trivial)") for w in detail["worst_case"])
        if not worst:
            worst = "0 (exact)" if row.verdict == "PROVED" and row.claim == "exact" else (
                "not computed (--quick)" if not detail["worst_case_computed"] else "-")
        tv = row.figures["counterexample_tv"]
        scope: str = str(detail.get("scope") or detail.get("n") or "-")
        assumptions = detail.get("assumptions") or []
        if assumptions:
            scope = Folded(scope + "; assumes " + "; ".join(f"{a.get('statement')} ({a.get('source')})"
                                                          for a in assumptions),
                           f"{scope} (the assumption{'s' if len(assumptions) > 1 else ''} folded here)")
        rows.append([row.rule, row.claim, row.verdict, scope, fmt(row.as_expected), detail["method"],
                     worst, tv.exact or "-"])
        statuses.append(row_colour(row))
    return header, rows, statuses


def detectable_by_rule(document: dict[str, Any]) -> dict[tuple[str, str], float]:
    """Smallest certifiable detectable TV of the statistical runs per (rule, dtype)."""
    out: dict[tuple[str, str], float] = {}
    for row in rows_of(document):
        if row.kind == "statistical" and row.expected_exact and "detectable_tv_certifiable" in row.detail:
            key = (row.rule, row.dtype)
            out[key] = min(out.get(key, 1.0), row.detail["detectable_tv_certifiable"])
    return out


def drift_tables(document: dict[str, Any]) -> dict[str, tuple[list[str], list[list[str]], list[str]]]:
    """Per dtype: one line per (implementation, method) with the worst figures over its inputs, and
    each line's colour: the worst of its rows' for an implementation expected exact; for a known-bad
    member, as expected when some row caught it and a caveat when none did."""
    header = ["implementation", "method", "rows flagged", "verdicts", "TV (worst)", "its tolerance",
              "max abs error", "max ULP error", "acceptance-rate error", "mass lost",
              "detectable TV (statistical)"]
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows_of(document):
        if row.kind in METHOD_OF_KIND:  # pipeline rows have their own section
            groups.setdefault((row.dtype, row.implementation, row.kind), []).append(row)
    detectable = detectable_by_rule(document)
    wrappers: dict[tuple[str, str], list[float]] = {}
    for row in rows_of(document):
        core = row.detail.get("uniforms_core") if row.kind == "statistical" else None
        if core and "detectable_tv_certifiable" in row.detail:
            wrappers.setdefault((core, row.dtype), []).append(row.detail["detectable_tv_certifiable"])
    tables: dict[str, tuple[list[str], list[list[str]], list[str]]] = {}
    for dtype in DTYPE_ORDER:
        lines, statuses = [], []
        for (d, name, kind), rows in sorted(groups.items(), key=lambda item: (item[0][1], item[0][2])):
            if d != dtype:
                continue
            flagged = sum(1 for r in rows if not r.passed)
            verdicts = ", ".join(sorted({str(r.verdict) for r in rows}))
            tvs = [(r.figure_value("tv"), (r.figures["tv"].threshold if "tv" in r.figures else None)) for r in rows]
            worst_tv = max(tvs, key=lambda t: -1.0 if t[0] is None else t[0]) if tvs else (None, None)
            det = None
            if kind == "statistical":
                stat = rows[0].detail
                worst_tv = (rows[0].figure_value("excess"), None)
                det = stat.get("detectable_tv_certifiable")
                vacuous = len(stat.get("vacuous_scenarios", []))
                det_text = fmt(det) + (f" ({vacuous} vacuous)" if vacuous else "")
            elif kind == "whitebox":
                det = detectable.get((rows[0].rule, dtype))
                det_text = "-" if det is None else f"{fmt(det)} (same rule)"
            else:
                found = wrappers.get((name, dtype))
                det = min(found) if found else None
                det_text = fmt(det) + " (its wrappers)" if found else "-"
            status = worst_status([row_status(r) for r in rows])
            verdicts = _verdict_text(status, verdicts, rows, det)
            tv_text = fmt(worst_tv[0]) if kind != "statistical" else f"excess {fmt(worst_tv[0])}"
            unit = {"whitebox": "inputs", "grid": "scenarios"}.get(kind, "run")
            zoo = not rows[0].expected_exact and not rows[0].detail.get("known_defect")
            lines.append([
                f"{name} (zoo)" if zoo else name, f"{METHOD_OF_KIND[kind]} ({len(rows)} {unit})",
                f"{flagged}/{len(rows)}", verdicts, tv_text, fmt(worst_tv[1]),
                fmt(_max([r.figure_value("max_abs_error") for r in rows])),
                ulp_text(rows) if kind == "whitebox" else fmt(_max([r.figure_value("max_ulp_error") for r in rows])),
                fmt(_max([r.figure_value("acceptance_rate_error") for r in rows])),
                fmt(_max([r.figure_value("lost_mass") for r in rows])), det_text])
            statuses.append(("expected" if flagged else "caveat") if zoo
                            else worst_colour([row_colour(r) for r in rows]))
        if lines:
            tables[dtype] = (header, lines, statuses)
    return tables


def _verdict_text(status: str, verdicts: str, rows: list[Row], detectable: float | None) -> str:
    """The verdicts cell in words where colour alone would mislead."""
    power = f"detectable TV {fmt(detectable)}" if detectable is not None else "no statistical run to compare"
    if status == "missed":
        return f"not caught ({power})"
    if status == "defect":
        seen = sum(r.detail.get("certain_findings", 0) for r in rows)
        return f"known sampler defect ({'seen' if seen else 'not seen at this budget'}; see Sampler findings)"
    if status == "weak" and rows[0].kind == "statistical":
        return f"underpowered ({power})"
    return verdicts


def _tv_ratio(row: Row) -> float | None:
    tv = row.figures.get("tv")
    if not tv or tv.threshold in (None, 0) or tv.value is None:
        return None
    return tv.value / tv.threshold


def half_type_split(document: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per half type: rows ``within`` tolerance, ``bias`` (also flagged in float64), ``dtype`` (only here)."""
    rows = {row.key: row for row in rows_of(document)}
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for dtype in HALF_TYPES:
        split: dict[str, list[dict[str, Any]]] = {"within": [], "bias": [], "dtype": [], "unpaired": []}
        for row in rows.values():
            if row.kind not in ("whitebox", "grid") or row.dtype != dtype:
                continue
            entry = {"key": row.key, "implementation": row.implementation, "input": row.input,
                     "kind": row.kind, "verdict": row.verdict, "tv": row.figure_value("tv"),
                     "ratio": _tv_ratio(row), "expected_exact": row.expected_exact}
            if row.passed:
                split["within"].append(entry)
                continue
            wide = rows.get(f"{row.kind}/{row.implementation}/float64/{row.input}")
            if wide is None:
                split["unpaired"].append(entry)
            else:
                entry["float64_verdict"] = wide.verdict
                entry["float64_tv"] = wide.figure_value("tv")
                split["bias" if not wide.passed else "dtype"].append(entry)
        out[dtype] = split
    return out


def zoo_table(document: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """Each known-bad member: which check caught it, where it was not caught and why, and its colour: a
    member caught everywhere is as ``expected``; one caught in some dtypes only, or nowhere, a ``caveat``
    (a gap of the checks, not a fault of the code under test)."""
    header = ["member", "bug", "caught by", "not caught (detectable TV)"]
    rows, statuses = [], []
    for z in document["zoo"]:
        caught = "; ".join(z["caught_by"]) or ("NOT CAUGHT" if z.get("measured", True) else "not measured")
        rows.append([z["implementation"], z["bug"] or "-", caught, z["reason"] or "-"])
        statuses.append("caveat" if not z["caught"] or z["reason"] else "expected")
    return header, rows, statuses


def sampler_findings(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of exact implementations under a known defect outside their code (registry
    ``known_defects``): whether this run saw it, and the defect's measured rate and reproduction."""
    out = []
    for row in rows_of(document):
        defect = row.detail.get("known_defect")
        if not defect:
            continue
        detail = row.detail
        certain = detail.get("certain_findings", 0)
        rows = detail.get("rows", 0)
        seen = (f"seen: {certain} certain finding(s) (a token of target probability 0 emitted) in {rows:,} rows"
                if certain else f"not seen in this run's {rows:,} rows (the defect is rarer than this budget)"
                if row.passed else f"flagged ({row.verdict}) without a certain finding: check the findings")
        out.append({"key": row.key, "implementation": row.implementation, "dtype": row.dtype,
                    "seen": seen, "defect": defect, "findings": detail.get("findings", [])[:2]})
    return sorted(out, key=lambda f: f["key"])


def summarise(document: dict[str, Any]) -> dict[str, Any]:
    """Counts and the rows that are not as expected (what makes ``specproof report`` exit 1)."""
    from specproof.harness.report.pipelines import pipeline_summary  # it imports this module

    rows = list(rows_of(document))
    unexpected = sorted(r.key for r in rows
                        if not r.as_expected and (r.expected_exact or r.kind == "proof"))
    zoo = document["zoo"]
    by_kind: dict[str, dict[str, int]] = {}
    for r in rows:
        counts = by_kind.setdefault(r.kind, {"rows": 0, "flagged": 0, "weak": 0})
        counts["rows"] += 1
        counts["flagged"] += 0 if r.passed else 1
        counts["weak"] += 1 if row_status(r) == "weak" else 0
    return {"rows": len(document["rows"]), "by_kind": by_kind, "unexpected": unexpected,
            "sampler_defects": [f["key"] for f in sampler_findings(document)],
            "zoo_partly_caught": [z["implementation"] for z in zoo if z["caught"] and z["reason"]],
            "zoo_caught": sum(1 for z in zoo if z["caught"]), "zoo_members": len(zoo),
            "zoo_not_caught": [z["implementation"] for z in zoo if z.get("measured", True) and not z["caught"]],
            "zoo_not_measured": [z["implementation"] for z in zoo if not z.get("measured", True)],
            "skipped": len(document["skipped"]), "pipelines": pipeline_summary(document),
            "incomplete": [" ".join(x for x in (i["kind"], i["implementation"], i["dtype"] or "", i["input"]) if x)
                           for i in document.get("incomplete", [])]}


def unexpected_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of expected-exact implementations (and proofs) that are flagged, with their evidence."""
    out = []
    for key in summarise(document)["unexpected"]:
        row = Row.from_json(document["rows"][key])
        detail = row.detail
        evidence = detail.get("findings") or detail.get("failing_fields") or detail.get("violations") or []
        if row.kind == "proof":
            evidence = [f"expected {row.expected or 'PROVED'}; scope {detail.get('scope') or detail.get('n')}"
                        + (f"; {detail['reason']}" if detail.get("reason") else "")]
        if detail.get("error"):
            evidence = [detail["error"]]
        if row.kind == "grid":
            evidence = [f"TV {fmt(row.figure_value('tv'))} (tolerance {fmt(row.figures['tv'].threshold)}), "
                        f"impossible mass {fmt(row.figure_value('impossible_mass'))}"] + list(evidence)
        out.append({"key": key, "verdict": row.verdict, "evidence": [str(e) for e in evidence][:3]})
    return out
