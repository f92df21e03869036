"""Canonical speculative sampling in vLLM model runner V2's ``rejection_sample`` layout, and a historic bug.

Layout (``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``, vLLM 0.31 to 0.33.x; the model
runner V2 spec-decode path, Triton kernels on GPU)::

    rejection_sample(target_logits [L, V], draft_logits [max_reqs, S, V] | None, draft_sampled [L],
                     cu_num_logits [R+1], pos [L], idx_mapping [R], expanded_idx_mapping [L],
                     expanded_local_pos [L], temperature [max_reqs], seed [max_reqs],
                     num_speculative_steps, synthetic_conditional_rates=None, use_fp64=False,
                     use_block_verification=False) -> (sampled [R, S+1] int64, num_sampled [R] int32)

Request ``r`` owns logit rows ``cu[r] .. cu[r+1]-1``: ``n = cu[r+1] - cu[r] - 1`` draft positions and
the bonus row. Its draft token at step ``i`` is ``draft_sampled[cu[r] + i + 1]`` (row 0 of each request
holds the token sampled before the drafts); its state row is ``idx_mapping[r]``, which indexes
``draft_logits``, ``temperature`` and ``seed``. The logits are the processed ones (temperature already
applied); log-probabilities are ``logits - logsumexp`` in float32.

Modes (all written here as the kernels compute them, in torch, one request at a time):

* standard: accept step ``i`` while ``log p(x) > log u + log q(x)`` (the log-space ratio test), with
  ``u = max(rand, 2^-31)`` (``tl_rand32(seed, pos, includes_zero=False)``); the first rejection (or the
  bonus row) is resampled by Gumbel-max over the residual logits ``log p + log1p(-q/p)`` (``-inf``
  where ``q >= p``) with keys ``-log(-log1p(-u_x))``, ``u_x`` clamped the same way;
* block (``use_block_verification``, Sun et al. 2024): running ratio ``P_i = min(1, P_{i-1} p/q)``,
  thresholds ``h_i = m_{i+1} / (m_{i+1} + 1 - P_i)`` with residual mass
  ``m_{i+1} = sum_x max(P_i p_{i+1}(x) - q_{i+1}(x), 0)`` (``h = P_{n-1}`` at the last step); the
  accepted length is the last ``i + 1`` with ``u_i <= h_i``, and the resample at ``tau`` draws from
  ``max(P_{tau-1} p_tau - q_tau, 0)``;
* synthetic (``synthetic_conditional_rates``): accept iff ``u < rate_i``, lossy by design;
* greedy (``temperature == 0``): accept iff the draft is the target argmax, emit the argmax on rejection.

Randomness: the kernels draw counter-based Philox numbers ``tl.rand(seed, pos)`` and Gumbel keys
``tl.rand(randint(seed, pos), token)``; this torch rewrite keys one ``torch.Generator`` per
``(seed, pos, stream)`` (:func:`specproof.impls.kernels.sampling.counter_uniforms`), so every draw is
a function of the request's seed and the position, as in the kernels, and torch's draws carry the RNG
edges the harness injects.
Entries of ``sampled`` past ``num_sampled`` are ``-1`` here (the kernels leave them unwritten).

Mutant: :func:`rejection_sample_zero_gumbel_key`: Gumbel keys from the unclamped uniform (``tl_rand32``
with ``includes_zero=True``, as before the ``_TL_RAND_MIN`` clamp): ``u = 0`` gives the key ``+inf``,
``-inf + inf = NaN`` on a residual entry of probability 0, and argmax lets NaN win.
"""

from __future__ import annotations

import math

import torch

from specproof.impls.kernels.sampling import counter_uniforms

__all__ = ["TL_RAND_MIN", "rejection_sample", "rejection_sample_zero_gumbel_key"]

TL_RAND_MIN = 4.6566127342e-10
"""The smallest positive float32 ``tl.rand`` value (``harness.exact.triton_rng_edges``): the kernels' clamp."""
_ACCEPT_STREAM, _GUMBEL_STREAM = 0, 1


def _log_probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.to(torch.float32), dim=-1)


def _gumbel_argmax(residual_logits: torch.Tensor, seed: int, pos: int, clamp: bool) -> int:
    u = counter_uniforms(seed, pos, residual_logits.shape[-1], _GUMBEL_STREAM, residual_logits.device)
    if clamp:
        u = torch.clamp(u, min=TL_RAND_MIN)
    noise = -torch.log(-torch.log1p(-u))
    return int(torch.argmax(residual_logits + noise).item())


def _residual_logits(target_lp: torch.Tensor, draft_lp: torch.Tensor, log_scale: float) -> torch.Tensor:
    """``log max(exp(log_scale) p - q, 0)`` as ``a + log1p(-exp(b - a))`` with ``a = log_scale + log p``."""
    shifted = target_lp + log_scale
    ratio = torch.exp(draft_lp - shifted)
    return torch.where(ratio < 1.0, shifted + torch.log1p(-ratio), torch.full_like(shifted, -math.inf))


