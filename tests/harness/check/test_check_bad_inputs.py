"""The bad-input matrix of ``specproof check``: case -> exit code -> message fragment -> files intact.

Every row runs the real command line on a folder holding a previous result (``previous.json``) and the
user's own file; afterwards both are byte-identical and nothing else was written.  Exit 2 rows must
print ``specproof check: error:`` with the fragment on stderr and no traceback.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from specproof.harness.cli import main

HERE = Path(__file__).resolve().parents[2] / "support"
T = HERE / "cli_targets.py"
D = HERE / "check_targets"
PREVIOUS = '{"previous": "result"}\n'

# (case id, TARGET and flags (JSON is {json}; {dir} is the run's folder), exit code, fragment)
MATRIX = [
    ("not MODULE:NAME", ["nonsense"], 2, "is not MODULE:NAME"),
    ("missing module", ["no.such.module:verify"], 2, "cannot import module"),
    ("missing name", [f"{T}:missing"], 2, "defines no 'missing'"),
    ("missing file", [f"{HERE / 'absent.py'}:exact"], 2, "not an existing .py file"),
    ("not callable", [f"{T}:NOT_CALLABLE"], 2, "not a function"),
    ("wrong signature", [f"{T}:two_arguments"], 2, "cannot take the batched"),
    ("verifier raises", [f"{T}:raises"], 2, "kernel exploded"),
    ("wrong shape", [f"{T}:wrong_shape"], 2, "shape"),
    ("wrong dtype", [f"{T}:wrong_dtype"], 2, "int64"),
    ("ids out of range", [f"{T}:out_of_range"], 2, "outside"),
    ("-1 holes", [f"{T}:holes"], 2, "holes"),
    ("not a tensor", [f"{T}:not_a_tensor"], 2, "not a tensor"),
    ("output on meta", [f"{T}:on_meta"], 2, "meta device"),
    ("sys.exit(0) at import", [f"{D / 'exits_at_import.py'}:verify"], 2, "called sys.exit(0)"),
    ("sys.exit(0) in verify", [f"{T}:exits_zero"], 2, "called sys.exit(0)"),
    ("own TimeoutError", [f"{T}:own_timeout"], 2, "raised TimeoutError: backend queue timed out"),
    ("hang", [f"{T}:hangs", "--timeout", "0.5"], 2, "did not return within 0.5 s"),
    ("swallows the alarm once", [f"{T}:swallows_everything", "--timeout", "0.5"], 2, "did not return within 0.5 s"),
    ("timeout nan", [f"{T}:exact", "--timeout", "nan"], 2, "--timeout: nan is not a finite"),
    ("timeout inf", [f"{T}:exact", "--timeout", "inf"], 2, "--timeout: inf is not a finite"),
    ("timeout 0", [f"{T}:exact", "--timeout", "0"], 2, "--timeout"),
    ("seed 1e25", [f"{T}:exact", "--seed", "1e25"], 2, "argument --seed: invalid int value"),
    ("seed 10^25", [f"{T}:exact", "--seed", str(10**25)], 2, "--seed: 10000000000000000000000000 is not in"),
    ("seed negative", [f"{T}:exact", "--seed", "-1"], 2, "--seed"),
    ("device mps", [f"{T}:exact", "--device", "mps"], 2, "--device: 'mps': the check runs on 'cpu' or 'cuda'"),
    ("device meta", [f"{T}:exact", "--device", "meta"], 2, "--device: 'meta'"),
    ("device nonsense", [f"{T}:exact", "--device", "tpu9"], 2, "--device"),
    ("dtype int4", [f"{T}:exact", "--dtype", "int4"], 2, "dtype"),
    ("samples 5", [f"{T}:exact", "--samples", "5"], 2, "--samples"),
    ("alpha nan", [f"{T}:exact", "--alpha", "nan"], 2, "--alpha"),
    ("max-detectable-tv 0", [f"{T}:exact", "--max-detectable-tv", "0"], 2, "--max-detectable-tv"),
    ("max-detectable-tv nan", [f"{T}:exact", "--max-detectable-tv", "nan"], 2, "--max-detectable-tv"),
    ("json in a missing folder, before the run", [f"{T}:hangs", "--json", "{dir}/no/such/out.json"], 2, "--json"),
    ("json is a folder, before the run", [f"{T}:hangs", "--json", "{dir}"], 2, "--json"),
    # not usage errors: the documented verdicts
    ("writes into its inputs after use", [f"{T}:scribbles_on_inputs", "--max-detectable-tv", "1"], 0, "PASS"),
    ("imports a module beside it", [f"{D / 'uses_neighbour.py'}:verify", "--max-detectable-tv", "1"], 0, "PASS"),
    ("ignores the generator", [f"{T}:global_rng"], 1,
     "Diagnosis: draws randomness the generator argument does not control"),
    ("too few rows for the bound", [f"{T}:exact"], 3, "UNDERPOWERED"),
]


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        return int(exit_.code)


@pytest.mark.parametrize("case, args, code, fragment", MATRIX, ids=[row[0] for row in MATRIX])
def test_bad_input_matrix(tmp_path, capsys, case, args, code, fragment):
    previous = tmp_path / "previous.json"
    previous.write_text(PREVIOUS)
    previous.chmod(0o644)
    user_file = tmp_path / "mine.txt"
    user_file.write_text("the user's own file\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    argv = ["check", "--samples", "200", "--quiet", *[a.replace("{dir}", str(tmp_path)) for a in args]]
    assert _run(argv) == code, case
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code == 2:
        assert "error:" in err and fragment in err, err
    else:
        assert out.startswith(fragment) or f"\n{fragment}" in out, out
    assert previous.read_text() == PREVIOUS and previous.stat().st_mode & 0o777 == 0o644
    assert user_file.read_text() == "the user's own file\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_failed_run_with_json_keeps_the_previous_result_until_it_succeeds(tmp_path, capsys):
    previous = tmp_path / "previous.json"
    previous.write_text(PREVIOUS)
    assert _run(["check", f"{T}:raises", "--samples", "200", "--quiet", "--json", str(previous)]) == 2
    assert previous.read_text() == PREVIOUS


def test_a_raising_verifier_says_how_to_see_its_traceback(capsys, monkeypatch):
    """By default no traceback, and one line naming the variable that shows it."""
    monkeypatch.delenv("SPECPROOF_TRACEBACK", raising=False)
    assert _run(["check", f"{T}:raises", "--samples", "200", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "kernel exploded" in err and "Traceback" not in err
    assert err.rstrip().endswith("(its traceback: set SPECPROOF_TRACEBACK=1)"), err


@pytest.mark.parametrize("value, shown", [("1", True), ("0", False)])
def test_specproof_traceback_shows_the_verifiers_own_traceback(capsys, monkeypatch, value, shown):
    """Asked for (SPECPROOF_TRACEBACK=1), the supervised child's user traceback reaches the parent's stderr,
    down to the raising line of the user's file; the exit code stays 2."""
    monkeypatch.setenv("SPECPROOF_TRACEBACK", value)
    assert _run(["check", f"{T}:raises", "--samples", "200", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert ("Traceback (most recent call last)" in err) is shown
    assert ('cli_targets.py", line 20, in raises' in err and 'RuntimeError("kernel exploded")' in err) is shown


def test_a_raising_pipeline_carries_its_traceback_through_the_generate_contract():
    """The generate contract rewrites the error's fix; the user's traceback (``detail``) survives it."""
    from specproof.harness.check.calls import VerifierError
    from specproof.harness.check.driver import check

    def generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        raise RuntimeError("pipeline exploded")

    with pytest.raises(VerifierError) as info:
        check(generate, "generate", samples=64, progress=False, inject=False)
    assert info.value.argument == "generate" and "pipeline exploded" in info.value.problem
    assert "in generate" in info.value.detail and info.value.detail.rstrip().endswith("pipeline exploded")


def test_a_usage_error_has_no_traceback_to_show(capsys, monkeypatch):
    monkeypatch.setenv("SPECPROOF_TRACEBACK", "1")
    assert _run(["check", f"{T}:exact", "--timeout", "0"]) == 2
    err = capsys.readouterr().err
    assert "--timeout" in err and "Traceback" not in err and "SPECPROOF_TRACEBACK" not in err


def test_verifier_that_catches_every_interrupt_is_stopped_with_exit_2():
    """The alarm re-fires and is swallowed each time: the CLI's watchdog ends the process (exit 2,
    message, no traceback) a grace period after the limit."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from specproof.harness.cli import main; "
            f"sys.exit(main(['check', {str(T) + ':never_yields'!r}, '--samples', '200', '--timeout', '2', "
            "'--quiet']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "ignored the interrupt" in done.stderr and "Traceback" not in done.stderr
