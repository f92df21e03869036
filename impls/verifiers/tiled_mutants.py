"""Tiled verifiers with one bug each that only shows above one tile of 4,096 tokens.

Each is :func:`~specproof.impls.verifiers.tiled.tiled_round` with one step changed, and is exact for
``V <= 4096`` (one tile; no id reaches 2^15; a top-1,024 keeps every residual entry of a small
support).  Check them at a runtime's vocabulary (``specproof check ... --vocab 151936``):

* :func:`tiled_local_index` - the race's winner returned as its index inside its tile, without the
  tile's offset;
* :func:`tiled_first_tile_normaliser` - the inverse CDF's normaliser summed over the first tile only
  (draws land in the first tiles);
* :func:`tiled_top1024_residual` - the residual sampled among its 1,024 largest entries only;
* :func:`tiled_int16_ids` - draft ids narrowed to int16 when reading ``p(x)`` and ``q(x)``: an id of
  32,768 or more wraps negative and reads the row before;
* :func:`tiled_float16_cumsum` - the inverse CDF's scans in float16: past a running sum of ``2^e``,
  entries below ``2^(e - 11)`` add nothing and are never drawn.  The check sees it round in float16, so
  its band is float16's (vacuous over thousands of tokens: UNDERPOWERED, naming the band); it FAILs
  once the drift a float32 kernel is held to is stated (``--max-drift``);
* :func:`tiled_reused_keys` - the race's exponential keys drawn for the first tile and reused for
  every tile: tokens at the same offset of different tiles compete with the same key, so the one in
  the lower tile wins every tie of weights.
"""

from __future__ import annotations

from specproof.impls.verifiers.tiled import tiled_round

__all__ = ["tiled_local_index", "tiled_first_tile_normaliser", "tiled_top1024_residual", "tiled_int16_ids",
           "tiled_float16_cumsum", "tiled_reused_keys", "TILED_MUTANTS"]


def _mutant(name: str, draw: str, bug: str, doc: str):
    """A verifier of the batched contract: :func:`tiled_round` with ``bug``."""
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        return tiled_round(draft_probs, target_probs, draft_token_ids, generator, draw=draw, bug=bug)

    verify.__name__ = verify.__qualname__ = name
    verify.__doc__ = f"Bug: {doc}"
    verify.__module__ = __name__
    return verify


_BUGS = {  # name: (draw, bug, what goes wrong)
    "tiled_local_index": ("race", "local-index", "the race's winner is returned as a tile-local index (no tile offset)."),
    "tiled_first_tile_normaliser": ("invcdf", "first-tile-normaliser",
                                    "the inverse CDF's normaliser is the first tile's sum only."),
    "tiled_top1024_residual": ("race", "top-1024", "the correction is drawn among the residual's 1,024 largest entries only."),
    "tiled_int16_ids": ("race", "int16-ids", "draft ids narrowed to int16 when reading p(x) and q(x)."),
    "tiled_float16_cumsum": ("invcdf", "float16-cumsum", "the inverse CDF's running sum is kept in float16."),
    "tiled_reused_keys": ("race", "reused-keys", "the first tile's exponential keys are reused for every tile."),
}
TILED_MUTANTS = {name: _mutant(name, *spec) for name, spec in _BUGS.items()}
globals().update(TILED_MUTANTS)  # each importable by name: specproof.impls.verifiers.tiled_mutants:tiled_int16_ids
