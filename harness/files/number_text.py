"""How a number is written in a table or a sentence of a report (``report.md``, ``bench.md``, the terminal)."""

from __future__ import annotations

import math
from typing import Any

from specproof.harness.files.json_numbers import number_word

__all__ = ["fmt"]


def fmt(x: Any, digits: int = 3) -> str:
    """A short human form of a number (``-`` for missing)."""
    if x is None or x == "":
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        if abs(x) < 10**15:
            return f"{x:,}"
        exponent = int(math.log10(abs(x)))  # exact enough for 3 digits; beyond float range too
        return f"{x / 10**exponent:.{digits}f}e+{exponent}"
    if not math.isfinite(x):
        return str(number_word(x))
    if x == 0:
        return "0"
    if abs(x) >= 1e15:  # a 305-digit integer says nothing a mantissa and exponent do not
        return f"{x:.{digits}e}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"
