"""Every command refuses an output path that is one of its inputs, before any work (exit 2, files intact)."""

from __future__ import annotations

import numpy as np
import pytest

from specproof.harness.cli import main

VERIFIER = "from specproof.impls import canonical_ratio_race as verify\n"
RULE = "def my_rule(ar):\n    return None\n"


@pytest.mark.parametrize("case", ["check", "reference", "compare", "prove"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if case == "check":
        (tmp_path / "v.py").write_text(VERIFIER)
        argv, victim = ["check", "v.py:verify", "--samples", "64", "--json", "v.py", "--quiet"], tmp_path / "v.py"
    elif case == "reference":
        np.save(tmp_path / "p.npy", np.array([0.5, 0.5]))
        argv, victim = ["reference", "--p", "p.npy", "--q", "1", "0", "--json", "p.npy"], tmp_path / "p.npy"
    elif case == "compare":
        (tmp_path / "base.json").write_text("{}")
        argv, victim = ["compare", "base.json", "base.json", "--json", "base.json"], tmp_path / "base.json"
    else:
        (tmp_path / "rules.py").write_text(RULE)
        argv, victim = ["prove", "--rule", "rules.py:my_rule", "--json", "rules.py"], tmp_path / "rules.py"
    before = victim.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "input" in err and "Traceback" not in err, err
    assert victim.read_bytes() == before


def test_the_json_path_is_made_absolute_before_the_target_runs(tmp_path, capsys, monkeypatch):
    """A verifier that changes the working directory cannot move the output."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wanders.py").write_text(
        "import os\nfrom specproof.impls import canonical_ratio_race\n"
        "def verify(*args):\n    os.chdir('/')\n    return canonical_ratio_race(*args)\n")
    code = main(["check", "wanders.py:verify", "--samples", "64", "--no-inject", "--json", "out.json", "--quiet",
                 "--max-detectable-tv", "1", "--in-process"])  # supervised, the os.chdir is refused (exit 2)
    assert code in (0, 3) and (tmp_path / "out.json").exists()
