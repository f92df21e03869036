"""pytest plugin (entry point ``pytest11``): options and fixtures for checking verifiers in a test suite.

Options: ``--specproof-samples N``, ``--specproof-seed S``, ``--specproof-dtype D``,
``--specproof-device DEV``, ``--specproof-alpha A``, ``--specproof-max-detectable-tv T`` (the power a
PASS must have; default 0.05), ``--specproof-max-drift TV`` (the null band; the ``max_drift`` keyword too),
``--specproof-in-process`` (run the target in the test's own process, not in a supervised child: see
below).  Fixtures:

* ``specproof_check(target, contract="batched", **overrides) -> CheckResult`` - runs the check with the
  options, through the one contract table (``"batched"``, ``"tree"``, ``"generate"``; an unknown name is
  a usage error);
* ``specproof_assert_lossless(verify, **overrides)`` - the same, raising ``AssertionError`` with the
  findings when drift beyond the band (derived, worst case, or max_drift) is detected, or the verdict when the run was
  UNDERPOWERED (its detectable TV above the stated bound).

    def test_my_kernel(specproof_assert_lossless):
        specproof_assert_lossless(my_runtime.verify)

Each check runs in a supervised child process (:mod:`specproof.harness.check.supervise`): a target
that calls ``os._exit``, dies, hangs, leaves a thread running or changes the working directory fails
the test with a usage error naming it, instead of ending or hanging pytest.  ``in_process=True`` (per
call) or ``--specproof-in-process`` runs it in the test's process, for a target whose side effects the
test reads (call counters, mocks) or that cannot be forked; that gives the protection up.

"""

from __future__ import annotations

from typing import Any, Callable

import pytest

__all__ = ["pytest_addoption", "specproof_check", "specproof_assert_lossless"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specproof", "specproof verifier checks")
    group.addoption("--specproof-samples", type=int, default=None,
                    help="verifier rows per scenario (default: specproof's default)")
    group.addoption("--specproof-seed", type=int, default=0, help="seed of the check")
    group.addoption("--specproof-dtype", default="float32", help="dtype under test")
    group.addoption("--specproof-device", default="cpu", help="device under test")
    group.addoption("--specproof-alpha", type=float, default=1e-6, help="family-wise false-alarm rate")
    group.addoption("--specproof-max-detectable-tv", type=float, default=None,
                    help="the power a PASS must have (default: specproof's default, 0.05)")
    group.addoption("--specproof-in-process", action="store_true", default=False,
                    help="run targets in the test's process, not in a supervised child")
    group.addoption("--specproof-max-drift", type=float, default=None,
                    help="the null band in TV (default: derived from the verifier's observed precision)")


def _settings(config: pytest.Config) -> dict[str, Any]:
    settings = {
        "seed": config.getoption("--specproof-seed"),
        "dtype": config.getoption("--specproof-dtype"),
        "device": config.getoption("--specproof-device"),
        "alpha": config.getoption("--specproof-alpha"),
        "in_process": config.getoption("--specproof-in-process"),
    }
    samples = config.getoption("--specproof-samples")
    if samples is not None:
        settings["samples"] = samples
    bound = config.getoption("--specproof-max-detectable-tv")
    if bound is not None:
        settings["max_detectable_tv"] = bound
    drift = config.getoption("--specproof-max-drift")
    if drift is not None:
        settings["max_drift"] = drift
    return settings


@pytest.fixture
def specproof_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    from specproof.harness.check.driver import check

    defaults = _settings(request.config)

    def run(target: Callable[..., Any], contract: str = "batched", **overrides: Any) -> Any:
        return check(target, contract, **(defaults | overrides))

    return run


@pytest.fixture
def specproof_assert_lossless(request: pytest.FixtureRequest) -> Callable[..., Any]:
    from specproof.harness.check.testing.asserts import assert_lossless

    defaults = _settings(request.config)

    def run(target: Callable[..., Any], contract: str = "batched", **overrides: Any) -> Any:
        __tracebackhide__ = True
        return assert_lossless(target, contract, **(defaults | overrides))

    return run
