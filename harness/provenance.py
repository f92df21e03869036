"""Provenance of every stored result, and atomic writes.

Every JSON file specproof writes carries ``schema`` (an integer per file kind) and ``provenance``:
git commit and dirty flag of the working tree, package versions, python, platform, CPU model, device,
and the date.  Files are written atomically: to a temporary file in the same folder, then renamed,
so an interrupted run never leaves half a file.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = ["provenance", "atomic_write_text", "write_json", "git_state", "cpu_model", "device_name"]

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


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """JSON with ``indent=2, sort_keys=True`` (readable diffs), written atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
