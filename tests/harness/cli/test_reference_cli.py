"""``specproof reference`` and ``specproof --version``: output, JSON, exit codes."""

import json
import subprocess
import sys

import numpy as np
import pytest

from specproof.harness.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("specproof ")


def test_reference_prints_key_figures_and_writes_json(tmp_path, capsys):
    out = tmp_path / "ref.json"
    code = main(["reference", "--p", "1/2, 1/2", "--q", "[1 0]", "--token", "0", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "rejection probability 0.5" in text and "output == target      yes" in text
    data = json.loads(out.read_text())
    assert data["schema"] == 1 and "commit" in data["provenance"]["git"]
    assert data["reference"]["residual"] == ["0/1", "1/1"]
    assert data["reference"]["accept"] == ["1/2", "0/1"]


def test_reference_reads_npy_and_logits(tmp_path, capsys):
    np.save(tmp_path / "p.npy", np.array([0.25, 0.75], dtype=np.float32))
    np.save(tmp_path / "q.npy", np.array([0.5, 0.5], dtype=np.float16))
    assert main(["reference", "--p", str(tmp_path / "p.npy"), "--q", str(tmp_path / "q.npy")]) == 0
    assert "float32, float16" in capsys.readouterr().out
    assert main(["reference", "--p", "0,1", "--q", "1,0", "--logits", "--temperature", "0.5"]) == 0


@pytest.mark.parametrize("argv, fragment", [
    (["reference", "--p", "1/2,1/3", "--q", "1,0"], "p: sums to"),
    (["reference", "--p", "1,0", "--q", "1,0,0"], "q: length"),
    (["reference", "--p", "x", "--q", "1"], "--p: 'x' is not a number"),
    (["reference", "--p", "missing.npy", "--q", "1"], "does not exist"),
    (["reference", "--p", "1/2,1/2", "--q", "1,0", "--token", "1"], "q = 0"),
    (["reference", "--p", "1", "--q", "1", "--logits", "--temperature", "0"], "temperature"),
])
def test_reference_usage_errors_exit_2_and_write_nothing(tmp_path, capsys, argv, fragment):
    out = tmp_path / "never.json"
    assert main(argv + ["--json", str(out)]) == 2
    assert fragment in capsys.readouterr().err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_console_script_exit_code_for_bad_flag():
    proc = subprocess.run([sys.executable, "-m", "specproof.harness.cli.parser", "reference", "--nope"],
                          capture_output=True, text=True)
    assert proc.returncode == 2


@pytest.mark.parametrize("make, flag, fragment", [
    (lambda d: (d / "x.npy").mkdir() or d / "x.npy", "--p", "is a directory"),
    (lambda d: np.save(d / "e.npy", np.zeros(0)) or d / "e.npy", "--p", "empty array"),
    (lambda d: np.save(d / "l.npy", np.ones(3, dtype=np.longdouble)) or d / "l.npy", "--p", "no exact conversion"),
])
def test_unreadable_npy_inputs_name_the_case(tmp_path, capsys, make, flag, fragment):
    path = make(tmp_path)
    assert main(["reference", "--p", str(path), "--q", "1", "0", "0"]) == 2
    err = capsys.readouterr().err
    assert f"error: {flag}" in err and fragment in err and "Traceback" not in err


def test_temperature_without_logits_is_a_usage_error(capsys):
    assert main(["reference", "--p", "0.5", "0.5", "--q", "1", "0", "--temperature", "2"]) == 2
    assert "--temperature: given without --logits" in capsys.readouterr().err


def test_a_meta_or_sparse_tensor_is_refused_by_name():
    import torch

    import specproof

    for tensor, fragment in ((torch.ones(3, device="meta"), "meta device"), (torch.ones(3).to_sparse(), "sparse")):
        with pytest.raises(specproof.SpecproofInputError, match=fragment) as info:
            specproof.exact_reference(tensor, torch.ones(3) / 3)
        assert info.value.argument == "p"
