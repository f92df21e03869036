"""``assert_lossless``: the check as an assertion (torch.testing-style message), for pytest and scripts."""

from __future__ import annotations

from typing import Any, Callable

from specproof.harness.check.driver import check
from specproof.harness.check.result import CheckResult

__all__ = ["assert_lossless"]


def assert_lossless(target: Callable[..., Any], contract: str = "batched", *, save_failure: Any = None,
                    **options: Any) -> CheckResult:
    """Run :func:`~specproof.harness.check.driver.check`; ``AssertionError`` unless the verdict is PASS.

    FAIL and UNDERPOWERED both raise (an underpowered run proves nothing; raise ``samples`` or state a
    larger ``max_detectable_tv``).  The message is :meth:`CheckResult.summary`: headline, a one-line
    diagnosis, ``Mismatched events: k / n (p%)``, at most 10 findings (observed vs exact, tolerance,
    evidence and threshold), and the detectable TV.  ``contract`` and ``options`` are :func:`check`'s.
    Returns the result when the target passes.  Every finding is listed (a JUnit report has no --json to
    point to); ``save_failure``: a folder where a plain pytest test reproducing the FAIL is written
    (:func:`.replay.save_failure`: a certain finding's smallest failing case, else a fixed-row check)."""
    __tracebackhide__ = True
    result = check(target, contract, save_failure=save_failure, **options)
    if not result.passed:
        raise AssertionError(result.summary(more=None))
    return result
