"""The pipeline section of ``specproof report``: planned, run, rendered; a mutant row is flagged."""

from __future__ import annotations

import importlib.util

import pytest

from specproof.errors import SpecproofInputError

import specproof.impls as impls
from specproof.harness.report.pipelines import QUICK_PIPELINES, pipeline_table, pipeline_tasks
from specproof.harness.report.render import render_report, terminal_summary
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.run import run_report
from specproof.harness.report.schema import validate
from specproof.impls.pipelines import PIPELINES, get_pipeline
from specproof.impls.pipelines.canonical import canonical_generate
from specproof.impls.pipelines.mutants import PIPELINE_MUTANTS
from specproof.impls.pipelines.variants import LOSSLESS_VARIANTS


def test_registry_matches_the_pipeline_modules():
    table = [r for r in PIPELINES if r.models == "table"]
    assert {r.name: r.load() for r in table} == {"canonical": canonical_generate, **LOSSLESS_VARIANTS,
                                                 **PIPELINE_MUTANTS}
    assert {r.name for r in table if r.lossless} == {"canonical", *LOSSLESS_VARIANTS}
    assert all(r.bug and r.mirrors for r in PIPELINES if not r.lossless)  # every mutant cites its report
    assert not {r.name for r in PIPELINES} & {r.name for r in impls.implementations()}  # row keys stay apart
    with pytest.raises(KeyError):
        get_pipeline("no-such-pipeline")


def test_plan_has_one_float32_task_per_pipeline_and_quick_runs_three():
    tasks, skipped = pipeline_tasks(ReportConfig.for_mode("default"))
    has_transformers = importlib.util.find_spec("transformers") is not None
    assert [t.name for t in tasks] == [r.name for r in PIPELINES if has_transformers or r.models == "table"]
    assert {t.dtype for t in tasks} == {"float32"} and {t.kind for t in tasks} == {"pipeline"}
    assert len(skipped) == (0 if has_transformers else 1)
    assert dict(tasks[0].params)["rows"] is None  # the engine's quota for the stated power
    quick, _ = pipeline_tasks(ReportConfig.for_mode("quick"))
    assert tuple(t.name for t in quick) == QUICK_PIPELINES and QUICK_PIPELINES[0] == "canonical"
    assert sum(not get_pipeline(n).lossless for n in QUICK_PIPELINES) == 2
    with pytest.raises(SpecproofInputError, match="pipelines"):
        pipeline_tasks(ReportConfig.for_mode("quick", pipelines=("canonical", "typo")))
    with pytest.raises(SpecproofInputError, match="pipeline_rows"):
        ReportConfig.for_mode("quick", pipeline_rows=10).validated()


@pytest.fixture(scope="module")
def document():
    config = ReportConfig.for_mode("quick", proofs=False, dtypes=("float32",), jobs=1, pipeline_rows=256,
                                   pipelines=("canonical", "default-target"))
    return run_report(config, records=[], progress=False)


def test_pipeline_rows_run_with_the_schema(document):
    validate(document, "test")
    rows = document["rows"]
    assert sorted(rows) == ["pipeline/canonical/float32/generate-suite",
                            "pipeline/default-target/float32/generate-suite"]
    canonical = rows["pipeline/canonical/float32/generate-suite"]
    assert canonical["passed"] and canonical["as_expected"] and canonical["expected_exact"]
    assert canonical["verdict"] == "underpowered"  # 256 rows per scenario cannot state TV 0.05
    assert canonical["detail"]["rows"] == 256 * 8 and canonical["detail"]["rows_to_flag"] is None
    assert canonical["detail"]["detectable_tv"] > 0.05
    mutant = rows["pipeline/default-target/float32/generate-suite"]
    assert not mutant["passed"] and mutant["as_expected"] and mutant["verdict"] == "fail"
    assert mutant["detail"]["fail_fast"] and 0 < mutant["detail"]["rows_to_flag"] <= 256 * 8
    assert "vllm-project/vllm#10198" in mutant["detail"]["mirrors"]
    assert document["summary"]["pipelines"] == {
        "rows": 2, "mutants": 1, "mutants_caught": 1, "mutants_not_caught": [], "lossless": 1,
        "lossless_passing": 0, "lossless_weak": 1, "transformers": None}
    assert document["summary"]["unexpected"] == [] and "pipeline" in document["timing"]


def test_pipeline_section_is_rendered(document):
    header, lines, statuses = pipeline_table(document)
    assert [line[0] for line in lines] == ["canonical", "default-target"] and statuses == ["caveat", "expected"]
    assert header[4] == "rows to flag (fail-fast)" and lines[1][4] != "-" and lines[0][4] == "-"
    markdown, html = render_report(document)
    line = ("pipelines (generate contract, float32): caught 1/1 mutants, lossless passing 0/1, 1 underpowered "
            "(--quick: the canonical pipeline and two mutants only)")
    for text in (markdown, html):
        assert "Whole pipelines: the generate contract" in text and line in text
        assert "vllm-project/vllm#10198" in text
    assert "| default-target | not lossless | fail |" in markdown
    assert 'class="c-expected">fail</td>' in html and 'class="c-caveat">underpowered</td>' in html
    assert line in terminal_summary(document)


def test_a_missed_mutant_is_labelled_not_caught(document):
    row = dict(document["rows"]["pipeline/default-target/float32/generate-suite"])
    row.update(passed=True, as_expected=False, verdict="underpowered")
    missed = {**document, "rows": {row["key"]: row}}
    _, lines, statuses = pipeline_table(missed)
    assert statuses == ["caveat"] and lines[0][2] == "not caught (underpowered)"
