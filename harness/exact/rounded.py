"""The one rounded pair: a target/draft pair as a runtime receives it in a dtype, and its exact law.

A pair's conditional rows are stored once per *row key* of the prefix: ``(len(prefix), class of the
last token)`` for a scenario's tables (class ``= token mod C``, position 0 uses class 0), the prefix
itself for a :class:`~specproof.proofs.laws.sequences.ToyPair`.  Each row is rounded once to the
dtype (what the verifier sees); the exact law is every rounded row converted exactly and renormalised
exactly, ``p^ = p / sum(p)``, so rounding of the inputs is never counted as drift.  Scenarios
(``Realisation.rounded``), their event families and the exact grid law all read this one object.
"""

from __future__ import annotations


import itertools
from fractions import Fraction
from functools import cached_property
from typing import Any, Callable, Hashable, Mapping

import torch

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import MAX_SEQUENCES, ToyPair

from specproof.harness.exact.convert import dyadic_array, round_to_dtype
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.tolerances import unnormalised_step_tv

__all__ = ["RoundedPair", "exact_law_row", "exact_sum"]

Prefix = tuple[int, ...]


def exact_law_row(row: torch.Tensor, argument: str = "row") -> tuple[Fraction, ...]:
    """A rounded row's values as exact rationals, renormalised exactly to sum to 1."""
    nums, _, _ = dyadic_array(row.double().numpy(), argument)
    total = int(nums.sum())
    zero = Fraction(0)  # shared: a runtime-sized row is mostly zeros, and each Fraction costs microseconds
    return tuple(Fraction(int(n), total) if n else zero for n in nums.tolist())


def exact_sum(values: Any) -> Fraction:
    """The exact sum of rationals, numerators added per denominator first: a row of ``V`` entries of
    one renormalised law shares one denominator, so this is one integer sum, not ``V`` Fraction
    additions (150,000 of those take seconds)."""
    by_denominator: dict[int, int] = {}
    for x in values:  # Fractions or ints (both have numerator and denominator)
        if x:
            by_denominator[x.denominator] = by_denominator.get(x.denominator, 0) + x.numerator
    return sum((Fraction(n, d) for d, n in by_denominator.items()), Fraction(0))


class RoundedPair:
    """Rounded rows of a target/draft pair (``dtype``) and the exact renormalised pair they define."""

    def __init__(self, dtype: str, vocab: int, k: int, target: Mapping[Hashable, torch.Tensor],
                 draft: Mapping[Hashable, torch.Tensor], row_key: Callable[[Prefix], Hashable]):
        self.dtype, self.vocab, self.k = dtype, vocab, k
        self._rows = {"target": dict(target), "draft": dict(draft)}
        self.row_key = row_key
        self._exact: dict[tuple[str, Hashable], tuple[Fraction, ...]] = {}

    @classmethod
    def from_tables(cls, target: torch.Tensor, draft: torch.Tensor) -> "RoundedPair":
        """Rounded tables ``target [K+1, C, V]``, ``draft [K, C, V]`` (rows keyed by position and class)."""
        for name, table in (("target", target), ("draft", draft)):
            if bool((table.double().sum(-1) == 0).any()):
                raise SpecproofInputError(name, f"a row underflows to all zeros in {dtype_name(table.dtype)}",
                                          "use laws representable in the dtype")
        k, classes, vocab = draft.shape

        def row_key(prefix: Prefix) -> tuple[int, int]:
            return len(prefix), (prefix[-1] % classes) if prefix else 0

        rows_t = {(i, c): target[i, c] for i in range(k + 1) for c in range(classes if i > 0 else 1)}
        rows_d = {(i, c): draft[i, c] for i in range(k) for c in range(classes if i > 0 else 1)}
        return cls(dtype_name(target.dtype), vocab, k, rows_t, rows_d, row_key)

    @classmethod
    def from_toy_pair(cls, pair: ToyPair, dtype: Any) -> "RoundedPair":
        """Every row of ``pair`` rounded to ``dtype`` once (:func:`round_to_dtype`), keyed by its prefix."""
        name = dtype_name(dtype)
        target, draft = {}, {}
        for length in range(pair.k + 1):
            for prefix in itertools.product(range(pair.vocab), repeat=length):
                target[prefix] = round_to_dtype(list(pair.target[prefix]), name, "source")
                if length < pair.k:
                    draft[prefix] = round_to_dtype(list(pair.draft[prefix]), name, "source")
        return cls(name, pair.vocab, pair.k, target, draft, lambda prefix: prefix)

    @property
    def sequences(self) -> int:
        """``V^(K+1)``: the number of sequences an exact law of one round enumerates."""
        return self.vocab ** (self.k + 1)

    @property
    def enumerable(self) -> bool:
        return self.sequences <= MAX_SEQUENCES

    def row(self, table: str, prefix: Prefix) -> torch.Tensor:
        """The rounded ``table`` row (``"target"`` or ``"draft"``) the verifier sees after ``prefix``."""
        return self._rows[table][self.row_key(prefix)]

    def exact_row(self, table: str, key: Hashable) -> tuple[Fraction, ...]:
        """The row stored under ``key``, exact and renormalised (computed once)."""
        hit = self._exact.get((table, key))
        if hit is None:
            hit = self._exact[(table, key)] = exact_law_row(self._rows[table][key], table)
        return hit

    @cached_property
    def unnormalised_tv(self) -> Fraction:
        """``t_in``: the largest exact per-step drift of using a target row and the draft row at the same
        prefix unnormalised (:func:`~.tolerances.unnormalised_step_tv`), over every such pair.  A token where
        both rows are 0 adds nothing to it (its law and its target are 0 under every branch), so each pair is
        read on its support only: a sparse row at V = 151,936 costs its few thousand nonzero entries."""
        def on_support(target: torch.Tensor, draft: torch.Tensor) -> Fraction:
            keep = (target != 0) | (draft != 0)
            exact = lambda row: [Fraction(x) for x in row[keep].double().tolist()]  # noqa: E731  (dyadic: exact)
            return unnormalised_step_tv(exact(target), exact(draft))

        return max((on_support(self._rows["target"][key], row)
                    for key, row in self._rows["draft"].items() if key in self._rows["target"]),
                   default=Fraction(0))

    @cached_property
    def toy_pair(self) -> ToyPair:
        """The exact renormalised pair (``V^(K+1) <= MAX_SEQUENCES`` only)."""
        if not self.enumerable:
            raise SpecproofInputError("source", f"V^(K+1) = {self.sequences} is too large to enumerate",
                                      f"use V^(K+1) <= {MAX_SEQUENCES}")
        return ToyPair.from_functions(self.vocab, self.k,
                                      lambda s: self.exact_row("target", self.row_key(s)),
                                      lambda s: self.exact_row("draft", self.row_key(s)))
