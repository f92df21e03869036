"""Batched verifiers written the way tiled GPU kernels are: the vocabulary in blocks of 4,096 tokens.

A serving kernel cannot hold a row of 150,000 probabilities in one block of threads: it walks the
row tile by tile, keeping a running maximum (an exponential race ``argmax w / E``) or running sums
(an inverse-CDF draw: tile sums, the tile where the threshold falls, then a scan inside it).  These
are plain torch on any device, looping over tiles as a kernel's blocks would, and exact
(:func:`tiled_ratio_race`, :func:`tiled_ratio_invcdf`); :mod:`.tiled_mutants` holds six ways such a
kernel goes wrong only above one tile (exact for ``V <= 4096``).

Every verifier here is :func:`tiled_round` with its switches: acceptance ``u < p/q`` with
``torch.rand((B, K))`` uniforms, then the correction (residual ``max(0, p - q)``) or bonus token drawn
tile by tile."""

from __future__ import annotations

import torch

from specproof.impls.contract import check_round
from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts
from specproof.impls.verifiers.canonical import final_weights

__all__ = ["BLOCK", "tiled_round", "tiled_ratio_race", "tiled_ratio_invcdf"]

BLOCK = 4096
BUGS = ("local-index", "first-tile-normaliser", "top-1024", "int16-ids", "float16-cumsum", "reused-keys")


def _drafted_int16(probs: torch.Tensor, draft_token_ids: torch.Tensor) -> torch.Tensor:
    """``probs[b, i, x_i]`` read as a kernel with int16 ids does: ``row pointer + int16(x)``, so an
    id of 32,768 or more wraps negative and reads the row before (clamped at the buffer's start)."""
    batch, drafts = draft_token_ids.shape
    vocab = probs.shape[-1]
    rows = torch.arange(batch, device=probs.device)[:, None] * probs.shape[1] + torch.arange(drafts, device=probs.device)
    offset = rows * vocab + draft_token_ids.to(torch.int16).to(torch.int64)
    return probs.reshape(-1)[offset.clamp(min=0)]


def _race(weights: torch.Tensor, generator: torch.Generator, bug: str | None) -> torch.Tensor:
    """``argmax w / E`` tile by tile: a running best key and its index."""
    batch, vocab = weights.shape
    best = torch.full((batch,), -1.0, dtype=weights.dtype, device=weights.device)
    index = torch.zeros(batch, dtype=torch.int64, device=weights.device)
    keys = None
    for start in range(0, vocab, BLOCK):
        tile = weights[:, start:start + BLOCK]
        if bug == "reused-keys" and keys is not None:
            exp = keys[:, : tile.shape[1]]  # the first tile's keys again
        else:
            exp = torch.empty_like(tile).exponential_(generator=generator)
            keys = exp if keys is None else keys
        # a zero weight never competes (keyed -1, even where its exponential is exactly 0: 0/0 is NaN);
        # a positive weight over an exponential of 0 keys +inf and wins, as its limit does
        value, local = torch.where(tile > 0, tile / exp, -1.0).max(dim=-1)
        better = value > best
        best = torch.where(better, value, best)
        found = local if bug == "local-index" else local + start
        index = torch.where(better, found, index)
    return index


def _float16_scan(padded: torch.Tensor) -> torch.Tensor:
    """The running sum a kernel keeps in one float16 register, entry by entry, carried across tiles
    (``acc = half(acc + w)``; zero entries leave it as it is, so only the columns with a positive
    entry are stepped).  Past a sum of 1/4 an entry of 2^-13 no longer moves it: those tokens are
    never drawn."""
    batch, tiles, block = padded.shape
    flat = padded.reshape(batch, tiles * block).to(torch.float16)
    columns = torch.nonzero((flat > 0).any(dim=0)).flatten().tolist()
    acc = torch.zeros(batch, dtype=torch.float16, device=padded.device)
    steps = torch.zeros_like(flat)
    for column in columns:
        acc = acc + flat[:, column]  # float16 + float16: rounded to float16
        steps[:, column] = acc
    # between positive columns the running sum stays where it was
    filled = torch.cummax(steps.to(padded.dtype), dim=-1).values
    local = filled.view(batch, tiles, block)
    # the tiles' scans as the two-pass draw reads them: minus the running total before the tile
    before = torch.cat([torch.zeros_like(local[:, :1, -1]), local[:, :-1, -1]], dim=1)
    return local - before.unsqueeze(-1)


