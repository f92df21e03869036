"""Hypothesis strategies for verifier inputs: exact and float laws with the edge cases that matter.

``law_pairs()`` draws ``(p, q)`` over one vocabulary, mixing generic laws with the cases a proof or a
kernel must survive: one-hot laws, ``p == q`` (zero residual), disjoint supports, entries exactly 0,
and, for float dtypes, subnormal entries.  Float laws are normalised in the dtype itself (as a
runtime's softmax would), so their sums are off from 1 only by rounding.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import torch
from hypothesis import strategies as st

from specproof.harness.exact.dtypes import DTYPES, TORCH_DTYPES  # TORCH_DTYPES re-exported (old import path)

__all__ = ["exact_laws", "float_laws", "law_pairs", "TORCH_DTYPES"]



def _weights(vocab: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, 1000), min_size=vocab, max_size=vocab).filter(lambda w: sum(w) > 0)


@st.composite
def exact_laws(draw: Any, vocab: int) -> tuple[Fraction, ...]:
    """A law over ``vocab`` tokens with rational entries (some may be 0)."""
    kind = draw(st.sampled_from(["generic", "one-hot", "uniform"]))
    if kind == "one-hot":
        hot = draw(st.integers(0, vocab - 1))
        return tuple(Fraction(int(i == hot)) for i in range(vocab))
    if kind == "uniform":
        return tuple(Fraction(1, vocab) for _ in range(vocab))
    weights = draw(_weights(vocab))
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


@st.composite
def float_laws(draw: Any, vocab: int, dtype: str) -> torch.Tensor:
    """A law in ``dtype``: weights normalised in the dtype, optionally with subnormal entries."""
    weights = torch.tensor(draw(_weights(vocab)), dtype=torch.float64)
    law = (weights / weights.sum()).to(TORCH_DTYPES[dtype])
    zeros = (law == 0).nonzero().flatten().tolist()
    if zeros and draw(st.booleans()):
        # plant a subnormal of the dtype (2^min_exponent times a small odd multiple) in an empty slot
        tiny = float(DTYPES[dtype].smallest_subnormal) * draw(st.sampled_from([1, 3, 7]))
        law[draw(st.sampled_from(zeros))] = tiny
    return law


@st.composite
def law_pairs(draw: Any, *, min_vocab: int = 2, max_vocab: int = 12, dtype: str | None = None) -> tuple[Any, Any]:
    """``(p, q)`` over one vocabulary: exact rationals when ``dtype`` is None, else tensors."""
    vocab = draw(st.integers(min_vocab, max_vocab))
    relation = draw(st.sampled_from(["independent", "equal", "disjoint"]))
    if dtype is None:
        p = draw(exact_laws(vocab))
        if relation == "equal":
            return p, p
        if relation == "disjoint" and vocab >= 2:
            split = draw(st.integers(1, vocab - 1))
            left = [Fraction(int(i < split)) for i in range(vocab)]
            right = [Fraction(int(i >= split)) for i in range(vocab)]
            return (tuple(x / split for x in left), tuple(x / (vocab - split) for x in right))
        return p, draw(exact_laws(vocab))
    p = draw(float_laws(vocab, dtype))
    if relation == "equal":
        return p, p.clone()
    if relation == "disjoint":
        split = draw(st.integers(1, vocab - 1))
        left = torch.zeros(vocab, dtype=torch.float64)
        left[:split] = 1.0 / split
        right = torch.zeros(vocab, dtype=torch.float64)
        right[split:] = 1.0 / (vocab - split)
        return left.to(TORCH_DTYPES[dtype]), right.to(TORCH_DTYPES[dtype])
    return p, draw(float_laws(vocab, dtype))
