"""Scenarios at a runtime's vocabulary size, built for kernels that tile over the vocabulary.

Serving kernels split a row of ``V`` probabilities into blocks of 2^10..2^16 tokens (a partial last
tile when ``V`` is not a multiple), index ids above 2^15 and 2^16, and sum, scan or race per tile.
A tiled scenario's rows are *not* exchangeable across token positions.  Both laws are peaked, as a
language model's are: ``1 - 2^-5`` on one hub token (2^16 + 1 when ``V`` allows: int16 reads it as
token 1).  The rest is sparse: mass at both edges of several tiles of every power-of-two block from
2^10 to 2^16, around 2^15, 2^16 and 2^17, in the last partial tile, with zeros between, and a *tail*
of 2,730 target tokens of mass 2^-18 each at even offsets of three 4,096-token tiles near the top of
the vocabulary (more residual entries than a top-1,024 keeps, each half a float16 step of the running
sum that reaches them).  The draft puts no mass on the tail and some on tokens the target forbids,
so corrections reach every tile.  ``K = 1`` and one class: every tiled bug changes the first token's
law, a row costs ``3 V`` probabilities, and the exact law is one row (computed once, whatever ``V``).

Every mass is a whole multiple of 2^-18 (exact in float16 and wider); as for every scenario, the
exact law is that of the rows rounded to the dtype under test.

Limit: the residual tail holds about 1% of the law (``2^-5`` off the hub, a third of it on the tail), so a
bug confined to that tail (a residual cut to its top 1,024 entries, a float16 running sum) moves less
than the default bound 0.02 and is not reliably caught here (measured: top-1,024 PASSes at V = 131,072
on seeds 0-2, FAILs at V = 151,936).

:func:`..vocab.vocab_sizes` validates the sizes a user asks for (``--vocab``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from specproof.harness.check.vocab import BLOCKS, DEFAULT_VOCABS, MAX_VOCAB, MIN_VOCAB, vocab_sizes

__all__ = ["BLOCKS", "TILE", "DEFAULT_VOCABS", "MAX_VOCAB", "MIN_VOCAB", "tiled_scenario", "vocab_sizes",
           "TILED_TAG"]

TILE = 4096  # the tail's tile width (the most common block)
TAIL_TILES, TAIL_PER_TILE = 3, 1024  # 3,072 tail tokens: more than a top-1,024 keeps
TILED_TAG = "tiled"
_UNIT_BITS = 18  # every mass is a multiple of 2^-18 (a tail token's mass)
_SPREAD_BITS = 5  # 2^-5 of each law lies off the hub token


def _anchors(vocab: int) -> np.ndarray:
    """Both edges of the first three tiles of every block, of the last (partial) tile, around 2^15,
    2^16 and 2^17, and token 0."""
    ids = {0, vocab - 1}
    for block in BLOCKS:
        for m in (1, 2, 3):
            ids.update((m * block - 1, m * block))
        last = ((vocab - 1) // block) * block
        ids.update((last, last - 1, last + 1))
    for edge in (1 << 15, 1 << 16, 1 << 17):
        ids.update((edge - 1, edge, edge + 1))
    return np.array(sorted(i for i in ids if 0 <= i < vocab), dtype=np.int64)


def _tail(vocab: int, anchors: np.ndarray) -> np.ndarray:
    """Even offsets 0..2,046 of three 4,096-token tiles two apart, below the last full tile (half of
    the upper half of the vocabulary when it has fewer than seven full tiles)."""
    full = vocab // TILE
    if full >= 2 * TAIL_TILES + 1:
        tiles = [full - 2 - 2 * j for j in range(TAIL_TILES)]
        ids = np.array([t * TILE + 2 * o for t in tiles for o in range(TAIL_PER_TILE)], dtype=np.int64)
    else:
        ids = np.arange(vocab // 2, vocab, 2, dtype=np.int64)[: TAIL_TILES * TAIL_PER_TILE]
    return np.setdiff1d(ids, anchors)


def _split(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` units split in proportion to ``weights`` (largest remainder), every share >= 1."""
    n = len(weights)
    scaled = weights / weights.sum() * (total - n)
    counts = np.floor(scaled).astype(np.int64) + 1
    short = total - int(counts.sum())
    order = np.argsort(-(scaled - np.floor(scaled)), kind="stable")
    counts[order[:short]] += 1
    return counts


def _hub(vocab: int) -> int:
    """The token both laws share most of their mass on: 2^16 + 1 (int16 reads it as token 1) when
    the vocabulary reaches it, else the middle of the vocabulary."""
    return (1 << 16) + 1 if vocab > (1 << 16) + 1 else vocab // 2


def tiled_scenario(vocab: int, seed: int = 108) -> Any:
    """The tiled scenario at ``vocab`` tokens (module docstring): target rows ``[2, 1, V]``, draft
    ``[1, 1, V]``; the bonus row is the first target row read backwards (``p'(v) = p(V-1-v)``), so a
    bonus drawn from the wrong row moves mass across tiles.

    Like a language model's next-token law, both rows are peaked: ``1 - 2^-5`` on one *hub* token
    (above 2^16 when ``V`` allows), the rest spread over the tiles.  So about 1 row in 32 needs a
    correction, and every event of the scenario has probability within 0.04 of 0 or 1: its rows
    reach the stated power cheaply (the variance of every tested event is below 0.04), while a bug
    that moves the residual's mass between tiles still moves up to 2^-5 of the law."""
    from specproof.harness.check.contracts.batched.scenarios import Scenario

    (vocab,) = vocab_sizes(vocab)
    if vocab <= 8:
        raise SpecproofInputError("vocab", f"{vocab} leaves no room for tiles",
                                  "pass a vocabulary size above 8 (tiled scenarios matter above 1,024)")
    rng = np.random.default_rng(seed)
    hub = _hub(vocab)
    anchors = np.setdiff1d(_anchors(vocab), [hub])
    tail = np.setdiff1d(_tail(vocab, anchors), [hub])
    unit = 2.0 ** -_UNIT_BITS  # masses are whole multiples of 2^-18
    spread = 1 << (_UNIT_BITS - _SPREAD_BITS)  # 2^-5 of the law, in units
    p = np.zeros(vocab)
    q = np.zeros(vocab)
    p[hub] = q[hub] = 1.0 - spread * unit
    tail_units = min(len(tail), spread // 3)  # at most a third of the spread mass, one unit per token
    tail = tail[:tail_units]
    # the target on every other anchor (both edges of a tile boundary are then told apart), the draft
    # on the others and on half of the target's anchors: rejections reach every tile
    on_p, on_q = anchors[0::2], anchors[1::2]
    shared = on_p[rng.random(len(on_p)) < 0.5]
    p[on_p] = _split(spread - tail_units, rng.uniform(0.5, 1.5, len(on_p))) * unit
    q_support = np.union1d(on_q, shared)
    q[q_support] = _split(spread, rng.uniform(0.5, 1.5, len(q_support))) * unit
    p[tail] = unit
    target = np.stack([p, p[::-1]])[:, None, :]
    draft = q[None, None, :]
    return Scenario(f"tiled V{vocab} K1",
                    f"peaked sparse target and draft at V={vocab} (hub token {hub}): mass at tile edges of every "
                    "block 2^10..2^16, above 2^15 and 2^16, in the last partial tile, and a residual tail of "
                    f"{len(tail)} tokens; the bonus row reversed", target, draft,
                    ("large", TILED_TAG, "position-dependent"))
