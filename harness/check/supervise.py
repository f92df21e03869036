"""Supervised checks: the user's code runs in a child process, so only specproof speaks for the tool.

:func:`supervised` forks a child that runs ``work()`` (for ``specproof check``: import TARGET, run the
one driver, and return the :class:`.result.CheckResult`), and waits for its one answer on a pipe.  The
parent never imports or calls the user's code; its exit code, what it prints on stdout and the files it
writes come from that answer only.  What the child's code did instead of answering is an exit-2 usage
error (:class:`SupervisedError`) that names it:

* ``os._exit(n)`` (also on another thread): the call and the line that made it;
* death by a signal (``SIGKILL``, ``SIGSEGV``, ...), or an exit with no answer: the signal or the code;
* a call (or the import) that runs past its limit and ignores the interrupt: stopped by the parent
  ``GRACE_SECONDS`` after the limit, which :func:`watch` records in shared memory around each call
  (:class:`.calls.Caller`: two stores per call, no tensor crosses the process boundary);
* a non-daemon thread still running when the check ended (in-process, the verdict would print and the
  process never exit);
* a changed working directory (``os.chdir``) at the end of the import or the check.

A process that has loaded torch before the fork (the API, the pytest fixtures; not the CLI, which
forks first) gives the child one torch thread: OpenMP's thread team does not survive a fork, and
its next parallel region would wait forever.  The child is its own process group, its stdout goes to stderr (what the user's code prints cannot pass
for the verdict), and Ctrl-C / SIGTERM in the parent interrupt the child (which stops its Ray) before
the group is killed.  ``in_process`` (``--in-process``; the API's default) gives all of this up: a
verifier's ``os._exit`` ends the caller's process with its code, a lingering thread keeps it alive, a
``chdir`` moves relative paths, and a hang that swallows the interrupt ends the process (exit 2, the
CLI) or blocks (the API).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator

from specproof.errors import SpecproofInputError

__all__ = ["supervised", "watch", "SupervisedError", "GRACE_SECONDS", "INTERRUPT_SECONDS"]

GRACE_SECONDS = 5.0  # a call that ignores its interrupt is stopped this long after its limit
INTERRUPT_SECONDS = 10.0  # after Ctrl-C / SIGTERM, the child's time to stop its workers before it is killed
THREAD_JOIN_SECONDS = 0.5  # non-daemon threads get this long to end after the check
_POLL = 0.2
_NAME_BYTES = 480
_CLOCK = struct.Struct("ddd")  # (start of the running call on time.monotonic, its limit, its grace); 0: none
_WATCH: mmap.mmap | None = None  # set in the child: the parent reads it


class SupervisedError(SpecproofInputError):
    """The user's code ended, killed, hung or altered the supervised child (exit 2)."""


@contextlib.contextmanager
def watch(limit: float | None, what: str, interrupted: bool = True) -> Iterator[None]:
    """Record that user code runs for at most ``limit`` seconds (``what``: the scenario or the import),
    so the parent stops the child when it runs past it: ``GRACE_SECONDS`` past it when the child
    interrupts the code itself at the limit (``interrupted``, the calls), at once otherwise (the
    import).  Nothing outside a supervised child."""
    shared = _WATCH
    if shared is None or limit is None:
        yield
        return
    name = what.encode("utf-8", "replace")[:_NAME_BYTES]
    shared[_CLOCK.size:_CLOCK.size + 2] = struct.pack("H", len(name))
    shared[_CLOCK.size + 2:_CLOCK.size + 2 + len(name)] = name
    _CLOCK.pack_into(shared, 0, time.monotonic(), float(limit), GRACE_SECONDS if interrupted else 0.0)
    try:
        yield
    finally:
        _CLOCK.pack_into(shared, 0, 0.0, 0.0, 0.0)


def _running(shared: mmap.mmap) -> tuple[float, float, float, str]:
    started, limit, grace = _CLOCK.unpack_from(shared, 0)
    size = struct.unpack("H", shared[_CLOCK.size:_CLOCK.size + 2])[0]
    return started, limit, grace, shared[_CLOCK.size + 2:_CLOCK.size + 2 + size].decode("utf-8", "replace")


