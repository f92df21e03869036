"""Multi-draft recursive rejection sampling (SpecInfer; notes/algorithms.md section 4).

Layout (one tree level, i.i.d. siblings): ``draft_probs [B, V]`` is the law ``q`` every sibling was
drawn from, ``target_probs [B, V]`` the target law ``p`` at that position, ``draft_token_ids [B, n]``
the ``n`` siblings in the order they are tried. Output: ``emitted [B]`` int64, the one token the
position emits (an accepted sibling, or the final residual draw).

``r_1 = p``; sibling ``x_i`` is accepted iff ``u_i q(x_i) < r_i(x_i)`` (probability
``min(1, r_i(x_i)/q(x_i))``); else ``r_{i+1} = norm(max(0, r_i - q))``; if all are rejected the token
is drawn from ``r_{n+1}`` by inverse CDF. A rejected sibling has ``r_{i+1}(x_i) = 0``, so in exact
arithmetic the output equals a sibling iff that sibling was accepted. ``r_{i+1}`` with no positive
entry (reachable only through rounding) falls back to ``p``. Randomness: ``torch.rand((B, n+1))`` in
the dtype under test; column ``i < n`` tests sibling ``i``, column ``n`` drives the final draw.
"""

from __future__ import annotations

import torch

from specproof.impls.contract import check_multidraft
from specproof.impls.kernels.sampling import draw_inverse_cdf

__all__ = ["multidraft_rrs"]


def multidraft_rrs(draft_probs: torch.Tensor, target_probs: torch.Tensor,
                   draft_token_ids: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Recursive rejection sampling over ``n`` i.i.d. siblings; returns ``[B]`` int64 tokens."""
    shape = check_multidraft(draft_probs, target_probs, draft_token_ids, generator)
    uniforms = torch.rand((shape.batch, shape.drafts + 1), dtype=draft_probs.dtype,
                          device=draft_probs.device, generator=generator)
    residual = target_probs
    token = torch.full((shape.batch,), -1, dtype=torch.int64, device=draft_probs.device)
    undecided = torch.ones(shape.batch, dtype=torch.bool, device=draft_probs.device)
    for i in range(shape.drafts):
        sibling = draft_token_ids[:, i:i + 1]
        r_x = residual.gather(-1, sibling).squeeze(-1)
        q_x = draft_probs.gather(-1, sibling).squeeze(-1)
        accepted = undecided & (q_x > 0) & (uniforms[:, i] * q_x < r_x)
        token = torch.where(accepted, sibling.squeeze(-1), token)
        undecided = undecided & ~accepted
        unnormalised = torch.relu(residual - draft_probs)
        mass = unnormalised.sum(dim=-1, keepdim=True)
        residual = torch.where(mass > 0, unnormalised / mass, target_probs)
    final = draw_inverse_cdf(residual, uniforms[:, shape.drafts])
    return torch.where(undecided, final, token)
