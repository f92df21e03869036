"""``supervise.supervised``: the child's answer, or what the child's code did, named (issue 45); the API's
``in_process`` switch and the pytest fixtures' supervised default."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from specproof.errors import SpecproofInputError
from specproof.harness.check import supervise
from specproof.harness.check.driver import check
from specproof.harness.check.supervise import SupervisedError, supervised, watch

import unruly_targets

UNRULY = Path(__file__).resolve().parents[2] / "support" / "unruly_targets.py"


def _deaf() -> None:
    with watch(0.2, "scenario 'deaf'"):
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                time.sleep(0.02)
            except BaseException:
                pass


def _raise_input() -> None:
    raise SpecproofInputError("verify", "bad output", "fix it")


def _thread() -> int:
    threading.Thread(target=time.sleep, args=(60,), name="left-behind").start()
    return 1


CASES = [
    (lambda: os._exit(0), "called os._exit(0) at"),
    (lambda: os._exit(3), "called os._exit(3) at"),
    (lambda: os.kill(os.getpid(), signal.SIGKILL), "was killed by SIGKILL (9)"),
    (lambda: os.kill(os.getpid(), signal.SIGTERM), "was killed by SIGTERM (15)"),
    (lambda: os.chdir("/"), "changed the working directory from"),
    (_thread, "left non-daemon threads running after the check: 'left-behind'"),
    (_deaf, "did not return within 0.2 s on scenario 'deaf' and ignored the interrupt"),
]


@pytest.mark.parametrize("work, fragment", CASES, ids=["exit0", "exit3", "sigkill", "sigterm", "chdir", "thread", "hang"])
def test_what_the_child_did_is_named(work, fragment, monkeypatch):
    monkeypatch.setattr(supervise, "GRACE_SECONDS", 0.3)
    cwd = os.getcwd()
    with pytest.raises(SupervisedError) as info:
        supervised(work, "t.py:verify")
    assert info.value.argument == "t.py:verify" and fragment in str(info.value)
    assert os.getcwd() == cwd and not any(t.name == "left-behind" for t in threading.enumerate())


def test_the_answer_and_usage_errors_cross():
    assert supervised(lambda: {"rows": 64}, "x") == {"rows": 64}
    with pytest.raises(SpecproofInputError, match="bad output") as info:
        supervised(_raise_input, "x")
    assert type(info.value) is SpecproofInputError


def test_a_failure_of_specproof_itself_keeps_its_traceback():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        supervised(lambda: 1 // 0, "x")


def test_watch_outside_a_child_does_nothing():
    with watch(0.001, "x"):
        time.sleep(0.01)  # not stopped: only a supervising parent stops anything


def test_the_api_supervises_on_request_and_fixtures_by_default(specproof_check):
    with pytest.raises(SupervisedError, match=r"called os._exit\(3\)"):
        check(unruly_targets.exits_3, samples=64, inject=False, progress=False, in_process=False)
    with pytest.raises(SupervisedError, match=r"called os._exit\(0\)"):
        specproof_check(unruly_targets.exits_0, samples=64, inject=False, progress=False)
    from specproof.impls import canonical_ratio_race

    result = specproof_check(canonical_ratio_race, samples=256, inject=False, progress=False)
    assert result.verdict.value in ("pass", "underpowered") and result.samples == 256
