"""The options several commands share, declared once: ``--json``, ``--out``, ``--quiet``, ``--device``,
``--dtype``, ``--seed``; and their checks, written once (:func:`check_options`).

A command adds an option with ``add_*``; each output option records itself on the parser (its
destination, its flag, whether it names a file or a folder), so :func:`check_options` checks every
output path the command was given, with
:func:`specproof.harness.files.provenance.check_output_path`, and the seed range, before the command
measures or writes anything.  A bad value raises
:class:`~specproof.errors.SpecproofInputError` naming the flag and the fix (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from specproof.harness.files.provenance import check_output_path, resolve_output
from specproof.errors import SpecproofInputError

__all__ = ["add_json", "add_out", "add_quiet", "add_device", "add_dtype", "add_seed", "check_options", "sigterm_as_interrupt",
           "SEED_LIMIT", "DEVICES"]

DEVICES = ("cpu", "cuda")
"""``--device`` choices where a command restricts them: :data:`specproof.impls.registry.DEVICES` (not
imported: that module loads torch, and ``--help`` must not); a test keeps the two equal."""

SEED_LIMIT = 2 ** 63
"""Seeds are integers in ``[0, 2^63)`` (a ``torch.Generator`` seed)."""

_OUTPUTS = "_specproof_outputs"  # parser default: ((dest, flag, what), ...) of the declared output paths
_SEEDS = "_specproof_seeds"  # parser default: the seed destinations to range-check


def _record(parser: argparse.ArgumentParser, key: str, entry: Any) -> None:
    parser.set_defaults(**{key: (*(parser.get_default(key) or ()), entry)})


def add_json(parser: argparse.ArgumentParser, help: str, *, create_folders: bool = False) -> None:
    """``--json PATH``: a file the command writes (atomically); checked before the run.

    ``create_folders``: the writer creates missing folders above the file, so only the nearest
    existing one must be a writable folder."""
    parser.add_argument("--json", type=Path, metavar="PATH", help=help)
    _record(parser, _OUTPUTS, ("json", "--json", "file, folders created" if create_folders else "file"))


def add_out(parser: argparse.ArgumentParser, *, help: str, default: Path | None, folder: bool,
            metavar: str | None = None) -> None:
    """``--out``: the folder (``folder=True``) or file the command writes; checked before the run."""
    parser.add_argument("--out", type=Path, default=default, metavar=metavar or ("DIR" if folder else "PATH"),
                        help=help)
    _record(parser, _OUTPUTS, ("out", "--out", "folder" if folder else "file"))


def add_quiet(parser: argparse.ArgumentParser, help: str = "no progress on stderr") -> None:
    parser.add_argument("--quiet", action="store_true", help=help)


def add_device(parser: argparse.ArgumentParser, *, help: str, choices: tuple[str, ...] | None = None) -> None:
    """``--device`` (default ``cpu``); without ``choices`` the command validates it (e.g. ``cuda:1``)."""
    parser.add_argument("--device", default="cpu", choices=choices, help=help)


def add_dtype(parser: argparse.ArgumentParser, *, help: str, many: bool = False) -> None:
    """``--dtype D`` (default float32), or ``--dtypes D [D ...]`` (default: the command's own set)."""
    if many:
        parser.add_argument("--dtypes", nargs="+", metavar="D", help=help)
    else:
        parser.add_argument("--dtype", default="float32", help=help)


def add_seed(parser: argparse.ArgumentParser, help: str = "integer in [0, 2^63) (default 0)") -> None:
    parser.add_argument("--seed", type=int, default=0, help=help)
    _record(parser, _SEEDS, "seed")


def check_options(args: argparse.Namespace, inputs: tuple[Any, ...] = (), **paths: Path | None) -> None:
    """Check the shared options ``args`` carries: the seed range, then every output path, which is made
    absolute in ``args`` before any user code runs (a target that changes the working directory cannot
    move it) and refused when it is one of the command's ``inputs`` (files it reads) or a folder.

    ``paths`` overrides an output's value by destination (``out=...`` when the command resolves a
    default itself, e.g. ``reports/<device>``)."""
    for dest in getattr(args, _SEEDS, ()):
        seed = getattr(args, dest)
        if not 0 <= seed < SEED_LIMIT:
            raise SpecproofInputError(f"--{dest}", f"{seed} is not in [0, 2^63)", f"pass e.g. --{dest} 0")
    for dest, flag, what in getattr(args, _OUTPUTS, ()):
        path = paths.get(dest, getattr(args, dest))
        if path is None:
            continue
        if what == "file, folders created" and not Path(path).parent.exists():
            check_output_path(Path(path).parent, flag, folder=True)  # the writer creates it; no input is in it
            resolved = Path(path).resolve()
        else:
            resolved = resolve_output(path, flag, [i for i in inputs if i], folder=what == "folder")
        if dest not in paths:
            setattr(args, dest, str(resolved))


def target_file(target: str) -> str | None:
    """The file a ``path.py:function`` TARGET names (None for ``package.module:function``)."""
    where, sep, _ = str(target).rpartition(":")
    return where if sep and where.endswith(".py") else None


@contextlib.contextmanager
def sigterm_as_interrupt() -> Any:
    """SIGTERM raised as ``KeyboardInterrupt`` inside the block (the main thread only: signal handlers
    live there), so a killed command stops its workers and keeps the previous report, as Ctrl-C does."""
    import signal
    import threading

    def terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
