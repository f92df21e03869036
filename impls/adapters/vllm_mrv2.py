"""Adapter ``vllm-mrv2``: vLLM model runner V2's ``rejection_sample`` behind the batched contract.

Follows ``rejection_sample`` of ``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py`` (model
runner V2, vLLM 0.22.0 to 0.34.0, the newest release; Triton kernels, GPU only in the release)::

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
  or ``fly_window_size=W`` (FLy's keywords from 0.33.0; the watermark keywords of 0.30.0 on are not passed);
- 0.34.0 (:data:`CACHE_FORM`): ``draft_logits_cache`` in place of ``draft_logits``, a
  :class:`ReplicatedDraftLogits` over the same ``log q`` (``rejection_sample`` reads only its ``values`` and
  ``row_mapping``, None for a cache that is not sharded across tensor-parallel ranks);
- the output: ``sampled`` with the entries at or past ``num_sampled`` set to ``-1``.

Run as released under ``TRITON_INTERPRET=1`` (0.33.0's and 0.34.0's ``rejection_sample`` from their wheels,
imported without the rest of vLLM and with ``log1p`` written from ``tl.log``, since Triton's interpreter does
not run libdevice; outside this repository): 0.33.0's standard mode is UNDERPOWERED at ``--samples 64``
(406 s on this 2-core machine, no finding; its ``tl.rand`` draws injected, its hash-keyed Gumbel noise
reported as not injected). On one round (``K = 3``, ``V = 4``), a chi-square homogeneity test finds no
difference between the first two emitted tokens of the releases and of
:mod:`specproof.impls.runtime_layouts.vllm_mrv2`: 0.33.0 with 4,000 rows each (standard mode p-value 0.46,
FLy with window 1 0.49), 0.34.0 through :data:`CACHE_FORM` with 1,000 rows each (0.55 and 0.67); agreement
within what those rows can see, not equality of the laws.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm, derived_seeds
from specproof.impls.contract import check_round

__all__ = ["ADAPTER", "CACHE_FORM", "ReplicatedDraftLogits", "mrv2_inputs"]

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


CACHE_FORM = SignatureForm("vLLM MRV2 rejection_sample, 0.34 (draft_logits_cache)",
                           ("target_logits", "draft_logits_cache") + SIGNATURE[2:])


class ReplicatedDraftLogits:
    """0.34's ``DraftLogitsCache`` as ``rejection_sample`` reads it: ``values [R, S, V]``, the row of a request
    its request state index, and ``row_mapping`` None (a replicated cache, not sharded across TP ranks)."""

    def __init__(self, values: torch.Tensor):
        self.values = values
        self.row_mapping = None


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        inputs = mrv2_inputs(draft_probs, target_probs, draft_token_ids, generator)
        if form is CACHE_FORM:
            inputs["draft_logits_cache"] = ReplicatedDraftLogits(inputs.pop("draft_logits"))
        result = fn(**inputs)
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
            "0.22.0 to 0.34.0: target logits [L, V] and draft logits [R, S, V] in (0.34: in a replicated "
            "draft_logits_cache), log-space ratio test, Gumbel-max resampling; target_logits = target p, "
            "draft_logits = draft q, no letter swap)",
    randomness="counter-based on (seed, pos): one seed per request in the seed tensor, drawn from the "
               "harness generator; positions 0..K",
    forms=(SignatureForm("vLLM MRV2 rejection_sample", SIGNATURE), CACHE_FORM), build=_build)
