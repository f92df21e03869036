"""Pipeline mutants: one per bug class reported in runtimes' trackers, each the canonical pipeline with
one part replaced.  Each is NOT lossless; the comment on each names the report it mirrors.

* :func:`raw_q_generate` - drafts sampled from the processed draft law, verification handed the raw
  ``softmax`` of the draft logits (transformers #47932,
  https://github.com/huggingface/transformers/issues/47932: candidate generators return a ``q`` they
  did not sample from).
* :func:`bf16_draft_generate` - drafts sampled from a bfloat16 softmax of the draft logits,
  verification handed the float32 law (DeepSpec #31, https://github.com/deepseek-ai/DeepSpec/issues/31).
* :func:`default_target_generate` - target probabilities with default parameters (temperature 1, no
  filter) while the drafts are processed (vLLM #10198, https://github.com/vllm-project/vllm/issues/10198).
* :func:`bonus_only_generate` - min-p honoured for the bonus token only: the verification rows before
  it skip min-p (vLLM #42744, https://github.com/vllm-project/vllm/issues/42744, min-p / logit bias
  applied to the bonus token only).
* :func:`mixed_residual_generate` - accepts with the real ``q`` but builds the residual as if ``q`` were
  one-hot at the draft, ``max(0, p - e_x)``: two views of one draft mixed (the consistent one-hot view,
  vLLM #40149, is lossless: :mod:`.variants`).
* :func:`stale_context_generate` - the next round does not start from the corrected prefix: the models
  keep reading the rejected draft where the correction was emitted (mlx-lm #1109,
  https://github.com/ml-explore/mlx-lm/pull/1109: rejected drafts left in a non-trimmable cache;
  openvino.genai #4190, https://github.com/openvinotoolkit/openvino.genai/issues/4190).
* :func:`accept_le_generate` - accepts with ``u <= p/q`` (transformers' ``_speculative_sampling``
  before 5.25.0, ``r <= p/q``; :mod:`specproof.impls.adapters.transformers_adapter`): a draft the processed target
  removed (``p = 0``) is accepted when ``u == 0``, probability ``2^-24`` per test in float32, so only
  the RNG edge injection sees it.
* :func:`shifted_q_generate` - the drafter samples draft ``i`` from its law at column ``n - 1 + i`` but
  verification is handed the draft law of column ``n + i`` (round bookkeeping, issue 14's class; no
  single public report located).
"""

from __future__ import annotations

from functools import partial

import torch

from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.kernels.sampling import correction_weights, draw_multinomial
from specproof.impls.pipelines.canonical import (CANONICAL, Round, columns, model_logits, run_pipeline,
                                                 write_emitted)
from specproof.impls.pipelines.canonical import propose as canonical_propose
from specproof.impls.pipelines.processing import processed_probs

__all__ = ["raw_q_generate", "bf16_draft_generate", "default_target_generate", "bonus_only_generate",
           "mixed_residual_generate", "stale_context_generate", "shifted_q_generate", "accept_le_generate",
           "PIPELINE_MUTANTS"]


def _draft_rows(r: Round, draft, offset: int) -> torch.Tensor:
    """Draft logits ``[B, K, V]`` at columns ``n - 1 + offset + i`` (every draft already in the buffer)."""
    logits = model_logits(draft, r.buffer[:, :int(r.lengths.max()) + r.k])
    index = r.lengths.unsqueeze(1) - 1 + offset + torch.arange(r.k, device=r.lengths.device)
    return columns(logits, index)


def _raw_q_propose(r: Round, draft, sampling, generator: torch.Generator) -> None:
    canonical_propose(r, draft, sampling, generator)
    r.q_verify = _draft_rows(r, draft, 0).softmax(-1)  # transformers #47932: the unprocessed q


def _bf16_law(row: torch.Tensor, sampling) -> torch.Tensor:
    return processed_probs(row.to(torch.bfloat16), sampling).to(row.dtype)  # DeepSpec #31: native-dtype path


def _target_logits(r: Round, target) -> torch.Tensor:
    logits = model_logits(target, r.buffer[:, :int(r.lengths.max()) + r.k])
    index = r.lengths.unsqueeze(1) - 1 + torch.arange(r.k + 1, device=r.lengths.device)
    return columns(logits, index)


