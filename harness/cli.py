"""The ``specproof`` command line.

Each subcommand lives in its own module exposing ``add_parser(subparsers)``; the parser it adds sets
``handler(args) -> int`` (the exit code).  Exit codes: 0 success, 1 a finding (a failed proof, a
detected drift, a regression), 2 a usage error: bad input raises
:class:`~specproof.proofs.SpecproofInputError`, which is printed and turned into 2 before anything is
written.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from specproof.proofs.errors import SpecproofInputError

__all__ = ["main", "build_parser", "SUBCOMMAND_MODULES"]

# module (relative to specproof.harness) per subcommand, in help order
SUBCOMMAND_MODULES = ("reference_cli", "prove_cli", "check_cli", "report_cli", "compare_cli", "bench_cli",
                      "bench_reference")


def _version() -> str:
    try:
        return version("specproof")
    except PackageNotFoundError:
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its messages, prefix the program name."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specproof", description=(
        "Prove speculative-sampling verifiers exact, compute exact rational references, "
        "and measure float drift."))
    parser.add_argument("--version", action="version", version=f"specproof {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        import_module(f"specproof.harness.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args))
    except SpecproofInputError as err:
        print(f"specproof {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"specproof {args.command}: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
