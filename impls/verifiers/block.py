"""Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding", 2024).

Along the drafted path, with ``p_i, q_i`` the laws at position ``i`` (1-based, ``p_{K+1}`` the bonus
row), ``w_0 = 1`` and ``w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))``;
``h_i = Z_i / (Z_i + 1 - w_i)`` with ``Z_i = sum_x max(0, w_i p_{i+1}(x) - q_{i+1}(x))`` for ``i < K``,
and ``h_K = w_K``. With independent ``eta_i ~ U``, ``tau = max{i : eta_i < h_i}`` (0 if none; every
``i`` is tested, no early break). Emit ``X_1..X_tau``, then ``Y`` from ``p_{K+1}`` if ``tau == K``,
else from ``norm(max(0, w_tau p_{tau+1} - q_{tau+1}))``.

Float choices, each measure-zero in real arithmetic: the comparison is strict (``eta == 0`` must not
select an ``i`` with ``h_i = 0``, which would emit a token with ``p = 0``); ``h_i = 1`` when its
denominator is 0 (``w_i = 1`` and ``Z_i = 0``); a ``Y`` law with no positive entry falls back to
``p_{tau+1}``; a draft with ``q(X_i) = 0`` gets ``w_i = 0``.

Uniform-injection contract as for the canonical cores: ``uniforms [B, K+1]`` in the dtype under
test, column ``i < K`` is ``eta_{i+1}``, column ``K`` the inverse-CDF uniform of ``Y``.
:func:`block_verify` draws them with ``torch.rand`` and calls :func:`block_verify_uniforms`.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, rows_at
from specproof.impls.contract import check_round
from specproof.impls.verifiers.canonical import round_uniforms
from specproof.impls.kernels.sampling import draw_inverse_cdf

__all__ = ["block_verify", "block_verify_uniforms", "block_weights"]


def block_weights(draft_probs: torch.Tensor, target_probs: torch.Tensor,
                  draft_token_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Path weights ``w_1..w_K`` and stop probabilities ``h_1..h_K``, each ``[B, K]``."""
    drafts = draft_token_ids.shape[1]
    p_x = drafted_probs(target_probs, draft_token_ids)
    q_x = drafted_probs(draft_probs, draft_token_ids)
    ratio = torch.where(q_x > 0, p_x / q_x, torch.zeros_like(p_x))
    weight = torch.ones_like(ratio[:, 0])
    weights = []
    for i in range(drafts):
        weight = torch.clamp(weight * ratio[:, i], max=1.0)
        weights.append(weight)
    w = torch.stack(weights, dim=1)
    if drafts == 1:
        return w, w.clone()
    inner = w[:, :-1]
    mass = torch.relu(inner.unsqueeze(-1) * target_probs[:, 1:drafts]
                      - draft_probs[:, 1:drafts]).sum(dim=-1)
    denominator = mass + (1 - inner)
    stop = torch.where(denominator > 0, mass / denominator, torch.ones_like(mass))
    return w, torch.cat([stop, w[:, -1:]], dim=1)


def _block_round(draft_probs, target_probs, draft_token_ids, uniforms):
    batch, drafts = draft_token_ids.shape
    w, h = block_weights(draft_probs, target_probs, draft_token_ids)
    position = torch.arange(1, drafts + 1, device=draft_token_ids.device)
    tau = torch.where(uniforms[:, :drafts] < h, position, torch.zeros_like(position)).amax(dim=-1)
    target_row = rows_at(target_probs, tau)
    draft_row = rows_at(draft_probs, tau.clamp(max=drafts - 1))
    w_tau = rows_at(torch.cat([torch.ones_like(w[:, :1]), w], dim=1).unsqueeze(-1), tau)
    residual = torch.relu(w_tau * target_row - draft_row)
    weights = torch.where((tau == drafts).unsqueeze(-1), target_row, residual)
    weights = torch.where(~(weights > 0).any(dim=-1, keepdim=True), target_row, weights)
    final_token = draw_inverse_cdf(weights, uniforms[:, drafts])
    return assemble_emitted(draft_token_ids, tau, final_token)


def block_verify_uniforms(draft_probs, target_probs, draft_token_ids, uniforms):
    """Block verification with injected ``uniforms [B, K+1]``; returns ``[B, K+1]`` int64."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return _block_round(draft_probs, target_probs, draft_token_ids, uniforms)


def block_verify(draft_probs, target_probs, draft_token_ids, generator):
    """Block verification; uniforms from ``torch.rand((B, K+1))`` in the dtype under test."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _block_round(draft_probs, target_probs, draft_token_ids,
                        round_uniforms(draft_probs, generator))
