"""Exact law of the ``N`` new tokens of a ``generate`` pipeline (ints and Fractions only).

A lossless pipeline emits ``s = (s_1..s_N)`` with probability ``P(s) = prod_j r_{key(s_<j)}[s_j]``:
``key(prefix)`` names the next-token law the pipeline samples after ``prefix`` (prefixes with equal
keys share it) and ``r_k`` is that law, exact.  The generate contract computes ``r_k`` as the processed
target law of its logits (``harness.check.contracts.generate.families.pipeline_law``: certified softmax,
exact masks, exact renormalisation); here the laws are given, and each is asked for once per distinct
key.  Prefixes are enumerated: refused beyond :data:`~specproof.proofs.laws.sequences.MAX_SEQUENCES`
``= 65,536`` sequences (``V^N``).  A sequence's code is ``code(s) = sum_j s_j V^(n-1-j)``
(:func:`sequence_code`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import MAX_SEQUENCES

__all__ = ["PipelineLaw", "sequence_code"]

Row = tuple[Fraction, ...]


@dataclass
class PipelineLaw:
    """Exact next-token laws by key, and the law of whole ``N``-token sequences."""

    vocab: int
    new_tokens: int
    rows: dict[Any, tuple[Fraction, ...]]  # law key -> next-token law
    keys: dict[tuple[int, ...], Any]  # prefix (length < N) -> law key
    prefix: dict[tuple[int, ...], Fraction]  # every prefix of length 1..N -> exact probability

    @classmethod
    def build(cls, vocab: int, new_tokens: int, law_key: Callable[[tuple[int, ...]], Hashable],
              next_laws: Callable[[list[tuple[int, ...]]], Sequence[Row]],
              argument: str = "new_tokens") -> "PipelineLaw":
        """The law of ``new_tokens`` tokens over ``vocab``: ``law_key(prefix)`` for every prefix shorter than
        ``new_tokens``, ``next_laws(prefixes)`` the exact next-token laws after one prefix of each key (in the
        order given); ``argument`` is named when ``V^N`` exceeds the enumeration limit."""
        if vocab ** new_tokens > MAX_SEQUENCES:
            raise SpecproofInputError(argument, f"{vocab}^{new_tokens} = {vocab ** new_tokens} sequences exceed the "
                                      f"exact enumeration's limit of {MAX_SEQUENCES:,}",
                                      f"use at most {_longest(vocab)} new tokens with this vocabulary of {vocab}")
        prefixes = [p for j in range(new_tokens) for p in itertools.product(range(vocab), repeat=j)]
        keys = {p: law_key(p) for p in prefixes}
        first: dict[Any, tuple[int, ...]] = {}
        for p, k in keys.items():
            first.setdefault(k, p)
        rows = dict(zip(first, next_laws(list(first.values())), strict=True))
        prefix: dict[tuple[int, ...], Fraction] = {}
        frontier: list[tuple[tuple[int, ...], Fraction]] = [((), Fraction(1))]
        while frontier:
            p, w = frontier.pop()
            if len(p) == new_tokens:
                continue
            for token, r in enumerate(rows[keys[p]]):
                ext = p + (token,)
                prefix[ext] = w * r
                if r:
                    frontier.append((ext, w * r))
        for p in list(prefix):  # extensions of impossible prefixes: probability 0
            if not prefix[p] and len(p) < new_tokens:
                for n in range(1, new_tokens - len(p) + 1):
                    for tail in itertools.product(range(vocab), repeat=n):
                        prefix[p + tail] = Fraction(0)
        return cls(vocab, new_tokens, rows, keys, prefix)

    def law(self) -> dict[tuple[int, ...], Fraction]:
        """``P(s)`` of every ``N``-token sequence (zeros included)."""
        return {s: w for s, w in self.prefix.items() if len(s) == self.new_tokens}

    def next_law(self, prefix: tuple[int, ...]) -> tuple[Fraction, ...]:
        return self.rows[self.keys[prefix]]

    def first_zero(self) -> np.ndarray:
        """``[V^N]`` int64: the first 1-based position whose token has probability 0, 0 when none."""
        out = np.zeros(self.vocab ** self.new_tokens, dtype=np.int64)
        for s in itertools.product(range(self.vocab), repeat=self.new_tokens):
            for j in range(1, self.new_tokens + 1):
                if not self.prefix[s[:j]]:
                    out[sequence_code(s, self.vocab)] = j
                    break
        return out


def _longest(vocab: int) -> int:
    n = 1
    while vocab ** (n + 1) <= MAX_SEQUENCES:
        n += 1
    return n


def sequence_code(s: Sequence[int], vocab: int) -> int:
    """``code(s) = sum_j s_j V^(n-1-j)`` (module docstring)."""
    code = 0
    for t in s:
        code = code * vocab + t
    return code
