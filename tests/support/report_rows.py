"""What two report runs must agree on: their rows without the timing fields."""

from __future__ import annotations

from typing import Any

TIMING = {"seconds", "wall"}


def without_timing(value: Any) -> Any:
    """``value`` (a row, a dict of rows, a list) with every timing field removed: ``seconds``, ``wall``
    and each ``*_seconds``."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value
