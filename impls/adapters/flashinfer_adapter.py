"""Adapter ``flashinfer``: FlashInfer's ``chain_speculative_sampling`` behind the batched contract.

Two signature generations are followed (``flashinfer/sampling.py``), told apart by the fourth
positional parameter name:

- 0.1.x (``uniform_samples`` third): ``chain_speculative_sampling(draft_probs, draft_token_ids,
  uniform_samples, target_probs, ...)``; the adapter makes the uniforms: ``torch.rand((B, K+1))``
  float32 (FlashInfer's documented dtype, ``[0, 1)``) from the harness generator;
- 0.2.x and later (``target_probs`` third, ``generator`` keyword): ``chain_speculative_sampling(
  draft_probs, draft_token_ids, target_probs, ..., generator=generator)``; the harness generator is
  handed over (the real kernel draws Philox uniforms from a CUDA generator's seed and offset). The
  same form covers 0.6 to 0.7.x, whose ``seed``/``offset`` keywords (ints or per-request tensors)
  are left unset: the kernel then reads them from the generator (``get_seed_and_offset``).

Letters: FlashInfer's kernel calls the *draft* probability ``p`` and the *target* ``q`` (accept iff
``u * p < q``), swapped against specproof's; its argument names are unambiguous and passed by
position. Conversion: ``draft_token_ids`` as int32 (FlashInfer's id dtype), probabilities in the
dtype and on the device under test, the output's first element (``output_token_ids [B, K+1]`` int32
padded with ``-1``; a bare tensor is accepted too) returned as int64; the two counters are dropped.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm, int64_output
from specproof.impls.contract import check_round

__all__ = ["ADAPTER", "CALLER_UNIFORMS", "GENERATOR"]

CALLER_UNIFORMS = SignatureForm("FlashInfer 0.1.x, caller-made uniforms",
                                ("draft_probs", "draft_token_ids", "uniform_samples", "target_probs"))
GENERATOR = SignatureForm("FlashInfer 0.2.x+, generator keyword",
                          ("draft_probs", "draft_token_ids", "target_probs"), keywords=("generator",))


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        ids = draft_token_ids.to(torch.int32).contiguous()
        if form is CALLER_UNIFORMS:
            uniforms = torch.rand((shape.batch, shape.drafts + 1), dtype=torch.float32,
                                  device=draft_probs.device, generator=generator)
            result = fn(draft_probs.contiguous(), ids, uniforms, target_probs.contiguous())
        else:
            result = fn(draft_probs.contiguous(), ids, target_probs.contiguous(), generator=generator)
        return int64_output(result)

    return verify


ADAPTER = Adapter(
    name="flashinfer", contract="batched",
    runtime="FlashInfer chain_speculative_sampling (flashinfer/sampling.py: 0.1.x with caller-made "
            "uniform_samples [B, K+1], 0.2.x to 0.7.x with a generator keyword); its kernel's p is the draft and "
            "q the target (accept u*p < q), swapped against specproof's letters",
    randomness="0.1.x: uniforms torch.rand((B, K+1)) float32 drawn from the harness generator; 0.2.x+: the "
               "harness generator passed as generator=",
    forms=(CALLER_UNIFORMS, GENERATOR), build=_build)
