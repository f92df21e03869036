"""harness/check/replay.py: the rerun line a FAIL prints reproduces it bit for bit; --save-failure writes
the smallest failing case and a plain pytest test that fails on the buggy verifier, passes on a fixed one
(a statistical finding: a fixed-row check of one scenario)."""

import ast
import json
import shlex
import subprocess
import sys

import torch
from hypothesis import given, strategies as st

from specproof.harness.check.driver import check
from specproof.harness.check.options import MIN_ROWS
from specproof.harness.check.replay import REPLAY_FACTORS, rounded_up
from specproof.harness.cli.parser import main
from specproof.impls import get

pytest_plugins = ["pytester"]


def _rerun(out):
    line = next(l for l in out.splitlines() if l.startswith("Rerun (reproduces the first finding bit for bit): "))
    return shlex.split(line.split(": ", 1)[1])


def test_the_rerun_line_reproduces_a_certain_finding_bit_for_bit(tmp_path, capsys):
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    assert main(["check", "specproof.impls.zoo:target_rows_shifted", "--seed", "7", "--quiet",
                 "--json", str(first)]) == 1
    words = _rerun(capsys.readouterr().out)
    assert words[:3] == ["specproof", "check", "specproof.impls.zoo:target_rows_shifted"]
    assert "--fail-fast" in words and words[words.index("--seed") + 1] == "7"
    assert main(words[1:] + ["--quiet", "--json", str(again)]) == 1
    a, b = (json.loads(p.read_text())["result"] for p in (first, again))
    assert a["diagnosis"] == b["diagnosis"] and a["rows_at_first_flag"] == b["rows_at_first_flag"]


def test_the_same_seed_with_fail_fast_calls_the_verifier_with_the_same_inputs_and_gets_the_same_tokens():
    fn = get("bonus-from-wrong-row").fn
    default, fast = check(fn, seed=3, progress=False), check(fn, seed=3, fail_fast=True, progress=False)
    (a,), (b,) = default.failing_calls, fast.failing_calls
    assert a.seed == b.seed and torch.equal(a.batch, b.batch) and torch.equal(a.emitted, b.emitted)
    assert "--seed 3 --fail-fast" in default.rerun


def test_a_statistical_fail_reruns_to_the_same_first_finding(tmp_path, capsys):
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    assert main(["check", "specproof.impls.zoo:resample_from_target", "--samples", "2000", "--no-inject",
                 "--quiet", "--json", str(first)]) == 1
    words = _rerun(capsys.readouterr().out)
    assert "--no-inject" in words and "--samples" in words and "--seed" in words
    assert main(words[1:] + ["--quiet", "--json", str(again)]) == 1
    a, b = (json.loads(p.read_text())["result"] for p in (first, again))
    assert a["rows_at_first_flag"] == b["rows_at_first_flag"] == b["rows"]


def test_the_ci_level_s_rerun_line_does_not_restate_its_bound_and_builds_the_same_options():
    from specproof.harness.check.options import CheckOptions
    from specproof.harness.check.replay import rerun_line
    from specproof.harness.cli.check import _options
    from specproof.harness.cli.parser import build_parser

    for given in ({"level": "ci"}, {"level": "ci", "max_detectable_tv": 0.05}, {"samples": 500, "level": "ci"}):
        options = CheckOptions.build("batched", **given)
        words = shlex.split(rerun_line("m:f", options))
        again = _options(build_parser().parse_args(words[1:]), "batched")  # as the command builds them
        assert (again.max_detectable_tv, again.samples) == (options.max_detectable_tv, options.samples), words
    assert "--max-detectable-tv" not in rerun_line("m:f", CheckOptions.build("batched", level="ci"))


def _pytest(path):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                          capture_output=True, text=True, cwd=path.parent, timeout=300)


def test_save_failure_writes_a_plain_pytest_test_that_fails_on_the_bug_and_passes_on_the_fix(tmp_path, capsys):
    module = tmp_path / "my_verify.py"
    module.write_text("from specproof.impls.zoo import bonus_from_wrong_row as verify\n")
    case = tmp_path / "case"
    assert main(["check", f"{module}:verify", "--quiet", "--save-failure", str(case)]) == 1
    assert "Smallest failing case saved: " in capsys.readouterr().out
    saved = torch.load(case / "failure.pt")
    assert saved["draft_probs"].shape[0] <= 4  # at most the failing call (4 rows); one row when it fails alone
    test = case / "test_specproof_failure.py"
    assert "specproof" not in test.read_text().split('"""', 2)[2]  # no specproof import: plain torch
    failed = _pytest(test)
    assert failed.returncode == 1 and "has target probability 0" in failed.stdout, failed.stdout
    module.write_text("from specproof.impls import canonical_ratio_race as verify\n")  # the fix
    passed = _pytest(test)
    assert passed.returncode == 0, passed.stdout


def _snippet_value(text, name):
    return ast.literal_eval(next(l for l in text.splitlines() if l.startswith(f"{name} = ")).split(" = ", 1)[1])


