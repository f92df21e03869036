"""Publishing a report folder atomically: ``results.json``, ``report.md`` and ``report.html`` together.

Every file is first written into a temporary folder next to ``out``, which is then renamed into place (an
existing report folder is renamed away first and removed after), so an interrupted run leaves either the
previous report or the new one, never a mix or half a file.  SIGTERM, SIGINT and SIGHUP are held back
for the two renames and the clean-up, so a kill in that window cannot leave the previous report only in
the hidden ``.NAME.*.old`` folder; after a SIGKILL in that window (which nothing can hold back),
:func:`recover_previous` puts the previous report back before the next run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from specproof.errors import SpecproofInputError

from specproof.harness.files.envelope import write_document
from specproof.harness.files.kinds import REPORT
from specproof.harness.files.provenance import atomic_write_text

__all__ = ["OUTPUT_FILES", "check_out_dir", "write_report", "recover_previous"]

OUTPUT_FILES = ("results.json", "report.md", "report.html")


def check_out_dir(out: Path) -> None:
    """Refuse an ``--out`` that is a file or a folder holding files the report does not own."""
    if out.exists() and not out.is_dir():
        raise SpecproofInputError("--out", f"{str(out)!r} is a file", "pass a folder for the report")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in OUTPUT_FILES)
        if foreign:
            raise SpecproofInputError("--out", f"{str(out)!r} holds files the report does not own "
                                      f"({', '.join(foreign[:3])})", "pass an empty or report-only folder")


def recover_previous(out: Path) -> Path | None:
    """If ``out`` is missing but a killed publish left the previous report in ``.NAME.*.old/NAME``,
    move it back to ``out``; returns the folder it came from (None when there was nothing to do)."""
    if out.exists() or not out.parent.is_dir():
        return None
    for backup_dir in sorted(out.parent.glob(f".{out.name}.*.old")):
        backup = backup_dir / out.name
        if backup.is_dir() and {p.name for p in backup.iterdir()} <= set(OUTPUT_FILES):
            os.replace(backup, out)
            shutil.rmtree(backup_dir, ignore_errors=True)
            return backup_dir
    return None


def write_report(document: dict[str, Any], out: str | Path,
                 render: Callable[[dict[str, Any]], tuple[str, str]] | None = None) -> Path:
    """Render and publish ``results.json``, ``report.md`` and ``report.html`` into ``out`` atomically."""
    out = Path(out)
    recover_previous(out)
    check_out_dir(out)
    if render is None:
        from specproof.harness.report.render import render_report as render
    markdown, html = render(document)  # everything is rendered before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    backup_dir = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    backup = backup_dir / out.name
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)  # mkdtemp makes 0700; a report folder is as readable as any other
        write_document(staging / "results.json", REPORT, document)
        atomic_write_text(staging / "report.md", markdown)
        atomic_write_text(staging / "report.html", html)
        for name in OUTPUT_FILES:  # mkstemp makes 0600
            (staging / name).chmod(0o666 & ~umask)
        with _signals_deferred():  # the two renames and the clean-up are not interrupted between them
            try:
                if out.exists():
                    os.replace(out, backup)
                os.replace(staging, out)
            except BaseException:
                if backup.exists() and not out.exists():
                    os.replace(backup, out)  # put the previous report back
                raise
            finally:
                shutil.rmtree(backup_dir, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(backup_dir, ignore_errors=True)
        raise
    return out


@contextlib.contextmanager
def _signals_deferred() -> Any:
    """Hold SIGTERM, SIGINT and SIGHUP for the block: each one that arrives is recorded and raised again
    after it (with the previous handlers back), so a kill in the publish window leaves the new report
    (or the old one), never the old one only in a hidden ``.NAME.*.old`` folder.  Python runs signal
    handlers in the main thread only; elsewhere the block runs unprotected."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    signums = [getattr(signal, n) for n in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, n)]
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in signums}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)