def _default_target_score(r: Round, target, sampling) -> None:
    r.p = _target_logits(r, target).softmax(-1)  # vLLM #10198: default parameters on the target side


def _bonus_only_score(r: Round, target, sampling) -> None:
    rows = _target_logits(r, target)
    without = processed_probs(rows[:, :r.k], sampling, skip=("min_p",))  # vLLM #42744
    r.p = torch.cat([without, processed_probs(rows[:, r.k:], sampling)], dim=1)


def _mixed_residual_verify(r: Round, generator: torch.Generator) -> torch.Tensor:
    q, p, drafts = r.q_verify, r.p, r.drafts
    u = torch.rand(drafts.shape, dtype=q.dtype, device=q.device, generator=generator)
    n = leading_accepts(accept_ratio(u, drafted_probs(p, drafts), drafted_probs(q, drafts)))
    onehot = torch.nn.functional.one_hot(drafts, q.shape[-1]).to(q.dtype)
    weights = correction_weights(rows_at(p, n), rows_at(onehot, n.clamp(max=r.k - 1)), n == r.k)
    return assemble_emitted(drafts, n, draw_multinomial(weights, generator))


def _accept_le_verify(r: Round, generator: torch.Generator) -> torch.Tensor:
    q, p, drafts = r.q_verify, r.p, r.drafts
    u = torch.rand(drafts.shape, dtype=q.dtype, device=q.device, generator=generator)
    p_x, q_x = drafted_probs(p, drafts), drafted_probs(q, drafts)
    n = leading_accepts((q_x > 0) & (u <= p_x / q_x))  # transformers before 5.25.0: r <= p/q
    weights = correction_weights(rows_at(p, n), rows_at(q, n.clamp(max=r.k - 1)), n == r.k)
    return assemble_emitted(drafts, n, draw_multinomial(weights, generator))


def _stale_advance(r: Round, emitted: torch.Tensor) -> None:
    count = (emitted >= 0).sum(1)
    write_emitted(r.output, r.lengths, emitted)
    position = torch.arange(emitted.shape[1], device=emitted.device)
    corrected = (position == (count - 1).unsqueeze(1)) & (count <= r.k).unsqueeze(1)
    padded = torch.cat([r.drafts, r.drafts[:, -1:]], dim=1)
    write_emitted(r.buffer, r.lengths, torch.where(corrected, padded, emitted))  # the rejected draft stays
    r.lengths = r.lengths + count


def _shifted_q_propose(r: Round, draft, sampling, generator: torch.Generator) -> None:
    canonical_propose(r, draft, sampling, generator)
    r.q_verify = processed_probs(_draft_rows(r, draft, 1), sampling)


def _pipeline(name: str, parts):
    def generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        return run_pipeline(parts, target, draft, prompt_ids, max_new_tokens, sampling, generator)
    generate.__name__ = generate.__qualname__ = name
    return generate


raw_q_generate = _pipeline("raw_q_generate", CANONICAL.but(propose=_raw_q_propose))
bf16_draft_generate = _pipeline("bf16_draft_generate", CANONICAL.but(propose=partial(canonical_propose, sample_law=_bf16_law)))
default_target_generate = _pipeline("default_target_generate", CANONICAL.but(score=_default_target_score))
bonus_only_generate = _pipeline("bonus_only_generate", CANONICAL.but(score=_bonus_only_score))
mixed_residual_generate = _pipeline("mixed_residual_generate", CANONICAL.but(verify=_mixed_residual_verify))
stale_context_generate = _pipeline("stale_context_generate", CANONICAL.but(advance=_stale_advance))
accept_le_generate = _pipeline("accept_le_generate", CANONICAL.but(verify=_accept_le_verify))
shifted_q_generate = _pipeline("shifted_q_generate", CANONICAL.but(propose=_shifted_q_propose))

PIPELINE_MUTANTS = {
    "raw-q": raw_q_generate, "bf16-draft": bf16_draft_generate, "default-target": default_target_generate,
    "bonus-only-min-p": bonus_only_generate, "mixed-residual": mixed_residual_generate,
    "stale-context": stale_context_generate, "shifted-q": shifted_q_generate, "accept-le": accept_le_generate,
}
