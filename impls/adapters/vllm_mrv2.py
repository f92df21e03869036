"""Adapter ``vllm-mrv2``: vLLM model runner V2's ``rejection_sample`` behind the batched contract.

Follows ``rejection_sample`` of ``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py`` (model
runner V2, vLLM 0.31 to 0.33.x; Triton kernels, GPU only in the release)::

    rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                     expanded_idx_mapping, expanded_local_pos, temperature, seed, num_speculative_steps,
                     synthetic_conditional_rates=None, use_fp64=False, use_block_verification=False)
        -> (sampled [R, S+1] int64, num_sampled [R] int32)

Letters: ``target_logits`` is the target (specproof's ``p``), ``draft_logits`` the draft (``q``); no swap.
Conversion of one harness round ``[B, K, V]``:

- ``target_logits [B*(K+1), V]``: ``log p`` of the ``K+1`` target rows (``-inf`` where ``p = 0``), in the
  dtype under test; ``draft_logits [B, K, V]``: ``log q``;
- ``draft_sampled [B*(K+1)]``: per request the token before the drafts (0 here; it is never read as a
  draft) then the ``K`` draft ids; ``cu_num_logits = 0, K+1, .., B(K+1)`` int32;
- ``pos``: positions ``0..K`` per request (the counter offsets); ``idx_mapping = 0..B-1``;
  ``expanded_idx_mapping``/``expanded_local_pos``: the request and the step of each logit row;
- ``temperature = 1`` (float32, the random path; the logits are the processed ones);
  ``seed [B]`` int64: one seed per request drawn from the harness generator (:func:`.base.derived_seeds`);
  ``num_speculative_steps = K``; the mode keywords keep their defaults (standard verification): to check
  block verification or FLy, check a ``functools.partial`` of the function with ``use_block_verification=True``
  or ``fly_window_size=W`` (FLy's keywords exist only in the heads of pull request #53987; the watermark
  keywords of later heads are not passed either);
- the output: ``sampled`` with the entries at or past ``num_sampled`` set to ``-1``.

Randomness: every draw of MRV2 is counter-based on ``(seed, pos)``; the seeds come from the harness
generator, so a conforming function is a deterministic function of the harness generator's state.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm, derived_seeds
from specproof.impls.contract import check_round

__all__ = ["ADAPTER", "mrv2_inputs"]

SIGNATURE = ("target_logits", "draft_logits", "draft_sampled", "cu_num_logits", "pos", "idx_mapping",
             "expanded_idx_mapping", "expanded_local_pos", "temperature", "seed", "num_speculative_steps")


def mrv2_inputs(draft_probs, target_probs, draft_token_ids, generator) -> dict:
    """The keyword arguments of MRV2's ``rejection_sample`` for one harness round (module docstring)."""
    batch, drafts, vocab = draft_probs.shape
    device = draft_probs.device
    rows = drafts + 1
    previous = torch.zeros((batch, 1), dtype=torch.int64, device=device)
    return {
        "target_logits": torch.log(target_probs).reshape(batch * rows, vocab).contiguous(),
        "draft_logits": torch.log(draft_probs).contiguous(),
        "draft_sampled": torch.cat([previous, draft_token_ids.to(torch.int64)], dim=1).reshape(-1).contiguous(),
        "cu_num_logits": torch.arange(batch + 1, dtype=torch.int32, device=device) * rows,
        "pos": torch.arange(rows, dtype=torch.int64, device=device).repeat(batch),
        "idx_mapping": torch.arange(batch, dtype=torch.int32, device=device),
        "expanded_idx_mapping": torch.arange(batch, dtype=torch.int32, device=device).repeat_interleave(rows),
        "expanded_local_pos": torch.arange(rows, dtype=torch.int32, device=device).repeat(batch),
        "temperature": torch.ones((batch,), dtype=torch.float32, device=device),
        "seed": torch.tensor(derived_seeds(generator, batch, device), dtype=torch.int64, device=device),
        "num_speculative_steps": drafts,
    }


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        result = fn(**mrv2_inputs(draft_probs, target_probs, draft_token_ids, generator))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            return result  # the contract check reports what came back
        sampled, num_sampled = result
        column = torch.arange(shape.drafts + 1, device=sampled.device)
        counts = torch.as_tensor(num_sampled, device=sampled.device).to(torch.int64).unsqueeze(-1)
        return torch.where(column < counts, sampled.to(torch.int64), torch.full_like(sampled, -1, dtype=torch.int64))

    return verify


ADAPTER = Adapter(
    name="vllm-mrv2", contract="batched",
    runtime="vLLM model runner V2 rejection_sample (vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py, "
            "0.31 to 0.33.x: target logits [L, V] and draft logits [R, S, V] in, log-space ratio test, "
            "Gumbel-max resampling; target_logits = target p, draft_logits = draft q, no letter swap)",
    randomness="counter-based on (seed, pos): one seed per request in the seed tensor, drawn from the "
               "harness generator; positions 0..K",
    forms=(SignatureForm("vLLM MRV2 rejection_sample", SIGNATURE),), build=_build)
