"""Canonical speculative sampling (Leviathan et al. 2023; Chen et al. 2023) in runtime-style torch.

One round, batched over ``B`` rows (vLLM/FlashInfer layout, notes/runtimes.md):

- accept draft ``x_i`` iff ``u_i`` passes one of the acceptance tests in :mod:`.acceptance`
  (probability ``min(1, p_i(x_i)/q_i(x_i))``), stopping at the first rejection ``n``;
- emit ``x_1..x_n``, then one token from ``norm(max(0, p_n - q_n))`` if ``n < K`` or from the bonus
  row ``p_K`` if ``n == K`` (the all-zero residual falls back to ``p_n``, see
  :func:`.sampling.correction_weights`); ``-1`` pads the rest of the ``[B, K+1]`` output.

Names are ``canonical_<acceptance>_<draw>``: acceptance ``ratio`` (``u < p/q``), ``product``
(``u*q < p``) or ``log`` (``log u + log q < log p``); draw ``multinomial``, ``race`` (exponential race)
or ``invcdf`` (inverse CDF). Everything runs in the dtype and on the device of the inputs. On CPU
(torch 2.13) ``multinomial`` and ``race`` emit identical tokens from the same generator state:
``torch.multinomial(w, 1)`` is itself ``argmax(w / E)`` with ``E`` drawn by ``exponential_`` in w's dtype.

Randomness: batched functions take a ``torch.Generator``. The ``multinomial`` and ``race`` variants
draw ``torch.rand((B, K))`` acceptance uniforms, then the draw's own randomness. The ``invcdf``
variants are thin wrappers: they draw ``uniforms = torch.rand((B, K+1))`` in the dtype under test and
call the uniform-injection core ``canonical_<acceptance>_uniforms``, whose contract is

    uniforms [B, K+1], dtype of the probabilities: column i < K is the acceptance uniform of draft i;
    column K is the one inverse-CDF uniform of the final draw (correction at the first rejection, or
    bonus). Exactly one final draw happens per row, so one column serves both.

so the output is a deterministic function of ``uniforms`` that the harness can analyse on the dtype's
uniform grid. ``*_compiled`` variants run the same core through ``torch.compile`` (inductor); see
:mod:`.compiled` for how they relate to eager.
"""

from __future__ import annotations

from typing import Callable

import torch

from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.contract import check_round
from specproof.impls.kernels.acceptance import accept_log, accept_product, accept_ratio
from specproof.impls.kernels.sampling import correction_weights, draw_exponential_race, draw_inverse_cdf, draw_multinomial

__all__ = [
    "canonical_ratio_multinomial", "canonical_ratio_race", "canonical_ratio_invcdf",
    "canonical_product_multinomial", "canonical_product_race", "canonical_product_invcdf",
    "canonical_log_multinomial", "canonical_log_race", "canonical_log_invcdf",
    "canonical_ratio_uniforms", "canonical_product_uniforms", "canonical_log_uniforms",
    "final_weights", "inverse_cdf_round", "sampled_round",
]

Acceptance = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
Draw = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def final_weights(draft_probs: torch.Tensor, target_probs: torch.Tensor,
                  n_accepted: torch.Tensor) -> torch.Tensor:
    """Weights of the token after ``n`` accepted drafts: residual at row ``n < K``, else ``p_K``."""
    drafts = draft_probs.shape[1]
    target_row = rows_at(target_probs, n_accepted)
    draft_row = rows_at(draft_probs, n_accepted.clamp(max=drafts - 1))
    return correction_weights(target_row, draft_row, n_accepted == drafts)


