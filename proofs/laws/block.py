"""Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding", 2024).

For a drafted path ``X_1..X_K`` (autoregressive from ``q``):

* weights ``w_0 = 1``, ``w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))``;
* for ``i < K``: ``h_i = Z_i / (Z_i + 1 - w_i)`` with ``Z_i = sum_x max(0, w_i p_{i+1}(x) - q_{i+1}(x))``
  (``h_i = 1`` when ``Z_i + 1 - w_i = 0``, i.e. ``w_i = 1, Z_i = 0``; such a stop then has probability
  0 because ``h_{i+1} = 1``); ``h_K = w_K``;
* independent ``eta_i ~ U[0, 1]``; ``tau = max{i : eta_i <= h_i}`` (0 if none), so
  ``P(tau = i) = h_i prod_{j > i} (1 - h_j)``;
* emit ``X_1..X_tau`` and then ``Y``: from ``p_{K+1}`` if ``tau = K``, else from
  ``norm(max(0, w_tau p_{tau+1} - q_{tau+1}))``.

The *early-break* misimplementation stops at the first failing ``h_i``:
``P(tau = i) = prod_{j <= i} h_j (1 - h_{i+1})``.

The laws are written once against :class:`~specproof.proofs.arith.interface.Arith` for backends whose
vectors are tuples (exact, sympy, z3).  :class:`Tables` holds the conditionals in any backend's
values; :meth:`Tables.from_pair` takes a :class:`~specproof.proofs.laws.sequences.ToyPair`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Mapping

from specproof.proofs.arith.interface import Arith
from specproof.proofs.laws.sequences import ToyPair

__all__ = ["Tables", "block_round_law", "block_continued_law", "block_target_law",
           "expected_accepted_block", "block_weight", "block_residual_weight", "block_stop_probability"]

Prefix = tuple[int, ...]


@dataclass(frozen=True)
class Tables:
    """``target[prefix]`` for ``len(prefix)`` in ``0..k``, ``draft[prefix]`` for ``0..k-1``."""

    vocab: int
    k: int
    target: Mapping[Prefix, tuple[Any, ...]]
    draft: Mapping[Prefix, tuple[Any, ...]]

    @classmethod
    def from_pair(cls, pair: ToyPair) -> "Tables":
        return cls(pair.vocab, pair.k, dict(pair.target), dict(pair.draft))

    @classmethod
    def context_free(cls, p: tuple[Any, ...], q: tuple[Any, ...], k: int) -> "Tables":
        """The same ``p`` and ``q`` after every prefix (any backend's values)."""
        vocab = len(p)
        target, draft = {}, {}
        for length in range(k + 1):
            for prefix in itertools.product(range(vocab), repeat=length):
                target[prefix] = tuple(p)
                if length < k:
                    draft[prefix] = tuple(q)
        return cls(vocab, k, target, draft)


def block_weight(ar: Arith, w_prev: Any, p: Any, q: Any) -> Any:
    """``w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))`` (0 where ``q_i(X_i) = 0``: never drafted)."""
    return ar.minimum(ar.one, ar.mul(w_prev, ar.safe_div(p, q, ar.zero)))


def block_residual_weight(ar: Arith, w: Any, p_next: Any, q_next: Any) -> Any:
    """``max(0, w_i p_{i+1} - q_{i+1})``; its total is ``Z_i``."""
    return ar.relu(ar.sub(ar.mul(w, p_next), q_next))


def block_stop_probability(ar: Arith, z: Any, w: Any) -> Any:
    """``h_i = Z_i / (Z_i + 1 - w_i)``, and 1 when the denominator is 0."""
    return ar.safe_div(z, ar.sub(ar.add(z, ar.one), w), ar.one)


def _stop_probabilities(ar: Arith, h: list[Any], early_break: bool) -> list[Any]:
    """``P(tau = i)`` for ``i = 0..K`` given ``h_1..h_K`` (``h[0]`` unused)."""
    k = len(h) - 1
    out = []
    for i in range(k + 1):
        if early_break:
            prob = ar.one
            for j in range(1, i + 1):
                prob = ar.mul(prob, h[j])
            if i < k:
                prob = ar.mul(prob, ar.sub(ar.one, h[i + 1]))
        else:
            prob = h[i] if i > 0 else ar.one
            for j in range(i + 1, k + 1):
                prob = ar.mul(prob, ar.sub(ar.one, h[j]))
        out.append(prob)
    return out


def _add_mass(ar: Arith, law: dict[Prefix, Any], key: Prefix, mass: Any) -> None:
    law[key] = ar.add(law[key], mass) if key in law else mass


def block_round_law(ar: Arith, tables: Tables, *, early_break: bool = False) -> tuple[dict[Prefix, Any], Any]:
    """The law of one block-verification round's emission, and the expected number of accepted drafts
    ``E[tau]``.  Every drafted path is enumerated (``V^K``), including those of probability 0."""
    k, vocab = tables.k, tables.vocab
    law: dict[Prefix, Any] = {}
    expected = ar.zero
    for path in itertools.product(range(vocab), repeat=k):
        path_prob = ar.one
        weights, h, residuals = [ar.one], [ar.one], []
        for i in range(k):
            prefix = path[:i]
            p_row, q_row = tables.target[prefix], tables.draft[prefix]
            path_prob = ar.mul(path_prob, q_row[path[i]])
            residuals.append(block_residual_weight(ar, weights[i], p_row, q_row))
            weights.append(block_weight(ar, weights[i], p_row[path[i]], q_row[path[i]]))
        for i in range(1, k):
            h.append(block_stop_probability(ar, ar.total(residuals[i]), weights[i]))
        h.append(weights[k])
        for tau, stop in enumerate(_stop_probabilities(ar, h, early_break)):
            mass = ar.mul(path_prob, stop)
            expected = ar.add(expected, ar.mul(ar.const(tau), mass))
            emitted = path[:tau]
            if tau == k:
                token_law = tables.target[path]
            else:
                token_law = ar.normalise(residuals[tau])
            for y in range(vocab):
                _add_mass(ar, law, emitted + (y,), ar.mul(mass, token_law[y]))
    return law, expected


def block_continued_law(ar: Arith, tables: Tables, *, early_break: bool = False) -> dict[Prefix, Any]:
    """One block round, then plain target sampling until ``K+1`` tokens: a law over ``V^(K+1)``."""
    round_law, _ = block_round_law(ar, tables, early_break=early_break)
    out: dict[Prefix, Any] = {}
    for seq, mass in round_law.items():
        for rest in itertools.product(range(tables.vocab), repeat=tables.k + 1 - len(seq)):
            weight, prefix = mass, seq
            for y in rest:
                weight = ar.mul(weight, tables.target[prefix][y])
                prefix = prefix + (y,)
            _add_mass(ar, out, prefix, weight)
    return out


def block_target_law(ar: Arith, tables: Tables) -> dict[Prefix, Any]:
    """The target's law over ``K+1`` tokens, every sequence listed."""
    out: dict[Prefix, Any] = {}
    for seq in itertools.product(range(tables.vocab), repeat=tables.k + 1):
        weight = ar.one
        for i, y in enumerate(seq):
            weight = ar.mul(weight, tables.target[seq[:i]][y])
        out[seq] = weight
    return out


def expected_accepted_block(ar: Arith, tables: Tables, *, early_break: bool = False) -> Any:
    """``E[tau]``, the expected number of accepted drafts in one block-verification round."""
    return block_round_law(ar, tables, early_break=early_break)[1]
