"""harness/check/scale/ray_start.py: a local Ray starts in the background and outlives its thread's work until
stopped; a failed start is a usage error raised where the driver waits; a cluster is joined at once.

These tests use a stand-in ``ray`` module (no Ray needed); the real start is exercised by the ``ray``
tests and the slow CLI test of tests/harness/check/test_ray_engine.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import types

import pytest

from specproof.errors import SpecproofInputError
from specproof.harness.check.scale.ray_start import RayStart


class FakeRay(types.ModuleType):
    """``init`` blocks until ``release`` is set (a slow start) and records the thread it ran on."""

    def __init__(self, fail: bool = False):
        super().__init__("ray")
        self.release = threading.Event()
        self.fail = fail
        self.initialised = False
        self.init_thread: threading.Thread | None = None
        self.init_kwargs: dict = {}
        self.shutdowns = 0
        self.submitted: list[dict] = []

    def is_initialized(self) -> bool:
        return self.initialised

    def init(self, **kwargs):
        self.init_thread = threading.current_thread()
        self.init_kwargs = kwargs
        assert self.release.wait(10)
        if self.fail:
            raise ConnectionError("no cluster there")
        self.initialised = True

    def shutdown(self):
        self.shutdowns += 1
        self.initialised = False

    def remote(self, fn):
        fake = self

        class Task:
            def __init__(self, options=None):
                self.chosen = options or {}

            def options(self, **options):
                return Task(options)

            def remote(self, *args):
                fake.submitted.append(self.chosen)  # one submitted task, with its options
                return object()

        return Task()


@pytest.fixture
def fake_ray(monkeypatch):
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    return ray


def test_a_local_start_runs_in_the_background_and_its_thread_lives_until_stop(fake_ray):
    start = RayStart(None, 3).begin()  # returns while init is still blocked
    assert not fake_ray.initialised and start._thread is not None and start._thread.is_alive()
    fake_ray.release.set()
    assert start.ready() is fake_ray
    assert fake_ray.init_thread is not threading.main_thread() and fake_ray.init_kwargs["num_cpus"] == 3
    assert len(fake_ray.submitted) == 3 and all(o == {"num_cpus": 1} for o in fake_ray.submitted)  # warm-ups
    thread = start._thread
    assert thread.is_alive()  # Ray's node processes die with the thread that started them
    start.stop()
    assert fake_ray.shutdowns == 1 and not thread.is_alive()


def test_stop_during_the_start_waits_for_it_then_shuts_down(fake_ray):
    start = RayStart(None, 2).begin()
    threading.Timer(0.3, fake_ray.release.set).start()
    start.stop()  # nothing is left running: the start finishes, then Ray is stopped
    assert fake_ray.shutdowns == 1 and fake_ray.init_kwargs["num_cpus"] == 2


def test_a_failed_start_is_a_usage_error_where_the_driver_waits(monkeypatch):
    ray = FakeRay(fail=True)
    monkeypatch.setitem(sys.modules, "ray", ray)
    start = RayStart(None, 2).begin()
    ray.release.set()
    with pytest.raises(SpecproofInputError, match="cannot start or join Ray") as err:
        start.ready()
    assert err.value.argument == "--address"
    start.stop()  # nothing was started: nothing to shut down, no error
    assert ray.shutdowns == 0


def test_a_cluster_is_joined_at_once_on_this_thread(fake_ray):
    fake_ray.release.set()
    start = RayStart("10.0.0.1:6379", 2).begin()
    assert fake_ray.initialised and fake_ray.init_thread is threading.main_thread()
    assert fake_ray.init_kwargs["address"] == "10.0.0.1:6379" and start._thread is None
    assert fake_ray.submitted == []  # a cluster's workers are not warmed by this command
    start.stop()
    assert fake_ray.shutdowns == 1  # joined by this command: disconnected on exit


def test_a_ray_already_running_here_is_used_and_left_running(fake_ray):
    fake_ray.initialised = True
    start = RayStart(None, 2).begin()
    assert start.ready() is fake_ray and fake_ray.init_thread is None
    start.stop()
    assert fake_ray.shutdowns == 0


class _WatchedEvent(threading.Event):
    """An event that tells when a wait on it has begun and when a Ctrl-C reached one."""

    def __init__(self):
        super().__init__()
        self.waiting, self.interrupted = threading.Event(), threading.Event()

    def wait(self, timeout=None):
        self.waiting.set()
        try:
            return super().wait(timeout)
        except KeyboardInterrupt:
            self.interrupted.set()
            raise


def test_a_ctrl_c_while_stop_waits_for_the_start_still_stops_ray(fake_ray):
    """Ctrl-C comes once stop() waits for the start, and the start ends only after stop() has seen it
    (no timers racing on a busy machine).  Python's own SIGINT handler is put in place: a run started
    as a background job inherits SIGINT ignored, and then interrupt_main does nothing."""
    import _thread
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        start = RayStart(None, 2).begin()
        start._up = up = _WatchedEvent()  # set by the start thread only after fake_ray.release

        def ctrl_c_then_finish_the_start():
            assert up.waiting.wait(10)
            _thread.interrupt_main()
            up.interrupted.wait(10)
            fake_ray.release.set()

        threading.Thread(target=ctrl_c_then_finish_the_start, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            start.stop()
        assert up.interrupted.is_set()
        assert fake_ray.shutdowns == 1 and start._thread is None
        start.stop()  # idempotent
        assert fake_ray.shutdowns == 1
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_warm_up_that_cannot_be_submitted_is_not_an_error(fake_ray, monkeypatch):
    def no_tasks(fn):
        raise RuntimeError("cannot submit")

    monkeypatch.setattr(fake_ray, "remote", no_tasks)
    fake_ray.release.set()
    start = RayStart(None, 2).begin()
    assert start.ready() is fake_ray
    start.stop()
    assert fake_ray.shutdowns == 1


def test_a_target_that_does_not_exist_is_refused_before_ray_starts(fake_ray, capsys):
    from specproof.harness.cli import main

    fake_ray.release.set()
    code = main(["check", "no_such_module_here:verify", "--engine", "ray", "--quiet"])
    assert code == 2 and "TARGET" in capsys.readouterr().err
    assert fake_ray.init_thread is None and fake_ray.shutdowns == 0
    code = main(["check", "no_such_file_here.py:verify", "--engine", "ray", "--quiet"])
    assert code == 2 and "does not exist" in capsys.readouterr().err and fake_ray.init_thread is None


def test_the_cli_stops_its_ray_when_the_target_does_not_load(fake_ray, capsys):
    """The module exists, the name does not: found while Ray starts; exit 2, and Ray is stopped."""
    from specproof.harness.cli import main

    fake_ray.release.set()
    code = main(["check", "specproof.impls:no_such_verifier", "--engine", "ray", "--quiet"])
    assert code == 2 and "no_such_verifier" in capsys.readouterr().err
    assert fake_ray.shutdowns == 1 and not fake_ray.initialised


def test_engine_for_stops_ray_when_the_engine_cannot_be_built(fake_ray, monkeypatch):
    import argparse

    from specproof.harness.check.scale import ray_engine
    from specproof.harness.cli import check_engine

    def broken(self, **kwargs):
        raise ValueError("engine refused")

    monkeypatch.setattr(ray_engine.RayEngine, "__init__", broken)
    fake_ray.release.set()
    args = argparse.Namespace(engine="ray", address=None, workers=2, target="specproof.impls:x", adapter=None)
    with pytest.raises(ValueError):
        with check_engine.engine_for(args):
            pass
    assert fake_ray.shutdowns == 1


def test_sigterm_stops_a_ray_check_like_ctrl_c(fake_ray, monkeypatch, capsys):
    """SIGTERM during the check: exit 130, nothing written, and the command's Ray is stopped."""
    import os
    import signal

    from specproof.harness.check import driver
    from specproof.harness.cli import main

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM was not raised as an interrupt")

    monkeypatch.setattr(driver, "run_check", killed)
    fake_ray.release.set()
    code = main(["check", "specproof.impls:canonical_ratio_race", "--engine", "ray", "--quiet"])
    assert code == 130 and "interrupted" in capsys.readouterr().err
    assert fake_ray.shutdowns == 1
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back


def test_the_check_starts_ray_before_it_imports_torch(tmp_path):
    """The start can only overlap the torch import if it begins first: recorded at RayStart.begin in a
    fresh interpreter (a stand-in Ray; TARGET loads after the start, then the run is stopped)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys, types\n"
        "from specproof.harness.check.scale import ray_start\n"
        "seen = []\n"
        "def begin(self):\n"
        "    seen.append('torch' in sys.modules)\n"
        "    raise KeyboardInterrupt\n"
        "ray_start.RayStart.begin = begin\n"
        "sys.modules['ray'] = types.ModuleType('ray')\n"
        "from specproof.harness.cli import main\n"
        "code = main(['check', 'specproof.impls:canonical_ratio_race', '--engine', 'ray', '--quiet'])\n"
        "sys.exit(0 if code == 130 and seen == [False] else 1)\n")
    assert subprocess.run([sys.executable, str(script)], capture_output=True).returncode == 0
