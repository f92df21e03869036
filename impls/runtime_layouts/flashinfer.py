"""Canonical speculative sampling in FlashInfer's ``chain_speculative_sampling`` layout, and two FlashInfer bugs.

Two API generations (``flashinfer/sampling.py``):

- 0.1.x, caller-made uniforms::

      chain_speculative_sampling(draft_probs [B,K,V], draft_token_ids [B,K] int32, uniform_samples
          [B,K+1] float32, target_probs [B,K+1,V], maybe_output_accepted_token_num=None,
          maybe_output_emitted_token_num=None, deterministic=True)
          -> (output_token_ids [B,K+1] int32 padded -1, accepted_token_num [B], emitted_token_num [B])

- 0.2.x and later, randomness from a generator (Philox in the CUDA kernel)::

      chain_speculative_sampling(draft_probs, draft_token_ids, target_probs,
          maybe_output_accepted_token_num=None, maybe_output_emitted_draft_token_num=None,
          deterministic=True, generator=None, seed=None, offset=None) -> (same triple)

  From 0.6 to 0.7.x (a JIT CUDA module, no CPU path) ``seed`` and ``offset`` may be ints or per-request
  ``[B]`` tensors; without them ``get_seed_and_offset`` reads the CUDA generator's Philox ``(seed,
  offset)`` and advances its offset. Request ``b``'s uniforms come from Philox keyed by its seed, with
  subsequence ``b`` and its offset: :func:`chain_speculative_sampling_seed_offset` models them with
  :func:`~specproof.impls.kernels.sampling.counter_uniforms` (``stream = b``).

Letters are swapped against specproof's: in FlashInfer's kernel ``p`` is the *draft* probability and
``q`` the *target* one (accept iff ``u * p < q``). Below the kernel's letters are used.

Canonical rule here (the kernel's structure): draft ``i`` accepted iff ``p > 0`` and
``u_i * p < q`` with ``u_i = uniform_samples[:, i]`` (strict; ``p > 0`` added: a draft the draft law
never proposes is rejected); after ``n`` acceptances the token is drawn by inverse CDF over
``relu(q_n - p_n)`` (``q_K`` when every draft passed) with needle ``uniform_samples[:, min(n+1, K)]``,
a uniform no acceptance test read (FlashInfer's "unique uniform samples", flashinfer-ai/flashinfer#424);
an all-zero residual falls back to ``q_n``. ``accepted_token_num`` counts drafts that pass their test
independently, ``emitted_token_num`` the accepted prefix, as FlashInfer reports them.

Mutants:

- :func:`chain_speculative_sampling_reused_uniform`: the final draw's needle is the rejected test's own
  uniform ``u_n`` (conditioned to ``u_n >= q/p``), a model of the uniform reuse fixed by
  flashinfer-ai/flashinfer#424 ("use unique uniform samples"); biases the correction towards late ids.
- :func:`chain_speculative_sampling_seed_offset_first_seed`: per-request ``seed``/``offset`` read as
  scalars (element 0) and one Philox subsequence for the whole batch (the request index dropped from
  the key): every request draws the same uniforms (the "seeded rows share their noise" class of
  runtimes' seed bugs); each row's law is exact, the rows are not independent.
- :func:`chain_speculative_sampling_empty_residual_last`: an all-zero residual emits id ``V - 1``
  (the kernel's ``sampled_id`` starts at ``d - 1`` and no prefix sum exceeds ``u * 0``), as in the
  ``ChainSpeculativeSampling`` CUDA source read; ``V - 1`` may have target probability 0.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.kernels.sampling import correction_weights, counter_uniforms, draw_inverse_cdf

__all__ = ["chain_speculative_sampling", "chain_speculative_sampling_generator",
           "chain_speculative_sampling_seed_offset", "chain_speculative_sampling_seed_offset_first_seed",
           "chain_speculative_sampling_reused_uniform", "chain_speculative_sampling_empty_residual_last"]


def _chain(draft_probs, draft_token_ids, uniform_samples, target_probs, needle_column, empty_residual):
    """The kernel's round on caller uniforms; ``needle_column(n, K)`` picks the final draw's uniform."""
    _, drafts, vocab = draft_probs.shape
    ids = draft_token_ids.to(torch.int64)
    p = drafted_probs(draft_probs, ids)        # FlashInfer's p: draft probability of the drafted id
    q = drafted_probs(target_probs, ids)       # FlashInfer's q: target probability of the drafted id
    u = uniform_samples.to(torch.float32)
    passes = (p > 0) & (u[:, :drafts] * p < q)
    emitted_num = leading_accepts(passes)
    accepted_num = passes.to(torch.int64).sum(dim=-1)
    all_accepted = emitted_num == drafts
    target_row = rows_at(target_probs, emitted_num)
    draft_row = torch.where(all_accepted.unsqueeze(-1), torch.zeros_like(target_row),
                            rows_at(draft_probs, emitted_num.clamp(max=drafts - 1)))
    weights = correction_weights(target_row, draft_row, all_accepted)
    needle = u.gather(1, needle_column(emitted_num, drafts).unsqueeze(-1)).squeeze(-1).to(weights.dtype)
    token = draw_inverse_cdf(weights, needle)
    if empty_residual is not None:
        empty = ~(torch.relu(target_row - draft_row) > 0).any(dim=-1)
        token = torch.where(empty, torch.full_like(token, empty_residual(vocab)), token)
    output = assemble_emitted(ids, emitted_num, token).to(torch.int32)
    return output, accepted_num.to(torch.int32), emitted_num.to(torch.int32)


def _unique_needle(emitted_num, drafts):
    return (emitted_num + 1).clamp(max=drafts)


def _reused_needle(emitted_num, drafts):
    return emitted_num


def _counters(result, maybe_accepted, maybe_emitted):
    output, accepted, emitted = result
    if maybe_accepted is not None:
        maybe_accepted += accepted.to(maybe_accepted.dtype)
        accepted = maybe_accepted
    if maybe_emitted is not None:
        maybe_emitted += emitted.to(maybe_emitted.dtype)
        emitted = maybe_emitted
    return output, accepted, emitted


def chain_speculative_sampling(draft_probs, draft_token_ids, uniform_samples, target_probs,
                               maybe_output_accepted_token_num=None, maybe_output_emitted_token_num=None,
                               deterministic=True):
    """Canonical round in FlashInfer 0.1.x's layout (caller-made uniforms ``[B, K+1]``)."""
    result = _chain(draft_probs, draft_token_ids, uniform_samples, target_probs, _unique_needle, None)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_token_num)