def test_a_statistical_finding_is_saved_as_a_fixed_row_check_that_fails_on_the_bug_and_passes_on_the_fix(
        tmp_path, capsys):
    module = tmp_path / "my_verify.py"
    module.write_text("from specproof.impls.zoo import resample_from_target as verify\n")
    case, report = tmp_path / "case", tmp_path / "check.json"
    assert main(["check", f"{module}:verify", "--samples", "2000", "--no-inject", "--quiet", "--save-failure",
                 str(case), "--json", str(report)]) == 1
    assert "Smallest failing case saved: " in capsys.readouterr().out
    assert sorted(p.name for p in case.iterdir()) == ["test_specproof_failure.py"]  # no failing call to store
    test = case / "test_specproof_failure.py"
    text = test.read_text()
    assert "specproof.harness" not in text  # the public API only
    scenario, rows = _snippet_value(text, "SCENARIO"), _snippet_value(text, "ROWS")
    assert _snippet_value(text, "SETTINGS") == {"dtype": "float32", "device": "cpu", "seed": 0}
    result = json.loads(report.read_text())["result"]
    findings = [f for s in result["scenarios"] for f in s["findings"]]
    assert findings and not any(f["statistic"] is None for f in findings), "this member's findings are statistical"
    shown = min(f["rows"] for f in findings if f["scenario"] == scenario)  # rows when it showed
    assert rows in [rounded_up(shown) * factor for factor in REPLAY_FACTORS] and rows < result["rows"]
    failed = _pytest(test)
    assert failed.returncode == 1 and f"[{scenario}]" in failed.stdout and "more in --json" not in failed.stdout, failed.stdout
    module.write_text("from specproof.impls import canonical_ratio_race as verify\n")  # the fix
    passed = _pytest(test)
    assert passed.returncode == 0, passed.stdout


def test_a_tree_finding_is_saved_as_a_fixed_row_check_with_the_tree_options(tmp_path, capsys):
    """The tree contract keeps no failing call: its findings (this mutant's is statistical, on 'tree-distinct-star')
    get the fixed-row check, under the run's sibling mode; it fails on the mutant and passes on the exact walk."""
    module = tmp_path / "my_tree.py"
    module.write_text("from specproof.impls.verifiers.tree_mutants import tree_iid_assumed as verify\n")
    case = tmp_path / "case"
    assert main(["check", f"{module}:verify", "--contract", "tree", "--siblings", "distinct", "--samples", "3000",
                 "--no-inject", "--quiet", "--save-failure", str(case)]) == 1
    assert "Smallest failing case saved: " in capsys.readouterr().out
    test = case / "test_specproof_failure.py"
    text = test.read_text()
    assert _snippet_value(text, "CONTRACT") == "tree" and _snippet_value(text, "SETTINGS")["siblings"] == ("distinct",)
    assert _pytest(test).returncode == 1
    module.write_text("from specproof.impls.verifiers.tree_rrs import tree_walk as verify\n")  # the fix
    passed = _pytest(test)
    assert passed.returncode == 0, passed.stdout


def test_the_api_saves_a_statistical_finding_with_the_run_s_settings(tmp_path):
    """Through the driver (the pytest fixture's path): the run's dtype and bound reach the fixed-row check."""
    result = check(get("resample-from-target").fn, samples=2000, inject=False, max_detectable_tv=0.05,
                   progress=False, save_failure=tmp_path)
    assert result.saved == [str(tmp_path / "test_specproof_failure.py")]
    text = (tmp_path / "test_specproof_failure.py").read_text()
    assert "from specproof.impls.zoo import resample_from_target as verify" in text
    assert _snippet_value(text, "SETTINGS") == {"dtype": "float32", "device": "cpu", "seed": 0,
                                                "max_detectable_tv": 0.05}


def test_save_failure_says_why_nothing_is_written_for_a_reproducibility_finding_alone(tmp_path, capsys):
    """A verifier that draws from the global RNG has the exact law: only the same-seed pair sees it, and
    the rerun line, not a test of the statistics, reproduces that."""
    module = tmp_path / "global_rng.py"
    module.write_text("import torch\nfrom specproof.impls import canonical_ratio_race\n\n\n"
                      "def verify(draft, target, ids, generator):\n"
                      "    seed = int(torch.randint(0, 2**62, ()))  # the global RNG, not generator\n"
                      "    return canonical_ratio_race(draft, target, ids, torch.Generator().manual_seed(seed))\n")
    assert main(["check", f"{module}:verify", "--samples", "200", "--no-inject", "--quiet",
                 "--save-failure", str(tmp_path / "case")]) == 1
    out = capsys.readouterr().out
    assert "reproducibility" in out and "--save-failure: nothing written (no finding of the statistics" in out
    assert not (tmp_path / "case").exists()


@given(st.integers(min_value=0, max_value=10**8))
def test_rows_are_rounded_up_to_two_significant_digits(rows):
    least, out = max(rows, MIN_ROWS), rounded_up(rows)
    assert least <= out < 1.1 * least or out == least  # at most 10% more rows than the finding needed
    assert len(str(out).rstrip("0")) <= 2


def test_the_fixture_reads_ini_options_registers_its_marker_and_saves_a_certain_failure(pytester):
    """ini options (the command line wins), the ``specproof`` marker, every finding in the message (no
    '--json' inside pytest), and the smallest failing case under the test's tmp_path."""
    pytester.makeini("[pytest]\nspecproof_samples = 1500\nspecproof_max_detectable_tv = 0.5\n")
    pytester.makepyfile("""
import pytest
from specproof.impls import get

@pytest.mark.specproof
def test_bonus(specproof_assert_lossless):
    specproof_assert_lossless(get("bonus-from-wrong-row").fn)

def test_samples(specproof_check):
    assert specproof_check(get("canonical-ratio-race").fn, fail_fast=True).samples == 1500
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert "more in --json" not in text and "bonus token (position K+1) taken from the wrong row" in text
    result.stdout.fnmatch_lines(["*Smallest failing case saved: *specproof-failure/failure.pt*"])
