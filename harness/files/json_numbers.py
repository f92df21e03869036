"""Non-finite floats in JSON: written as the words ``"inf"``, ``"-inf"``, ``"nan"``, read back as floats.

Strict JSON has no infinity or NaN (``json.dumps`` would write the bare tokens ``Infinity``/``NaN``, which
strict readers refuse), so every file specproof writes spells them as words.  ``number_word(x)`` is ``x``
for finite ``x`` and the word otherwise; :func:`json_safe` applies it through dicts, lists and tuples
(keys become strings); :func:`read_number` inverts it (``None`` stays ``None``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NUMBER_WORDS", "number_word", "json_safe", "read_number"]

NUMBER_WORDS: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def number_word(x: float) -> float | str:
    """``x`` if finite, else ``"inf"``, ``"-inf"`` or ``"nan"``."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its word (dict keys as strings, tuples as lists)."""
    if isinstance(value, float):
        return number_word(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def read_number(value: Any) -> float | None:
    """A number as written by :func:`number_word` back to a float (``None`` stays ``None``).

    Raises ``ValueError`` for a string that is not one of :data:`NUMBER_WORDS`."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return NUMBER_WORDS[value]
        except KeyError:
            raise ValueError(f"{value!r} is not a number word ({', '.join(NUMBER_WORDS)})") from None
    return float(value)
