"""The bad-input matrix of ``reference``, ``compare`` and ``report``: each case -> exit code -> message
fragment -> every file in the folder intact (nothing written, nothing half-written, nothing removed).

Each case builds its inputs in a fresh folder that also holds a previous output (``previous.json``) and,
for ``report``, a previous report folder; after the command every byte and mode must be as before."""

import importlib.util
import json
import os

import numpy as np
import pytest

from specproof.harness.cli import report as report_cli
from specproof.harness.cli import main

GOOD_ROW = {"key": "whitebox/w/float32/x", "kind": "whitebox", "implementation": "w", "rule": "canonical",
            "dtype": "float32", "input": "x", "expected_exact": True, "passed": True, "as_expected": True,
            "verdict": "within-tolerance", "hashes": {"implementation": "a", "rule": "b", "reference": "c", "input": "d"},
            "figures": {"tv": {"value": 1e-8, "threshold": 1e-6}}, "detail": {}}


def results(**row_changes):
    row = {**GOOD_ROW, **row_changes}
    row = {k: v for k, v in row.items() if v is not DROP}
    return {"schema": 2, "kind": "specproof-report", "provenance": {"device": "cpu"}, "config": {"mode": "quick"},
            "rows": {GOOD_ROW["key"]: row}, "zoo": [], "skipped": []}


DROP = object()


def _write_json(folder, name, data):
    (folder / name).write_text(json.dumps(data))
    return str(folder / name)


def _setup(folder):
    """What every case starts from: a previous output and a previous report folder."""
    (folder / "previous.json").write_text('{"kept": true}\n')
    (folder / "rep").mkdir()
    for name in ("results.json", "report.md", "report.html"):
        (folder / "rep" / name).write_text(f"old {name}\n")
    (folder / "afile").write_text("not a folder\n")
    np.save(folder / "p.npy", np.array([0.5, 0.5]))
    (folder / "empty.npy").write_bytes(b"")
    np.savez(folder / "archive.npz", a=np.ones(2))
    os.replace(folder / "archive.npz", folder / "renamed.npy")
    np.save(folder / "complex.npy", np.array([0.5 + 1j, 0.5]))
    _write_json(folder, "good.json", results())
    _write_json(folder, "no-verdict.json", results(verdict=DROP))
    _write_json(folder, "null-hashes.json", results(hashes=None))
    _write_json(folder, "bad-type.json", results(passed="yes"))
    _write_json(folder, "bad-figure.json", results(figures={"tv": {"value": "big", "threshold": 1e-6}}))
    _write_json(folder, "bad-hash.json", results(hashes={"implementation": 3}))
    (folder / "latin1.json").write_bytes(json.dumps(results()).replace("within", "w\u00efthin").encode("latin-1"))
    rows_list = results()
    rows_list["rows"] = [GOOD_ROW]
    _write_json(folder, "rows-list.json", rows_list)
    _write_json(folder, "schema1-bad.json", {"schema": 1, "provenance": {}, "config": {}, "rows": [3]})
    (folder / "deep.json").write_text("[" * 100000 + "]" * 100000)


def _snapshot(folder):
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None, p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


