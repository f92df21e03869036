"""Your own verifiers in a report (harness/report/targets.py): check rows, check files, compare, render."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from newcomer.commits import write_commit
from specproof.errors import SpecproofInputError
from specproof.harness.cli.parser import main
from specproof.harness.report.compare import compare_documents, load_for_compare
from specproof.harness.report.render import Table, render_html, render_markdown, report_blocks, terminal_summary
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.run import run_report
from specproof.harness.report.schema import validate
from specproof.harness.report.targets import TargetPlan, check_file_document, target_table

DTYPES = ("float32", "float16", "bfloat16")


def _report(targets: tuple[str, ...], dtypes: tuple[str, ...] = ("float32",), samples: int = 64, seed: int = 0):
    config = ReportConfig.for_mode("default", catalogue=False, dtypes=dtypes, jobs=1)
    return run_report(config, progress=False, targets=TargetPlan(targets, dtypes=dtypes, samples=samples, seed=seed))


def _two_commits(tmp_path: Path, dtypes: tuple[str, ...]) -> tuple[dict, dict]:
    """Reports of a repository at two commits: spec.py gains the bonus-row bug, stable.py does not change."""
    docs = []
    for number, bug in enumerate((False, True)):
        write_commit(tmp_path / f"commit{number}", bug)
        write_commit(tmp_path / f"commit{number}", False, "stable.py")
        shutil.copytree(tmp_path / f"commit{number}", tmp_path / "repo", dirs_exist_ok=True)  # the checkout
        docs.append(_report((f"{tmp_path}/repo/spec.py:verify", f"{tmp_path}/repo/stable.py:verify"), dtypes))
    return docs[0], docs[1]


def _marks(comparison) -> dict[str, str]:
    return {row.key.split("/repo/")[-1]: row.mark for row in comparison.rows}


def test_compare_of_two_commits_flags_the_planted_regression_and_nothing_else(tmp_path):
    baseline, current = _two_commits(tmp_path, ("float32",))
    comparison = compare_documents(baseline, current)
    assert _marks(comparison) == {"spec.py:verify/float32/batched@cpu": "!",
                                  "stable.py:verify/float32/batched@cpu": " "}
    assert comparison.regressed("new-failure") and not comparison.notes
    flagged = next(r for r in comparison.rows if r.mark == "!")
    assert (flagged.baseline_verdict, flagged.current_verdict) == ("underpowered", "fail")
    assert "source changed" in flagged.reason
    # the same commit against itself: nothing
    assert not compare_documents(current, current).regressed("worse")


@pytest.mark.slow
def test_compare_of_two_commits_in_three_dtypes(tmp_path):
    baseline, current = _two_commits(tmp_path, DTYPES)
    marks = _marks(compare_documents(baseline, current))
    assert marks == {f"{name}:verify/{dtype}/batched@cpu": "!" if name == "spec.py" else " "
                     for name in ("spec.py", "stable.py") for dtype in DTYPES}


def test_a_target_report_has_one_row_per_dtype_and_renders_the_answer_first(tmp_path):
    target = write_commit(tmp_path, bonus_bug=True)
    document = _report((target,), ("float32", "bfloat16"))
    validate(document)
    rows = document["rows"]
    assert sorted(rows) == [f"check/{target}/bfloat16/batched@cpu", f"check/{target}/float32/batched@cpu"]
    row = rows[f"check/{target}/float32/batched@cpu"]
    assert row["verdict"] == "fail" and not row["as_expected"] and row["expected_exact"]
    assert "bonus token (position K+1) taken from the wrong row" in row["detail"]["diagnosis"]
    assert document["summary"]["unexpected"] == sorted(rows)  # what makes specproof report exit 1
    blocks = report_blocks(document, [])
    markdown, html = render_markdown(blocks), render_html(blocks)
    assert markdown.splitlines()[2] == "> **2 of 2 checks of your code FAIL.**"
    assert "float32 FAIL, bfloat16 FAIL" in markdown  # in the order of --dtypes
    assert "## Proofs" not in markdown and "zoo" not in markdown.lower()  # no catalogue unless asked
    assert 'id="your-verifiers"' in html and "<details>" in html  # long findings folded
    shown = next(b for b in blocks if isinstance(b, Table))
    # a drift column only where some check measured drift (these FAILs settle after a few rows); one device: dropped
    assert ("drift (interval)" in shown.header) == any(r["detail"].get("drift") for r in rows.values())
    assert "device" not in shown.header and "V judged" in shown.header and "acceptance sites" in shown.header
    sites = shown.rows[0][shown.header.index("acceptance sites")]
    assert sites.startswith("4 sites, zero coin missed w.p. <=")  # the batched draft positions, from the JSON
    assert rows[f"check/{target}/float32/batched@cpu"]["detail"]["coverage"]["contract"] == "batched"
    assert shown.colours == ["unexpected", "unexpected"]
    summary = terminal_summary(document)
    assert "2 of 2 checks of your code FAIL" in summary
    # one line per cause with its dtypes named once, cut only between whole clauses
    cause = next(line for line in summary.splitlines() if "taken from the wrong row" in line)
    assert f"{target} in float32, bfloat16: bonus token" in cause and summary.count("taken from the wrong row") == 1
    assert cause.endswith(")") or cause.endswith(" ...")


def _check_file(verdict: str = "pass", *, seed: int = 0, samples: int = 0, drift: tuple | None = None,
                target: str = "mypkg.spec:verify", dtype: str = "float16") -> dict:
    """A specproof check --json file as the CLI writes it (the fields compare reads)."""
    result = {"verdict": verdict, "contract": "batched", "dtype": dtype, "device": "cpu", "seed": seed,
              "alpha": 1e-6, "samples_per_scenario": samples, "detectable_tv": 0.018, "max_detectable_tv": 0.02,
              "rows": 900000, "verifier_seconds": 3.0, "harness_seconds": 9.0, "findings_total": 0,
              "level": "samples" if samples else "default", "stop_reason": "complete", "rows_at_first_flag": None,
              "time_budget": None, "injection_summary": "RNG edge injection: not-flagged", "scenarios": [],
              "diagnosis": None}
    if drift is not None:
        result["drift"] = {"estimate": drift[0], "low": drift[1], "high": drift[2], "scenario": "one-hot target",
                           "confidence": 0.99}
    return {"schema": 1, "kind": "check", "provenance": {"git": {}, "versions": {}, "device": "cpu"},
            "target": target, "adapter": None, "contract": "batched", "result": result}


def _compare_checks(tmp_path: Path, baseline: dict, current: dict):
    paths = []
    for name, data in (("a.json", baseline), ("b.json", current)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(tmp_path / name)
    return compare_documents(load_for_compare(paths[0], "BASELINE"), load_for_compare(paths[1], "CURRENT"))


@pytest.mark.parametrize("before, after, mark", [
    (dict(), dict(), " "),
    (dict(), dict(verdict="fail"), "!"),
    (dict(seed=1), dict(verdict="fail"), "!"),  # a finding holds whatever the mode
    (dict(verdict="fail"), dict(), "*"),
    (dict(verdict="fail"), dict(samples=2000), "x"),  # fixed, or only less power? not said
    (dict(), dict(verdict="underpowered"), "+"),
    (dict(verdict="underpowered"), dict(), "-"),
    (dict(), dict(verdict="underpowered", samples=2000), "x"),  # quick vs full: stated, not flagged
    (dict(seed=3), dict(seed=4), " "),
    (dict(drift=(1e-4, 5e-5, 2e-4)), dict(drift=(3e-4, 2.5e-4, 3.5e-4)), "+"),  # disjoint, higher
    (dict(drift=(1e-4, 5e-5, 2e-4)), dict(drift=(1.8e-4, 1.5e-4, 2.5e-4)), " "),  # overlapping: noise
    (dict(drift=(3e-4, 2.5e-4, 3.5e-4)), dict(drift=(1e-4, 5e-5, 2e-4)), "-"),
    (dict(drift=(1e-4, 5e-5, 2e-4)), dict(), " "),  # a figure in one file only: nothing to compare
])
def test_check_files_compare_on_verdict_and_drift_interval_only(tmp_path, before, after, mark):
    comparison = _compare_checks(tmp_path, _check_file(**before), _check_file(**after))
    assert [row.mark for row in comparison.rows] == [mark]
    assert comparison.rows[0].key == "check/mypkg.spec:verify/float16/batched@cpu"
    modes_differ = any(k in before or k in after for k in ("seed", "samples"))
    assert bool(comparison.notes) == modes_differ
    if modes_differ:
        assert "different modes" in comparison.notes[0]


def test_check_files_of_different_targets_are_a_usage_error(tmp_path):
    with pytest.raises(SpecproofInputError, match="no row in common"):
        _compare_checks(tmp_path, _check_file(), _check_file(target="other:verify"))
    with pytest.raises(SpecproofInputError, match="no row in common"):
        _compare_checks(tmp_path, _check_file(), _check_file(dtype="float32"))


def test_a_drift_figure_gets_its_column(tmp_path):
    document = check_file_document(_check_file(drift=(4.1e-4, 3.2e-4, 5.0e-4)), "file")
    header, lines, _ = target_table(document)
    assert lines[0][header.index("drift (interval)")] == "0.00041 (0.00032 .. 0.0005)"


def test_a_check_file_compares_with_the_report_row_of_its_target(tmp_path, capsys):
    target = write_commit(tmp_path / "repo", bonus_bug=False)
    check_json, report_dir = tmp_path / "check.json", tmp_path / "report"
    assert main(["check", target, "--samples", "64", "--quiet", "--json", str(check_json)]) == 3
    assert main(["report", target, "--samples", "64", "--quiet", "--out", str(report_dir)]) == 0
    for name in ("results.json", "report.md", "report.html"):
        assert (report_dir / name).is_file()
    capsys.readouterr()
    assert main(["compare", str(check_json), str(report_dir)]) == 0
    out = capsys.readouterr().out
    assert "1 rows: nothing changed" in out and "no regression" in out


@pytest.mark.parametrize("argv, argument", [
    (["report", "no_such_module_xyz:verify"], "TARGET"),
    (["report", "--catalogue"], "--catalogue"),
    (["report", "--devices", "cpu"], "--devices"),
    (["report", "{spec}", "--dtypes", "float32,float8"], "dtype"),
    (["report", "{spec}", "--samples", "10"], "samples"),
    (["report", "{spec}", "--samples", "100", "--time-budget", "5"], "--time-budget"),
])
def test_report_refuses_bad_target_options_before_measuring(tmp_path, capsys, argv, argument):
    spec = write_commit(tmp_path, bonus_bug=False)
    out = tmp_path / "out"
    argv = [a.replace("{spec}", spec) for a in argv] + ["--out", str(out)]
    assert main(argv) == 2
    assert argument in capsys.readouterr().err
    assert not out.exists()


def test_a_campaign_checks_targets_relative_to_its_file_and_reruns_only_an_edited_one(tmp_path, capsys):
    from specproof.harness.report.campaign import load_campaign, run_campaign

    write_commit(tmp_path / "repo", bonus_bug=False)
    write_commit(tmp_path / "repo", bonus_bug=False, name="stable.py")
    path = tmp_path / "nightly.toml"
    path.write_text('[campaign]\nname = "mine"\nout = "mine-report"\n[budget]\ntarget_samples = 64\n'
                    '[[matrix]]\ntargets = ["repo/spec.py:verify", "repo/stable.py:verify"]\ndtypes = ["float32"]\n')
    first = run_campaign(load_campaign(path), progress=False)
    assert sorted(first["rows"]) == [f"check/{tmp_path}/repo/{name}:verify/float32/batched@cpu"
                                     for name in ("spec.py", "stable.py")]
    write_commit(tmp_path / "repo", bonus_bug=True)  # a commit touches spec.py only
    second = run_campaign(load_campaign(path), progress=False)
    status = {c["name"].rsplit("/", 1)[1]: c["status"] for c in second["campaign"]["cells"]}
    assert status == {"spec.py:verify": "ran", "stable.py:verify": "cached"}
    marks = _marks(compare_documents(first, second))
    assert marks == {"spec.py:verify/float32/batched@cpu": "!", "stable.py:verify/float32/batched@cpu": " "}
    markdown = render_markdown(report_blocks(second, []))
    assert "## Your verifiers" in markdown and "## Campaign: mine" in markdown


@pytest.mark.parametrize("matrix, problem", [
    ('targets = ["repo/nothing.py:verify"]', "not an existing .py file"),
    ('targets = ["repo/spec.py:verify"]\ncontract = "trees"', "contract"),
    ('implementations = ["canonical-ratio-race"]\ncontract = "tree"', "applies to targets"),
    ('targets = ["repo/spec.py:verify"]\npipelines = ["canonical"]', "exactly one of"),
])
def test_a_bad_target_matrix_is_a_usage_error_naming_the_key(tmp_path, matrix, problem):
    from specproof.harness.report.campaign import load_campaign

    write_commit(tmp_path / "repo", bonus_bug=False)
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "x"\n[[matrix]]\n{matrix}\n')
    with pytest.raises(SpecproofInputError, match=problem) as err:
        load_campaign(path)
    assert err.value.argument.startswith("c.toml: matrix[0]")


@pytest.mark.parametrize("verdict, tone", [("pass", "ok"), ("underpowered", "caveat"), ("fail", "not-ok")])
def test_the_banner_is_green_amber_or_red_by_what_the_checks_found(verdict, tone):
    document = check_file_document(_check_file(verdict), "file")
    banner = report_blocks(document, [])[1]
    assert (banner.ok, banner.caveat) == (tone == "ok", tone == "caveat")
    assert f'class="banner {tone}"' in render_html(report_blocks(document, []))
