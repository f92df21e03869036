"""Exact multi-token laws of a K-draft round, by enumeration over a toy autoregressive pair.

A :class:`ToyPair` gives the target conditional ``p(. | prefix)`` for every prefix of length 0..K and
the draft conditional ``q(. | prefix)`` for every prefix of length 0..K-1, as tables of exact
rationals.  One round drafts ``x_1..x_K`` from ``q`` autoregressively, verifies left to right with a
single-step rule, stops at the first rejection (emitting a correction token drawn from the rule's
residual at that position and discarding the rest) and emits a bonus token from ``p(. | x_1..x_K)``
when all K pass.

* :func:`round_law` - the exact law of the emitted sequence (length 1..K+1);
* :func:`continued_law` - one round, then plain target sampling up to K+1 tokens;
* :func:`target_law` - the target's own law over K+1 tokens.

For an exact rule ``continued_law == target_law`` (theorem T5).  Enumeration visits at most
``V^(K+1)`` sequences; larger sizes are refused (``max_sequences``).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Sequence

from specproof.proofs.arith.exact import ExactArith
from specproof.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import CANONICAL, StepLaw, StepRule, get_step_rule, step_law

__all__ = [
    "MAX_SEQUENCES",
    "ToyPair",
    "SequenceLaw",
    "round_law",
    "continued_law",
    "target_law",
    "law_tv",
    "check_enumeration",
]

MAX_SEQUENCES = 1 << 16  # the one enumeration limit on V^(K+1): proofs, scenarios and the grid law import it
SequenceLaw = dict[tuple[int, ...], Fraction]
Law = tuple[Fraction, ...]


def _check_row(row: Sequence[Fraction], vocab: int, argument: str) -> Law:
    row = tuple(row)
    if len(row) != vocab:
        raise SpecproofInputError(argument, f"has {len(row)} entries, expected vocab={vocab}",
                                  "give one probability per token")
    for x in row:
        if not isinstance(x, (int, Fraction)) or isinstance(x, bool):
            raise SpecproofInputError(argument, f"entry {x!r} is not an int or Fraction",
                                      "convert floats with specproof.harness.to_exact")
        if x < 0:
            raise SpecproofInputError(argument, "has a negative entry", "pass non-negative probabilities")
    if sum(row, Fraction(0)) != 1:
        raise SpecproofInputError(argument, f"sums to {sum(row, Fraction(0))}, not 1",
                                  "pass exactly normalised conditionals")
    return tuple(Fraction(x) for x in row)


@dataclass(frozen=True)
class ToyPair:
    """Target and draft conditionals for every prefix, as exact tables.

    ``target[prefix]`` for ``len(prefix)`` in 0..k, ``draft[prefix]`` for ``len(prefix)`` in 0..k-1."""

    vocab: int
    k: int
    target: Mapping[tuple[int, ...], Law]
    draft: Mapping[tuple[int, ...], Law]

    def __post_init__(self) -> None:
        check_enumeration(self.vocab, self.k)
        for length in range(self.k + 1):
            for prefix in itertools.product(range(self.vocab), repeat=length):
                if prefix not in self.target:
                    raise SpecproofInputError("target", f"has no row for prefix {prefix}",
                                              "give p(. | prefix) for every prefix of length 0..k")
                _check_row(self.target[prefix], self.vocab, f"target[{prefix}]")
                if length < self.k:
                    if prefix not in self.draft:
                        raise SpecproofInputError("draft", f"has no row for prefix {prefix}",
                                                  "give q(. | prefix) for every prefix of length 0..k-1")
                    _check_row(self.draft[prefix], self.vocab, f"draft[{prefix}]")

    @classmethod
    def from_functions(cls, vocab: int, k: int, target: Callable[[tuple[int, ...]], Sequence[Fraction]],
                       draft: Callable[[tuple[int, ...]], Sequence[Fraction]]) -> "ToyPair":
        """Tabulate ``target(prefix)`` and ``draft(prefix)`` over every prefix."""
        check_enumeration(vocab, k)
        t_table, d_table = {}, {}
        for length in range(k + 1):
            for prefix in itertools.product(range(vocab), repeat=length):
                t_table[prefix] = tuple(target(prefix))
                if length < k:
                    d_table[prefix] = tuple(draft(prefix))
        return cls(vocab, k, t_table, d_table)

    @classmethod
    def context_free(cls, p: Sequence[Fraction], q: Sequence[Fraction], k: int) -> "ToyPair":
        """The same p and q at every position (the runtimes' usual test set-up)."""
        return cls.from_functions(len(p), k, lambda _: p, lambda _: q)

    @classmethod
    def random(cls, vocab: int, k: int, seed: int, *, resolution: int = 64, zeros: bool = True,
               context_free: bool = False) -> "ToyPair":
        """Random prefix-dependent rational conditionals (denominator ``resolution``).

        With ``zeros`` some entries are exactly 0 (the edge cases q(x)=0, p(x)=0)."""
        if resolution < vocab:
            raise SpecproofInputError("resolution", f"{resolution} < vocab {vocab}",
                                      "use a resolution of at least the vocabulary size")
        rng = random.Random(seed)

        def law(_: tuple[int, ...]) -> Law:
            while True:
                cuts = sorted(rng.randint(0, resolution) for _ in range(vocab - 1))
                counts = [b - a for a, b in zip([0] + cuts, cuts + [resolution])]
                if not zeros:
                    counts = [c + 1 for c in counts]
                total = sum(counts)
                if total > 0:
                    return tuple(Fraction(c, total) for c in counts)

        if context_free:
            p, q = law(()), law(())
            return cls.context_free(p, q, k)
        return cls.from_functions(vocab, k, law, law)


def check_enumeration(vocab: int, k: int, max_sequences: int = MAX_SEQUENCES) -> None:
    """Refuse sizes whose enumeration would visit more than ``max_sequences`` sequences."""
    if not isinstance(vocab, int) or vocab < 1:
        raise SpecproofInputError("vocab", f"{vocab!r} is not a positive int", "pass vocab >= 1")
    if not isinstance(k, int) or k < 1:
        raise SpecproofInputError("k", f"{k!r} is not a positive int", "pass k >= 1 draft tokens")
    if vocab ** (k + 1) > max_sequences:
        raise SpecproofInputError(
            "k", f"vocab^(k+1) = {vocab}^{k + 1} = {vocab ** (k + 1)} sequences exceeds the enumeration "
            f"limit {max_sequences}", "use a smaller vocab or k, or raise max_sequences")


def round_law(pair: ToyPair, rule: str | StepRule = CANONICAL) -> SequenceLaw:
    """Exact law of one round's emitted sequence (accepted drafts, then correction or bonus)."""
    rule = get_step_rule(rule)
    ar = ExactArith()
    steps: dict[tuple[int, ...], StepLaw] = {}
    law: SequenceLaw = {}

    def emit(prefix: tuple[int, ...], weight: Fraction, token_law: Sequence[Fraction]) -> None:
        for y, py in enumerate(token_law):
            if py:
                key = prefix + (y,)
                law[key] = law.get(key, Fraction(0)) + weight * py

    def walk(prefix: tuple[int, ...], weight: Fraction) -> None:
        if len(prefix) == pair.k:
            emit(prefix, weight, pair.target[prefix])  # bonus token
            return
        step = steps.get(prefix)
        if step is None:
            step = steps[prefix] = step_law(ar, rule, pair.target[prefix], pair.draft[prefix])
        accept = step.accept if isinstance(step.accept, tuple) else (step.accept,) * pair.vocab  # a scalar broadcasts
        for x, qx in enumerate(pair.draft[prefix]):
            if qx and accept[x]:
                walk(prefix + (x,), weight * qx * accept[x])
        if step.rejection:
            emit(prefix, weight * step.rejection, step.residual)

    walk((), Fraction(1))
    return law


def continued_law(pair: ToyPair, rule: str | StepRule = CANONICAL) -> SequenceLaw:
    """One round, then plain target sampling until K+1 tokens: a law over ``V^(K+1)``."""
    horizon = pair.k + 1
    out: SequenceLaw = {}

    def extend(seq: tuple[int, ...], weight: Fraction) -> None:
        if len(seq) == horizon:
            out[seq] = out.get(seq, Fraction(0)) + weight
            return
        for y, py in enumerate(pair.target[seq]):
            if py:
                extend(seq + (y,), weight * py)

    for seq, weight in round_law(pair, rule).items():
        extend(seq, weight)
    return out


def target_law(pair: ToyPair) -> SequenceLaw:
    """The target's law over K+1 tokens: ``prod_i p(x_i | x_<i)``."""
    out: SequenceLaw = {}

    def extend(seq: tuple[int, ...], weight: Fraction) -> None:
        if len(seq) == pair.k + 1:
            out[seq] = weight
            return
        for y, py in enumerate(pair.target[seq]):
            if py:
                extend(seq + (y,), weight * py)

    extend((), Fraction(1))
    return out


def law_tv(a: Mapping[tuple[int, ...], Fraction], b: Mapping[tuple[int, ...], Fraction]) -> Fraction:
    """Exact total variation ``1/2 sum |a - b|`` between two sequence laws."""
    keys = set(a) | set(b)
    return sum((abs(a.get(k, Fraction(0)) - b.get(k, Fraction(0))) for k in keys), Fraction(0)) / 2
