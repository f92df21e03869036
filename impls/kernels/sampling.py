"""Correction weights and single-token draws shared by the verifiers.

A draw takes non-negative weights ``w [B, V]`` with at least one positive entry per row (they need
not be normalised) and returns one token id per row, ``[B]`` int64, on the weights' device:

- :func:`draw_multinomial`: ``torch.multinomial(w, 1)`` (itself an exponential race in the input
  dtype on CPU for one sample).
- :func:`draw_exponential_race`: ``argmax_x w(x) / E(x)`` with ``E ~ Exp(1)`` drawn by
  ``exponential_`` in the dtype under test. ``P(argmax = x) = w(x) / sum w`` exactly in real arithmetic.
- :func:`draw_inverse_cdf`: the first ``x`` with ``cumsum(w)[x] > u * sum(w)`` for a given uniform;
  a deterministic function of ``u``, so the harness can count grid points instead of sampling.

None of them can return a token of weight 0: the race keys zero-weight entries to ``-1`` (a zero
exponential would otherwise give ``0/0 = NaN``, and ``argmax`` lets NaN win), and inverse CDF clamps
the "ran off the end" case (``u * sum`` rounding up to the total) to the last positive entry.
"""

from __future__ import annotations

import torch

__all__ = ["correction_weights", "draw_multinomial", "draw_exponential_race", "race_winner",
           "draw_inverse_cdf", "counter_uniforms"]

_MIX = 0x9E3779B97F4A7C15


def counter_uniforms(seed: int, offset: int, count: int, stream: int, device) -> torch.Tensor:
    """``count`` float32 uniforms that depend only on ``(seed, offset, stream)``: a torch stand-in for a
    counter-based generator (Philox keyed by a seed, counted by an offset), one ``torch.Generator`` per key,
    so the draws are torch draws (the harness's RNG edge injection reaches them)."""
    key = (int(seed) * _MIX + int(offset) * 4099 + int(stream)) % (2**63 - 1)
    generator = torch.Generator(device=device).manual_seed(key)
    return torch.rand((count,), dtype=torch.float32, generator=generator, device=device)


def correction_weights(target_row: torch.Tensor, draft_row: torch.Tensor,
                       is_bonus: torch.Tensor) -> torch.Tensor:
    """Weights of the token emitted after the accepted prefix, ``[B, V]``.

    ``p`` on bonus rows (all drafts accepted), else the residual ``max(0, p - q)``. A residual with
    no positive entry (``p <= q`` everywhere, e.g. ``p == q``) has probability 0 of being needed in
    exact arithmetic but is reachable in floats; it falls back to ``p`` — the law the residual
    equals in the limit ``q -> p`` of a nearly-equal pair — never to a uniform over the vocabulary.
    """
    residual = torch.relu(target_row - draft_row)
    weights = torch.where(is_bonus.unsqueeze(-1), target_row, residual)
    empty = ~(weights > 0).any(dim=-1, keepdim=True)
    return torch.where(empty, target_row, weights)


def draw_multinomial(weights: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token per row by ``torch.multinomial(weights, 1, generator=generator)``."""
    return torch.multinomial(weights, 1, generator=generator).squeeze(-1)


def race_winner(weights: torch.Tensor, exponentials: torch.Tensor) -> torch.Tensor:
    """``argmax_x w(x) / E(x)`` over entries with ``w(x) > 0`` (zero weights are keyed ``-1``)."""
    keys = torch.where(weights > 0, weights / exponentials, torch.full_like(weights, -1.0))
    return keys.argmax(dim=-1)


def draw_exponential_race(weights: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token per row by ``argmax(w / E)``, ``E ~ Exp(1)`` in the weights' dtype (vLLM v1 style)."""
    return race_winner(weights, torch.empty_like(weights).exponential_(generator=generator))


def draw_inverse_cdf(weights: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """One token per row: the first ``x`` with ``cumsum(w)[x] > u * sum(w)``, ``u`` of shape ``[B]``.

    Cumulative sum, product and search all run in the weights' dtype; ``u`` must share it.
    """
    cdf = weights.cumsum(dim=-1)
    threshold = uniform.unsqueeze(-1) * cdf[:, -1:]
    index = torch.searchsorted(cdf, threshold, right=True).squeeze(-1)
    vocab = weights.shape[-1]
    last_positive = vocab - 1 - (weights > 0).flip(-1).to(torch.int8).argmax(dim=-1)
    return torch.minimum(index, last_positive)
