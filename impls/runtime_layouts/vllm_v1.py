"""Canonical speculative sampling in vLLM v1's ``rejection_sample`` layout, and two vLLM v1 bugs.

Layout (``vllm/v1/sample/rejection_sampler.py``, random-sampling path)::

    rejection_sample(draft_token_ids [T] int32, num_draft_tokens list[int] (per request),
                     max_spec_len int, cu_num_draft_tokens [R] int32 (inclusive cumsum),
                     draft_probs [T, V], target_probs [T, V], bonus_token_ids [R, 1] int32,
                     sampling_metadata) -> output_token_ids [R, max_spec_len + 1] int32

``T = sum(num_draft_tokens)`` flattened draft positions of ``R`` requests: request ``r`` owns rows
``cu[r] - n_r .. cu[r] - 1``. ``target_probs`` has no bonus row: the bonus token is sampled by the
caller and passed in. The output holds the accepted drafts, then the recovered (correction) token or
the bonus, then ``PLACEHOLDER_TOKEN_ID = -1``. ``sampling_metadata`` is read for ``generators``
(request index -> ``torch.Generator``; requests without one draw from the global RNG) only: this
module serves the all-random path (no greedy requests).

Canonical rule here: accept draft ``x`` at a position iff ``q(x) > 0`` and ``u < p(x)/q(x)`` with
``u`` a float64 uniform of the request's generator (the ratio rounded in the probabilities' dtype),
stopping at the first rejection; the recovered token is the exponential race
``argmax_x w(x) / E(x)`` over ``w = max(0, p - q)`` at that position (``E ~ Exp(1)``, float32, one
vector per request as vLLM draws it), with the all-zero residual falling back to ``p``
(:func:`specproof.impls.kernels.sampling.correction_weights`).

Mutants (each the canonical code with one change):

- :func:`rejection_sample_float32_ge`: ``p/q >= u`` with float32 uniforms, vLLM v1 before its
  uniforms moved to float64: ``u == 0`` (probability ``2^-24`` per draw) accepts a draft with
  ``p(x) = 0``. Invisible to sampling; the harness's RNG edge injection makes it certain.
- :func:`rejection_sample_seeds_ignored`: every draw from the global RNG, the per-request generators
  ignored (vllm-project/vllm#6038 "speculative decoding does not respect per-request seed", fixed
  for v0 by #6034; #17509 for V1's unseeded requests). The law is exact; same-seeded runs differ.

vLLM 0.16.0 to 0.33.0 (read in the wheels on PyPI; 0.15.0 still takes ``target_probs``, and 0.34.0 no longer
ships ``vllm/v1/sample/rejection_sampler.py``): ``rejection_sample`` takes the processed target **logits** in
the sixth argument (``target_logits [T, V]``) and applies the softmax itself (float32).
:func:`rejection_sample_target_logits` is the canonical round in that layout (softmax of the float32
logits, then the same strict test and race); its mutant
:func:`rejection_sample_target_logits_float64_ge` keeps the releases' own comparison (0.12.0 to
0.33.0 alike) ``target/draft >= u`` with float64 uniforms, so ``u == 0`` (``2^-53`` per draw on CPU) accepts a
probability-0 draft: the float32 ``u == 0`` bug above, made 2^29 times rarer but not removed.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.sampling import correction_weights, race_winner

__all__ = ["PLACEHOLDER_TOKEN_ID", "rejection_sample", "rejection_sample_float32_ge",
           "rejection_sample_seeds_ignored", "rejection_sample_target_logits",
           "rejection_sample_target_logits_float64_ge", "request_uniforms", "request_exponentials"]

PLACEHOLDER_TOKEN_ID = -1


def request_uniforms(num_tokens: int, num_draft_tokens: list[int], generators: dict, device,
                     dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``[T]`` uniforms: request ``r``'s slice from ``generators[r]``, the rest from the global RNG."""
    uniforms = torch.rand((num_tokens,), dtype=dtype, device=device)
    start = 0
    for request, count in enumerate(num_draft_tokens):
        generator = generators.get(request)
        if count and generator is not None:
            uniforms[start:start + count].uniform_(generator=generator)
        start += count
    return uniforms


def request_exponentials(num_draft_tokens: list[int], vocab: int, generators: dict, device) -> torch.Tensor:
    """``[R, V]`` float32 ``Exp(1)`` keys, one row per request (its generator, else the global RNG)."""
    keys = torch.empty((len(num_draft_tokens), vocab), dtype=torch.float32, device=device).exponential_()
    for request, generator in generators.items():
        if num_draft_tokens[request]:
            keys[request].exponential_(generator=generator)
    return keys


def _positions(num_draft_tokens, max_spec_len, cu_num_draft_tokens):
    """Flat row of each (request, position) ``[R, S]`` (clamped into range) and its validity mask."""
    device = cu_num_draft_tokens.device
    counts = torch.as_tensor(num_draft_tokens, dtype=torch.int64, device=device)
    starts = cu_num_draft_tokens.to(torch.int64) - counts
    position = torch.arange(max_spec_len, device=device)
    valid = position < counts.unsqueeze(-1)
    flat = (starts.unsqueeze(-1) + position).clamp(min=0, max=max(int(counts.sum()) - 1, 0))
    return flat, valid, counts


