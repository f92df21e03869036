"""``assert_lossless``: the check as a pytest-friendly assertion (torch.testing-style message)."""

from __future__ import annotations

from typing import Any, Callable

from .check import CheckResult, check_verifier

__all__ = ["assert_lossless"]


def assert_lossless(verify: Callable[..., Any], **kwargs: Any) -> CheckResult:
    """Run :func:`~specproof.harness.check_verifier` and raise ``AssertionError`` on a finding.

    The message has a fixed shape: headline, ``Mismatched events: k / n (p%)``, the worst offenders
    with their scenario, observed and exact values and the allowed band, and the detectable TV.
    Keyword arguments go to ``check_verifier`` (``dtype``, ``device``, ``samples``, ``seed``, ``rule``...).
    Returns the result when the verifier passes."""
    __tracebackhide__ = True
    result = check_verifier(verify, **kwargs)
    if not result.passed:
        raise AssertionError(result.summary())
    return result
