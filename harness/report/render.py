"""``report.md`` and a self-contained ``report.html`` from a ``results.json`` document.

Both are rendered from the same list of blocks (:data:`Block`: headings, paragraphs, lists, tables,
figures, the banner), so they say the same thing.  The report starts with the answer: a banner (all as
expected, or how many rows are not), then a table of contents.  Table lines are coloured by whether they
are as expected (:func:`~.analysis.row_colour`), never by the verdict word alone: a rule refuted as
expected and a known-bad member that was caught are as expected.  Columns that are empty in every line
("-") are dropped from both outputs.

The HTML comes from the jinja2 template ``templates/report.html.j2`` with autoescaping on, so every string
from the document (implementation names, findings, errors) is escaped; it embeds the figures as base64
PNG and has no external reference (no script, no font, no stylesheet link), so it opens offline.  Long
cells (:class:`~.analysis.Folded`, or longer than :data:`FOLD_AT` characters) are folded in
``<details>``.  The Markdown names the figures and their one-sentence explanations and points to the HTML
for the images.
"""

from __future__ import annotations

import base64
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Union

from specproof.harness.report.analysis import (DTYPE_ORDER, WEAK_LABEL, Folded, drift_tables, fmt, half_type_split,
                                               proof_table, row_colour, sampler_findings, summarise, unexpected_rows,
                                               zoo_table)
from specproof.harness.report.pipelines import PIPELINE_TEXT, pipeline_summary_line, pipeline_table
from specproof.harness.report.targets import TARGET_KIND, has_targets, target_banner_lines, target_table

__all__ = ["Heading", "Paragraph", "Bullets", "Table", "Figure", "Banner", "Contents", "Block", "table",
           "report_blocks",
           "render_markdown", "render_html", "render_report", "terminal_summary", "FOLD_AT"]

FOLD_AT = 160  # characters: a longer cell is folded in the HTML


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: list[str]


@dataclass(frozen=True)
class Table:
    """A table; ``colours`` (one of :data:`~.analysis.COLOURS` per row, or None) colour the row's edge and
    its cell in column ``coloured``."""

    header: list[str]
    rows: list[list[str]]
    colours: list[str] | None = None
    coloured: int = -1


@dataclass(frozen=True)
class Figure:
    title: str
    png: bytes
    caption: str


@dataclass(frozen=True)
class Contents:
    """The table of contents: a link to every second-level heading."""


@dataclass(frozen=True)
class Banner:
    """The answer, first: ``ok`` (all as expected), a headline and the lines under it; ``caveat``: not all
    ok, but nothing failed (amber, not red: e.g. your checks are UNDERPOWERED, none FAILs)."""

    ok: bool
    headline: str
    lines: list[str] = field(default_factory=list)
    caveat: bool = False


Block = Union[Heading, Paragraph, Bullets, Table, Figure, Banner, Contents]


def table(header: list[str], rows: list[list[Any]], colours: list[str] | None = None,
          coloured: str | None = None) -> Table:
    """A :class:`Table` without the columns that are empty ("-" or "") in every row; the first column and
    the ``coloured`` one (named by its header) are kept."""
    keep = [i for i, name in enumerate(header)
            if i == 0 or name == coloured or any(str(row[i]) not in ("-", "") for row in rows)]
    return Table([header[i] for i in keep], [[row[i] for i in keep] for row in rows], colours,
                 keep.index(header.index(coloured)) if coloured is not None else -1)