def _sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
            target_probs, bonus_token_ids, uniforms, keys, accept):
    """The round on given randomness: ``accept(u, p_x, q_x)`` per position, race on ``keys``."""
    batch, vocab = len(num_draft_tokens), target_probs.shape[-1]
    device = target_probs.device
    output = torch.full((batch, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int32, device=device)
    if batch == 0:
        return output
    flat, valid, counts = _positions(num_draft_tokens, max_spec_len, cu_num_draft_tokens)
    ids = draft_token_ids.to(torch.int64)
    if ids.numel() == 0:
        output[:, 0] = bonus_token_ids.reshape(-1).to(torch.int32)
        return output
    token = ids[flat]
    p_x = target_probs[flat, token]
    q_x = draft_probs[flat, token]
    accepted = accept(uniforms[flat], p_x, q_x) & valid
    n_accepted = accepted.to(torch.int64).cumprod(dim=-1).sum(dim=-1)
    rejected = n_accepted < counts
    row = flat.gather(1, n_accepted.clamp(max=max_spec_len - 1).unsqueeze(-1)).squeeze(-1)
    weights = correction_weights(target_probs[row], draft_probs[row], torch.zeros_like(rejected))
    recovered = race_winner(weights, keys)
    final = torch.where(rejected, recovered, bonus_token_ids.reshape(-1).to(torch.int64))
    column = torch.arange(max_spec_len + 1, device=device)
    padded = torch.cat([torch.where(valid, token, 0), torch.zeros_like(final).unsqueeze(-1)], dim=1)
    emitted = torch.where(column < n_accepted.unsqueeze(-1), padded, PLACEHOLDER_TOKEN_ID)
    emitted = torch.where(column == n_accepted.unsqueeze(-1), final.unsqueeze(-1), emitted)
    return emitted.to(torch.int32)


def _accept_ratio_gt(u, p_x, q_x):
    """``q > 0 and p/q > u``: the ratio in the probabilities' dtype, compared with the uniform's."""
    return (q_x > 0) & ((p_x / q_x).to(u.dtype) > u)


def _accept_ratio_ge(u, p_x, q_x):
    """vLLM v1's historic comparison ``q > 0 and p/q >= u`` (``u == 0`` accepts ``p(x) = 0``)."""
    return (q_x > 0) & ((p_x / q_x).to(u.dtype) >= u)


def rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                     target_probs, bonus_token_ids, sampling_metadata):
    """Canonical round in vLLM v1's layout: float64 request uniforms, strict ``p/q > u``, race recovery."""
    generators = sampling_metadata.generators
    uniforms = request_uniforms(draft_token_ids.shape[0], num_draft_tokens, generators, target_probs.device)
    keys = request_exponentials(num_draft_tokens, target_probs.shape[-1], generators, target_probs.device)
    return _sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                   target_probs, bonus_token_ids, uniforms, keys, _accept_ratio_gt)


def rejection_sample_float32_ge(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                                draft_probs, target_probs, bonus_token_ids, sampling_metadata):
    """Bug (vLLM v1 before float64 uniforms): float32 uniforms and ``p/q >= u``."""
    generators = sampling_metadata.generators
    uniforms = request_uniforms(draft_token_ids.shape[0], num_draft_tokens, generators, target_probs.device,
                                dtype=torch.float32)
    keys = request_exponentials(num_draft_tokens, target_probs.shape[-1], generators, target_probs.device)
    return _sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                   target_probs, bonus_token_ids, uniforms, keys, _accept_ratio_ge)


def rejection_sample_seeds_ignored(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                                   draft_probs, target_probs, bonus_token_ids, sampling_metadata):
    """Bug (vllm-project/vllm#6038 class): the per-request generators are ignored (global RNG)."""
    uniforms = request_uniforms(draft_token_ids.shape[0], num_draft_tokens, {}, target_probs.device)
    keys = request_exponentials(num_draft_tokens, target_probs.shape[-1], {}, target_probs.device)
    return _sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                   target_probs, bonus_token_ids, uniforms, keys, _accept_ratio_gt)


def _target_softmax(target_logits: torch.Tensor) -> torch.Tensor:
    """vLLM 0.16 to 0.33's softmax of the processed target logits, in float32 (``-inf`` logits give exactly 0)."""
    return target_logits.to(torch.float32).softmax(dim=-1)


def rejection_sample_target_logits(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                                   draft_probs, target_logits, bonus_token_ids, sampling_metadata):
    """Canonical round in vLLM 0.16 to 0.33's layout: target logits in, float32 softmax inside, strict ``p/q > u``."""
    return rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                            draft_probs.to(torch.float32), _target_softmax(target_logits), bonus_token_ids,
                            sampling_metadata)


def rejection_sample_target_logits_float64_ge(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                                              draft_probs, target_logits, bonus_token_ids, sampling_metadata):
    """Bug (vLLM 0.16 to 0.33 as released): float64 uniforms and ``p/q >= u`` after the softmax inside."""
    target_probs = _target_softmax(target_logits)
    generators = sampling_metadata.generators
    uniforms = request_uniforms(draft_token_ids.shape[0], num_draft_tokens, generators, target_probs.device)
    keys = request_exponentials(num_draft_tokens, target_probs.shape[-1], generators, target_probs.device)
    return _sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                   draft_probs.to(torch.float32), target_probs, bonus_token_ids, uniforms, keys, _accept_ratio_ge)
