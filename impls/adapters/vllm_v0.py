"""Adapter ``vllm-v0``: vLLM v0's ``RejectionSampler.forward`` behind the batched contract.

Follows ``vllm/model_executor/layers/rejection_sampler.py`` from per-request seeds (vLLM 0.5.1,
vllm-project/vllm#6034) to the end of the v0 engine: the module, or any function, called as::

    forward(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs=None)

(an ``nn.Module`` instance is inspected through its ``forward``). The earlier form with
``target_token_ids`` in second place is not followed. Letters: vLLM v0's docstrings call the target
``q`` and the draft ``p`` (the paper's letters swapped against specproof's); the arguments are passed
by position, ``target_with_bonus_probs`` = specproof's ``target_probs [B, K+1, V]`` (bonus row
last), ``draft_probs`` = specproof's ``draft_probs``. The real module must be initialised by the
caller (``init_gpu_tensors``; ``strict_mode`` as wanted); the adapter only calls it.

Conversion: ``bonus_token_ids [B, 1]`` int64 sampled outside the sampler from target row ``K``
(exponential race on the harness generator); ``draft_token_ids`` stay ``[B, K]`` int64; the output
(int64 in v0) is returned as int64.

Randomness: ``seeded_seqs = {b: torch.Generator(device).manual_seed(seed_b)}`` for every row, the
seeds drawn from the harness generator (one ``randint``): every row is a seeded sequence, so a
conforming sampler's draws are a function of the harness generator's state.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm, int64_output
from specproof.impls.adapters.vllm_v1 import request_generators, sample_bonus
from specproof.impls.contract import check_round

__all__ = ["ADAPTER"]

SIGNATURE = ("target_with_bonus_probs", "bonus_token_ids", "draft_probs", "draft_token_ids", "seeded_seqs")


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        bonus = sample_bonus(target_probs[:, shape.drafts], generator).reshape(shape.batch, 1)
        seeded = request_generators(generator, shape.batch, draft_probs.device)
        return int64_output(fn(target_probs, bonus, draft_probs, draft_token_ids, seeded))

    return verify


ADAPTER = Adapter(
    name="vllm-v0", contract="batched",
    runtime="vLLM v0 RejectionSampler.forward(target_with_bonus_probs, bonus_token_ids, draft_probs, "
            "draft_token_ids, seeded_seqs) (vllm/model_executor/layers/rejection_sampler.py, 0.5.1 to the "
            "end of v0; its docstrings call the target q and the draft p, arguments passed by position)",
    randomness="every row a seeded sequence: seeded_seqs[b] = torch.Generator seeded from the harness "
               "generator; the bonus token drawn from the harness generator",
    forms=(SignatureForm("vLLM v0 RejectionSampler.forward", SIGNATURE),), build=_build)