def chain_speculative_sampling_generator(draft_probs, draft_token_ids, target_probs,
                                         maybe_output_accepted_token_num=None,
                                         maybe_output_emitted_draft_token_num=None, deterministic=True,
                                         generator=None, seed=None, offset=None):
    """Canonical round in FlashInfer 0.2.x's layout: ``[B, K+1]`` float32 uniforms from ``generator``."""
    batch, drafts, _ = draft_probs.shape
    uniforms = torch.rand((batch, drafts + 1), dtype=torch.float32, device=draft_probs.device,
                          generator=generator)
    result = _chain(draft_probs, draft_token_ids, uniforms, target_probs, _unique_needle, None)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_draft_token_num)


def chain_speculative_sampling_reused_uniform(draft_probs, draft_token_ids, uniform_samples, target_probs,
                                              maybe_output_accepted_token_num=None,
                                              maybe_output_emitted_token_num=None, deterministic=True):
    """Bug (model of the reuse fixed by flashinfer-ai/flashinfer#424): the correction reuses ``u_n``."""
    result = _chain(draft_probs, draft_token_ids, uniform_samples, target_probs, _reused_needle, None)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_token_num)


def _last_id(vocab):
    return vocab - 1


def chain_speculative_sampling_empty_residual_last(draft_probs, draft_token_ids, uniform_samples,
                                                   target_probs, maybe_output_accepted_token_num=None,
                                                   maybe_output_emitted_token_num=None, deterministic=True):
    """Bug (the kernel's ``sampled_id = d - 1`` start): an all-zero residual emits id ``V - 1``."""
    result = _chain(draft_probs, draft_token_ids, uniform_samples, target_probs, _unique_needle, _last_id)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_token_num)


def _per_request(value, batch: int) -> list[int]:
    """An int or a ``[B]`` tensor of seeds/offsets as ``B`` ints."""
    if isinstance(value, torch.Tensor) and value.numel() > 1:
        return [int(v) for v in value.reshape(-1).tolist()]
    return [int(value)] * batch


def _seed_offset_uniforms(draft_probs, generator, seed, offset, shared_stream: bool) -> torch.Tensor:
    batch, drafts, _ = draft_probs.shape
    device = draft_probs.device
    if seed is None or offset is None:  # the generator's (seed, offset), as get_seed_and_offset reads it
        seed, offset = torch.randint(0, 2**62, (2,), generator=generator, device=device).tolist()
    seeds, offsets = _per_request(seed, batch), _per_request(offset, batch)
    if shared_stream:
        seeds, offsets = [seeds[0]] * batch, [offsets[0]] * batch
    rows = [counter_uniforms(seeds[b], offsets[b], drafts + 1, 0 if shared_stream else b, device)
            for b in range(batch)]
    return torch.stack(rows)


def chain_speculative_sampling_seed_offset(draft_probs, draft_token_ids, target_probs,
                                           maybe_output_accepted_token_num=None,
                                           maybe_output_emitted_draft_token_num=None, deterministic=True,
                                           generator=None, seed=None, offset=None):
    """Canonical round in FlashInfer 0.6-0.7's layout: per-request Philox streams keyed by ``seed``/``offset``."""
    uniforms = _seed_offset_uniforms(draft_probs, generator, seed, offset, shared_stream=False)
    result = _chain(draft_probs, draft_token_ids, uniforms, target_probs, _unique_needle, None)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_draft_token_num)


def chain_speculative_sampling_seed_offset_first_seed(draft_probs, draft_token_ids, target_probs,
                                                      maybe_output_accepted_token_num=None,
                                                      maybe_output_emitted_draft_token_num=None,
                                                      deterministic=True, generator=None, seed=None, offset=None):
    """Bug (seeded rows sharing their noise): element 0 of ``seed``/``offset`` and one stream for all rows."""
    uniforms = _seed_offset_uniforms(draft_probs, generator, seed, offset, shared_stream=True)
    result = _chain(draft_probs, draft_token_ids, uniforms, target_probs, _unique_needle, None)
    return _counters(result, maybe_output_accepted_token_num, maybe_output_emitted_draft_token_num)
