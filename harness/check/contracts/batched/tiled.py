"""Scenarios at a runtime's vocabulary size, built for kernels that tile over the vocabulary.

Serving kernels split a row of ``V`` probabilities into blocks of 2^10..2^16 tokens (a partial last
tile when ``V`` is not a multiple), index ids above 2^15 and 2^16, and sum, scan or race per tile.
A tiled scenario's rows are *not* exchangeable across token positions.  Every mass is a whole number
of *units* of 2^-18 (exact in float16 and wider; as for every scenario, the exact law is that of the
rows rounded to the dtype under test).  ``K = 1`` and one class: every tiled bug changes the first
token's law, a row costs ``3 V`` probabilities, and the exact law is one row (computed once, over the
support only, whatever ``V``).

The target ``p`` (the law of the first emitted token, which every event tests):

* ``1 - 2^-5`` on one *hub* token (2^16 + 1 when ``V`` allows: int16 reads it as token 1).  The
  check's rows follow the event nearest 1/2 (:meth:`..stats.engine._Ledger.rows_for_tv`); here that
  is the hub's tile at ``1 - 2^-5``, so the quota is that of a peaked law: the variance of the
  hardest event is ``2^-5 (1 - 2^-5) = 0.030`` against 0.25 at 1/2, about 1/6 of the rows
  (:func:`..stats.statistics.samples_for_shift`: 11,904 against 78,848 rows for a shift of 0.017 at
  a 20.5-nat threshold; a default ``--vocab`` check spends 12,736 rows on the scenario at
  V = 131,072 and at 151,936 alike).
* a residual *tail* of ``3/4`` of the rest, 6,144 units, one unit a token, at even offsets 2..2,048
  of six 4,096-token tiles two apart below the last full tile (tiles 20..30 at ``V = 131,072``,
  25..35 at 151,936: all above the hub, and four of them in one 32,768-token tile);
* ``1/4`` of the rest (2,048 units) at both edges of the first three tiles of every block 2^10..2^16,
  of the last (partial) tile, around 2^15, 2^16 and 2^17, and token 0, with zeros between.

The draft ``q`` puts nothing on the tail, ``2^-6`` less than ``p`` on the hub, and the rest on
the anchors (half of them ones the target forbids), so a row is corrected (drawn from the residual
``max(0, p - q)``) with probability ``TV(p, q) >= 2^-6 + 6144 / 2^18 = 0.039`` (2.1% before), and
corrections reach every tile.  Why each bug moves a tested event well past the band (about 0.001 in
float32 at this support, :func:`..exact.tolerances.check_tolerance`):

* a residual cut to its 1,024 largest entries keeps at most 1,024 tail units of 6,144, whatever the
  order of its ties: at least ``5120 / 2^18 = 0.0195`` of the first token's law leaves the tail for
  the hub (whose residual, 2^-6, is most of what is kept), and a tile of the tail's loses 5/6 of it or
  more (a 32,768-token tile: 0.0156 to 0.0026 or less);
* a float16 running sum passes the hub's residual (2^-6, at a lower index) before any tail token: from
  there its step is ``2^-16`` or more, and a tail token (``2^-18``, under half a step) rounds away:
  the whole tail, ``6144 / 2^18 = 0.0234`` of the law, is never drawn.  That loss is float16 rounding,
  and the precision probe sees the verifier round in float16: the derived band is then float16's worst
  case over the support (1 at 6,190 tokens), and the check answers UNDERPOWERED, naming the band, not
  PASS.  A user who states the drift a float32 kernel is held to (``--max-drift 0.0011``, the float32
  band here) gets the FAIL;
* random keys reused across tiles give the six tail tokens at one offset one key: only the lowest
  tile's can win, so the tail's share of the residual drops to 1/6 and each higher tail tile loses all
  of its 0.0039;
* a tile-local index, int16 ids (the hub's drafts read ``p(1) = q(1) = 0``) and a first-tile
  normaliser (the hub's residual drawn in tile 0) move the hub's ``1 - 2^-5`` or its 2^-6.

So each tail class moves the first token's law by ``d >= 0.0195`` (TV: the tokens it never draws), and
an event on the tail's tiles from ``pi`` to near 0, seen at ``-ln(1 - pi)`` nats a row: about 1,100
rows for a 32,768-token tile (``pi = 0.0185``) at a threshold of 21 nats, against a quota sized for a
shift of 0.017 on the hub's event.  Measured (``--fail-fast``, the tiled scenario alone, seeds 0-2,
rows to the first finding at V = 131,072 / 151,936): top-1,024 1,882-3,718 / 3,341-3,828, reused keys
2,048-3,252 / 2,705-3,353, float16 at the stated float32 band 2,291-2,407 / 1,721-1,808 (seeds 0-1),
first-tile normaliser 193-386 / 165-300; on seed 0, int16 ids 16 / 16, a tile-local index 8 / 4 (certain).

:func:`..vocab.vocab_sizes` validates the sizes a user asks for (``--vocab``).  Without ``--vocab`` the
default suite holds :func:`tiled_probe` at ``RUNTIME_PROBE_VOCAB`` (151,936): the same rows as a certainty
probe, 254 rows that judge impossible outcomes only (a token of target probability 0, such as a tile-local
index's; a broken output contract or a crash at that size), for about a second of a plain torch verifier;
the verdict line says so ("151936 (impossible outcomes only)")."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.vocab import BLOCKS, MAX_VOCAB, MIN_VOCAB, RUNTIME_PROBE_VOCAB, vocab_sizes

__all__ = ["BLOCKS", "TILE", "RUNTIME_PROBE_VOCAB", "MAX_VOCAB", "MIN_VOCAB", "tiled_scenario", "tiled_probe",
           "vocab_sizes", "TILED_TAG"]

TILE = 4096  # the tail's tile width (the most common block)
# 6 x 1,024 = 6,144 tail tokens of one unit: a top-1,024 keeps at most 1/6 of them, and keys reused
# across tiles let one of the 6 tokens at an offset win (module docstring)
TAIL_TILES, TAIL_PER_TILE = 6, 1024
TILED_TAG = "tiled"
_UNIT_BITS = 18  # every mass is a multiple of 2^-18 (a tail token's mass)
_SPREAD_BITS = 5  # 2^-5 of the target lies off the hub token: the hub's events sit at 1 - 2^-5
# the hub's residual p - q: 2^-6 is the least power of two at which a float16 running sum's half step,
# 2^(floor(log2 2^-6) - 11) = 2^-17, exceeds a tail unit 2^-18, so that no tail token moves the sum
_HUB_RESIDUAL_BITS = 6


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
    """Even offsets 2..2,048 of six 4,096-token tiles two apart, below the last full tile (the even ids
    of the upper half of the vocabulary when it has fewer than thirteen full tiles).  Every anchor below
    the last tile sits at offset 0 or at an odd offset of its 4,096-token tile (``m b``, ``m b - 1``,
    ``2^e +- 1``), so the six tiles hold all 6,144 tail tokens."""
    full = vocab // TILE
    if full >= 2 * TAIL_TILES + 1:
        tiles = [full - 2 - 2 * j for j in range(TAIL_TILES)]
        ids = np.array([t * TILE + 2 + 2 * o for t in tiles for o in range(TAIL_PER_TILE)], dtype=np.int64)
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
    ``[1, 1, V]``; the bonus row is the first target row with the hub's and token 0's masses
    exchanged, so a bonus drawn from the wrong row moves ``1 - 2^-5`` across tiles, and both rows share
    one support (the null band grows with the support: reversing the row instead doubled it to 0.0022
    and the quota by 16%).

    Both laws are peaked, as a language model's are: the target has ``1 - 2^-5`` on the hub, the draft
    ``2^-6`` less.  Every event of the scenario has probability within 2^-5 of 0 or 1, so its rows
    reach the stated power cheaply, while about 1 row in 25 is corrected and the residual's tail holds
    ``0.0234`` of the law in six tiles.  The same object for the same arguments, so its preparation is
    cached (:func:`..prepare`)."""
    (vocab,) = vocab_sizes(vocab)
    return _tiled_scenario(vocab, seed)