def _provenance_lines(document: dict[str, Any]) -> list[str]:
    prov, config = document["provenance"], document["config"]
    git = prov.get("git", {})
    versions = prov.get("versions", {})
    commit = (git.get("commit") or "unknown")[:12] + (" (dirty)" if git.get("dirty") else "")
    if all(r["kind"] == TARGET_KIND for r in document["rows"].values()):  # your targets only
        details = [r["detail"] for r in document["rows"].values()]
        targets = config.get("targets") or {
            "contract": ", ".join(sorted({d.get("contract", "?") for d in details})),
            "dtypes": sorted({r["dtype"] for r in document["rows"].values()}),
            "devices": sorted({d.get("device", "?") for d in details}),
            "seed": ", ".join(sorted({str(d.get("seed")) for d in details})),
            "samples": next((d.get("samples_per_scenario") for d in details), None),
            "time_budget": next((d.get("time_budget") for d in details), None)}
        depth = (f"{targets['samples']:,} rows per scenario" if targets.get("samples") else
                 f"a time budget of {targets['time_budget']:g} s per check" if targets.get("time_budget") else
                 "the check's default depth")
        return [
            f"commit {commit}, {prov.get('date', '?')}",
            f"device {prov.get('device')} ({prov.get('device_name')}); CPU {prov.get('cpu')} x{prov.get('cpu_count')}",
            "versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v),
            f"{targets['contract']} contract; dtypes {', '.join(targets['dtypes'])}; devices "
            f"{', '.join(targets['devices'])}; seed {targets['seed']}; {depth}",
            f"wall time {document['timing'].get('wall', 0):.0f} s (schema {document['schema']})",
        ]
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


_COLOUR_TEXT = (
    "In the HTML, colours say whether a line is as expected, not what its verdict is: green is as expected "
    "(an implementation expected exact passing with its power, a proof with its expected verdict - a rule "
    "refuted as expected included - a known-bad implementation caught), red is not as expected, amber is as "
    "expected with a caveat (a run that could not see much, a BOUNDED proof, a known sampler defect, a known-bad "
    "implementation not caught).")


def _banner(document: dict[str, Any], summary: dict[str, Any]) -> Banner:
    """All as expected, or how many rows are not (and how many tasks were not measured), then the counts
    a reader needs next: the known-bad members caught and the rows with a caveat."""
    unexpected, incomplete = summary["unexpected"], summary["incomplete"]
    parts = ([f"{len(unexpected)} row(s) not as expected"] if unexpected else []) + \
        ([f"{len(incomplete)} task(s) not measured"] if incomplete else [])
    headline = "; ".join(parts) if parts else "All as expected"
    lines = []
    if unexpected:
        shown = ", ".join(unexpected[:5]) + (f" and {len(unexpected) - 5} more" if len(unexpected) > 5 else "")
        lines.append(f"not as expected: {shown} (see Not as expected)")
    else:
        lines.append("every implementation expected exact passed every check; every proof got its expected verdict")
    lines.append(f"known-bad implementations caught: {summary['zoo_caught']} of {summary['zoo_members']}"
                 + (f" (not caught: {', '.join(summary['zoo_not_caught'])})" if summary["zoo_not_caught"] else "")
                 + (f" ({len(summary['zoo_not_measured'])} not measured in this mode)"
                    if summary["zoo_not_measured"] else ""))
    if (pipelines := pipeline_summary_line(document)):
        lines.append(pipelines)
    caveats = [f"{c['weak']} {kind} {WEAK_LABEL.get(kind, 'weak')}" for kind, c in sorted(summary["by_kind"].items())
               if c.get("weak")]
    if summary["sampler_defects"]:
        caveats.append(f"{len(summary['sampler_defects'])} under a known sampler defect")
    if caveats:
        lines.append("as expected with a caveat (amber): " + ", ".join(caveats))
    return Banner(not parts, headline, lines)


_TARGET_TEXT = (
    "Each of your targets checked in each dtype and device by the same driver as specproof check: the check's "
    "inputs (draft_probs q and target_probs p) are given to the target in that dtype on that device, and its "
    "output is compared with the exact law of those rounded inputs. PASS states its power (the detectable TV: the "
    "smallest deviation on a tested event caught with probability 0.99); UNDERPOWERED found nothing but could not "
    "state the power asked for (amber); FAIL names the diagnosis and the findings (red); error: the target raised, "
    "hung or broke its output contract. The drift column appears when the checks measured one (an estimate and "
    "its interval).")