def _request(r, target_logits, draft_logits, draft_sampled, cu, pos, idx_mapping, temperature, seed,
             synthetic_conditional_rates, use_block_verification, clamp_keys):
    """``(tokens, count)`` of request ``r``: its emitted tokens, in the kernels' order."""
    start, end = int(cu[r]), int(cu[r + 1])
    n = end - start - 1
    state = int(idx_mapping[r])
    greedy = float(temperature[state]) == 0.0
    seed_r = int(seed[state])
    device = target_logits.device
    drafts = [int(draft_sampled[start + i + 1]) for i in range(n)]
    target_lp = [_log_probs(target_logits[start + i]) for i in range(n + 1)]
    draft_lp = [_log_probs(draft_logits[state, i]) if draft_logits is not None else None for i in range(n)]
    u = [max(float(counter_uniforms(seed_r, int(pos[start + i]), 1, _ACCEPT_STREAM, device)[0]), TL_RAND_MIN)
         for i in range(n)]
    tokens: list[int] = []
    log_ratio = [0.0] * n  # log P_i (block mode)
    if use_block_verification and not greedy:
        running = 0.0
        for i in range(n):
            running = min(running + float(target_lp[i][drafts[i]] - draft_lp[i][drafts[i]]), 0.0)
            log_ratio[i] = running
        length = 0
        for i in range(n):
            ratio_i = math.exp(log_ratio[i])
            if i < n - 1:
                mass = float(torch.clamp(ratio_i * torch.exp(target_lp[i + 1]) - torch.exp(draft_lp[i + 1]),
                                         min=0.0).sum())
                denominator = mass + 1.0 - ratio_i
                h = mass / denominator if denominator > 0.0 else 1.0
            else:
                h = ratio_i
            if u[i] <= h:
                length = i + 1
        tokens = drafts[:length]
    else:
        for i in range(n):
            x = drafts[i]
            if greedy:
                target_argmax = int(torch.argmax(target_lp[i]).item())
                if x != target_argmax:
                    return tokens + [target_argmax], len(tokens) + 1
            elif synthetic_conditional_rates is not None:
                if not u[i] < float(synthetic_conditional_rates[i]):
                    break
            elif not (x >= 0 and float(target_lp[i][max(x, 0)]) > math.log(u[i]) + float(draft_lp[i][max(x, 0)])):
                break
            tokens.append(x)
    tau = len(tokens)
    row = start + tau
    if tau == n:  # bonus row
        residual = target_lp[n]
    else:
        log_scale = log_ratio[tau - 1] if use_block_verification and tau > 0 else 0.0
        residual = _residual_logits(target_lp[tau], draft_lp[tau], log_scale)
    if greedy:
        return tokens + [int(torch.argmax(residual).item())], tau + 1
    return tokens + [_gumbel_argmax(residual, seed_r, int(pos[row]), clamp_keys)], tau + 1


def _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                      temperature, seed, num_speculative_steps, synthetic_conditional_rates,
                      use_block_verification, clamp_keys):
    num_reqs = cu_num_logits.shape[0] - 1
    device = target_logits.device
    sampled = torch.full((num_reqs, num_speculative_steps + 1), -1, dtype=torch.int64, device=device)
    num_sampled = torch.zeros((num_reqs,), dtype=torch.int32, device=device)
    for r in range(num_reqs):
        tokens, count = _request(r, target_logits, draft_logits, draft_sampled, cu_num_logits.tolist(),
                                 pos.tolist(), idx_mapping.tolist(), temperature.tolist(), seed.tolist(),
                                 synthetic_conditional_rates, use_block_verification, clamp_keys)
        sampled[r, :count] = torch.tensor(tokens, dtype=torch.int64, device=device)
        num_sampled[r] = count
    return sampled, num_sampled


def rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                     expanded_idx_mapping, expanded_local_pos, temperature, seed, num_speculative_steps,
                     synthetic_conditional_rates=None, use_fp64=False, use_block_verification=False):
    """Canonical round in MRV2's layout (module docstring); ``use_fp64`` changes nothing on CPU here."""
    return _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                             temperature, seed, num_speculative_steps, synthetic_conditional_rates,
                             use_block_verification, clamp_keys=True)


def rejection_sample_zero_gumbel_key(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                                     expanded_idx_mapping, expanded_local_pos, temperature, seed,
                                     num_speculative_steps, synthetic_conditional_rates=None, use_fp64=False,
                                     use_block_verification=False):
    """Bug (MRV2 Gumbel keys before the ``_TL_RAND_MIN`` clamp): ``u = 0`` keys ``+inf``, NaN wins."""
    return _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                             temperature, seed, num_speculative_steps, synthetic_conditional_rates,
                             use_block_verification, clamp_keys=False)