def inverse_cdf_round(acceptance: Acceptance, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                      draft_token_ids: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Uniform-injection round (unvalidated): acceptance uniforms ``[:, :K]``, draw uniform ``[:, K]``."""
    drafts = draft_token_ids.shape[1]
    accepted = acceptance(uniforms[:, :drafts], drafted_probs(target_probs, draft_token_ids),
                          drafted_probs(draft_probs, draft_token_ids))
    n_accepted = leading_accepts(accepted)
    token = draw_inverse_cdf(final_weights(draft_probs, target_probs, n_accepted),
                             uniforms[:, drafts])
    return assemble_emitted(draft_token_ids, n_accepted, token)


def sampled_round(acceptance: Acceptance, draw: Draw, draft_probs: torch.Tensor,
                  target_probs: torch.Tensor, draft_token_ids: torch.Tensor,
                  generator: torch.Generator) -> torch.Tensor:
    """Generator-driven round (unvalidated): ``torch.rand((B, K))`` acceptance uniforms, then ``draw``."""
    batch, drafts = draft_token_ids.shape
    uniforms = torch.rand((batch, drafts), dtype=draft_probs.dtype, device=draft_probs.device,
                          generator=generator)
    accepted = acceptance(uniforms, drafted_probs(target_probs, draft_token_ids),
                          drafted_probs(draft_probs, draft_token_ids))
    n_accepted = leading_accepts(accepted)
    token = draw(final_weights(draft_probs, target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def round_uniforms(draft_probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``torch.rand((B, K+1))`` in the dtype and on the device under test: the invcdf wrappers' draw."""
    batch, drafts, _ = draft_probs.shape
    return torch.rand((batch, drafts + 1), dtype=draft_probs.dtype, device=draft_probs.device,
                      generator=generator)


# --- uniform-injection cores -------------------------------------------------------------------

def canonical_ratio_uniforms(draft_probs, target_probs, draft_token_ids, uniforms):
    """Uniform-injection round, acceptance ``u < p/q``, inverse-CDF final draw."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return inverse_cdf_round(accept_ratio, draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_product_uniforms(draft_probs, target_probs, draft_token_ids, uniforms):
    """Uniform-injection round, acceptance ``u*q < p``, inverse-CDF final draw."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return inverse_cdf_round(accept_product, draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_log_uniforms(draft_probs, target_probs, draft_token_ids, uniforms):
    """Uniform-injection round, acceptance ``log u + log q < log p``, inverse-CDF final draw."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return inverse_cdf_round(accept_log, draft_probs, target_probs, draft_token_ids, uniforms)


# --- batched, inverse CDF: thin wrappers over the cores ----------------------------------------

def canonical_ratio_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q``; uniforms from ``torch.rand`` in the dtype under test, then the uniform core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    uniforms = round_uniforms(draft_probs, generator)
    return inverse_cdf_round(accept_ratio, draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_product_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """``u*q < p`` (FlashInfer's test and draw); uniforms drawn here, then the uniform core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    uniforms = round_uniforms(draft_probs, generator)
    return inverse_cdf_round(accept_product, draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_log_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """``log u + log q < log p``; uniforms drawn here, then the uniform core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    uniforms = round_uniforms(draft_probs, generator)
    return inverse_cdf_round(accept_log, draft_probs, target_probs, draft_token_ids, uniforms)


# --- batched, multinomial and exponential race ---------------------------------------------------

def canonical_ratio_multinomial(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q``; final token by ``torch.multinomial`` (transformers' draw)."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_ratio, draw_multinomial, draft_probs, target_probs,
                         draft_token_ids, generator)


def canonical_product_multinomial(draft_probs, target_probs, draft_token_ids, generator):
    """``u*q < p``; final token by ``torch.multinomial``."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_product, draw_multinomial, draft_probs, target_probs,
                         draft_token_ids, generator)


def canonical_log_multinomial(draft_probs, target_probs, draft_token_ids, generator):
    """``log u + log q < log p``; final token by ``torch.multinomial``."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_log, draw_multinomial, draft_probs, target_probs,
                         draft_token_ids, generator)


def canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q``; final token by the exponential race ``argmax(w / E)`` (vLLM v1's draw)."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_ratio, draw_exponential_race, draft_probs, target_probs,
                         draft_token_ids, generator)


def canonical_product_race(draft_probs, target_probs, draft_token_ids, generator):
    """``u*q < p``; final token by the exponential race."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_product, draw_exponential_race, draft_probs, target_probs,
                         draft_token_ids, generator)


def canonical_log_race(draft_probs, target_probs, draft_token_ids, generator):
    """``log u + log q < log p``; final token by the exponential race (model runner v2's pairing)."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_log, draw_exponential_race, draft_probs, target_probs,
                         draft_token_ids, generator)
