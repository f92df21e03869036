"""The ``specproof`` command line.

Each subcommand lives in its own module exposing ``add_parser(subparsers)``; the parser it adds sets
``handler(args) -> int`` (the exit code).  When the command line names a subcommand, only that
module is imported, so a command pays for its own dependencies only (``reference`` and every
``--help`` start without torch, sympy or z3).  Exit codes: 0 success, 1 a finding (a failed proof, a
detected drift, a regression), 2 a usage error: bad input raises
:class:`~specproof.proofs.SpecproofInputError`, which is printed and turned into 2 before anything is
written.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from specproof.errors import SpecproofInputError

__all__ = ["main", "build_parser", "SUBCOMMANDS", "SUBCOMMAND_MODULES", "TRACEBACK_VARIABLE"]

#: Set to a value other than ``0`` to see the traceback of an exception that user code raised.
TRACEBACK_VARIABLE = "SPECPROOF_TRACEBACK"

# subcommand -> the module (relative to specproof.harness) whose add_parser adds it, in help order
SUBCOMMANDS = {"reference": "cli.reference", "prove": "cli.prove", "check": "cli.check", "report": "cli.report",
               "campaign": "cli.campaign", "compare": "cli.compare", "bench": "cli.bench"}
SUBCOMMAND_MODULES = tuple(SUBCOMMANDS.values())


def _version() -> str:
    try:
        return version("specproof")
    except PackageNotFoundError:
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its messages, prefix the program name."""


def _named_command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` starts with, if it is a known one (no top-level option before it)."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``specproof`` parser: every subcommand, or only ``command`` (importing only its module)."""
    parser = _Parser(prog="specproof", description=(
        "Prove speculative-sampling verifiers exact, compute exact rational references, "
        "and measure float drift."))
    parser.add_argument("--version", action="version", version=f"specproof {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (SUBCOMMANDS[command],) if command else SUBCOMMAND_MODULES:
        import_module(f"specproof.harness.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_named_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args))
    except SpecproofInputError as err:
        print(f"specproof {args.command}: error: {err}", file=sys.stderr)
        if err.detail:  # user code raised: its traceback on request only
            if os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
                print(err.detail.rstrip("\n"), file=sys.stderr)
            else:
                print(f"(its traceback: set {TRACEBACK_VARIABLE}=1)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"specproof {args.command}: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
