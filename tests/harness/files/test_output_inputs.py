"""Outputs never overwrite inputs: resolve_output gives the absolute path to write and refuses an output
that is one of the command's inputs, or a folder (table-driven; issue 45)."""

import os

import pytest

from specproof.harness.files.provenance import resolve_output
from specproof.errors import SpecproofInputError


@pytest.fixture
def place(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("v.py", "p.npy", "q.npy", "base.json", "cur.json"):
        (tmp_path / name).write_text("input")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "results.json").write_text("{}")
    os.link(tmp_path / "base.json", tmp_path / "hardlink.json")
    os.symlink(tmp_path / "v.py", tmp_path / "link.json")
    return tmp_path


@pytest.mark.parametrize("command, argument, output, inputs, folder, fragment", [
    ("check v.py:verify --json v.py", "--json", "v.py", ["v.py"], False, "'v.py' is the input 'v.py'"),
    ("check ... --json ./sub/../v.py", "--json", "reports/../v.py", ["v.py"], False, "is the input 'v.py'"),
    ("reference --p p.npy --json p.npy", "--json", "p.npy", ["p.npy", "q.npy"], False, "is the input 'p.npy'"),
    ("reference --q q.npy --json ABS", "--json", "{tmp}/q.npy", ["p.npy", "q.npy"], False, "is the input 'q.npy'"),
    ("compare base.json cur --json base.json", "--json", "base.json", ["base.json", "cur.json"], False,
     "is the input 'base.json'"),
    ("compare via a hard link", "--json", "hardlink.json", ["base.json", "cur.json"], False, "is the input"),
    ("check via a symbolic link to the source", "--json", "link.json", ["v.py"], False, "is the input 'v.py'"),
    ("a folder as a file output", "--json", "reports", [], False, "is a folder"),
    ("report --out holding a compared file", "--out", "reports", ["reports/results.json"], True,
     "holds the input 'reports/results.json'"),
    ("report --out that is an input", "--out", "reports", ["reports"], True, "is the input 'reports'"),
])
def test_an_output_that_is_an_input_or_a_folder_is_refused(place, command, argument, output, inputs, folder,
                                                          fragment):
    before = {p: p.read_bytes() for p in place.rglob("*") if p.is_file()}
    with pytest.raises(SpecproofInputError) as error:
        resolve_output(output.format(tmp=place), argument, inputs, folder=folder)
    assert error.value.argument == argument and fragment in error.value.problem, command
    assert error.value.fix  # names what to do instead
    assert {p: p.read_bytes() for p in place.rglob("*") if p.is_file()} == before  # inputs left intact


@pytest.mark.parametrize("output, inputs, folder, expected", [
    ("out.json", ["v.py", "p.npy"], False, "out.json"),
    ("reports/cmp.json", ["base.json", "reports/results.json"], False, "reports/cmp.json"),
    ("new-report", ["base.json"], True, "new-report"),
    ("out.json", [None, "v.py"], False, "out.json"),
])
def test_other_outputs_resolve_to_an_absolute_path(place, output, inputs, folder, expected):
    resolved = resolve_output(output, "--json", inputs, folder=folder)
    assert resolved.is_absolute() and resolved == place / expected
    os.chdir("/")  # what a verifier may do: the resolved path still names the same place
    assert resolved == place / expected


def test_no_output_asked_is_none(place):
    assert resolve_output(None, "--json", ["v.py"]) is None
