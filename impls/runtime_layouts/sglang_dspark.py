"""SGLang DSpark's torch draft sampler in a speculative-decoding pipeline (the ``generate`` contract).

DSpark drafts a block of tokens with a Markov head and verifies them with SGLang's chain kernel. Its
draft step has a torch path, ``sample_step_tokens`` (released in 0.5.16 to 0.5.21, read in the wheels on
PyPI: ``sglang/srt/speculative/dspark_components/kernels/dspark_draft_model.py`` in 0.5.16,
``sglang/kernels/ops/speculative/dspark/dspark_draft_model.py`` from 0.5.17; the torch path runs where the
inputs are not on CUDA, and the draft sampler fills its noise with ``exp_noise.exponential_()``)::

    sample_step_tokens(*, step_logits [B, V], temperatures [B], greedy_mask [B] bool, exp_noise [B, V] f32)
        -> [B] int64:  probs = softmax(step_logits / T); noise = where(greedy, 1, exp_noise);
                       argmax(probs / noise)

with ``exp_noise`` from ``Tensor.exponential_()`` and no clamp: an exponential race, the Gumbel-max trick
in ratio form. No release and no stored revision read has a guard. A zero noise entry keys ``p / 0``:
``+inf`` where ``p > 0`` (that token wins), ``0 / 0 = NaN`` where ``p = 0``, and ``torch.argmax`` lets NaN
win, so the draft sampler proposes a token of draft probability 0. From 0.5.22 the draft step is
``markov_sample.py`` instead: Gumbel keys ``value / T - log(-log1p(-u))`` with ``u = (w + 0.5) 2^-32`` from
Philox words ``w`` the kernel computes itself (never 0; not torch draws, so not injected, and not modelled
here).

Verification (``dspark_accept.py``, ``accept_sampling``) hands the drafts to
``chain_speculative_sampling_triton`` with ``torch.rand`` coins (``--adapter sglang-chain`` checks that
kernel on its own; :mod:`.sglang_chain` states its arithmetic and release history): in 0.5.21 a drafted
token is accepted iff ``0 < q(x) <= 1`` and ``coin * q(x) < p(x)``, so a draft of ``q(x) = 0`` is always
rejected (0.5.16 to 0.5.20 have no ``q`` rule and accept it where ``p(x) > 0``); the correction is the
inverse CDF of ``max(p - q, 0)``, and every release emits id ``V - 1`` when that residual has no positive
entry (its comment: "acceptable since this case is numerically near-impossible",
``sglang/kernels/ops/speculative/reject_sampling.py``, ``speculative_sampling_classic_kernel``).

This module writes the two in the canonical pipeline's steps (:mod:`specproof.impls.pipelines.canonical`):
the drafts come from :func:`exponential_race` over the processed draft law (the layout of ``probs /
noise``, argmax; the generator's ``exponential_``), and each round is verified by SGLang's chain kernel in
:mod:`.sglang_chain`'s layout, called as SGLang's caller calls it (candidates, retrieve indices, coins
from the generator; :func:`specproof.impls.adapters.sglang_tree.call_kernel`).

- :func:`dspark_generate`: the race guarded as SGLang's own Triton ``gumbel_sample`` is
  (``noise.clamp_min(float32 tiny)``) and zero weights kept out of the race, verified by the canonical chain
  round (an empty residual falls back to ``p``): lossless;
- :func:`dspark_generate_released`: the race as released (no clamp, no zero-weight guard) and the chain
  kernel as released (``V - 1`` on an empty residual).

What the released path does, exactly (0.5.21; 0.5.16 to 0.5.20 as noted): only rounds that draw a zero
noise entry differ from the guarded race (``P(E = 0) = 2^-53`` per entry on the CPU generator,
:mod:`specproof.harness.exact.rng_edges`; CUDA's has no zero edge in
:mod:`specproof.harness.exact.cuda_rng_edges`). A zero at an allowed token makes that token win. A zero at
a token of draft probability 0 proposes a draft the draft law does not allow; the chain test rejects it (in
0.5.16 to 0.5.20 it accepts it where the target allows it) and the kernel draws from ``max(p - q, 0)``; the
law moves by at most the probability of such a round. Where the draft law equals the target law (a draft
that agrees with the target: both softmaxes at the same point mass in float32, or the same logits under the
same top-k), that residual is all zero and the released kernel emits id ``V - 1``, a token of target
probability 0 whenever the last id is outside the support (a padded or masked vocabulary's last id, a top-k
cut): a certain failure at ``2^-53`` per forbidden vocabulary entry of a drafted step on the CPU generator
(checked on this 0.5.21 pipeline; 0.5.16 to 0.5.20 have the same unguarded race and the same ``V - 1``
fallback in the code read, and were not run). Neither half alone is one: the guarded race with the released
kernel never drafts a token of draft probability 0, and the released race with the canonical kernel's
fallback to ``p`` emits no token of target probability 0 (the law moves by at most ``K V 2^-53`` per round,
by the union bound, which no statistical run can see).

Not followed: the seeded path of ``accept_sampling`` in stored revisions that no release through 0.5.23
ships (``_hash_uniform``: coins ``h.to(float32) /
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

from specproof.impls.adapters.sglang_tree import call_kernel
from specproof.impls.pipelines.canonical import CANONICAL, Round, run_pipeline
from specproof.impls.pipelines.canonical import propose as canonical_propose
from specproof.impls.runtime_layouts import sglang_chain

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


def _chain_kernel_verify(kernel, r: Round, generator: torch.Generator) -> torch.Tensor:
    """One round verified by an SGLang chain kernel ``kernel`` (:mod:`.sglang_chain`), called as SGLang's caller
    calls it: the ``[B, K+1]`` emitted tokens, ``-1`` after the path."""
    drafts = r.drafts.shape[1]
    return call_kernel(kernel, list(range(-1, drafts - 1)), r.drafts, r.p, r.q_verify, generator)


def _pipeline(*, guard: bool, kernel):
    return CANONICAL.but(propose=partial(canonical_propose, draw=partial(_race_draw, guard=guard)),
                         verify=partial(_chain_kernel_verify, kernel))


GUARDED = _pipeline(guard=True, kernel=sglang_chain.chain_speculative_sampling_triton)
RELEASED = _pipeline(guard=False, kernel=sglang_chain.chain_speculative_sampling_triton_last_id)


def dspark_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """DSpark's draft race, guarded, then SGLang's canonical chain round (lossless; module docstring)."""
    return run_pipeline(GUARDED, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def dspark_generate_released(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """DSpark as released: the race without a clamp (a zero key proposes a draft of draft probability 0) and
    the chain kernel's ``V - 1`` on an empty residual (module docstring)."""
    return run_pipeline(RELEASED, target, draft, prompt_ids, max_new_tokens, sampling, generator)
