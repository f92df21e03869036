"""Adapter ``sglang-tree``: SGLang's ``tree_speculative_sampling_target_only`` behind the tree contract.

Follows the sgl-kernel form with a final-sampling coin (sgl-kernel ``speculative.py``, 2025)::

    tree_speculative_sampling_target_only(predicts, accept_index, accept_token_num, candidates,
        retrive_index, retrive_next_token, retrive_next_sibling, uniform_samples,
        uniform_samples_for_final_sampling, target_probs, draft_probs, threshold_single=1.0,
        threshold_acc=1.0, deterministic=True) -> None (fills predicts, accept_index, accept_token_num)

The earlier form without ``uniform_samples_for_final_sampling`` is not followed. Conversion of one
tree-contract round (``parents [N]``, ``draft_probs [B,N,V]``, ``target_probs [B,N+1,V]``,
``node_tokens [B,N]``; harness/check/contracts/tree/signature.py):

- slot 0 is the root, slot ``i + 1`` is node ``i``; ``candidates [B, N+1]`` int64 (root token 0, never
  emitted), ``retrive_index[b, s] = b (N+1) + s``;
- ``retrive_next_token`` / ``retrive_next_sibling`` from ``parents``: a slot's first child is its
  lowest-index child, its next sibling the next higher-index child of the same parent (the contract's
  "siblings tried in increasing index"); int64;
- ``target_probs`` as given (row ``s`` = law of slot ``s``'s children, the contract's row order);
- ``draft_probs``: zeros ``[B, N+1, V]`` (target-only: the kernel writes the tried siblings' mass
  there). The contract's per-node draft laws are *not* passed: SGLang's target-only walk never reads
  them.  It accepts child ``j`` iff the coin falls below the target mass of the children tried so far,
  so the emitted token is a draw from the target whatever the drafts were, as long as no token repeats
  among siblings: exact for top-k siblings (SGLang's EAGLE trees) and for siblings drawn without
  replacement; lossy for i.i.d. sampled siblings only, where a repeated token's mass is counted twice;
- sibling modes: SGLang builds top-k trees, so ``--siblings`` defaults to ``topk`` through this adapter
  (``--siblings topk,distinct`` judges more);
- thresholds ``1.0`` / ``1.0`` (SGLang's exact setting), ``deterministic=True``;
- outputs ``predicts [B(N+1)]``, ``accept_index [B, D+1]`` (filled with ``-1``), ``accept_token_num [B]``
  int32; ``emitted[b, j] = predicts[accept_index[b, j]]`` for ``j <= accept_token_num[b]``, then ``-1``.

Randomness: ``uniform_samples [B, N+1]`` and ``uniform_samples_for_final_sampling [B]`` float32 drawn
from the harness generator (``torch.rand``), as SGLang's caller draws them.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm

__all__ = ["ADAPTER", "SIGNATURE", "call_kernel", "tree_links"]

# the thresholds and ``deterministic`` belong to the form: :func:`call_kernel` passes them positionally, and
# some entry points take them without defaults (SGLang's chain kernels, its JIT tree-kernel binding)
SIGNATURE = ("predicts", "accept_index", "accept_token_num", "candidates", "retrive_index",
             "retrive_next_token", "retrive_next_sibling", "uniform_samples",
             "uniform_samples_for_final_sampling", "target_probs", "draft_probs", "threshold_single",
             "threshold_acc", "deterministic")


def tree_links(parents: list[int]) -> tuple[list[int], list[int], int]:
    """``(next_token, next_sibling, depth)`` over the ``N + 1`` slots for the contract's ``parents``."""
    slots = len(parents) + 1
    next_token, next_sibling, last_child = [-1] * slots, [-1] * slots, [-1] * slots
    depth = [0] * slots
    for node, parent in enumerate(parents):
        slot, parent_slot = node + 1, parent + 1
        if not -1 <= parent < node:
            raise ValueError(f"parents[{node}] = {parent} is not in [-1, {node}) (topological order)")
        if last_child[parent_slot] < 0:
            next_token[parent_slot] = slot
        else:
            next_sibling[last_child[parent_slot]] = slot
        last_child[parent_slot] = slot
        depth[slot] = depth[parent_slot] + 1
    return next_token, next_sibling, max(depth)


def call_kernel(fn, parents: list[int], node_tokens, target_probs, draft_probs, generator, values=None):
    """Run an sgl-kernel-signature verifier ``fn`` on one round (module docstring's conversion) with the
    ``draft_probs`` handed to it; the emitted tokens ``[B, D+1]`` int64, ``-1`` after the path. ``values``:
    the kernel arguments between the final coins and the thresholds (default ``target_probs, draft_probs``)."""
    batch, slots, vocab = target_probs.shape
    device = target_probs.device
    next_token, next_sibling, depth = tree_links(parents)
    links = dict(dtype=torch.int64, device=device)
    candidates = torch.cat([torch.zeros(batch, 1, **links), node_tokens.to(torch.int64)], dim=1)
    retrive_index = torch.arange(batch * slots, **links).reshape(batch, slots)
    retrive_next_token = torch.tensor(next_token, **links).expand(batch, slots).contiguous()
    retrive_next_sibling = torch.tensor(next_sibling, **links).expand(batch, slots).contiguous()
    uniforms = torch.rand((batch, slots), dtype=torch.float32, device=device, generator=generator)
    final = torch.rand((batch,), dtype=torch.float32, device=device, generator=generator)
    predicts = torch.zeros(batch * slots, dtype=torch.int32, device=device)
    accept_index = torch.full((batch, depth + 1), -1, dtype=torch.int32, device=device)
    accept_token_num = torch.zeros(batch, dtype=torch.int32, device=device)
    fn(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
       retrive_next_sibling, uniforms, final, *(values or (target_probs.contiguous(), draft_probs.contiguous())),
       1.0, 1.0, True)
    position = torch.arange(depth + 1, device=device)
    on_path = position <= accept_token_num.to(torch.int64).unsqueeze(-1)
    slot_of = accept_index.to(torch.int64).clamp(min=0, max=batch * slots - 1)
    return torch.where(on_path, predicts.to(torch.int64)[slot_of], -1)


def _build(fn, form):
    def verify(parents, draft_probs, target_probs, node_tokens, generator):
        parent_list = [int(p) for p in torch.as_tensor(parents).reshape(-1).tolist()]
        return call_kernel(fn, parent_list, node_tokens, target_probs, torch.zeros_like(target_probs), generator)

    return verify


ADAPTER = Adapter(
    name="sglang-tree", contract="tree",
    runtime="SGLang tree_speculative_sampling_target_only (sgl-kernel speculative.py, 2025 form with "
            "uniform_samples_for_final_sampling): EAGLE-style trees as candidates / retrive_index / "
            "retrive_next_token / retrive_next_sibling; target-only (reads target probabilities only)",
    randomness="uniform_samples [B, N+1] and uniform_samples_for_final_sampling [B] float32 drawn from the "
               "harness generator",
    forms=(SignatureForm("sgl-kernel tree_speculative_sampling_target_only", SIGNATURE),), build=_build,
    sibling_modes=("topk",))
