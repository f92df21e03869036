"""Provenance of every stored result, and atomic writes.

Every JSON file specproof writes carries ``schema`` (an integer per file kind) and ``provenance``:
git commit and dirty flag of the working tree, package versions, python, platform, CPU model, device,
and the date.  Files are written atomically: to a temporary file in the same folder, then renamed,
so an interrupted run never leaves half a file.  A new file gets the ordinary mode (``0666`` less the
umask), a replaced file keeps its mode, and a symbolic link is written through (the link stays).
Commands call :func:`resolve_output` on every output argument before their run (and before any user code
runs, which could change the working directory): it returns the absolute path to write, and refuses a path
that could not be written (:func:`check_output_path`) or that is one of the command's inputs, so an output
never overwrites the verifier's source, a ``--p`` file or a compared baseline.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import secrets
import stat
import subprocess
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable

from specproof.errors import SpecproofInputError

__all__ = ["provenance", "atomic_write_text", "write_json", "check_output_path", "resolve_output", "git_state",
           "cpu_model", "device_name"]

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def git_state(root: Path = _REPO_ROOT) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout specproof runs from."""
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    status = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    """Human name of a torch device ('cpu' gives the CPU model)."""
    if str(device).startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return cpu_model()


def provenance(*, device: str = "cpu", dtypes: list[str] | None = None, seeds: list[int] | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provenance block stored with a result."""
    record: dict[str, Any] = {
        "git": git_state(),
        "versions": {name: _pkg_version(name) for name in
                     ("specproof", "torch", "numpy", "sympy", "mpmath", "z3-solver", "hypothesis")},
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
        "device_name": device_name(device),
        "dtypes": list(dtypes or []),
        "seeds": list(seeds or []),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if extra:
        record.update(extra)
    return record


def _writable_dir(folder: Path) -> bool:
    """Permission bits say yes *and* a file can really be created there (``/proc``, a read-only mount:
    root passes ``os.access`` but the write fails); the probe file is removed at once."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(prefix=".specproof-probe.", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def check_output_path(path: str | os.PathLike[str] | None, argument: str, *, folder: bool = False) -> None:
    """Refuse an output path that the run could not write, before the run.

    ``folder=False``: ``path`` names a file (followed through symbolic links); its folder must exist
    and be writable, and the file, if present, must be a writable regular file.  ``folder=True``:
    ``path`` names a folder that the command creates or replaces; it must not be a file, and its
    nearest existing ancestor must be a writable folder.  ``None`` (no output asked) passes.
    Raises :class:`SpecproofInputError` naming ``argument`` and the fix.
    """
    if path is None:
        return
    given = os.fspath(path)
    if not str(given).strip():
        raise SpecproofInputError(argument, "the path is empty", "give a file path")
    target = Path(os.path.realpath(given))
    if folder:
        if target.exists() and not target.is_dir():
            raise SpecproofInputError(argument, f"{given!r} is a file, not a folder",
                                      "pass a folder path (it is created if missing)")
        ancestor = target.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir() or not _writable_dir(ancestor):
            raise SpecproofInputError(argument, f"cannot create {given!r}: {str(ancestor)!r} is not a "
                                      "writable folder", "choose a folder you can write to")
        return
    if target.is_dir():
        raise SpecproofInputError(argument, f"{given!r} is a folder",
                                  f"give a file path, e.g. {os.path.join(given, 'result.json')!r}")
    parent = target.parent
    if not parent.is_dir():
        raise SpecproofInputError(argument, f"the folder {str(parent)!r} does not exist",
                                  f"create it first (mkdir -p {str(parent)!r}) or choose another path")
    if not _writable_dir(parent):
        raise SpecproofInputError(argument, f"the folder {str(parent)!r} is not writable",
                                  "choose a folder you can write to")
    if target.exists():
        if not target.is_file():
            raise SpecproofInputError(argument, f"{given!r} is not a regular file", "give a file path")
        if not os.access(target, os.W_OK):
            raise SpecproofInputError(argument, f"{given!r} exists and is not writable",
                                      "make it writable (chmod u+w) or choose another path")


def _same_file(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:
        return False


def resolve_output(path: str | os.PathLike[str] | None, argument: str,
                   inputs: Iterable[str | os.PathLike[str] | None] = (), *, folder: bool = False) -> Path | None:
    """The absolute path (symbolic links followed) to write output ``argument`` to, checked before the run.

    Refuses (:class:`SpecproofInputError` naming ``argument``, the clash and the fix) what
    :func:`check_output_path` refuses - a file output that is a folder, a folder output that is a file,
    an unwritable place - and an output that is one of the command's ``inputs`` (the target's file,
    ``--p``/``--q`` files, the compared files; ``None`` entries are skipped): for a file output, the same
    file; for a ``folder`` output (replaced whole), a folder holding an input.  ``None`` (no output asked)
    gives ``None``.  Resolve every output before any user code runs: the answer must not depend on a
    working directory that code could change.
    """
    if path is None:
        return None
    check_output_path(path, argument, folder=folder)
    given = os.fspath(path)
    target = Path(os.path.realpath(given))
    for source in inputs:
        if source is None:
            continue
        source_path = Path(os.path.realpath(os.fspath(source)))
        clash = (target == source_path or source_path.is_relative_to(target)) if folder else \
            _same_file(target, source_path)
        if clash:
            what = "holds" if folder and target != source_path else "is"
            raise SpecproofInputError(
                argument, f"{given!r} {what} the input {os.fspath(source)!r} of this command: writing "
                f"{'the folder' if folder else 'it'} would destroy {'that input' if what == 'holds' else 'it'}",
                "write the output somewhere else, e.g. " + repr(os.path.join(str(target.parent), "out-" + target.name)))
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename).

    A symbolic link is followed: its target is replaced and the link kept.  A new file gets mode
    ``0666`` less the umask, as ``open()`` gives; a replaced file keeps its mode.  Returns ``path``.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        keep_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        keep_mode = None
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if keep_mode is not None:
                os.fchmod(handle.fileno(), keep_mode)
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return given


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """JSON with ``indent=2, sort_keys=True`` (readable diffs), written atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
