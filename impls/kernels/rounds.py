"""Round mechanics shared by the batched verifiers: gathers, prefix length, output layout."""

from __future__ import annotations

import torch

__all__ = ["drafted_probs", "rows_at", "leading_accepts", "assemble_emitted"]


def drafted_probs(probs: torch.Tensor, draft_token_ids: torch.Tensor) -> torch.Tensor:
    """``probs[b, i, x_i]`` for the first ``K`` rows of ``probs`` ``[B, >=K, V]``: shape ``[B, K]``."""
    drafts = draft_token_ids.shape[1]
    return probs[:, :drafts].gather(-1, draft_token_ids.unsqueeze(-1)).squeeze(-1)


def rows_at(probs: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """``probs[b, position[b]]`` for ``probs [B, R, V]`` and ``position [B]``: shape ``[B, V]``."""
    batch = torch.arange(probs.shape[0], device=probs.device)
    return probs[batch, position]


def leading_accepts(accepted: torch.Tensor) -> torch.Tensor:
    """Length of the all-accepted prefix of each row of a ``[B, K]`` mask (stops at the first False)."""
    return accepted.to(torch.int64).cumprod(dim=-1).sum(dim=-1)


def assemble_emitted(draft_token_ids: torch.Tensor, n_accepted: torch.Tensor,
                     final_token: torch.Tensor) -> torch.Tensor:
    """``[B, K+1]`` int64: drafts ``0..n-1``, the correction or bonus token at ``n``, then ``-1``."""
    batch, drafts = draft_token_ids.shape
    position = torch.arange(drafts + 1, device=draft_token_ids.device)
    padded = torch.cat([draft_token_ids, draft_token_ids.new_full((batch, 1), -1)], dim=1)
    n = n_accepted.unsqueeze(-1)
    emitted = torch.where(position < n, padded, torch.full_like(padded, -1))
    return torch.where(position == n, final_token.unsqueeze(-1), emitted)
