"""A time budget for proving one rule: the proof runs in a child process that is stopped at expiry.

:func:`run_with_budget` forks, runs ``prove()`` in the child and waits at most ``timeout`` seconds
for its :class:`~specproof.proofs.engine.results.ProofResult`.  On expiry the child is killed and the
result is INCONCLUSIVE with the reason (z3's own ``rlimit`` still bounds every single check).  A
:class:`~specproof.errors.SpecproofInputError` raised in the child (a user rule's usage
error) is raised again in the parent; a child that dies or raises anything else is reported through
``on_crash`` (a usage error for user rules: the rule's own code killed its process).  Inside a
daemonic worker process (which may not fork) the call runs in that process, without the time bound.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from typing import Any, Callable

from specproof.errors import SpecproofInputError
from specproof.proofs.engine.results import ProofResult, Verdict, solver_versions

__all__ = ["run_in_child", "run_with_budget"]


def _child(fn: Callable[[], Any], conn: Any) -> None:
    try:
        message: tuple = ("ok", fn())
    except SpecproofInputError as err:
        message = ("input", (err.argument, err.problem, err.fix))
    except BaseException as err:  # reported to the parent, which decides what it means
        message = ("crash", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
    try:
        conn.send(message)
    except Exception as err:  # e.g. an unpicklable value in the result
        conn.send(("crash", f"the result could not be sent back: {type(err).__name__}: {err}"))
    conn.close()


def run_in_child(fn: Callable[[], Any], timeout: float) -> tuple[str, Any]:
    """``fn()`` in a forked child, at most ``timeout`` seconds: ``("ok", value)``, ``("crash", text)``,
    ``("timeout", None)`` or ``("died", exit code)``; a SpecproofInputError is raised again here."""
    if multiprocessing.current_process().daemon:  # a daemonic worker may not fork: run here, unbounded
        try:
            return "ok", fn()
        except SpecproofInputError:
            raise
        except (Exception, SystemExit) as err:
            return "crash", f"{type(err).__name__}: {err}"
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(fn, send), daemon=True)
    process.start()
    send.close()
    message: tuple | None = None
    try:
        if receive.poll(timeout):
            try:
                message = receive.recv()
            except EOFError:
                message = None
        else:
            message = ("timeout", None)
    finally:
        process.join(timeout=1)
        if process.is_alive():
            process.kill()
            process.join()
        receive.close()
    if message is None:
        return "died", process.exitcode
    if message[0] == "input":
        raise SpecproofInputError(*message[1])
    return message


def run_with_budget(name: str, claim: str, prove: Callable[[], ProofResult], timeout: float, rlimit: int,
                    on_crash: Callable[[str], BaseException]) -> ProofResult:
    """``prove()`` in a child process, at most ``timeout`` seconds (see the module docstring)."""
    start = time.perf_counter()
    kind, payload = run_in_child(prove, timeout)
    if kind == "ok":
        return payload
    if kind == "crash":
        raise on_crash(payload)
    if kind == "died":
        raise on_crash(f"its process ended with exit code {payload} before returning a result")
    return ProofResult(name, claim, Verdict.INCONCLUSIVE, "stopped at the time budget", "none",
                       time.perf_counter() - start, solver_versions(rlimit),
                       reason=f"time budget of {timeout:g} s expired (--timeout); nothing was proved or refuted",
                       scope="none")
