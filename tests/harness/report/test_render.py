"""The rendered report: the HTML from the jinja2 template escapes every string of the document; the report
starts with the answer (a banner, then contents with anchors); lines are coloured by whether they are as
expected; empty columns are dropped and long cells folded; the Markdown says what the HTML says; plots label
their bound lines."""

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from test_report_verdicts import document  # the same minimal results document (rows, zoo, config)

from specproof.harness.report import plots
from specproof.harness.report.analysis import Folded, row_colour
from specproof.harness.report.render import (FOLD_AT, Banner, Contents, Heading, Table, render_html, render_markdown,
                                             report_blocks, table)

SAMPLE = Path(__file__).resolve().parents[3] / "reports" / "cpu" / "results.json"
HOSTILE_NAME = '<script>alert("name")</script>'
HOSTILE_TEXT = """it said "<img src=x onerror='alert(1)'>" & left"""


def stat_row(name, *, passed=True, expected_exact=True, as_expected=None, verdict=None, detectable=0.03,
             findings=(), defect=None):
    detail = {"detectable_tv": detectable, "detectable_tv_certifiable": detectable, "vacuous_scenarios": [],
              "max_detectable_tv": 0.05, "certain_findings": 0, "rows": 16000, "findings": list(findings)}
    if defect:
        detail["known_defect"] = defect
    if as_expected is None:
        as_expected = True if defect else passed if expected_exact else not passed
    return {"key": f"statistical/{name}/float32/default-suite", "kind": "statistical", "implementation": name,
            "rule": "canonical", "dtype": "float32", "input": "default-suite", "expected_exact": expected_exact,
            "passed": passed, "as_expected": as_expected, "verdict": verdict or ("pass" if passed else "fail"),
            "hashes": {}, "detail": detail,
            "figures": {"excess": {"value": 0.0 if passed else 0.2, "threshold": detectable}}}


def proof_row(rule, verdict, *, claim="exact", as_expected=True, assumptions=()):
    return {"key": f"proof/{rule}", "kind": "proof", "rule": rule, "claim": claim, "verdict": verdict,
            "as_expected": as_expected, "passed": verdict == "PROVED", "expected_exact": claim == "exact",
            "figures": {"counterexample_tv": {"exact": None}},
            "detail": {"worst_case": [], "worst_case_computed": False, "method": "z3", "scope": "every n",
                       "assumptions": list(assumptions), "order": 0}}


def rendered(doc):
    blocks = report_blocks(doc, [])
    return blocks, render_markdown(blocks), render_html(blocks)