def _inverse_cdf(weights: torch.Tensor, generator: torch.Generator, bug: str | None) -> torch.Tensor:
    """The first ``x`` with ``cumsum(w)[x] > u * sum(w)``, in two passes over the tiles: tile sums
    (their running total is the normaliser), then the scan inside the tile where ``u * sum`` falls."""
    batch, vocab = weights.shape
    u = torch.rand(batch, dtype=weights.dtype, device=weights.device, generator=generator)
    tiles = -(-vocab // BLOCK)
    padded = torch.nn.functional.pad(weights, (0, tiles * BLOCK - vocab)).view(batch, tiles, BLOCK)
    scan_dtype = torch.float16 if bug == "float16-cumsum" else weights.dtype
    local = _float16_scan(padded) if bug == "float16-cumsum" else padded.cumsum(dim=-1)  # [B, tiles, BLOCK]
    sums = local[:, :, -1]
    inclusive = sums.cumsum(dim=-1)  # running total over tiles
    total = sums[:, 0] if bug == "first-tile-normaliser" else inclusive[:, -1]
    threshold = (u.to(scan_dtype) * total).unsqueeze(-1)
    tile = torch.searchsorted(inclusive.contiguous(), threshold, right=True).squeeze(-1).clamp(max=tiles - 1)
    rows = torch.arange(batch, device=weights.device)
    before = torch.where(tile > 0, inclusive[rows, (tile - 1).clamp(min=0)], torch.zeros_like(total))
    scan = local[rows, tile] + before.unsqueeze(-1)
    inside = torch.searchsorted(scan.contiguous(), threshold, right=True).squeeze(-1)
    index = tile * BLOCK + inside
    # past the end (the threshold rounded up to the total): the last token of positive weight
    last_positive = vocab - 1 - (weights > 0).flip(-1).to(torch.int8).argmax(dim=-1)
    return torch.minimum(index, last_positive)


def tiled_round(draft_probs, target_probs, draft_token_ids, generator, *, draw: str = "race",
                bug: str | None = None) -> torch.Tensor:
    """One batched round (module docstring); ``draw``: ``"race"`` or ``"invcdf"``; ``bug``: one of
    ``BUGS`` (:mod:`.tiled_mutants`) or ``None``."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    batch, drafts = draft_token_ids.shape
    uniforms = torch.rand((batch, drafts), dtype=draft_probs.dtype, device=draft_probs.device, generator=generator)
    gather = _drafted_int16 if bug == "int16-ids" else drafted_probs
    accepted = accept_ratio(uniforms, gather(target_probs, draft_token_ids), gather(draft_probs, draft_token_ids))
    n_accepted = leading_accepts(accepted)
    weights = final_weights(draft_probs, target_probs, n_accepted)
    if bug == "top-1024" and weights.shape[-1] > 1024:
        top = weights.topk(1024, dim=-1)
        weights = torch.zeros_like(weights).scatter_(-1, top.indices, top.values)
    token = (_race if draw == "race" else _inverse_cdf)(weights, generator, bug)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def tiled_ratio_race(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q``; the correction or bonus by an exponential race over tiles of 4,096 (exact)."""
    return tiled_round(draft_probs, target_probs, draft_token_ids, generator, draw="race")


def tiled_ratio_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q``; the correction or bonus by a two-pass tiled inverse CDF (exact)."""
    return tiled_round(draft_probs, target_probs, draft_token_ids, generator, draw="invcdf")