def _target_banner(document: dict[str, Any], summary: dict[str, Any]) -> Banner:
    """The answer about the user's own targets first; the catalogue's, when it is there, after it."""
    answer = target_banner_lines(document)
    assert answer is not None
    headline, lines, tone = answer
    ok, failed = tone == "ok", tone == "not-ok"
    if any(r["kind"] != TARGET_KIND for r in document["rows"].values()):
        catalogue = _banner(document, summary)
        lines = lines + [f"built-in catalogue: {catalogue.headline.lower()}"]
        ok, failed = ok and catalogue.ok, failed or not catalogue.ok
    return Banner(ok, headline, lines, caveat=not ok and not failed)


def report_blocks(document: dict[str, Any], figures: list[tuple[str, bytes, str]]) -> list[Block]:
    """The report as :data:`Block` s, the answer first (module docstring)."""
    summary = summarise(document)
    targets = has_targets(document)
    catalogue = any(r["kind"] != TARGET_KIND for r in document["rows"].values()) or not targets
    blocks: list[Block] = [Heading(1, "specproof numerical-fidelity report"),
                           _target_banner(document, summary) if targets else _banner(document, summary),
                           Contents(), Bullets(_provenance_lines(document))]
    if targets:
        header, rows, colours = target_table(document)
        blocks += [Heading(2, "Your verifiers"), Paragraph(_TARGET_TEXT), table(header, rows, colours, "verdict")]
    if not catalogue:
        return blocks + _campaign_blocks(document) + _skipped_blocks(document)
    blocks.append(Paragraph(_COLOUR_TEXT))
    blocks.append(Heading(2, "Summary"))
    kinds = summary["by_kind"]
    blocks.append(Bullets([f"{kind}: {c['rows']} rows, {c['flagged']} flagged"
                           + (f", {c['weak']} {WEAK_LABEL.get(kind, 'weak')}" if c.get("weak") else "")
                           for kind, c in sorted(kinds.items())]
                          + [f"zoo: {summary['zoo_caught']} of {summary['zoo_members']} known-bad implementations "
                             "caught" + (f", {len(summary['zoo_not_measured'])} not measured in this mode"
                                         if summary["zoo_not_measured"] else ""),
                             *([pipelines] if (pipelines := pipeline_summary_line(document)) else []),
                             f"{len(summary['unexpected'])} row(s) of implementations expected exact (or proofs) are "
                             f"not as expected", f"{summary['skipped']} planned measurement(s) skipped (listed at the "
                             "end)"]))
    if document.get("incomplete"):
        blocks.append(Heading(3, "Incomplete: not measured"))
        blocks.append(Paragraph("These tasks failed for good on the Ray engine (their retries spent), or their "
                                "campaign cell's device is not available here: they have no rows, their records count "
                                "as not measured (never as passed or caught), and the run exits 4. Rerun them."))
        blocks.append(table(["task", "reason"],
                            [[label, i["reason"]] for label, i in zip(summary["incomplete"], document["incomplete"])],
                            ["unexpected"] * len(summary["incomplete"]), "task"))
    unexpected = unexpected_rows(document)
    if unexpected:
        blocks.append(Heading(3, "Not as expected"))
        blocks.append(table(["row", "verdict", "evidence"],
                            [[u["key"], u["verdict"], " / ".join(u["evidence"])] for u in unexpected],
                            ["unexpected"] * len(unexpected), "verdict"))
    sampler = sampler_findings(document)
    if sampler:
        blocks.append(Heading(3, "Sampler findings"))
        blocks.append(Paragraph("Implementations whose code is exact but which draw with a sampler that has a known "
                                "defect in this dtype: the registry labels them inexact here (not a PASS, not a "
                                "zoo member); the defect, its measured rate and its reproduction are the registry's."))
        blocks.append(table(["row", "this run", "defect (rate, reproduction)"],
                            [[f["key"], f["seen"], f["defect"]] for f in sampler], ["caveat"] * len(sampler),
                            "this run"))
    blocks.extend(_campaign_blocks(document))
    blocks.append(Heading(2, "Proofs"))
    blocks.append(Paragraph("Every catalogue rule with its claim and the verdict the prover reached; refuted rules "
                            "carry an exact counterexample TV and the worst-case TV found over the simplex at small n "
                            "(lower bound attained exactly, upper bound certified by z3 unless marked trivial)."))
    header, rows, colours = proof_table(document)
    if rows:
        blocks.append(table(header, rows, colours, "verdict"))
    blocks.append(Heading(2, "Drift per implementation and dtype"))
    blocks.append(Paragraph(
        "White-box rows: exact TV of the implied output law, maximum absolute and ULP errors of the output law, "
        "acceptance-rate error and target mass dropped, worst over the inputs, with the derived TV bound at the "
        "worst input. Grid rows: exact TV of the law on torch.rand's grid against the rule's law, and the grid "
        "tolerance. Statistical rows: the largest excess of an event beyond its tolerance (0 when nothing is "
        "flagged) and the detectable TV of the run (power 0.99; scenarios whose dtype tolerance is vacuous, 1, are "
        "counted apart). White-box rows show the detectable TV of the statistical runs of the same rule: drift below "
        "it is invisible to sampling at this budget. Known-bad implementations are marked (zoo): their flagged "
        "lines are as expected. Columns empty in every line of a dtype are left out."))
    for dtype, (header, rows, colours) in drift_tables(document).items():
        blocks.append(Heading(3, dtype))
        blocks.append(table(header, rows, colours, "verdicts"))
    blocks.extend(_half_type_blocks(document))
    blocks.append(Heading(2, "The zoo: which check caught each known-bad implementation"))
    header, rows, colours = zoo_table(document)
    if rows:
        blocks.append(table(header, rows, colours, "caught by"))
    header, rows, colours = pipeline_table(document)
    if rows:
        blocks.append(Heading(2, "Whole pipelines: the generate contract"))
        blocks.append(Paragraph(PIPELINE_TEXT))
        blocks.append(table(header, rows, colours, "verdict"))
    if figures:
        blocks.append(Heading(2, "Figures"))
        blocks.extend(Figure(title, png, caption) for title, png, caption in figures)
    return blocks + _skipped_blocks(document)