def _send(fd: int, message: tuple) -> None:
    try:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:  # an answer that cannot cross: said, not lost
        data = pickle.dumps(("crash", f"the answer could not be sent back: {type(err).__name__}: {err}"))
    data = struct.pack("Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def _user_frame() -> str:
    """Where the user's code called: the innermost frame outside this module."""
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _lingering() -> list[str]:
    deadline = time.monotonic() + THREAD_JOIN_SECONDS
    out: dict[str, int] = {}
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            target = getattr(thread, "_target", None)
            code = getattr(target, "__code__", None)
            where = "" if code is None else f", running {target.__qualname__} from {code.co_filename}:{code.co_firstlineno}"
            described = f"'{thread.name}'{where}"
            out[described] = out.get(described, 0) + 1
    return [f"{n} x {d}" if n > 1 else d for d, n in list(out.items())[:3]] + (
        [f"and {len(out) - 3} more kinds"] if len(out) > 3 else [])


def _child(work: Callable[[], Any], fd: int, shared: mmap.mmap, what: str, torch_loaded: bool) -> None:
    global _WATCH
    os.setpgid(0, 0)
    if torch_loaded:  # OpenMP's thread team does not survive a fork: one more parallel region would wait forever
        sys.modules["torch"].set_num_threads(1)
    with contextlib.suppress(Exception):  # the child ends with the parent (Linux)
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdout.flush()
    os.dup2(2, 1)  # the user's prints go to stderr: stdout carries only the parent's verdict
    _WATCH = shared
    real_exit = os._exit

    def exit_noted(code: int) -> None:
        _send(fd, ("exited", f"called os._exit({code!r}) at {_user_frame()}"))
        real_exit(code)

    os._exit = exit_noted
    cwd = os.getcwd()
    try:
        value = work()
        moved = os.getcwd()
        threads = _lingering()
        if moved != cwd:
            raise SupervisedError(what, f"changed the working directory from {cwd} to {moved} (os.chdir)",
                                  "leave the working directory as it is (use absolute paths)")
        if threads:
            raise SupervisedError(what, "left non-daemon threads running after the check: "
                                  + "; ".join(threads), "join your threads before returning, or make them daemon")
        message: tuple = ("ok", value)
    except SpecproofInputError as err:
        message = ("input", (type(err).__name__, err.argument, err.problem, err.fix, err.detail))
    except KeyboardInterrupt:
        message = ("interrupted", None)
    except BaseException as err:  # specproof's own failure: the parent shows its traceback
        message = ("crash", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
    _send(fd, message)
    sys.stderr.flush()
    real_exit(0)


def _read(fd: int, buffer: bytearray) -> tuple | None:
    """The first whole message in ``buffer`` (removed from it), or None."""
    if len(buffer) < 8:
        return None
    size = struct.unpack("Q", buffer[:8])[0]
    if len(buffer) < 8 + size:
        return None
    message = pickle.loads(bytes(buffer[8:8 + size]))
    del buffer[:8 + size]
    return message


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _died(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name} ({number}) before the check ended"
    return f"ended its process with exit code {os.waitstatus_to_exitcode(status)} before the check ended"


def supervised(work: Callable[[], Any], what: str) -> Any:
    """``work()`` in a supervised child (module docstring); its value, or the child's usage error raised
    here, or :class:`SupervisedError` naming what the user's code did.  ``what`` names the user's code
    (TARGET) in those errors."""
    shared = mmap.mmap(-1, _CLOCK.size + 2 + _NAME_BYTES)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    torch_loaded = "torch" in sys.modules  # the CLI forks before torch loads: the child keeps every thread
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        try:
            _child(work, write_fd, shared, what, torch_loaded)
        finally:
            os._exit(70)
    os.close(write_fd)
    buffer = bytearray()
    notes: list[str] = []
    answer: tuple | None = None
    try:
        try:
            while answer is None:
                ready, _, _ = select.select([read_fd], [], [], _POLL)
                if ready:
                    chunk = os.read(read_fd, 1 << 20)
                    if not chunk:
                        break  # the child is gone
                    buffer += chunk
                    while (message := _read(read_fd, buffer)) is not None:
                        if message[0] == "exited":
                            notes.append(message[1])
                        else:
                            answer = message
                            break
                    continue
                started, limit, grace, running = _running(shared)
                if started and time.monotonic() - started > limit + grace:
                    _stop(pid)
                    if not grace:
                        raise SupervisedError(what, f"did not finish {running} within {limit:g} s (--timeout); "
                                              "its process was stopped", "fix the hang, or raise --timeout")
                    raise SupervisedError(what, f"did not return within {limit:g} s on {running} and ignored "
                                          "the interrupt (it catches BaseException); its process was stopped",
                                          "let KeyboardInterrupt/BaseException propagate, fix the hang, or raise "
                                          "--timeout")
        except KeyboardInterrupt:
            _interrupt(pid)
            raise
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_fd)
        shared.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # whatever the user's code left in the group
    if answer is None:
        did = notes[0] if notes else _died(status)
        raise SupervisedError(what, did, "return a result instead of ending the process (no os._exit, "
                              "no signals to itself); the check's verdict was never reached")
    kind, payload = answer
    if kind == "ok":
        return payload
    if kind == "input":
        name, argument, problem, fix, detail = payload
        error = SupervisedError if name == SupervisedError.__name__ else SpecproofInputError
        raise error(argument, problem, fix, detail)
    if kind == "interrupted":
        raise KeyboardInterrupt
    raise RuntimeError(f"the supervised check failed:\n{payload}")


def _interrupt(pid: int) -> None:
    """Ctrl-C / SIGTERM: the child is interrupted (it stops its workers), then its group killed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + INTERRUPT_SECONDS
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.05)
    _stop(pid)
