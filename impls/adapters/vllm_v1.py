"""Adapter ``vllm-v1``: vLLM v1's ``rejection_sample`` behind the batched contract.

Follows the 8-argument function of ``vllm/v1/sample/rejection_sampler.py`` (V1 engine spec decode)
in two forms:

- releases up to 0.15.0 (read at vllm-project/vllm 0097a7b, float32 uniforms, and in the 0.12.0 and 0.15.0
  wheels on PyPI, float64 uniforms): ``target_probs`` in the sixth argument::

    rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                     draft_probs, target_probs, bonus_token_ids, sampling_metadata)

- 0.16.0 to 0.33.0 (the wheels on PyPI; 0.34.0 removed this file, model runner V2 only: ``--adapter
  vllm-mrv2``): ``target_logits`` there, the processed target logits; the function applies the softmax
  itself. The adapter hands ``log(p)`` in the dtype under test (``-inf`` where ``p = 0``),
  whose softmax is ``p`` up to one rounding (and exactly 0 where ``p = 0``).

Letters: vLLM's ``draft_probs`` is the draft law (specproof's ``q``), ``target_probs`` the target
(specproof's ``p``); no swap. Conversion of one harness round ``[B, K, V]``:

- ``draft_token_ids``: the ``[B, K]`` ids flattened to ``[B*K]`` int32; ``num_draft_tokens = [K]*B``,
  ``max_spec_len = K``, ``cu_num_draft_tokens = K, 2K, .., BK`` int32;
- ``draft_probs [B*K, V]``, ``target_probs [B*K, V]`` (target rows ``0..K-1``), in the dtype and on the
  device under test (vLLM itself hands float32 softmax outputs);
- ``bonus_token_ids [B, 1]`` int32: sampled here, outside the rejection sampler as vLLM does, from
  target row ``K`` by the exponential race ``argmax p_K / E`` on the harness generator;
- ``sampling_metadata``: :class:`V1SamplingMetadata` with the fields ``rejection_sample`` reads on
  the all-random path (``all_greedy=False``, ``all_random=True``, ``temperature`` ones,
  ``top_k``/``top_p`` ``None``, ``generators``).
- The output ``[B, K+1]`` int32 with ``-1`` placeholders becomes int64; any other id outside
  ``[0, V)`` is left for the harness's contract check to report.

Randomness: one 63-bit seed per request drawn from the harness generator (one ``randint``), then
``generators = {r: torch.Generator(device).manual_seed(seed_r)}`` for every request, so every draw of
a conforming ``rejection_sample`` is a function of the harness generator's state. A function that
ignores ``generators`` and draws from the global RNG is caught as not reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm, derived_seeds, int64_output
from specproof.impls.contract import check_round
from specproof.impls.kernels.sampling import draw_exponential_race

__all__ = ["ADAPTER", "V1SamplingMetadata", "request_generators"]

SIGNATURE = ("draft_token_ids", "num_draft_tokens", "max_spec_len", "cu_num_draft_tokens",
             "draft_probs", "target_probs", "bonus_token_ids", "sampling_metadata")
LOGITS_FORM = SignatureForm("vLLM 0.16 to 0.33 rejection_sample (target logits, softmax inside)",
                            SIGNATURE[:5] + ("target_logits",) + SIGNATURE[6:])


@dataclass
class V1SamplingMetadata:
    """The fields of vLLM v1's ``SamplingMetadata`` that ``rejection_sample`` reads (all-random batch)."""

    temperature: torch.Tensor
    generators: dict = field(default_factory=dict)
    all_greedy: bool = False
    all_random: bool = True
    top_k: torch.Tensor | None = None
    top_p: torch.Tensor | None = None


def request_generators(generator: torch.Generator, count: int, device: torch.device) -> dict:
    """``{r: torch.Generator}`` for ``r < count``, each seeded from the harness generator."""
    return {request: torch.Generator(device=device).manual_seed(seed)
            for request, seed in enumerate(derived_seeds(generator, count, device))}


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        batch, drafts, vocab = shape.batch, shape.drafts, shape.vocab
        device = draft_probs.device
        bonus = sample_bonus(target_probs[:, drafts], generator)
        metadata = V1SamplingMetadata(temperature=torch.ones(batch, dtype=torch.float32, device=device),
                                      generators=request_generators(generator, batch, device))
        cu = torch.arange(1, batch + 1, dtype=torch.int32, device=device) * drafts
        flat_ids = draft_token_ids.reshape(-1).to(torch.int32).contiguous()
        flat_draft = draft_probs.reshape(batch * drafts, vocab).contiguous()
        flat_target = target_probs[:, :drafts].reshape(batch * drafts, vocab).contiguous()
        if form is LOGITS_FORM:
            flat_target = torch.log(flat_target)
        bonus_ids = bonus.to(torch.int32).reshape(batch, 1).contiguous()
        return int64_output(fn(flat_ids, [drafts] * batch, drafts, cu, flat_draft, flat_target, bonus_ids, metadata))

    return verify


def sample_bonus(bonus_probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The bonus token ``[B]`` sampled outside the verifier from target row ``K`` (exponential race)."""
    return draw_exponential_race(bonus_probs, generator)


ADAPTER = Adapter(
    name="vllm-v1", contract="batched",
    runtime="vLLM v1 rejection_sample (vllm/v1/sample/rejection_sampler.py, V1 engine up to 0.15.0 "
            "target probs, 0.16.0 to 0.33.0 target logits with the softmax inside: flattened [num_tokens, V] rows, "
            "int32 ids, cu_num_draft_tokens, bonus sampled outside; draft_probs = draft q, target = "
            "target p, no letter swap)",
    randomness="one torch.Generator per request in sampling_metadata.generators, each seeded from the "
               "harness generator; the bonus token drawn from the harness generator",
    forms=(SignatureForm("vLLM v1 rejection_sample (<= 0.15, target probs)", SIGNATURE), LOGITS_FORM),
    build=_build)
