"""SGLang's target-only tree walk in ``sgl_kernel``'s ``tree_speculative_sampling_target_only`` layout.

Layout (sgl-kernel ``speculative.py``; ``N + 1`` tree slots per row, slot 0 the root = the last
verified token, slots ``1..N`` the drafts)::

    tree_speculative_sampling_target_only(predicts [B*(N+1)] int32 (out), accept_index [B, D+1] int32
        (out), accept_token_num [B] int32 (out), candidates [B, N+1] (slot tokens),
        retrive_index [B, N+1] (slot -> position in predicts), retrive_next_token [B, N+1] (first
        child, -1 none), retrive_next_sibling [B, N+1] (next sibling, -1 none),
        uniform_samples [B, N+1] (one coin per slot, read when walking its children),
        uniform_samples_for_final_sampling [B], target_probs [B, N+1, V] (law of the children of each
        slot), draft_probs [B, N+1, V] (zeros in; the walk writes tried siblings' mass into it),
        threshold_single=1.0, threshold_acc=1.0, deterministic=True) -> None

``accept_index[b, 0..m]`` lists the accepted path (root first), ``accept_token_num[b] = m``, and
``predicts[accept_index[b, j]]`` is the token emitted after path node ``j``: the next accepted draft, or
for the last node the final token. Letters: the target-only walk reads only target probabilities.

Rule (target-only, deterministic siblings): at the last accepted slot with coin ``u``, try its children
in sibling order, accumulating their target mass ``a``; accept the first child with ``u < a``
(strict here; SGLang with thresholds 1 reads ``u <= a``); a rejected child's target mass is written
into ``draft_probs`` at the parent so the final residual ``relu(p - draft_probs)`` excludes it; with no
child accepted (or at a leaf) the final token is drawn by inverse CDF from that residual with the
final coin (an all-zero residual falling back to ``p``). For siblings that are the draft's top-k
(one-hot draft laws) this is recursive rejection sampling, hence lossless; for sampled siblings it is
not (the walk never reads the draft law).

Mutants: :func:`tree_target_only_shipped_edges` keeps SGLang's shipped edges (``u <= a``, so ``u = 0``
accepts a child of target probability 0; an all-zero residual emits id ``V - 1`` from the kernel's
``sampled_id = d - 1`` start); :func:`tree_target_only_keeps_tried` never writes the tried siblings'
mass, so the residual still holds the rejected children (the issue's "residual keeps already-tried
siblings" mutant, in SGLang's layout).
"""

from __future__ import annotations

import functools

import torch

from specproof.impls.kernels.sampling import correction_weights, draw_inverse_cdf

__all__ = ["tree_speculative_sampling_target_only", "tree_target_only_shipped_edges",
           "tree_target_only_keeps_tried"]


def tree_speculative_sampling_target_only(predicts, accept_index, accept_token_num, candidates, retrive_index,
                                          retrive_next_token, retrive_next_sibling, uniform_samples,
                                          uniform_samples_for_final_sampling, target_probs, draft_probs,
                                          threshold_single=1.0, threshold_acc=1.0, deterministic=True, *,
                                          strict=True, record_tried=True, last_id_on_empty=False):
    """The target-only walk (module docstring); fills the outputs. The keyword-only switches make the
    mutants: ``strict=False`` reads ``u <= a``, ``record_tried=False`` keeps tried siblings in the
    residual, ``last_id_on_empty=True`` emits id ``V - 1`` for an all-zero residual."""
    batch, slots = candidates.shape
    steps = accept_index.shape[1]
    rows = torch.arange(batch, device=candidates.device)
    scale = max(float(threshold_acc), 1e-9)
    parent = torch.zeros(batch, dtype=torch.int64, device=candidates.device)   # last accepted slot
    coin = uniform_samples[:, 0].to(target_probs.dtype)
    last = retrive_index[:, 0].to(torch.int64)
    accept_index[:, 0] = last.to(accept_index.dtype)
    accepted = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    walking = torch.ones(batch, dtype=torch.bool, device=candidates.device)
    for _ in range(1, steps):
        child = torch.where(walking, retrive_next_token[rows, parent].to(torch.int64), -1)
        mass = torch.zeros(batch, dtype=target_probs.dtype, device=target_probs.device)
        took = torch.zeros_like(walking)
        for _ in range(slots):
            trying = child >= 0
            if not bool(trying.any()):
                break
            slot = child.clamp(min=0)
            token = candidates[rows, slot].to(torch.int64)
            single = target_probs[rows, parent, token]
            mass = torch.where(trying, mass + single, mass)
            below = coin < mass / scale if strict else coin <= mass / scale
            ok = trying & (below | (single >= threshold_single))
            if record_tried:
                no = trying & ~ok
                draft_probs[rows[no], parent[no], token[no]] = target_probs[rows[no], parent[no], token[no]]
            predicts[last[ok]] = token[ok].to(predicts.dtype)
            accepted = accepted + ok.to(torch.int64)
            accept_index[rows[ok], accepted[ok]] = retrive_index[rows[ok], slot[ok]].to(accept_index.dtype)
            last = torch.where(ok, retrive_index[rows, slot].to(torch.int64), last)
            coin = torch.where(ok, uniform_samples[rows, slot].to(coin.dtype), coin)
            parent = torch.where(ok, slot, parent)
            took = took | ok
            child = torch.where(trying & ~ok, retrive_next_sibling[rows, slot].to(torch.int64), -1)
        walking = walking & took
    accept_token_num.copy_(accepted.to(accept_token_num.dtype))
    target_row, tried_row = target_probs[rows, parent], draft_probs[rows, parent]
    weights = correction_weights(target_row, tried_row, torch.zeros_like(walking))
    token = draw_inverse_cdf(weights, uniform_samples_for_final_sampling.to(weights.dtype))
    if last_id_on_empty:
        empty = ~(torch.relu(target_row - tried_row) > 0).any(dim=-1)
        token = torch.where(empty, torch.full_like(token, target_probs.shape[-1] - 1), token)
    predicts[last] = token.to(predicts.dtype)


tree_target_only_shipped_edges = functools.partial(tree_speculative_sampling_target_only, strict=False,
                                                   last_id_on_empty=True)
tree_target_only_shipped_edges.__doc__ = "SGLang's shipped edges: ``u <= a`` and id ``V - 1`` for an all-zero residual."
tree_target_only_keeps_tried = functools.partial(tree_speculative_sampling_target_only, record_tried=False)
tree_target_only_keeps_tried.__doc__ = "Bug: rejected siblings' mass is never recorded, so the residual keeps them."
