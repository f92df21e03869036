"""Events by token *position* (index), beside the events by value: where tiled kernels go wrong.

A kernel that tiles the vocabulary can move mass between positions without changing the law of any
event defined by values (``p - q`` buckets, classes): it returns a tile-local index, normalises over
the first tile, keeps a top-1,024, reads ids through int16, scans in float16 or reuses random keys
across tiles.  The ``position`` family tests the first emitted token's index against sets aligned to
the blocks kernels use (``BLOCKS``: 2^10 .. 2^16):

* every tile ``[a b, (a + 1) b)`` of every block ``b`` (the last one partial when ``b`` does not
  divide ``V``), as its own event;
* ``index >= 2^15``, ``>= 2^16``, ``>= 2^17`` (ids that wrap in int16, or in a 16-bit unsigned);
* ``index mod b < b / 2`` for every block, and the four quarters of ``index mod 4096`` (keys, offsets
  or scans that repeat from tile to tile).

Every event's probability is exact (a sum of the exact first-token row), and a set whose members
under the target's support equal another's is kept once; a set of probability 0 or 1 is left out
(emitting a probability-0 token is already a certain finding).  Events are fixed before any row is
seen, so the engine budgets them like every other family (:func:`..stats.engine.alpha_shares`: one
share per side of every event), and the family-wise false-alarm bound still holds.  Rows are keyed
by the *cell* of their first token (tokens that belong to the same events), so the family stays as
small as its events, whatever ``V``."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from specproof.harness.check.events.family import EventFamily, as_numpy
from specproof.harness.check.vocab import BLOCKS
from specproof.harness.exact.rounded import exact_sum

__all__ = ["POSITION_FAMILY", "BLOCKS", "position_sets", "position_family"]

POSITION_FAMILY = "position"
_MOD_TILE = 4096


def position_sets(vocab: int) -> list[tuple[str, np.ndarray]]:
    """Every candidate event (module docstring): its name and membership over ``range(vocab)``."""
    index = np.arange(vocab, dtype=np.int64)
    out: list[tuple[str, np.ndarray]] = []
    for block in BLOCKS:
        if block >= vocab:
            continue
        tiles = -(-vocab // block)
        for a in range(tiles):
            lo, hi = a * block, min(vocab, (a + 1) * block)
            partial = " (last, partial)" if hi - lo < block else ""
            out.append((f"id in tile {a} of block {block}{partial}: {lo}..{hi - 1}", (index >= lo) & (index < hi)))
    for edge in (1 << 15, 1 << 16, 1 << 17):
        if edge < vocab:
            out.append((f"id >= {edge} (2^{edge.bit_length() - 1})", index >= edge))
    for block in BLOCKS:
        if block < vocab:
            out.append((f"id mod {block} < {block // 2}", index % block < block // 2))
    if _MOD_TILE < vocab:
        quarter = _MOD_TILE // 4
        for j in range(4):
            off = index % _MOD_TILE
            out.append((f"id mod {_MOD_TILE} in {j * quarter}..{(j + 1) * quarter - 1}",
                        (off >= j * quarter) & (off < (j + 1) * quarter)))
    return out


def position_family(first_row: Sequence[Fraction]) -> EventFamily | None:
    """The ``position`` family of a first-token law ``first_row`` (exact, length ``V``); ``None``
    when ``V`` is at most the smallest block (every set is then all or nothing)."""
    vocab = len(first_row)
    if vocab <= BLOCKS[0]:
        return None
    support = np.array([bool(x) for x in first_row])
    support_ids = np.flatnonzero(support)
    candidates = position_sets(vocab)
    names, members, seen = [], [], set()
    for name, member in candidates:
        signature = member[support_ids].tobytes()
        on = support_ids[member[support_ids]]
        if signature in seen or len(on) in (0, len(support_ids)):
            continue
        seen.add(signature)
        # the complement of a set is the same event read from its other side
        seen.add((~member[support_ids]).tobytes())
        names.append(name)
        members.append(member)
    if not names:
        return None
    packed = np.packbits(np.stack(members, axis=1), axis=1)  # [V, bytes]: a token's events as bits
    signature = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    _, first, cell_of = np.unique(signature, return_index=True, return_inverse=True)
    cell_of = np.asarray(cell_of, dtype=np.int64).reshape(-1)
    cells = np.stack([m[first] for m in members], axis=1)  # [cells, events]
    expected = [exact_sum(first_row[v] for v in support_ids[m[support_ids]]) for m in members]
    return EventFamily(
        name=POSITION_FAMILY,
        key=lambda e: cell_of[np.maximum(as_numpy(e[:, 0]), 0)],
        n_keys=len(cells),
        matrix=cells.astype(np.float64),
        expected=np.array([float(x) for x in expected]),
        names=[f"first token {n}" for n in names],
        zero_tolerance=np.zeros(len(names), dtype=bool),
        positions={i: 1 for i in range(len(names))},
    )
