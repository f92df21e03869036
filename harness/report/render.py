"""``report.md`` and a self-contained ``report.html`` from a ``results.json`` document.

Both are rendered from the same list of blocks (headings, paragraphs, tables, figures), so they say the
same thing; the HTML embeds the figures as base64 PNG and has no external reference (no script, no
font, no stylesheet link), so it opens offline.  The Markdown names the figures and their one-sentence
explanations and points to the HTML for the images.

Layer: harness.report (4). May import harness.drift, check, exact, files, impls and proofs; never cli or bench.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from specproof.proofs.engine.vocabulary import Severity, severity
from specproof.harness.report.analysis import (DTYPE_ORDER, WEAK_LABEL, drift_tables, fmt, half_type_split, proof_table,
                                               sampler_findings, summarise, unexpected_rows, zoo_table)
from specproof.harness.report.pipelines import PIPELINE_TEXT, pipeline_summary_line, pipeline_table

__all__ = ["report_blocks", "render_markdown", "render_html", "render_report", "terminal_summary"]

Block = tuple[Any, ...]


def _provenance_lines(document: dict[str, Any]) -> list[str]:
    prov, config = document["provenance"], document["config"]
    git = prov.get("git", {})
    versions = prov.get("versions", {})
    commit = (git.get("commit") or "unknown")[:12] + (" (dirty)" if git.get("dirty") else "")
    return [
        f"commit {commit}, {prov.get('date', '?')}; mode {config['mode']}",
        f"device {prov.get('device')} ({prov.get('device_name')}); CPU {prov.get('cpu')} x{prov.get('cpu_count')}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v),
        f"dtypes {', '.join(config['dtypes'])}; seed {config['seed']}; statistical budget {config['samples']:,} rows "
        f"per scenario; white-box vocabularies {', '.join(f'{v:,}' for v in config['whitebox_vocabs'])}; "
        + (f"Ray tasks on {prov['address']}" if prov.get("engine") == "ray" and prov.get("address") else
         f"Ray tasks on a local Ray of {prov.get('workers')} CPUs" if prov.get("engine") == "ray" else
         f"{config['jobs']} worker process(es)") + ", one torch thread each",
        f"wall time {document['timing'].get('wall', 0):.0f} s (schema {document['schema']})",
    ]


def report_blocks(document: dict[str, Any], figures: list[tuple[str, bytes, str]]) -> list[Block]:
    """The report as blocks: ``("h1"|"h2"|"h3", text)``, ``("p", text)``, ``("list", items)``,
    ``("table", header, rows[, statuses, column])`` (each row's status colours that column in HTML),
    ``("figure", title, png, caption)``."""
    summary = summarise(document)
    blocks: list[Block] = [("h1", "specproof numerical-fidelity report"), ("list", _provenance_lines(document))]
    blocks.append(("h2", "Summary"))
    kinds = summary["by_kind"]
    blocks.append(("list", [f"{kind}: {c['rows']} rows, {c['flagged']} flagged"
                            + (f", {c['weak']} {WEAK_LABEL.get(kind, 'weak')}" if c.get("weak") else "")
                            for kind, c in sorted(kinds.items())]
                   + [f"zoo: {summary['zoo_caught']} of {summary['zoo_members']} known-bad implementations caught"
                      + (f", {len(summary['zoo_not_measured'])} not measured in this mode"
                         if summary["zoo_not_measured"] else ""),
                      *([pipelines] if (pipelines := pipeline_summary_line(document)) else []),
                      f"{len(summary['unexpected'])} row(s) of implementations expected exact (or proofs) are not "
                      f"as expected", f"{summary['skipped']} planned measurement(s) skipped (listed at the end)"]))
    if document.get("incomplete"):
        blocks.append(("h3", "Incomplete: not measured"))
        blocks.append(("p", "These tasks failed for good on the Ray engine (their retries spent), or their campaign "
                            "cell's device is not available here: they have no rows, their records count as not "
                            "measured (never as passed or caught), and the run exits 4. Rerun them."))
        blocks.append(("table", ["task", "reason"],
                       [[label, i["reason"]] for label, i in zip(summary["incomplete"], document["incomplete"])]))
    unexpected = unexpected_rows(document)
    if unexpected:
        blocks.append(("h3", "Not as expected"))
        blocks.append(("table", ["row", "verdict", "evidence"],
                       [[u["key"], u["verdict"], " / ".join(u["evidence"])] for u in unexpected]))
    sampler = sampler_findings(document)
    if sampler:
        blocks.append(("h3", "Sampler findings"))
        blocks.append(("p", "Implementations whose code is exact but which draw with a sampler that has a known "
                            "defect in this dtype: the registry labels them inexact here (not a PASS, not a "
                            "zoo member); the defect, its measured rate and its reproduction are the registry's."))
        blocks.append(("table", ["row", "this run", "defect (rate, reproduction)"],
                       [[f["key"], f["seen"], f["defect"]] for f in sampler], ["defect"] * len(sampler), 1))
    blocks.extend(_campaign_blocks(document))
    blocks.append(("h2", "Proofs"))
    blocks.append(("p", "Every catalogue rule with its claim and the verdict the prover reached; refuted rules carry "
                        "an exact counterexample TV and the worst-case TV found over the simplex at small n "
                        "(lower bound attained exactly, upper bound certified by z3 unless marked trivial)."))
    header, rows, statuses = proof_table(document)
    if rows:
        blocks.append(("table", header, rows, statuses, 2))
    blocks.append(("h2", "Drift per implementation and dtype"))
    blocks.append(("p", "White-box rows: exact TV of the implied output law, maximum absolute and ULP errors of the "
                        "output law, acceptance-rate error and target mass dropped, worst over the inputs, with the "
                        "derived TV bound at the worst input. Grid rows: exact TV of the law on torch.rand's grid "
                        "against the rule's law, and the grid tolerance. Statistical rows: the largest excess of an "
                        "event beyond its tolerance (0 when nothing is flagged) and the detectable TV of the run "
                        "(power 0.99; scenarios whose dtype tolerance is vacuous, 1, are counted apart). White-box "
                        "rows show the detectable TV of the statistical runs of the same rule: drift below it is "
                        "invisible to sampling at this budget. In the HTML, green is a pass with its power, red a "
                        "flagged row (zoo members and grid impossible mass included), amber a row that could not "
                        "see much (underpowered), a known-bad member not caught, or a known sampler defect."))
    for dtype, (header, rows, statuses) in drift_tables(document).items():
        blocks.append(("h3", dtype))
        blocks.append(("table", header, rows, statuses, 3))
    blocks.extend(_half_type_blocks(document))
    blocks.append(("h2", "The zoo: which check caught each known-bad implementation"))
    header, rows, statuses = zoo_table(document)
    if rows:
        blocks.append(("table", header, rows, statuses, 2))
    header, rows, statuses = pipeline_table(document)
    if rows:
        blocks.append(("h2", "Whole pipelines: the generate contract"))
        blocks.append(("p", PIPELINE_TEXT))
        blocks.append(("table", header, rows, statuses, 2))
    blocks.append(("h2", "Figures"))
    for title, png, caption in figures:
        blocks.append(("figure", title, png, caption))
    if document["skipped"]:
        blocks.append(("h2", "Skipped"))
        grouped: dict[tuple[str, str], list[str]] = {}
        for skip in document["skipped"]:
            grouped.setdefault((skip["implementation"], skip["reason"]), []).append(skip["dtype"] or "all dtypes")
        blocks.append(("table", ["implementation", "dtypes", "reason"],
                       [[name, ", ".join(d for d in DTYPE_ORDER if d in dtypes) or ", ".join(dtypes), reason]
                        for (name, reason), dtypes in sorted(grouped.items())]))
    return blocks


def _campaign_blocks(document: dict[str, Any]) -> list[Block]:
    """The campaign section (``specproof campaign``): the file, and each cell with its status."""
    campaign = document.get("campaign")
    if not campaign:
        return []
    counts = campaign["counts"]
    text = (f"Campaign `{campaign['name']}` from {campaign['file']} (sha256 {campaign['file_hash'][:12]}): "
            f"{len(campaign['cells'])} cells, {counts['ran']} measured in this run, {counts['cached']} taken from "
            f"{campaign['cell_dir']} (measured by an earlier run with the same definition, budget and source "
            f"hash), {counts['unavailable']} unavailable here, {counts['incomplete']} incomplete.")
    statuses = ["pass" if c["status"] in ("ran", "cached") else "weak" for c in campaign["cells"]]
    rows = [[c["cell"], c["status"] + (f" ({c['reason']})" if c.get("reason") else ""), str(len(c["rows"])),
             (c["source_hash"] or "-")[:12], "-" if c["seconds"] is None else f"{c['seconds']:.1f}"]
            for c in campaign["cells"]]
    return [("h2", f"Campaign: {campaign['name']}"), ("p", text),
            ("table", ["cell", "status", "rows", "source hash", "seconds"], rows, statuses, 1)]


_HALF_TEXT = (
    "Each white-box input and grid scenario in a half type either stays within the dtype's derived tolerance "
    "(drift correct float code may show), or is flagged. A flagged row is algorithmic bias when the same "
    "implementation is also flagged on the same input in float64: the deviation comes from the algorithm or its "
    "float formulation (u <= p/q, log u + log q < log p, a clamped residual), not from the half type's precision, "
    "even where its size shrinks with the precision (compare the two TV columns). It is dtype-specific when float64 "
    "is within tolerance: the half type's precision causes it.")


def _half_type_blocks(document: dict[str, Any]) -> list[Block]:
    split = half_type_split(document)
    if not any(any(v for v in parts.values()) for parts in split.values()):
        return []
    blocks: list[Block] = [("h2", "float16 and bfloat16: dtype drift versus algorithmic bias"), ("p", _HALF_TEXT)]
    for dtype, parts in split.items():
        if not any(parts.values()):
            continue
        within = parts["within"]
        ratios = [e["ratio"] for e in within if e["ratio"] is not None]
        lines = [f"within the derived tolerance: {len(within)} rows"
                 + (f" (largest TV / tolerance {fmt(max(ratios))})" if ratios else "")]
        table = []
        for label, key in (("algorithmic bias (also flagged in float64)", "bias"),
                           ("dtype-specific (float64 within tolerance)", "dtype"),
                           ("flagged, no float64 row to compare", "unpaired")):
            entries = parts[key]
            lines.append(f"{label}: {len(entries)} rows")
            for e in entries:
                table.append([label.split(" (")[0], e["implementation"], e["kind"], e["input"], e["verdict"],
                              fmt(e["tv"]), fmt(e["ratio"]), e.get("float64_verdict", "-"), fmt(e.get("float64_tv")),
                              "yes" if e["expected_exact"] else "no (zoo)"])
        blocks.append(("h3", dtype))
        blocks.append(("list", lines))
        if table:
            blocks.append(("table", ["class", "implementation", "method", "input", "verdict", "TV", "TV / tolerance",
                                     "float64 verdict", "float64 TV", "expected exact"], table))
    return blocks


# -- Markdown ------------------------------------------------------------------------------------------

def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += [f"{'#' * int(kind[1])} {block[1]}", ""]
        elif kind == "p":
            out += [block[1], ""]
        elif kind == "list":
            out += [f"- {item}" for item in block[1]] + [""]
        elif kind == "table":
            header, rows = block[1], block[2]
            out.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
            out.append("|" + "|".join("---" for _ in header) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("")
        elif kind == "figure":
            out += [f"**{block[1]}** (embedded in report.html). {block[3]}", ""]
    return "\n".join(out).rstrip() + "\n"


# -- HTML ----------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1320px;
       padding: 0 16px; color: #1b1f23; line-height: 1.45; font-size: 14px; }
h1 { font-size: 24px; border-bottom: 2px solid #d0d7de; padding-bottom: 6px; }
h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 15px; margin-top: 20px; }
.scroll { overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: left; vertical-align: top; max-width: 560px;
         overflow-wrap: break-word; }
th { background: #f3f5f7; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafbfc; }
td.bad, td.s-fail { color: #b42318; font-weight: 600; }
td.good, td.s-pass { color: #1a7f37; }
td.s-weak, td.s-missed, td.s-defect { color: #9a6700; font-weight: 600; }
tr.s-fail td:first-child { border-left: 4px solid #b42318; }
tr.s-pass td:first-child { border-left: 4px solid #1a7f37; }
tr.s-weak td:first-child, tr.s-missed td:first-child, tr.s-defect td:first-child { border-left: 4px solid #d4a72c; }
figure { margin: 16px 0 28px; }
figure img { max-width: 100%; border: 1px solid #d0d7de; }
figcaption { font-size: 13px; color: #444; margin-top: 6px; max-width: 1100px; }
ul { padding-left: 22px; }
"""

_CELL_CLASS = {Severity.OK: ' class="good"', Severity.FLAGGED: ' class="bad"', Severity.NOT_RUN: ' class="bad"'}
_ANSWER_CLASS = {"yes": ' class="good"', "no": ' class="bad"', "NOT CAUGHT": ' class="bad"'}  # answers, not verdicts


def _cell_class(text: str) -> str:
    """A verdict cell's colour from its severity (the one vocabulary); warnings (BOUNDED, underpowered) stay plain."""
    level = severity(text)
    return _ANSWER_CLASS.get(text, "") if level is None else _CELL_CLASS.get(level, "")


def _html_row(row: list[Any], status: str | None, column: int) -> str:
    """A table row: with a status, that column and the row's edge carry its colour and no cell is
    coloured by its text alone (a 'pass' that is underpowered is not green)."""
    esc = html.escape
    if status is None:
        return "<tr>" + "".join(f"<td{_cell_class(str(c))}>{esc(str(c))}</td>" for c in row) + "</tr>"
    cells = "".join(f'<td class="s-{status}">{esc(str(c))}</td>' if i == column else
                    f"<td{_cell_class(str(c)) if str(c) in ('yes', 'no') else ''}>{esc(str(c))}</td>"
                    for i, c in enumerate(row))
    return f'<tr class="s-{status}">{cells}</tr>'


def render_html(blocks: list[Block], title: str = "specproof report") -> str:
    esc = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{esc(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>"]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{esc(block[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{esc(block[1])}</p>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{esc(str(item))}</li>" for item in block[1]) + "</ul>")
        elif kind == "table":
            header, rows = block[1], block[2]
            statuses, column = (block[3], block[4]) if len(block) > 3 else ([None] * len(rows), -1)
            head = "".join(f"<th>{esc(str(h))}</th>" for h in header)
            body = "".join(_html_row(row, status, column) for row, status in zip(rows, statuses))
            out.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
        elif kind == "figure":
            data = base64.b64encode(block[2]).decode("ascii")
            out.append(f'<figure><img alt="{esc(block[1])}" src="data:image/png;base64,{data}">'
                       f"<figcaption><b>{esc(block[1])}.</b> {esc(block[3])}</figcaption></figure>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def render_report(document: dict[str, Any]) -> tuple[str, str]:
    """``(markdown, html)`` of a results document (figures rendered once, shared)."""
    from specproof.harness.report.plots import all_figures

    blocks = report_blocks(document, all_figures(document))
    return render_markdown(blocks), render_html(blocks)


def terminal_summary(document: dict[str, Any], out_dir: str | None = None) -> str:
    """A few lines for the terminal after a run."""
    summary = summarise(document)
    lines = [f"specproof report ({document['config']['mode']}, {document['provenance']['device']}, "
             f"{', '.join(document['config']['dtypes'])}): {summary['rows']} rows in "
             f"{document['timing'].get('wall', 0):.0f} s"]
    for kind, counts in sorted(summary["by_kind"].items()):
        weak = counts.get("weak", 0)
        lines.append(f"  {kind:<12} {counts['rows']:4d} rows, {counts['flagged']:3d} flagged"
                     + (f", {weak} {WEAK_LABEL.get(kind, 'weak')} (not a pass with power)" if weak else ""))
    missed = [f"not caught: {', '.join(summary['zoo_not_caught'])}"] if summary["zoo_not_caught"] else []
    missed += [f"not measured: {', '.join(summary['zoo_not_measured'])}"] if summary["zoo_not_measured"] else []
    missed += [f"not caught in some dtypes: {', '.join(summary['zoo_partly_caught'])}"] \
        if summary.get("zoo_partly_caught") else []
    lines.append(f"  zoo          {summary['zoo_caught']}/{summary['zoo_members']} known-bad implementations caught"
                 + (f" ({'; '.join(missed)})" if missed else ""))
    if (pipelines := pipeline_summary_line(document)):
        lines.append(f"  {pipelines}")
    for finding in sampler_findings(document):
        lines.append(f"  sampler      {finding['implementation']} {finding['dtype']}: {finding['seen']}")
    extras = sorted({s["reason"] for s in document["skipped"] if "not installed" in s["reason"]})
    lines += [f"  skipped      {reason}" for reason in extras]
    if summary["incomplete"]:
        lines.append(f"INCOMPLETE ({len(summary['incomplete'])} not measured: lost for good on Ray or unavailable here; "
                     f"rerun them):")
        lines += [f"  {label}: {i['reason']}" for label, i in zip(summary["incomplete"][:12], document["incomplete"])]
    if summary["unexpected"]:
        lines.append(f"NOT AS EXPECTED ({len(summary['unexpected'])}):")
        lines += [f"  {u['key']}: {u['verdict']}" + (f" - {u['evidence'][0]}" if u["evidence"] else "")
                  for u in unexpected_rows(document)[:12]]
        if len(summary["unexpected"]) > 12:
            lines.append(f"  ... and {len(summary['unexpected']) - 12} more (see report.md)")
    elif not summary["incomplete"]:
        lines.append("every implementation expected exact passed every check; every proof as expected")
    if out_dir:
        lines.append(f"wrote {out_dir}/results.json, report.md, report.html")
    return "\n".join(lines)