def visible_text(html):
    """What a reader sees: tags dropped, entities decoded, spaces collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


# -- escaping --------------------------------------------------------------------------------------------

def test_every_user_controlled_string_is_escaped_in_the_html():
    bad = stat_row(HOSTILE_NAME, passed=False, findings=[HOSTILE_TEXT])
    zoo = [{"implementation": HOSTILE_NAME, "bug": HOSTILE_TEXT, "caught_by": [HOSTILE_TEXT], "caught": True,
            "reason": ""}]
    doc = document(bad, zoo=zoo)
    doc["skipped"] = [{"implementation": HOSTILE_NAME, "kind": "statistical", "dtype": None, "reason": HOSTILE_TEXT}]
    _, markdown, html = rendered(doc)
    assert "<script" not in html and "<img" not in html and "onerror='" not in html
    assert "&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&#39;alert(1)&#39;&gt;" in html and "&amp; left" in html
    assert HOSTILE_NAME in visible_text(html) and HOSTILE_TEXT in visible_text(html)  # shown, not run
    assert HOSTILE_NAME in markdown and HOSTILE_TEXT in markdown  # the Markdown is text: it says the same


def test_a_hostile_campaign_name_cannot_break_out_of_a_heading_or_its_anchor():
    doc = document(stat_row("a"))
    doc["campaign"] = {"name": '"><script>x</script>', "file": "c.toml", "file_hash": "0" * 64, "cell_dir": "d",
                       "counts": {"ran": 1, "cached": 0, "unavailable": 0, "incomplete": 0},
                       "cells": [{"cell": "<b>c</b>", "status": "ran", "rows": [], "source_hash": None,
                                  "seconds": 1.0}]}
    _, _, html = rendered(doc)
    assert "<script" not in html and "<b>c</b>" not in html
    assert all(re.fullmatch(r"[\w-]+", anchor) for anchor in re.findall(r'id="([^"]*)"', html))


# -- the answer first --------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, headline", [
    ((stat_row("a"), stat_row("zoo", passed=False, expected_exact=False)), "All as expected"),
    ((stat_row("a", passed=False), stat_row("b", passed=False), stat_row("c")), "2 row(s) not as expected"),
    ((proof_row("r", "INCONCLUSIVE", as_expected=False),), "1 row(s) not as expected"),
    ((proof_row("typical", "REFUTED", claim="not-exact"),), "All as expected"),
])
def test_the_report_starts_with_a_banner_then_the_contents(rows, headline):
    blocks, markdown, html = rendered(document(*rows))
    assert isinstance(blocks[1], Banner) and isinstance(blocks[2], Contents)
    assert blocks[1].headline == headline and blocks[1].ok == (headline == "All as expected")
    assert markdown.split("\n")[2] == f"> **{headline}.**"
    body = html.split("<body>", 1)[1]
    banner_at, contents_at, first_h2 = (body.index('class="banner'), body.index('class="contents"'),
                                        body.index("<h2"))
    assert banner_at < contents_at < first_h2
    assert ('class="banner ok"' in html) == (headline == "All as expected")


def test_contents_link_every_section_by_an_anchor_in_both_outputs():
    blocks, markdown, html = rendered(document(stat_row("a", passed=False), proof_row("r", "PROVED")))
    sections = [b.text for b in blocks if isinstance(b, Heading) and b.level == 2]
    links = re.findall(r'<a href="#([^"]+)">([^<]+)</a>', html)
    assert [html_lib.unescape(text) for _, text in links] == sections
    ids = re.findall(r'id="([^"]+)"', html)
    assert len(ids) == len(set(ids)) and all(anchor in ids for anchor, _ in links)
    contents = next(line for line in markdown.split("\n") if line.startswith("Contents: "))
    md_links = re.findall(r"\[([^\]]+)\]\(#([^)]+)\)", contents)
    assert [(anchor, text) for text, anchor in md_links] == [(a, html_lib.unescape(t)) for a, t in links]
    assert ("drift-per-implementation-and-dtype", "Drift per implementation and dtype") in links


# -- colours: expected versus unexpected -------------------------------------------------------------------

DEFECT = "torch.multinomial float16 CPU picks zero-weight tokens"


@pytest.mark.parametrize("row, colour", [
    (stat_row("exact-pass"), "expected"),
    (stat_row("exact-flagged", passed=False), "unexpected"),
    (stat_row("zoo-caught", passed=False, expected_exact=False), "expected"),
    (stat_row("zoo-not-caught", expected_exact=False), "caveat"),
    (stat_row("exact-underpowered", verdict="underpowered", detectable=0.2), "caveat"),
    (stat_row("sampler-defect", expected_exact=False, defect=DEFECT), "caveat"),
    (proof_row("refuted-as-expected", "REFUTED", claim="not-exact"), "expected"),
    (proof_row("proved", "PROVED"), "expected"),
    (proof_row("inconclusive", "INCONCLUSIVE", as_expected=False), "unexpected"),
    (proof_row("bounded-accepted", "BOUNDED"), "caveat"),
])
def test_a_line_is_coloured_by_whether_it_is_as_expected(row, colour):
    assert row_colour(row) == colour
    _, _, html = rendered(document(row))
    name = re.escape(row.get("implementation") or row["rule"])
    assert re.search(f'<tr class="c-{colour}"><td>{name}( \\(zoo\\))?</td>', html)


def test_the_not_as_expected_section_and_the_banner_name_the_same_rows():
    _, markdown, html = rendered(document(stat_row("bad", passed=False, findings=["emitted a p=0 token"]),
                                          stat_row("fine")))
    assert "not as expected: statistical/bad/float32/default-suite" in markdown
    assert '<h3 id="not-as-expected">Not as expected</h3>' in html
    assert '<td class="c-unexpected">fail</td><td>emitted a p=0 token</td>' in html


# -- tables: empty columns, folded cells, the same text in both outputs ------------------------------------------

def test_columns_empty_in_every_line_are_dropped_but_the_first_and_the_coloured_are_kept():
    kept = table(["name", "a", "verdict", "b", "c"], [["-", "-", "-", "1", ""], ["x", "-", "-", "-", ""]],
                 ["expected", "caveat"], "verdict")
    assert kept.header == ["name", "verdict", "b"] and kept.rows == [["-", "-", "1"], ["x", "-", "-"]]
    assert kept.coloured == 1 and kept.colours == ["expected", "caveat"]
    blocks = [Heading(1, "t"), kept]
    assert "| name | verdict | b |" in render_markdown(blocks) and "<th>a</th>" not in render_html(blocks)


def test_drift_tables_of_statistical_lines_only_drop_the_white_box_columns():
    _, markdown, _ = rendered(document(stat_row("a"), stat_row("b", passed=False)))
    header = next(line for line in markdown.split("\n") if line.startswith("| implementation | method"))
    assert "max abs error" not in header and "its tolerance" not in header and "detectable TV" in header


def test_long_scopes_and_cells_are_folded_in_the_html_and_whole_in_the_markdown():
    assumption = {"statement": "the ranking is a strict total order " * 6, "source": "order theory"}
    long_cell = "word " * (FOLD_AT // 4)
    doc = document(proof_row("r", "PROVED", assumptions=[assumption]))
    blocks, markdown, html = rendered(doc)
    assert "<details><summary>every n (the assumption folded here)</summary>every n; assumes the ranking" in html
    assert "every n; assumes the ranking is a strict total order" in markdown and "folded here" not in markdown
    out = render_html([Table(["a"], [[long_cell], [Folded("full text", "short")], ["brief"]])])
    assert out.count("<details>") == 2 and "<td>brief</td>" in out
    assert "<summary>short</summary>full text</details>" in out


def test_the_markdown_and_the_html_say_the_same_things():
    rows = (stat_row("exact", passed=False, findings=["a | pipe in a finding"]), stat_row("ok"),
            stat_row("zoo", passed=False, expected_exact=False), proof_row("r", "PROVED"))
    blocks, markdown, html = rendered(document(*rows, zoo=[{"implementation": "zoo", "bug": "b", "caught": True,
                                                            "caught_by": ["statistical check"], "reason": ""}]))
    seen = visible_text(html)
    for block in blocks:
        if isinstance(block, Table):
            for row in block.rows:
                assert "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" in markdown
                assert all(str(c) in seen for c in row)
        elif isinstance(block, Banner):
            assert all(line in markdown and line in seen for line in block.lines)


# -- plots ---------------------------------------------------------------------------------------------------

def test_bound_lines_are_labelled_in_the_legends(monkeypatch):
    sample = json.loads(SAMPLE.read_text())
    keep = {k: r for k, r in sample["rows"].items()
            if (r["kind"] == "whitebox" and r["dtype"] == "float16" and r["input"].startswith("dirichlet-V"))
            or (r["kind"] == "grid" and r["dtype"] == "float16")}
    doc = {**sample, "rows": keep}
    figures = []
    monkeypatch.setattr(plots, "_png", lambda fig: figures.append(fig) or b"png")
    plots.drift_against_vocabulary(doc)
    plots.half_type_margins(doc)
    drift, margins = ([t.get_text() for t in ax.get_legend().get_texts()] for fig in figures for ax in fig.axes[:1])
    assert "derived bound (dashed, same colour)" in drift
    assert "TV = derived tolerance" in margins
