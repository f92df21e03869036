"""``specproof check --engine local|ray [--address A] [--workers N]``: where a check's rows are drawn.

For ``specproof report`` and ``specproof campaign`` (:func:`report_engine`) the task plan runs either in
local worker processes or as Ray tasks (:mod:`specproof.harness.report.ray_run`).

``local`` (the default): in this process, as always.  ``ray``: the rows of each scenario are sharded
over Ray tasks (:mod:`specproof.harness.check.scale.ray_engine`); with no ``--address`` a local Ray with
``num_cpus = --workers`` is started and stopped by the command, else the cluster at the address is
joined (its nodes must import TARGET: the same path, or an installed package).  Every contract.
Ray is the optional extra ``specproof[ray]``; without it ``--engine ray`` exits 2 naming the install.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, Iterator

from specproof.errors import SpecproofInputError

__all__ = ["add_options", "check_options", "engine_for", "report_engine", "ENGINES"]

ENGINES = ("local", "ray")
DEFAULT_WORKERS = 2


def add_options(parser: argparse.ArgumentParser, what: str = "rows") -> None:
    """``--engine``, ``--address``, ``--workers``; ``what``: ``rows`` (a check's rows are sharded) or
    ``tasks`` (a report's or campaign's task plan runs as Ray tasks)."""
    where = ("where the rows are drawn: in this process (default) or sharded over Ray tasks" if what == "rows" else
             "where the tasks run: local worker processes (default, --jobs) or Ray tasks")
    parser.add_argument("--engine", choices=ENGINES, default="local", help=where + " (pip install specproof[ray])")
    parser.add_argument("--address", metavar="ADDR",
                        help="with --engine ray: a running Ray cluster (default: a local Ray for this command)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="with --engine ray: CPUs of the local Ray (default 2)")


def check_options(args: argparse.Namespace) -> None:
    """Refuse engine flags that cannot apply, and --engine ray without Ray, before any work."""
    engine = getattr(args, "engine", "local")
    if engine == "local":
        for flag, value in (("--address", args.address), ("--workers", args.workers)):
            if value is not None:
                raise SpecproofInputError(flag, "given with --engine local, where it does nothing",
                                          f"add --engine ray or drop {flag}")
        return
    if args.workers is None:
        args.workers = DEFAULT_WORKERS
    if args.workers < 1:
        raise SpecproofInputError("--workers", f"{args.workers} is not a positive integer", "pass e.g. --workers 2")
    from specproof.harness.check.scale.ray_start import require_ray

    require_ray()


@contextlib.contextmanager
def engine_for(args: argparse.Namespace) -> Iterator[Any]:
    """``None`` for the local engine, else an entered RayEngine (Ray stopped on exit, Ctrl-C included)."""
    if getattr(args, "engine", "local") == "local":
        yield None
        return
    from specproof.harness.check.scale.ray_start import RayStart

    start = RayStart(args.address, args.workers).begin()  # before torch is imported: the start overlaps it
    try:
        from specproof.harness.check.scale.ray_engine import RayEngine

        with RayEngine(address=args.address, workers=args.workers, verify=_portable(args.target),
                       adapter=args.adapter, start=start) as engine:
            yield engine
    finally:
        start.stop()  # idempotent: a failure before the engine's own exit still stops Ray


def _portable(target: str) -> str:
    """TARGET with a ``path.py`` made absolute (workers need not share the command's folder)."""
    import os

    where, sep, name = target.rpartition(":")
    if sep and where.endswith(".py") and os.path.exists(where):
        return os.path.abspath(where) + ":" + name
    return target


def report_engine(args: argparse.Namespace) -> Any:
    """The :class:`~specproof.harness.report.execute.ReportEngine` the engine flags name (checked first)."""
    from specproof.harness.report.execute import ReportEngine

    check_options(args)
    return ReportEngine(args.engine, args.address, args.workers or DEFAULT_WORKERS)