@lru_cache(maxsize=8)
def _tiled_scenario(vocab: int, seed: int) -> Any:
    from specproof.harness.check.contracts.batched.scenarios import Scenario

    if vocab <= 8:
        raise SpecproofInputError("vocab", f"{vocab} leaves no room for tiles",
                                  "pass a vocabulary size above 8 (tiled scenarios matter above 1,024)")
    rng = np.random.default_rng(seed)
    hub = _hub(vocab)
    anchors = np.setdiff1d(_anchors(vocab), [hub])
    tail = np.setdiff1d(_tail(vocab, anchors), [hub])
    unit = 2.0 ** -_UNIT_BITS  # masses are whole multiples of 2^-18
    spread = 1 << (_UNIT_BITS - _SPREAD_BITS)  # 2^-5 of the law, in units
    hub_residual = 1 << (_UNIT_BITS - _HUB_RESIDUAL_BITS)  # 2^-6, in units
    p = np.zeros(vocab)
    q = np.zeros(vocab)
    p[hub] = 1.0 - spread * unit
    q[hub] = p[hub] - hub_residual * unit
    tail_units = min(len(tail), 3 * spread // 4)  # at most three quarters of the spread, one unit per token
    tail = tail[:tail_units]
    # the target on every other anchor (both edges of a tile boundary are then told apart), the draft
    # on the others and on half of the target's anchors: rejections reach every tile
    on_p, on_q = anchors[0::2], anchors[1::2]
    shared = on_p[rng.random(len(on_p)) < 0.5]
    p[on_p] = _split(spread - tail_units, rng.uniform(0.5, 1.5, len(on_p))) * unit
    q_support = np.union1d(on_q, shared)
    q[q_support] = _split(spread + hub_residual, rng.uniform(0.5, 1.5, len(q_support))) * unit
    p[tail] = unit
    bonus = p.copy()
    bonus[[hub, 0]] = p[[0, hub]]
    target = np.stack([p, bonus])[:, None, :]
    draft = q[None, None, :]
    return Scenario(f"tiled V{vocab} K1",
                    f"peaked sparse target and draft at V={vocab} (hub token {hub}, the draft 2^-6 short of the "
                    "target there): mass at tile edges of every block 2^10..2^16, above 2^15 and 2^16, in the last "
                    f"partial tile, and a residual tail of {len(tail)} tokens in six tiles; the bonus row's hub "
                    "at token 0",
                    target, draft, ("large", TILED_TAG, "position-dependent"))


def tiled_probe(vocab: int = RUNTIME_PROBE_VOCAB) -> Any:
    """:func:`tiled_scenario` at ``vocab`` as a certainty probe (module docstring): impossible outcomes
    only, no event family, a probe's quota.  The same object on every call."""
    return _tiled_probe(vocab_sizes(vocab)[0])


@lru_cache(maxsize=4)
def _tiled_probe(vocab: int) -> Any:
    from dataclasses import replace

    from specproof.harness.check.contracts.batched.scenarios import CERTAINTY_PROBE

    scenario = tiled_scenario(vocab)
    return replace(scenario, name=f"{scenario.name} probe",
                   description=scenario.description + "; a certainty probe: only impossible outcomes are judged "
                   "at this size (--vocab for its statistical events)",
                   tags=scenario.tags + (CERTAINTY_PROBE,))
