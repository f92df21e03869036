"""pytest plugin (entry point ``pytest11``): options and fixtures for checking verifiers in a test suite.

Options (each also an ini option, ``specproof_samples``, ``specproof_level``, ...; the command line
wins): ``--specproof-level ci|default|thorough`` (``ci``: a test suite's preset, stated bound 0.1),
``--specproof-samples N``, ``--specproof-seed S``, ``--specproof-dtype D``,
``--specproof-device DEV``, ``--specproof-alpha A``, ``--specproof-max-detectable-tv T`` (the power a
PASS must have; default 0.05), ``--specproof-max-drift TV`` (the null band; the ``max_drift`` keyword too),
``--specproof-in-process`` (run the target in the test's own process, not in a supervised child: see
below).  Fixtures:

* ``specproof_check(target, contract="batched", **overrides) -> CheckResult`` - runs the check with the
  options, through the one contract table (``"batched"``, ``"tree"``, ``"generate"``; an unknown name is
  a usage error);
* ``specproof_assert_lossless(verify, **overrides)`` - the same, raising ``AssertionError`` with every
  finding when drift beyond the band (derived, worst case, or max_drift) is detected, or the verdict when the
  run was UNDERPOWERED (its detectable TV above the stated bound); on a FAIL a plain pytest test reproducing
  it (a certain finding's smallest failing case, else a fixed-row check) is saved under the test's
  ``tmp_path`` (the message says where).

Marker: ``@pytest.mark.specproof`` (registered here) selects these tests (``-m specproof``).

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


_INI = {"samples": "verifier rows per scenario", "seed": "seed of the check", "dtype": "dtype under test",
        "device": "device under test", "alpha": "family-wise false-alarm rate", "level": "ci, default or thorough",
        "max_detectable_tv": "the power a PASS must have", "max_drift": "the null band in TV",
        "vocab": "vocabulary sizes of the tiled scenarios (e.g. 151936)"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "specproof: a specproof check of a verifier (select with -m specproof)")


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, text in _INI.items():
        parser.addini(f"specproof_{name}", f"specproof: {text} (--specproof-{name.replace('_', '-')} wins)")
    group = parser.getgroup("specproof", "specproof verifier checks")
    group.addoption("--specproof-level", default=None, help="ci, default or thorough (ci: a test suite's preset)")
    group.addoption("--specproof-samples", type=int, default=None,
                    help="verifier rows per scenario (default: specproof's default)")
    group.addoption("--specproof-seed", type=int, default=None, help="seed of the check (default 0)")
    group.addoption("--specproof-dtype", default=None, help="dtype under test (default float32)")
    group.addoption("--specproof-device", default=None, help="device under test (default cpu)")
    group.addoption("--specproof-alpha", type=float, default=None, help="family-wise false-alarm rate (1e-6)")
    group.addoption("--specproof-max-detectable-tv", type=float, default=None,
                    help="the power a PASS must have (default: specproof's default, 0.05)")
    group.addoption("--specproof-vocab", default=None,
                    help="vocabulary sizes of the tiled scenarios, comma-separated (e.g. 131072,151936)")
    group.addoption("--specproof-in-process", action="store_true", default=False,
                    help="run targets in the test's process, not in a supervised child")
    group.addoption("--specproof-max-drift", type=float, default=None,
                    help="the null band in TV (default: derived from the verifier's observed precision)")


_TYPES = {"samples": int, "seed": int, "alpha": float, "max_detectable_tv": float, "max_drift": float}
_DEFAULTS = {"seed": 0, "dtype": "float32", "device": "cpu", "alpha": 1e-6}


def _settings(config: pytest.Config) -> dict[str, Any]:
    """The check's options: the command line, else the ini file, else specproof's defaults."""
    settings: dict[str, Any] = {}
    for name in _INI:
        value = config.getoption(f"--specproof-{name.replace('_', '-')}")
        if value is None:
            raw = config.getini(f"specproof_{name}")
            value = _TYPES.get(name, str)(raw) if raw not in ("", None, []) else _DEFAULTS.get(name)
        if value is not None:
            settings[name] = value
    settings["in_process"] = config.getoption("--specproof-in-process")
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
        overrides.setdefault("save_failure", request.getfixturevalue("tmp_path") / "specproof-failure")
        return assert_lossless(target, contract, **(defaults | overrides))

    return run