def _skipped_blocks(document: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    if document["skipped"]:
        blocks.append(Heading(2, "Skipped"))
        grouped: dict[tuple[str, str], list[str]] = {}
        for skip in document["skipped"]:
            grouped.setdefault((skip["implementation"], skip["reason"]), []).append(skip["dtype"] or "all dtypes")
        blocks.append(table(["implementation", "dtypes", "reason"],
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
    colours = ["expected" if c["status"] in ("ran", "cached") else "caveat" for c in campaign["cells"]]
    rows = [[c["cell"], c["status"] + (f" ({c['reason']})" if c.get("reason") else ""), str(len(c["rows"])),
             (c["source_hash"] or "-")[:12], "-" if c["seconds"] is None else f"{c['seconds']:.1f}"]
            for c in campaign["cells"]]
    return [Heading(2, f"Campaign: {campaign['name']}"), Paragraph(text),
            table(["cell", "status", "rows", "source hash", "seconds"], rows, colours, "status")]


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
    blocks: list[Block] = [Heading(2, "float16 and bfloat16: dtype drift versus algorithmic bias"),
                           Paragraph(_HALF_TEXT)]
    for dtype, parts in split.items():
        if not any(parts.values()):
            continue
        within = parts["within"]
        ratios = [e["ratio"] for e in within if e["ratio"] is not None]
        lines = [f"within the derived tolerance: {len(within)} rows"
                 + (f" (largest TV / tolerance {fmt(max(ratios))})" if ratios else "")]
        lines_of_table, colours = [], []
        for label, key in (("algorithmic bias (also flagged in float64)", "bias"),
                           ("dtype-specific (float64 within tolerance)", "dtype"),
                           ("flagged, no float64 row to compare", "unpaired")):
            entries = parts[key]
            lines.append(f"{label}: {len(entries)} rows")
            for e in entries:
                lines_of_table.append([label.split(" (")[0], e["implementation"], e["kind"], e["input"], e["verdict"],
                                       fmt(e["tv"]), fmt(e["ratio"]), e.get("float64_verdict", "-"),
                                       fmt(e.get("float64_tv")), "yes" if e["expected_exact"] else "no (zoo)"])
                colours.append(row_colour(document["rows"][e["key"]]))
        blocks.append(Heading(3, dtype))
        blocks.append(Bullets(lines))
        if lines_of_table:
            blocks.append(table(["class", "implementation", "method", "input", "verdict", "TV", "TV / tolerance",
                                 "float64 verdict", "float64 TV", "expected exact"], lines_of_table, colours,
                                "verdict"))
    return blocks


# -- anchors -------------------------------------------------------------------------------------------

def _anchors(blocks: list[Block]) -> dict[int, str]:
    """The anchor of each heading (by position), as GitHub spells them, so the Markdown's contents links
    work on GitHub and the HTML's ids are the same: lower case, punctuation dropped, spaces as hyphens,
    ``-1``, ``-2`` ... for repeats."""
    seen: dict[str, int] = {}
    out = {}
    for i, block in enumerate(blocks):
        if isinstance(block, Heading):
            slug = re.sub(r"[^\w\- ]", "", block.text.lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            out[i] = slug if count == 0 else f"{slug}-{count}"
    return out


def _contents(blocks: list[Block], anchors: dict[int, str]) -> list[tuple[str, str]]:
    """``(text, anchor)`` of every second-level heading: the table of contents."""
    return [(block.text, anchors[i]) for i, block in enumerate(blocks) if isinstance(block, Heading)
            and block.level == 2]


# -- Markdown ------------------------------------------------------------------------------------------

def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    anchors = _anchors(blocks)
    out: list[str] = []
    for i, block in enumerate(blocks):
        if isinstance(block, Heading):
            out += [f"{'#' * block.level} {block.text}", ""]
        elif isinstance(block, Contents):
            out += ["Contents: " + " · ".join(f"[{text}](#{anchor})" for text, anchor in _contents(blocks, anchors)),
                    ""]
        elif isinstance(block, Banner):
            out += [f"> **{block.headline}.**", ">"] + [f"> - {line}" for line in block.lines] + [""]
        elif isinstance(block, Paragraph):
            out += [block.text, ""]
        elif isinstance(block, Bullets):
            out += [f"- {item}" for item in block.items] + [""]
        elif isinstance(block, Table):
            out.append("| " + " | ".join(_md_cell(h) for h in block.header) + " |")
            out.append("|" + "|".join("---" for _ in block.header) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
            out.append("")
        elif isinstance(block, Figure):
            out += [f"**{block.title}** (embedded in report.html). {block.caption}", ""]
    return "\n".join(out).rstrip() + "\n"


# -- HTML ----------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _template() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("specproof.harness.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["base64"] = lambda data: base64.b64encode(data).decode("ascii")
    env.tests["folded"] = lambda cell: isinstance(cell, Folded) or len(str(cell)) > FOLD_AT
    env.filters["fold_summary"] = lambda cell: cell.summary if isinstance(cell, Folded) else \
        str(cell)[:FOLD_AT // 2].rsplit(" ", 1)[0] + " ..."
    env.globals.update(Heading=Heading, Paragraph=Paragraph, Bullets=Bullets, Table=Table, Figure=Figure,
                       Banner=Banner, Contents=Contents, isinstance=isinstance)
    return env.get_template("report.html.j2")


def render_html(blocks: list[Block], title: str = "specproof report") -> str:
    anchors = _anchors(blocks)
    return _template().render(title=title, blocks=list(enumerate(blocks)), anchors=anchors,
                              contents=_contents(blocks, anchors))


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
    answer = target_banner_lines(document)
    if answer is not None:
        lines += [f"{answer[0]}:"] + [f"  {line}" for line in answer[1]]
        if all(r["kind"] == TARGET_KIND for r in document["rows"].values()):
            return "\n".join(lines + ([f"wrote {out_dir}/results.json, report.md, report.html"] if out_dir else []))
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
