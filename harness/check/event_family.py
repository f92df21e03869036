"""What every event family is: row keys, contributions in [0, 1], exact expectations, tolerances.

:mod:`.events` and :mod:`.bet_products` build the families; the engine reads them.
Layer: harness.check (2); imports numpy and torch.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np
import torch

__all__ = ["EventFamily", "decode_sequences", "FLOOR_FAMILY", "BET_PRODUCT_FAMILY"]

FLOOR_FAMILY = "correction-floor"  # the family whose events are floors (.events)
BET_PRODUCT_FAMILY = "every-token"  # the family whose events are ceilings on bet products (.bet_products)


@dataclass
class EventFamily:
    """Events sharing one row key: names, exact expectations, contribution matrix, tolerances."""

    name: str
    key: Callable[[torch.Tensor], np.ndarray]
    n_keys: int
    matrix: np.ndarray  # [n_keys, n_events] float64 in [0, 1]
    expected: np.ndarray  # [n_events] float64
    names: list[str]
    zero_tolerance: np.ndarray  # [n_events] bool: events of probability exactly 0
    exact_tv: dict[int, Fraction] = field(default_factory=dict)  # event -> exact TV of its bug class
    rules: dict[int, str] = field(default_factory=dict)  # event -> the incorrect rule it targets
    # known incorrect rule -> the exact means of every event under its law (the bug-class diagnosis)
    predicted: dict[str, np.ndarray] = field(default_factory=dict)
    # event -> 1-based token position of the round at which the event's law first differs from the
    # reference (bug class: first j whose j-token prefix law differs; prefix events: their length)
    positions: dict[int, int] = field(default_factory=dict)
    # which sides of each event a lossless system is held to: "both" (an equality P(A) within the
    # band), "lower" (a floor: the null is E[Y] >= P(A) - band, only shortfalls are evidence) or
    # "upper" (a ceiling: the null is E[Y] <= P(A) + band, only excesses are evidence)
    sides: str = "both"
    # the band around P(A) is tau + tolerance_extra (tau: the stream's round tolerance)
    tolerance_extra: float = 0.0

    @property
    def size(self) -> int:
        return len(self.names)

    def band(self, tau: float) -> np.ndarray:
        """Per-event tolerance ``tau + tolerance_extra`` (0 on zero-tolerance events)."""
        return np.where(self.zero_tolerance, 0.0, tau + self.tolerance_extra)


def decode_sequences(alphabet: int, max_len: int) -> list[tuple[int, ...]]:
    """All sequences of length 1..max_len in code order."""
    out: list[tuple[int, ...]] = []
    for length in range(1, max_len + 1):
        out.extend(itertools.product(range(alphabet), repeat=length))
    return out
