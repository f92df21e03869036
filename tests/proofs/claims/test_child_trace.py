"""A rule file runs only in a child process: whatever it does at import or in a call, the prover's
process decides, and misbehaviour is exit 2 with the file, the line and the fix, never a traceback."""

import pytest

import specproof.harness.cli.parser as cli
from specproof.proofs import SpecproofInputError, load_user_rule

RULE = '''
from specproof.proofs import StepRule

def acceptance(ar, p, q):
    return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))

def residual_weight(ar, p, q):
    return ar.relu(ar.sub(p, q))

rule = StepRule(name="child-rule", claim="exact", description="", acceptance=acceptance,
                residual_weight=residual_weight)
'''

MISBEHAVIOUR = [  # (code run at import, what the message names)
    ("import os; os._exit(0)", r"ended its process \(exit code 0\)"),
    ("import atexit; atexit.register(print)", "registered an atexit handler"),
    ("import time; time.sleep(60)", "did not finish within 3 s"),
    ("raise GeneratorExit", "raised GeneratorExit.* at rules.py:1"),
    ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    ("class Stop(BaseException): pass\nraise Stop('no')", "raised Stop: no at rules.py:2"),
    ("raise SystemExit(0)", r"called sys.exit\(0\)"),
    ("import sys; sys.setrecursionlimit(12345)", "changed the recursion limit"),
    ("import signal; signal.signal(signal.SIGTERM, lambda *a: None)", "signal handler .*SIGTERM"),
    ("import specproof.proofs.claims.pipeline as pl", "imports specproof.proofs.claims.pipeline, an internal"),
    ("import sys; sys._getframe(0)", r"inspects the interpreter \(sys._getframe at rules.py:1\)"),
    ("import sys\ntry:\n    sys._getframe(0)\nexcept Exception:\n    pass", "inspects the interpreter"),
    ("1 / 0", r"ZeroDivisionError: division by zero at rules.py:1"),
]


@pytest.mark.parametrize("code, message", MISBEHAVIOUR)
def test_misbehaviour_at_import_is_a_usage_error(tmp_path, code, message):
    path = tmp_path / "rules.py"
    path.write_text(code + "\n" + RULE)
    with pytest.raises(SpecproofInputError, match=message):
        load_user_rule(f"{path}:rule", timeout=3)


def test_misbehaviour_in_a_call_is_a_usage_error(tmp_path):
    path = tmp_path / "rules.py"
    path.write_text(RULE + "\ndef frames(ar, p, q):\n    import sys\n    sys._getframe(1)\n    return p\n"
                    "peeks = StepRule('peeks', 'exact', '', acceptance, frames)\n")
    with pytest.raises(SpecproofInputError, match="inspects the interpreter"):
        load_user_rule(f"{path}:peeks", timeout=10)


@pytest.mark.parametrize("code", ["import os; os._exit(0)", "import atexit; atexit.register(print, 'x')",
                                  "print('canonical exact PROVED')", "raise KeyboardInterrupt"])
def test_the_exit_code_and_output_never_come_from_user_code(tmp_path, capsys, code):
    path = tmp_path / "rules.py"
    path.write_text(code + "\n" + RULE.replace("residual_weight=residual_weight", "residual_weight=acceptance"))
    code_out = cli.main(["prove", "--rule", f"{path}:rule", "--no-drift", "--timeout", "20"])
    out, err = capsys.readouterr()
    assert "canonical exact PROVED" not in out and "Traceback" not in err
    if code.startswith("print"):
        assert code_out == 1 and "REFUTED" in out  # proved by specproof: the residual weight is wrong
    else:
        assert code_out == 2 and "--rule" in err


def test_the_parent_never_imports_the_file(tmp_path):
    marker = tmp_path / "imported_in"
    path = tmp_path / "rules.py"
    path.write_text(f"import os\nopen({str(marker)!r}, 'a').write(str(os.getpid()) + '\\n')\n" + RULE)
    import os
    entry = load_user_rule(f"{path}:rule", timeout=20)
    pids = marker.read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()
    assert entry.trace is not None and "safe_div" in entry.trace.show()


@pytest.mark.parametrize("name, message", [
    ("None", "name is a NoneType"), ("['a']", "name is a list"), ("'two\\nlines'", "unprintable"),
    ("'\\u0441anonical'", "up to look-alike characters"), ("'CANONICAL'", "look-alike"), ("''", "empty"),
])
def test_rule_names_must_be_printable_and_unlike_the_catalogue(tmp_path, name, message):
    path = tmp_path / "rules.py"
    path.write_text(RULE.replace('name="child-rule"', f"name={name}"))
    with pytest.raises(SpecproofInputError, match=message):
        load_user_rule(f"{path}:rule", timeout=20)
