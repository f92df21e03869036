"""SGLang DSpark's torch draft sampler in a speculative-decoding pipeline (the ``generate`` contract).

DSpark drafts a block of tokens with a Markov head and verifies them with SGLang's chain kernel. Its
draft step has a torch path, ``sample_step_tokens`` (``python/sglang/srt/speculative/dspark_components/
kernels/sample_step_tokens.py``, later ``python/sglang/kernels/ops/speculative/dspark/dspark_draft_model.py``;
the torch path runs off CUDA, or under ``SGLANG_DSPARK_KERNEL_SAMPLE_STEP_TOKENS=torch``; the eager
sampler's fast path ``SGLANG_DSPARK_FAST_SAMPLING`` calls it too)::

    sample_step_tokens(*, step_logits [B, V], temperatures [B], greedy_mask [B] bool, exp_noise [B, V] f32)
        -> [B] int64:  probs = softmax(step_logits / T); noise = where(greedy, 1, exp_noise);
                       argmax(probs / noise)

with ``exp_noise`` from ``Tensor.exponential_()`` and no clamp: an exponential race, the Gumbel-max trick
in ratio form. Every stored revision read (two files, three revisions) has no guard. A zero noise entry
keys ``p / 0``: ``+inf`` where ``p > 0`` (that token wins), ``0 / 0 = NaN`` where ``p = 0``, and
``torch.argmax`` lets NaN win, so the draft sampler proposes a token of draft probability 0.

Verification (``dspark_accept.py``, ``accept_sampling``) hands the drafts to
``chain_speculative_sampling_triton`` with ``torch.rand`` coins (``--adapter sglang-chain`` checks that
kernel on its own): a draft is accepted iff ``coin * q(x) < p(x)``, so a draft of ``q(x) = 0`` is accepted
whenever ``p(x) > 0`` and rejected where ``p(x) = 0``; the residual is ``max(p - q, 0)`` normalised.

This module writes the two in the canonical pipeline's steps (:mod:`specproof.impls.pipelines.canonical`):
the drafts come from :func:`exponential_race` over the processed draft law (the layout of ``probs /
noise``, argmax; the generator's ``exponential_``), verification accepts with ``u q < p`` (``NaN`` or zero
``q`` counting as 0, as the kernel reads them), the correction is ``torch.multinomial`` over the residual.

- :func:`dspark_generate`: the race guarded as SGLang's own Triton ``gumbel_sample`` is
  (``noise.clamp_min(float32 tiny)``) and zero weights kept out of the race: lossless;
- :func:`dspark_generate_released`: the race as released (no clamp, no zero-weight guard).

What the released race changes, exactly: only rounds that draw a zero noise entry differ from the guarded
race (``P(E = 0) = 2^-53`` per entry on the CPU generator, :mod:`specproof.harness.exact.rng_edges`; CUDA's
has no zero edge in :mod:`specproof.harness.exact.cuda_rng_edges`). There a zero at a token of draft
probability 0 proposes a draft the draft law does not allow, which verification accepts if and only if the
target allows it, and a zero at an allowed token makes that token win. No token of target probability 0 is
emitted, and the law moves by at most the probability that a round draws a zero entry (``K V 2^-53`` on
the CPU, by the union bound): no certain finding exists, and no statistical run can see a deviation of that
size.

Not followed: the seeded path of ``accept_sampling`` (``_hash_uniform``: coins ``h.to(float32) /
float(2^32 - 1)`` from a 32-bit murmur hash ``h`` of seed, position and stream), whose coins are not torch
draws, so the RNG edge injection cannot reach them. Its mapping rounds ``h`` to float32 first: the 128
largest ``h`` become ``2^32``, and the coin is exactly 1.0 (``2^-25`` per coin for a uniform hash; ``h = 0``
gives 0, ``2^-32``), a value outside the ``[0, 1)`` that the chain test and its final draw assume (checked
on torch 2.13's CPU arithmetic, not against SGLang). Nor are DSpark's Triton twin of the draft step and the
Markov head itself (a model; the pipeline's draft model stands in for it).
"""

from __future__ import annotations

from functools import partial

import torch

from specproof.impls.kernels.sampling import draw_multinomial
from specproof.impls.pipelines.canonical import CANONICAL, Round, run_pipeline
from specproof.impls.pipelines.canonical import propose as canonical_propose
from specproof.impls.verifiers.canonical import sampled_round

__all__ = ["exponential_race", "sample_step_tokens", "dspark_generate", "dspark_generate_released"]


def exponential_race(weights: torch.Tensor, exp_noise: torch.Tensor, *, guard: bool) -> torch.Tensor:
    """``argmax(weights / exp_noise)`` per row. ``guard``: the noise clamped to float32's smallest normal and
    zero weights keyed ``-1`` (never winning); without it, SGLang's released arithmetic."""
    if not guard:
        return weights.div(exp_noise).argmax(-1)
    noise = exp_noise.clamp_min(torch.finfo(torch.float32).tiny)
    return torch.where(weights > 0, weights / noise, torch.full_like(weights, -1.0)).argmax(-1)


def sample_step_tokens(*, step_logits, temperatures, greedy_mask, exp_noise, guard: bool):
    """DSpark's draft step in its own signature (module docstring); ``guard=False`` is the released form."""
    probs = torch.softmax(step_logits.float() / temperatures[:, None], dim=-1)
    noise = torch.where(greedy_mask[:, None], torch.ones_like(exp_noise), exp_noise)
    return exponential_race(probs, noise, guard=guard)


def _race_draw(weights: torch.Tensor, generator: torch.Generator, *, guard: bool) -> torch.Tensor:
    noise = torch.empty(weights.shape, dtype=torch.float32, device=weights.device).exponential_(generator=generator)
    return exponential_race(weights.to(torch.float32), noise, guard=guard)


def _chain_accept(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """SGLang's chain test ``coin * q < p``, a NaN ``q`` read as 0 (the kernel's rule)."""
    return u * torch.nan_to_num(q_x, nan=0.0) < p_x


def _chain_verify(r: Round, generator: torch.Generator) -> torch.Tensor:
    return sampled_round(_chain_accept, draw_multinomial, r.q_verify, r.p, r.drafts, generator)


GUARDED = CANONICAL.but(propose=partial(canonical_propose, draw=partial(_race_draw, guard=True)), verify=_chain_verify)
RELEASED = CANONICAL.but(propose=partial(canonical_propose, draw=partial(_race_draw, guard=False)),
                         verify=_chain_verify)


def dspark_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """DSpark's draft race, guarded, then SGLang's chain test (lossless; module docstring)."""
    return run_pipeline(GUARDED, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def dspark_generate_released(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """DSpark's draft race as released (no clamp): a zero key proposes a draft of draft probability 0."""
    return run_pipeline(RELEASED, target, draft, prompt_ids, max_new_tokens, sampling, generator)
