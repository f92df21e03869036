"""harness/check/replay.py: the rerun line a FAIL prints reproduces it bit for bit; --save-failure writes
the smallest failing case and a plain pytest test that fails on the buggy verifier, passes on a fixed one."""

import json
import shlex
import subprocess
import sys

import torch

from specproof.harness.check.driver import check
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


def test_save_failure_says_why_nothing_is_written_for_a_statistical_finding(tmp_path, capsys):
    assert main(["check", "specproof.impls.zoo:resample_from_target", "--samples", "2000", "--no-inject",
                 "--quiet", "--save-failure", str(tmp_path / "case")]) == 1
    assert "--save-failure: nothing written (no certain finding" in capsys.readouterr().out
    assert not (tmp_path / "case").exists()


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
