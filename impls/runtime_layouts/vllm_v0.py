"""Canonical speculative sampling in vLLM v0's ``RejectionSampler.forward`` layout, and its shipped residual.

Layout (``vllm/model_executor/layers/rejection_sampler.py``, PyTorch path)::

    forward(target_with_bonus_probs [B, K+1, V], bonus_token_ids [B, 1], draft_probs [B, K, V],
            draft_token_ids [B, K], seeded_seqs: dict[int, torch.Generator] | None = None)
        -> output_token_ids [B, K+1] (accepted drafts, recovered or bonus token, then -1)

The bonus token is sampled by the caller. ``seeded_seqs`` maps a batch row to its generator; rows
without one draw from the global RNG.

Canonical rule here: per row, ``K`` acceptance uniforms ``torch.rand(1, K)`` in the probabilities'
dtype from the row's generator, accept iff ``q(x) > 0`` and ``u < p(x)/q(x)`` (strict), stop at the
first rejection; recovered tokens by the exponential race ``argmax w / E`` over the residual
``w = max(0, p - q)`` of each position (``E`` from the row's generator, ``[K, V]`` per row as v0's
``_multinomial`` draws it), the all-zero residual falling back to ``p``.

Mutant :func:`forward_clamped_residual`: vLLM v0's shipped residual ``clamp(p - q, min=tiny)``
renormalised (vllm-project/vllm#2336; its docstring admits the drift): every token, ``p = 0`` ones
included, gets residual weight ``tiny``, and an all-zero residual becomes uniform over the
vocabulary. Also v0's comparison ``u < min(p/q, 1)`` with no ``q > 0`` guard.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.kernels.sampling import correction_weights, race_winner

__all__ = ["forward", "forward_clamped_residual", "row_uniforms", "row_exponentials"]


def row_uniforms(seeded_seqs: dict | None, batch: int, drafts: int, dtype, device) -> torch.Tensor:
    """``[B, K]`` acceptance uniforms: row ``b`` from ``seeded_seqs[b]``, unseeded rows from the global RNG."""
    seeded = seeded_seqs or {}
    uniforms = torch.rand(batch, drafts, dtype=dtype, device=device)
    for row, generator in seeded.items():
        uniforms[row] = torch.rand(drafts, dtype=dtype, device=device, generator=generator)
    return uniforms


def row_exponentials(seeded_seqs: dict | None, shape: tuple[int, int, int], dtype, device) -> torch.Tensor:
    """``[B, K, V]`` ``Exp(1)`` keys of the recovered-token race, row ``b`` from its generator."""
    keys = torch.empty(shape, dtype=dtype, device=device).exponential_()
    for row, generator in (seeded_seqs or {}).items():
        keys[row].exponential_(generator=generator)
    return keys


def _round(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs, accept,
           residual):
    batch, drafts, vocab = draft_probs.shape
    if batch == 0:
        return torch.empty(0, drafts + 1, dtype=torch.int64, device=draft_probs.device)
    ids = draft_token_ids.to(torch.int64)
    target = target_with_bonus_probs[:, :-1]
    uniforms = row_uniforms(seeded_seqs, batch, drafts, draft_probs.dtype, draft_probs.device)
    accepted = accept(uniforms, drafted_probs(target, ids), drafted_probs(draft_probs, ids))
    n_accepted = leading_accepts(accepted)
    keys = row_exponentials(seeded_seqs, (batch, drafts, vocab), draft_probs.dtype, draft_probs.device)
    position = n_accepted.clamp(max=drafts - 1)
    weights = residual(rows_at(target, position), rows_at(draft_probs, position))
    recovered = race_winner(weights, rows_at(keys, position))
    final = torch.where(n_accepted < drafts, recovered, bonus_token_ids.reshape(-1).to(torch.int64))
    return assemble_emitted(ids, n_accepted, final)


def _accept_strict(u, p_x, q_x):
    return (q_x > 0) & (u < p_x / q_x)


def _canonical_residual(target_row, draft_row):
    return correction_weights(target_row, draft_row, torch.zeros(target_row.shape[0], dtype=torch.bool,
                                                                 device=target_row.device))


def forward(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs=None):
    """Canonical round in vLLM v0's layout (strict ``u < p/q``, residual race with the ``p`` fallback)."""
    return _round(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs,
                  _accept_strict, _canonical_residual)


def _accept_v0(u, p_x, q_x):
    """v0's ``u < min(p/q, 1)``: no ``q > 0`` guard (``p/0 = inf`` accepts, ``0/0 = NaN`` rejects)."""
    return u < torch.minimum(p_x / q_x, torch.ones_like(p_x))


def _clamped_residual(target_row, draft_row):
    """v0's ``clamp(p - q, min=tiny)`` renormalised."""
    clamped = torch.clamp(target_row - draft_row, min=torch.finfo(target_row.dtype).tiny)
    return clamped / clamped.sum(dim=-1, keepdim=True)


def forward_clamped_residual(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids,
                             seeded_seqs=None):
    """Bug (vLLM v0 as shipped, vllm-project/vllm#2336): residual ``clamp(p - q, min=tiny)``."""
    return _round(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs,
                  _accept_v0, _clamped_residual)
