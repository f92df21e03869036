"""``assert_lossless``: the check as a pytest-friendly assertion (torch.testing-style message).

Layer: harness.check (2); imports .runner only.
"""

from __future__ import annotations

from typing import Any, Callable

from specproof.harness.check.runner import CheckResult, check_verifier

__all__ = ["assert_lossless"]


def assert_lossless(verify: Callable[..., Any], **kwargs: Any) -> CheckResult:
    """Run :func:`~specproof.harness.check_verifier`; ``AssertionError`` unless the verdict is PASS.

    FAIL and UNDERPOWERED both raise (an underpowered run proves nothing; raise ``samples`` or state a
    larger ``max_detectable_tv``).  The message is :meth:`CheckResult.summary`: headline, a one-line
    diagnosis, ``Mismatched events: k / n (p%)``, at most 10 findings (observed vs exact, tolerance,
    evidence and threshold), and the detectable TV.
    Keyword arguments go to ``check_verifier`` (``dtype``, ``device``, ``samples``, ``seed``, ``rule``...).
    Returns the result when the verifier passes."""
    __tracebackhide__ = True
    result = check_verifier(verify, **kwargs)
    if not result.passed:
        raise AssertionError(result.summary())
    return result
