"""Output files: the early path check, ordinary file modes, and symbolic links written through."""

from __future__ import annotations

import json
import os
import stat

import pytest

from specproof.harness.files.provenance import atomic_write_text, check_output_path, write_json
from specproof.errors import SpecproofInputError


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_file_gets_the_ordinary_mode(tmp_path, umask_022):
    path = write_json(tmp_path / "a.json", {"x": 1})
    assert _mode(path) == 0o644
    assert json.loads(path.read_text()) == {"x": 1}


def test_the_umask_applies(tmp_path):
    old = os.umask(0o077)
    try:
        path = atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert _mode(path) == 0o600


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "a.json"
    path.write_text("old")
    path.chmod(0o640)
    write_json(path, [1])
    assert _mode(path) == 0o640
    assert json.loads(path.read_text()) == [1]


def test_a_symlink_is_written_through(tmp_path, umask_022):
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o664)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_json(link, {"new": True})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text()) == {"new": True}
    assert _mode(real) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path, umask_022):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "sub" / "made.json")
    check_output_path(link, "--json")
    write_json(link, 3)
    assert link.is_symlink() and (tmp_path / "sub" / "made.json").read_text() == "3\n"


def test_no_temporary_file_is_left_after_a_failed_write(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_json(path, {"x": object()})
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


@pytest.mark.parametrize("setup, fragment", [
    (lambda d: d / "missing" / "x.json", "does not exist"),
    (lambda d: (d / "folder").mkdir() or d / "folder", "is a folder"),
    (lambda d: "", "the path is empty"),
])
def test_bad_file_paths_are_refused_naming_the_argument(tmp_path, setup, fragment):
    with pytest.raises(SpecproofInputError) as err:
        check_output_path(setup(tmp_path), "--json")
    assert err.value.argument == "--json"
    assert fragment in str(err.value) and err.value.fix


def test_a_file_inside_a_file_is_refused(tmp_path):
    (tmp_path / "plain").write_text("")
    with pytest.raises(SpecproofInputError, match="does not exist"):
        check_output_path(tmp_path / "plain" / "x.json", "--json")


def test_unwritable_folder_and_file_are_refused(tmp_path, monkeypatch):
    # os.access is the check's only source of permissions; replacing it keeps the test meaningful
    # under root, which may write anywhere.
    locked = tmp_path / "locked"
    locked.mkdir()
    ro = tmp_path / "ro.json"
    ro.write_text("keep")
    denied = {str(locked), str(ro)}
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: str(p) not in denied and real_access(p, mode))
    with pytest.raises(SpecproofInputError, match="is not writable"):
        check_output_path(locked / "x.json", "--out")
    with pytest.raises(SpecproofInputError, match="not a writable folder"):
        check_output_path(locked / "new" / "deeper", "--out", folder=True)
    with pytest.raises(SpecproofInputError, match="exists and is not writable"):
        check_output_path(ro, "--json")
    assert ro.read_text() == "keep"


def test_good_paths_pass(tmp_path):
    check_output_path(None, "--json")
    check_output_path(tmp_path / "new.json", "--json")
    (tmp_path / "old.json").write_text("")
    check_output_path(tmp_path / "old.json", "--json")
    check_output_path(tmp_path / "a" / "b" / "report", "--out", folder=True)
    check_output_path(tmp_path, "--out", folder=True)


def test_a_folder_output_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "plain").write_text("")
    with pytest.raises(SpecproofInputError, match="is a file, not a folder"):
        check_output_path(tmp_path / "plain", "--out", folder=True)


def test_bench_reference_refuses_a_bad_out_before_measuring(tmp_path, capsys, monkeypatch):
    from specproof.harness.bench import reference as bench_reference
    from specproof.harness.cli import main

    monkeypatch.setattr(bench_reference, "bench_exact_reference",
                        lambda *a, **k: pytest.fail("measured before checking --out"))
    assert main(["bench", "--only", "reference", "--vocab", "4", "--out", str(tmp_path / "nowhere")]) == 2
    assert "--out: the folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_refuses_new_files_is_refused_before_the_run(tmp_path, monkeypatch):
    """Root passes os.access on /proc or a read-only mount, but creating a file there fails: the
    probe file catches it, so the command exits 2 before the run instead of a traceback after it."""
    import tempfile

    from specproof.harness.files import provenance
    from specproof.errors import SpecproofInputError

    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(SpecproofInputError, match="not writable"):
        provenance.check_output_path(tmp_path / "out.json", "--json")
    monkeypatch.undo()
    provenance.check_output_path(tmp_path / "out.json", "--json")  # a real folder passes
    assert list(tmp_path.iterdir()) == []  # the probe left nothing
