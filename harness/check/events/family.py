"""What every event family is: row keys, contributions in [0, 1], exact expectations, tolerances.

:mod:`.events` and :mod:`.bet_products` build the families; the engine reads them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np
import torch

__all__ = ["EventFamily", "decode_sequences", "FLOOR_FAMILY", "BET_PRODUCT_FAMILY", "sequence_codes", "sequence_keys",
           "emitted_lengths", "first_difference", "as_numpy"]

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


def sequence_codes(alphabet: int, max_len: int) -> np.ndarray:
    """Offsets of variable-length sequences: code = offset[L] + sum_j s_j A^(L-1-j), L = 1..max_len."""
    offsets = np.zeros(max_len + 2, dtype=np.int64)
    for length in range(1, max_len + 1):
        offsets[length + 1] = offsets[length] + alphabet**length
    return offsets


def emitted_lengths(emitted: torch.Tensor) -> torch.Tensor:
    """Number of emitted tokens per row (the contract guarantees no -1 holes)."""
    return (emitted >= 0).sum(dim=1)


def as_numpy(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """Small integer work in numpy (single-threaded): torch's threaded kernels crawl on a busy machine."""
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def sequence_keys(emitted: torch.Tensor, alphabet: int, classes: int, k: int) -> np.ndarray:
    """Code of each row's emitted sequence, tokens mapped to ``token % classes`` (alphabet = classes)."""
    out = as_numpy(emitted)
    lengths = (out >= 0).sum(axis=1)
    offsets = sequence_codes(alphabet, k + 1)
    code = np.zeros(out.shape[0], dtype=np.int64)
    for j in range(k + 1):
        inside = j < lengths
        code = np.where(inside, code * alphabet + np.maximum(out[:, j], 0) % classes, code)
    return offsets[lengths] + code


def first_difference(a: dict[tuple[int, ...], Fraction], b: dict[tuple[int, ...], Fraction],
                     length: int) -> int | None:
    """Smallest ``j`` in ``1..length`` at which the laws of the first ``j`` tokens differ (exactly)."""
    for j in range(1, length + 1):
        left: dict[tuple[int, ...], Fraction] = {}
        right: dict[tuple[int, ...], Fraction] = {}
        for law, out in ((a, left), (b, right)):
            for s, w in law.items():
                out[s[:j]] = out.get(s[:j], Fraction(0)) + w
        if any(left.get(s, Fraction(0)) != right.get(s, Fraction(0)) for s in set(left) | set(right)):
            return j
    return None