F = "{d}"  # replaced by the case folder
CASES = [
    # reference: tiny inputs that used to hang or crash, files that are not .npy, outputs checked first
    ("ref-logits-huge-span", ["reference", "--logits", "--p", "1e30,-1e30", "--q", "0,0"], 2, "--p: span 2e+30"),
    ("ref-huge-exponent", ["reference", "--p", "1e999999999,0", "--q", "1,0"], 2, "decimal exponent beyond"),
    ("ref-logits-1e6", ["reference", "--logits", "--p", "1e6,0", "--q", "0,0"], 2, "drop masked tokens"),
    ("ref-temperature-exponent", ["reference", "--logits", "--p", "0,1", "--q", "0,1", "--temperature", "1e-99999999"],
     2, "--temperature"),
    ("ref-empty-npy", ["reference", "--p", F + "/empty.npy", "--q", "1,0"], 2, "is empty (0 bytes)"),
    ("ref-npz-as-npy", ["reference", "--p", F + "/renamed.npy", "--q", "1,0"], 2, "zip archive (an .npz?)"),
    ("ref-complex-npy", ["reference", "--p", F + "/complex.npy", "--q", F + "/p.npy"], 2, "complex"),
    ("ref-nan", ["reference", "--p", "nan,1", "--q", "1,0"], 2, "'nan' is not a number"),
    ("ref-zero-denominator", ["reference", "--p", "1/0", "--q", "1"], 2, "denominator not 0"),
    ("ref-json-is-folder", ["reference", "--p", "1", "--q", "1", "--json", F + "/rep"], 2, "is a folder"),
    ("ref-json-missing-folder", ["reference", "--p", "1", "--q", "1", "--json", F + "/nowhere/r.json"], 2,
     "does not exist"),
    ("ref-json-under-a-file", ["reference", "--p", "1", "--q", "1", "--json", F + "/afile/r.json"], 2, "afile"),
    # compare: every field it reads is validated, the file must be UTF-8 JSON
    ("cmp-no-verdict", ["compare", F + "/good.json", F + "/no-verdict.json"], 2, "lacks verdict"),
    ("cmp-null-hashes", ["compare", F + "/null-hashes.json", F + "/good.json"], 2, "has hashes None"),
    ("cmp-bad-type", ["compare", F + "/good.json", F + "/bad-type.json"], 2, "has passed 'yes', expected true/false"),
    ("cmp-bad-figure", ["compare", F + "/good.json", F + "/bad-figure.json"], 2, "figure 'tv'"),
    ("cmp-bad-hash", ["compare", F + "/good.json", F + "/bad-hash.json"], 2, "hashes.implementation 3"),
    ("cmp-not-utf8", ["compare", F + "/latin1.json", F + "/good.json"], 2, "is not UTF-8"),
    ("cmp-rows-list", ["compare", F + "/good.json", F + "/rows-list.json"], 2, "'rows' that is not an object"),
    ("cmp-schema1-bad-rows", ["compare", F + "/schema1-bad.json", F + "/good.json"], 2, "not a list of objects"),
    ("cmp-deep", ["compare", F + "/deep.json", F + "/good.json"], 2, "nests too deeply"),
    ("cmp-json-is-folder", ["compare", F + "/good.json", F + "/good.json", "--json", F + "/rep"], 2, "is a folder"),
    # report: outputs refused before the run
    ("rep-out-is-file", ["report", "--quick", "--quiet", "--out", F + "/afile"], 2, "is a file"),
    ("rep-out-under-file", ["report", "--quick", "--quiet", "--out", F + "/afile/r"], 2, "--out"),
]


@pytest.fixture
def case_folder(tmp_path, monkeypatch):
    _setup(tmp_path)
    monkeypatch.setattr(report_cli, "run_report", _never)  # a report case must be refused before the run
    return tmp_path


def _never(*args, **kwargs):
    raise AssertionError("the run started: the bad input was not refused first")


@pytest.mark.parametrize("name, argv, code, fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_exits_with_a_message_and_leaves_files_intact(case_folder, capsys, name, argv, code, fragment):
    before = _snapshot(case_folder)
    assert main([a.replace(F, str(case_folder)) for a in argv]) == code
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err and " - " in err  # the problem, then the fix
    assert _snapshot(case_folder) == before


def test_compare_prints_odd_provenance_without_crashing(tmp_path, capsys):
    odd = results()
    odd["provenance"] = {"device": 3, "git": {"commit": 12345, "dirty": "maybe"}, "versions": {"torch": 2}}
    assert main(["compare", _write_json(tmp_path, "odd.json", odd), _write_json(tmp_path, "b.json", results())]) == 0
    assert "12345+dirty" in capsys.readouterr().out


def test_report_without_its_extra_names_it_before_the_run(case_folder, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    before = _snapshot(case_folder)
    assert main(["report", "--quick", "--quiet", "--out", str(case_folder / "new")]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "[report]" in err
    assert _snapshot(case_folder) == before


def test_space_separated_values_and_exact_integer_counts(tmp_path, capsys):
    assert main(["reference", "--p", "0.5", "0.5", "--q", "1", "0"]) == 0
    assert "rejection probability 0.5" in capsys.readouterr().out
    np.save(tmp_path / "counts.npy", np.array([2**60 + 1, 2**60 - 1], dtype=np.int64))
    out = tmp_path / "r.json"
    assert main(["reference", "--p", str(tmp_path / "counts.npy"), "--q", "1,1", "--weights", "--json", str(out)]) == 0
    target = json.loads(out.read_text())["reference"]["target"]
    assert target == [f"{2**60 + 1}/{2**61}", f"{2**60 - 1}/{2**61}"]  # not 1/2: int64 above 2^53 kept exact


def test_a_wide_logit_span_within_the_bound_is_certified_and_written(tmp_path, capsys):
    out = tmp_path / "r.json"  # 11,000 nats: numbers of about 4,800 digits, past Python's 4,300-digit limit
    assert main(["reference", "--logits", "--p", "11000,0", "--q", "0,0", "--json", str(out)]) == 0
    target = json.loads(out.read_text())["reference"]["target"]
    assert max(len(t) for t in target) > 9000 and "rejection probability 0.5" in capsys.readouterr().out
