"""The pytest fixtures' ``contract="generate"``: the plugin's settings mapped onto :func:`check_generate`.

    def test_my_pipeline(specproof_assert_lossless):
        specproof_assert_lossless(my_runtime.generate, contract="generate")

Layer: harness.check (2); imports harness.check only (lazily).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["generate_check", "assert_generate_lossless"]


def generate_check(generate: Callable[..., Any], settings: dict[str, Any]) -> Any:
    """:func:`~.pipeline_check.check_generate` with the plugin's settings (``samples`` is rows per scenario)."""
    from specproof.harness.check.pipeline_check import check_generate

    options = dict(settings)
    if "samples" in options:
        options["rows"] = options.pop("samples")
    return check_generate(generate, **options)


def assert_generate_lossless(generate: Callable[..., Any], settings: dict[str, Any]) -> Any:
    """``AssertionError`` with the summary unless the verdict is PASS (UNDERPOWERED proves nothing)."""
    __tracebackhide__ = True
    result = generate_check(generate, settings)
    if not result.passed:
        raise AssertionError(result.summary())
    return result
