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
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["DTYPE_ORDER", "fmt", "proof_table", "drift_tables", "half_type_split", "zoo_table",
           "unexpected_rows", "detectable_by_rule", "summarise"]

DTYPE_ORDER = ("float16", "bfloat16", "float32", "float64")
HALF_TYPES = ("float16", "bfloat16")
METHOD_OF_KIND = {"whitebox": "white-box", "grid": "grid", "statistical": "statistical"}


def fmt(x: Any, digits: int = 3) -> str:
    """A short human form of a number (``-`` for missing)."""
    if x is None or x == "":
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if not math.isfinite(x):
        return "inf" if x > 0 else "nan"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _value(row: dict[str, Any], name: str) -> float | None:
    fig = row["figures"].get(name)
    if fig is None or fig["value"] is None:
        return None
    value = fig["value"]
    return math.inf if value == "inf" else float(value) if value != "nan" else math.nan


def _max(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def proof_table(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Rule, claim, verdict, as expected, method, worst-case TV and counterexample TV per proof row."""
    header = ["rule", "claim", "verdict", "as expected", "method", "worst-case TV (n: lower..upper)",
              "counterexample TV"]
    rows = []
    proofs = [r for r in document["rows"].values() if r["kind"] == "proof"]
    for row in sorted(proofs, key=lambda r: (r["detail"].get("order", 0), r["rule"])):
        detail = row["detail"]
        worst = "; ".join(f"n={w['n']}: {fmt(w['lower_float'])}..{fmt(w['upper_float'])}"
                          + ("" if w["certified"] else " (upper trivial)") for w in detail["worst_case"])
        if not worst:
            worst = "0 (exact)" if row["verdict"] == "PROVED" and row["claim"] == "exact" else (
                "not computed (--quick)" if not detail["worst_case_computed"] else "-")
        tv = row["figures"]["counterexample_tv"]
        rows.append([row["rule"], row["claim"], row["verdict"], fmt(row["as_expected"]), detail["method"],
                     worst, tv["exact"] or "-"])
    return header, rows


def detectable_by_rule(document: dict[str, Any]) -> dict[tuple[str, str], float]:
    """Smallest certifiable detectable TV of the statistical runs per (rule, dtype)."""
    out: dict[tuple[str, str], float] = {}
    for row in document["rows"].values():
        if row["kind"] == "statistical" and row["expected_exact"] and "detectable_tv_certifiable" in row["detail"]:
            key = (row["rule"], row["dtype"])
            out[key] = min(out.get(key, 1.0), row["detail"]["detectable_tv_certifiable"])
    return out


def drift_tables(document: dict[str, Any]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Per dtype: one line per (implementation, method) with the worst figures over its inputs."""
    header = ["implementation", "method", "rows flagged", "verdicts", "TV (worst)", "its tolerance",
              "max abs error", "max ULP error", "acceptance-rate error", "mass lost",
              "detectable TV (statistical)"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in document["rows"].values():
        if row["kind"] != "proof":
            groups.setdefault((row["dtype"], row["implementation"], row["kind"]), []).append(row)
    detectable = detectable_by_rule(document)
    wrappers: dict[tuple[str, str], list[float]] = {}
    for row in document["rows"].values():
        core = row["detail"].get("uniforms_core") if row["kind"] == "statistical" else None
        if core and "detectable_tv_certifiable" in row["detail"]:
            wrappers.setdefault((core, row["dtype"]), []).append(row["detail"]["detectable_tv_certifiable"])
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    for dtype in DTYPE_ORDER:
        lines = []
        for (d, name, kind), rows in sorted(groups.items(), key=lambda item: (item[0][1], item[0][2])):
            if d != dtype:
                continue
            flagged = sum(1 for r in rows if not r["passed"])
            verdicts = ", ".join(sorted({r["verdict"] for r in rows}))
            tvs = [(_value(r, "tv"), r["figures"].get("tv", {}).get("threshold")) for r in rows]
            worst_tv = max(tvs, key=lambda t: -1.0 if t[0] is None else t[0]) if tvs else (None, None)
            if kind == "statistical":
                stat = rows[0]["detail"]
                worst_tv = (_value(rows[0], "excess"), None)
                det = stat.get("detectable_tv_certifiable")
                vacuous = len(stat.get("vacuous_scenarios", []))
                det_text = fmt(det) + (f" ({vacuous} vacuous)" if vacuous else "")
            elif kind == "whitebox":
                found_rule = detectable.get((rows[0]["rule"], dtype))
                det_text = "-" if found_rule is None else f"{fmt(found_rule)} (same rule)"
            else:
                found = wrappers.get((name, dtype))
                det_text = fmt(min(found)) + " (its wrappers)" if found else "-"
            tv_text = fmt(worst_tv[0]) if kind != "statistical" else f"excess {fmt(worst_tv[0])}"
            unit = {"whitebox": "inputs", "grid": "scenarios"}.get(kind, "run")
            lines.append([
                name if rows[0]["expected_exact"] else f"{name} (zoo)", f"{METHOD_OF_KIND[kind]} ({len(rows)} {unit})",
                f"{flagged}/{len(rows)}", verdicts, tv_text, fmt(worst_tv[1]),
                fmt(_max([_value(r, "max_abs_error") for r in rows])),
                fmt(_max([_value(r, "max_ulp_error") for r in rows])),
                fmt(_max([_value(r, "acceptance_rate_error") for r in rows])),
                fmt(_max([_value(r, "lost_mass") for r in rows])), det_text])
        if lines:
            tables[dtype] = (header, lines)
    return tables


def _tv_ratio(row: dict[str, Any]) -> float | None:
    tv = row["figures"].get("tv")
    if not tv or tv["threshold"] in (None, 0) or tv["value"] is None:
        return None
    return float(tv["value"]) / tv["threshold"]


def half_type_split(document: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per half type: rows ``within`` tolerance, ``bias`` (also flagged in float64), ``dtype`` (only here)."""
    rows = document["rows"]
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for dtype in HALF_TYPES:
        split: dict[str, list[dict[str, Any]]] = {"within": [], "bias": [], "dtype": [], "unpaired": []}
        for row in rows.values():
            if row["kind"] not in ("whitebox", "grid") or row["dtype"] != dtype:
                continue
            entry = {"key": row["key"], "implementation": row["implementation"], "input": row["input"],
                     "kind": row["kind"], "verdict": row["verdict"], "tv": _value(row, "tv"),
                     "ratio": _tv_ratio(row), "expected_exact": row["expected_exact"]}
            if row["passed"]:
                split["within"].append(entry)
                continue
            wide = rows.get(f"{row['kind']}/{row['implementation']}/float64/{row['input']}")
            if wide is None:
                split["unpaired"].append(entry)
            else:
                entry["float64_verdict"] = wide["verdict"]
                entry["float64_tv"] = _value(wide, "tv")
                split["bias" if not wide["passed"] else "dtype"].append(entry)
        out[dtype] = split
    return out


def zoo_table(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["member", "bug", "caught by", "why not caught"]
    rows = [[z["implementation"], z["bug"] or "-",
             "; ".join(z["caught_by"]) or ("NOT CAUGHT" if z.get("measured", True) else "not measured"), z["reason"] or "-"]
            for z in document["zoo"]]
    return header, rows


def summarise(document: dict[str, Any]) -> dict[str, Any]:
    """Counts and the rows that are not as expected (what makes ``specproof report`` exit 1)."""
    rows = document["rows"].values()
    unexpected = sorted(r["key"] for r in rows
                        if not r["as_expected"] and (r["expected_exact"] or r["kind"] == "proof"))
    zoo = document["zoo"]
    by_kind: dict[str, dict[str, int]] = {}
    for r in rows:
        counts = by_kind.setdefault(r["kind"], {"rows": 0, "flagged": 0})
        counts["rows"] += 1
        counts["flagged"] += 0 if r["passed"] else 1
    return {"rows": len(document["rows"]), "by_kind": by_kind, "unexpected": unexpected,
            "zoo_caught": sum(1 for z in zoo if z["caught"]), "zoo_members": len(zoo),
            "zoo_not_caught": [z["implementation"] for z in zoo if z.get("measured", True) and not z["caught"]],
            "zoo_not_measured": [z["implementation"] for z in zoo if not z.get("measured", True)],
            "skipped": len(document["skipped"])}


def unexpected_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of expected-exact implementations (and proofs) that are flagged, with their evidence."""
    out = []
    for key in summarise(document)["unexpected"]:
        row = document["rows"][key]
        detail = row["detail"]
        evidence = detail.get("findings") or detail.get("failing_fields") or detail.get("violations") or []
        if detail.get("error"):
            evidence = [detail["error"]]
        if row["kind"] == "grid":
            evidence = [f"TV {fmt(_value(row, 'tv'))} (tolerance {fmt(row['figures']['tv']['threshold'])}), "
                        f"impossible mass {fmt(_value(row, 'impossible_mass'))}"] + list(evidence)
        out.append({"key": key, "verdict": row["verdict"], "evidence": [str(e) for e in evidence][:3]})
    return out
