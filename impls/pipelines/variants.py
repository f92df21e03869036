"""Lossless variants of the canonical pipeline: worse proposals or other round shapes, the same law.

Speculative sampling is exact for ANY proposal law ``q`` as long as the drafts are drawn from the very
``q`` that verification is handed, at the position it is used for.  So a checker must pass:

* :func:`onehot_generate` - verification treats each sampled draft as one-hot (``q = e_x``)
  *consistently*: accept with probability ``p(x)``, residual ``max(0, p - e_x)``; then
  ``P(y) = q(y) p(y) + p(y) sum_{x != y} q(x) = p(y)``.  It only lowers acceptance (vLLM #40149,
  https://github.com/vllm-project/vllm/pull/40149, discusses this one-hot view of a sampled draft).
* :func:`misaligned_drafter_generate` - the drafter consistently reads the previous column (its
  context one token behind, as a draft cache rewound too far: lablup/mlxcel #994,
  https://github.com/lablup/mlxcel/issues/994), and verification is handed that same law.
* :func:`varying_k_generate` - ``K`` drawn per round from the generator, uniform on ``{1, 2, 3, 4}``.
* :func:`upcast_generate` - the canonical pipeline written as runtimes write it for half-precision
  models: the models' logits upcast to float32 (exact) before processing, so the softmax, the draws
  (``torch.multinomial`` on float32 weights, float32 uniforms) and the verification run in float32.
"""

from __future__ import annotations

from functools import partial

import torch

from specproof.impls.pipelines.canonical import CANONICAL, Round, model_logits, run_pipeline
from specproof.impls.pipelines.canonical import propose as canonical_propose

__all__ = ["onehot_generate", "misaligned_drafter_generate", "varying_k_generate", "upcast_generate",
           "LOSSLESS_VARIANTS"]


def _onehot_propose(r: Round, draft, sampling, generator: torch.Generator) -> None:
    canonical_propose(r, draft, sampling, generator)
    r.q_verify = torch.nn.functional.one_hot(r.drafts, r.q_sampled.shape[-1]).to(r.q_sampled.dtype)


def _random_k(index: int, generator: torch.Generator) -> int:
    return 1 + int(torch.randint(0, 4, (1,), generator=generator, device=generator.device))


ONEHOT = CANONICAL.but(propose=_onehot_propose)
MISALIGNED = CANONICAL.but(propose=partial(canonical_propose, lag=1))  # the previous column, consistently
VARYING_K = CANONICAL.but(k_of_round=_random_k)


def onehot_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """Verification sees each draft as one-hot, consistently (lossless; module docstring)."""
    return run_pipeline(ONEHOT, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def misaligned_drafter_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """The drafter reads the previous column, verification gets that same law (lossless)."""
    return run_pipeline(MISALIGNED, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def varying_k_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """``K`` uniform on 1..4 per round, from the generator (lossless)."""
    return run_pipeline(VARYING_K, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def upcast_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """The canonical pipeline on the models' logits upcast to float32 (module docstring)."""
    target32, draft32 = (lambda ids: model_logits(target, ids).float()), (lambda ids: model_logits(draft, ids).float())
    return run_pipeline(CANONICAL, target32, draft32, prompt_ids, max_new_tokens, sampling, generator)


LOSSLESS_VARIANTS = {"onehot": onehot_generate, "misaligned-drafter": misaligned_drafter_generate,
                     "varying-k": varying_k_generate}
