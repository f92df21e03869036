"""Starting and joining Ray for one command; light (no torch), so a command can start Ray first.

(``start_ray`` is the plain, blocking start; ``specproof report`` and ``campaign`` use it directly,
since their first Ray task comes at once.  :class:`RayStart` wraps it for ``specproof check``.)

:class:`RayStart` joins a cluster at ``address`` (or a Ray already initialised in this process) at
once, or starts a local Ray with ``num_cpus = workers`` in a background thread: the start (about 5 s,
docs/scaling.md) then overlaps what the command does before its first task (importing torch, the exact
laws, the reproducibility batch, the injection).  :meth:`RayStart.ready` waits for it; a Ray that
cannot start or be joined is a usage error (exit 2), raised there.  :meth:`RayStart.stop` waits for a
start still under way and stops what this command started, so no Ray is left behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from typing import Any, Iterator

from specproof.errors import SpecproofInputError

__all__ = ["RayStart", "require_ray", "start_ray", "RAY_INSTALL", "ADDRESS_SECONDS"]

RAY_INSTALL = "pip install specproof[ray]"
ADDRESS_SECONDS = 10.0  # how long an --address is tried before it is refused


def require_ray() -> Any:
    """The ``ray`` module, or exit 2 naming the install command."""
    try:
        import ray
    except ImportError:
        raise SpecproofInputError("--engine", "ray is selected but Ray is not installed",
                                  f"run `{RAY_INSTALL}`, or use --engine local") from None
    return ray


def start_ray(address: str | None, workers: int, python_path: bool = False) -> tuple[Any, bool]:
    """``(ray, started)``: join a Ray already initialised in this process, else start a local one with
    ``num_cpus=workers`` (``python_path``: its workers get this process's ``sys.path`` as PYTHONPATH, so
    they import what the driver imports) or join the cluster at ``address``; ``started`` says whether the
    caller must ``ray.shutdown()`` it.  A Ray that cannot start or be joined is a usage error (exit 2)."""
    ray = require_ray()
    if address is not None:
        _answers(address)  # a dead --address is refused even when this process already runs a Ray
    if ray.is_initialized():
        return ray, False
    try:
        if address is None:
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}}
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False,
                     **({"runtime_env": env} if python_path else {}))
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except SpecproofInputError:
        raise
    except Exception as err:  # a bad address, a cluster that does not answer
        raise SpecproofInputError("--address", f"cannot start or join Ray ({type(err).__name__}: {err})",
                                  "pass the address of a running cluster (ray start --head), or none "
                                  "for a local Ray") from None
    return ray, True


def _answers(address: str, seconds: float | None = None) -> None:
    """Refuse an ``--address`` at which nothing accepts a connection within ``seconds`` (Ray itself
    retries such an address without end).  ``auto`` and addresses without a port are left to Ray."""
    import socket
    import time

    seconds = ADDRESS_SECONDS if seconds is None else seconds
    where = address.split("://", 1)[-1]
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit():
        return
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                     timeout=max(0.1, min(2.0, deadline - time.monotonic()))).close()
            return
        except OSError as err:
            if time.monotonic() + 0.5 >= deadline:
                raise SpecproofInputError("--address", f"nothing answers at {address} (tried for {seconds:g} s: "
                                          f"{err.strerror or err})", "start the cluster there (ray start --head), "
                                          "pass its real address, or drop --address for a local Ray") from None
            time.sleep(0.5)


@contextlib.contextmanager
def _quiet_off_main_thread() -> Iterator[None]:
    """Ray's ``init`` off the main thread warns that it sets no SIGTERM handler; ``specproof check``
    sets its own (``options.sigterm_as_interrupt``: SIGTERM stops it as Ctrl-C does), so that one
    warning is silenced."""
    log = logging.getLogger("ray._private.worker")
    before = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)


def warm_worker() -> None:
    """A no-op task that imports what a check's pieces need (else each worker's first piece pays)."""
    import torch  # noqa: F401

    import specproof.harness.check.driver  # noqa: F401


class RayStart:
    """Ray for one command (module docstring).  ``warm``: after a local start, one :func:`warm_worker`
    task per worker (each holds a CPU, so they spread), never read and never cancelled (a task whose
    result is never read still runs)."""

    def __init__(self, address: str | None, workers: int, *, warm: bool = True):
        self.address, self.workers, self.warm = address, workers, warm
        self.ray: Any = None
        self.started = False  # this command started (or joined) Ray and must shut it down
        self._thread: threading.Thread | None = None
        self._up, self._down = threading.Event(), threading.Event()
        self._error: BaseException | None = None

    def begin(self) -> "RayStart":
        """Join now, or start a local Ray in the background."""
        ray = require_ray()
        if self.address is not None or ray.is_initialized():
            self.ray, self.started = start_ray(self.address, self.workers)
            self._up.set()
            return self
        self._thread = threading.Thread(target=self._start_local, name="specproof-ray-start", daemon=True)
        self._thread.start()
        return self

    def _start_local(self) -> None:
        """The starting thread: start Ray, say so, then stay alive until Ray is stopped.  Ray starts its
        node processes with a parent-death signal, which Linux sends when the *thread* that started
        them ends (measured: the raylet died and the driver aborted), so this thread outlives Ray."""
        try:
            with _quiet_off_main_thread():
                self.ray, self.started = start_ray(None, self.workers)
            if self.warm:
                try:
                    task = self.ray.remote(warm_worker).options(num_cpus=1)
                    for _ in range(self.workers):
                        task.remote()
                except Exception:  # warming is an optimisation: the pieces import what they need anyway
                    pass
        except BaseException as err:  # handed to the driver by ready()
            self._error = err
        finally:
            self._up.set()
        self._down.wait()

    def ready(self) -> Any:
        """The ``ray`` module once Ray is up; the start's failure (a usage error) is raised here."""
        while not self._up.wait(0.1):  # short waits: Ctrl-C stays responsive
            pass
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        return self.ray

    def stop(self) -> None:
        """Shut down what this command started (after a start still under way), then end the thread.
        Idempotent; a Ctrl-C while it waits does not skip the shutdown (it is raised afterwards)."""
        interrupted: BaseException | None = None
        while not self._up.is_set():
            try:
                self._up.wait(0.1)
            except KeyboardInterrupt as err:  # the start is still under way: finish it, then stop it
                interrupted = err
        try:
            if self.started:
                self.started = False
                self.ray.shutdown()
        finally:
            self._down.set()
            if self._thread is not None:
                self._thread.join()
                self._thread = None
        if interrupted is not None:
            raise interrupted
