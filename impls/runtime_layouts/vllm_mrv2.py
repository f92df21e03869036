"""Canonical speculative sampling in vLLM model runner V2's ``rejection_sample`` layout, and a historic bug.

Layout (``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``, vLLM 0.22.0 to 0.34.0, the newest
release; the model runner V2 spec-decode path, Triton kernels on GPU; 0.34.0 takes ``draft_logits_cache``,
a ``DraftLogitsCache`` whose ``values`` are these draft logits, where this layout takes ``draft_logits``)::

    rejection_sample(target_logits [L, V], draft_logits [max_reqs, S, V] | None, draft_sampled [L],
                     cu_num_logits [R+1], pos [L], idx_mapping [R], expanded_idx_mapping [L],
                     expanded_local_pos [L], temperature [max_reqs], seed [max_reqs],
                     num_speculative_steps, synthetic_conditional_rates=None, use_fp64=False,
                     use_block_verification=False, fly_window_size=0, fly_entropy_threshold=0.3)
        -> (sampled [R, S+1] int64, num_sampled [R] int32)

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
* synthetic (``synthetic_conditional_rates``): accept iff ``u < rate_i`` (greedy requests too; a draft id
  below 0 is rejected, as in every mode), lossy by design;
* greedy (``temperature == 0``): accept iff the draft is the target argmax, emit the argmax on rejection;
* FLy (``fly_window_size = W > 0``, ``fly_entropy_threshold``; Li et al. 2025, "Training-Free Loosely
  Speculative Decoding"), lossy by design: the standard or greedy test runs as above, but a rejection at
  ``i`` outside a pending window is deferred when the draft has nonzero target (and draft) probability,
  ``i + W < n`` and the target's entropy over its top 3 tokens (full-softmax ``p``, nats, not normalised)
  is at least the threshold; the deferred draft counts as accepted only if the next ``W`` drafts all pass
  the native test, otherwise the round stops at ``i`` and resamples there; after a window passes, a later
  rejection can be deferred again; no extra random number is drawn. Written from the MRV2 heads of vLLM
  pull request #53987 (commits ``95d5dba0``, ``1719fb1e``); released in 0.33.0 and 0.34.0 (read in the
  wheels on PyPI), whose keywords ``fly_window_size=0, fly_entropy_threshold=0.3, fly_entropy_top_k=3``
  follow the watermark keywords (0.30.0 on); this layout takes neither ``fly_entropy_top_k`` (it uses the top
  3) nor the watermark keywords.

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
from dataclasses import dataclass
from typing import Any

import torch

from specproof.impls.kernels.sampling import counter_uniforms

__all__ = ["FLY_ENTROPY_TOP_K", "TL_RAND_MIN", "fly_entropy", "rejection_sample", "rejection_sample_zero_gumbel_key"]

TL_RAND_MIN = 4.6566127342e-10
"""The smallest positive float32 ``tl.rand`` value (``harness.exact.triton_rng_edges``): the kernels' clamp."""
FLY_ENTROPY_TOP_K = 3
"""FLy's entropy gate reads the target's top 3 tokens (``VLLM_FLY_ENTROPY_TOP_K``, later ``fly_entropy_top_k``)."""
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


@dataclass(frozen=True)
class _Mode:
    """The keyword modes of one ``rejection_sample`` call, and whether the Gumbel keys are clamped."""
    synthetic_conditional_rates: Any = None
    use_block_verification: bool = False
    fly_window_size: int = 0
    fly_entropy_threshold: float = 0.3
    clamp_keys: bool = True

    def __post_init__(self):
        if self.fly_window_size < 0:
            raise ValueError(f"fly_window_size must be >= 0 (0 turns FLy off), got {self.fly_window_size}")
        if self.fly_window_size and (self.synthetic_conditional_rates is not None or self.use_block_verification):
            raise ValueError("FLy (fly_window_size > 0) combines with neither synthetic rates nor block "
                             "verification (pull request #53987 refuses these combinations)")


def fly_entropy(target_lp: torch.Tensor, top_k: int = FLY_ENTROPY_TOP_K) -> float:
    """FLy's gate value: ``-sum p log p`` in nats over the ``top_k`` most likely tokens, with ``p`` the full
    softmax's probabilities (not renormalised over the top ``k``, not divided by ``log V``); float32."""
    top = torch.topk(target_lp.to(torch.float32), min(top_k, target_lp.shape[-1])).values
    p = torch.exp(top)
    return float(-torch.where(p > 0, p * top, torch.zeros_like(p)).sum())


def _block_length(n, drafts, target_lp, draft_lp, u) -> tuple[int, list[float]]:
    """Block verification: the last ``i + 1`` with ``u_i <= h_i``, and ``log P_i`` for each step."""
    running, log_ratio = 0.0, [0.0] * n
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
    return length, log_ratio


def _chain_length(n, drafts, target_lp, draft_lp, u, greedy, mode: _Mode) -> int:
    """Left-to-right verification (standard, synthetic, greedy), with FLy's deferred window when on: a
    native rejection at ``i`` outside a pending window is held open if its draft has nonzero target (and
    draft) probability, the window fits (``i + W < n``) and the target's top-3 entropy at ``i`` is at least
    the threshold; the held draft and the next ``W`` are kept only if those ``W`` all pass natively, else
    the round stops at ``i``."""
    window, accepted, pending = mode.fly_window_size, 0, -1
    for i in range(n):
        x = drafts[i]
        valid = x >= 0
        lp = float(target_lp[i][max(x, 0)])
        if mode.synthetic_conditional_rates is not None:
            native = u[i] < float(mode.synthetic_conditional_rates[i])
            can_defer = False
        elif greedy:
            native = x == int(torch.argmax(target_lp[i]).item())
            can_defer = lp > -math.inf
        else:
            lq = float(draft_lp[i][max(x, 0)])
            native = lp > math.log(u[i]) + lq
            can_defer = lp > -math.inf and lq > -math.inf
        native, can_defer = native and valid, can_defer and valid
        if pending >= 0:
            if not native:
                break
            if i - pending == window:
                accepted, pending = i + 1, -1
        elif native:
            accepted = i + 1
        elif window and can_defer and i + window < n and fly_entropy(target_lp[i]) >= mode.fly_entropy_threshold:
            pending = i
        else:
            break
    return accepted


def _request(r, target_logits, draft_logits, draft_sampled, cu, pos, idx_mapping, temperature, seed, mode: _Mode):
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
    block = mode.use_block_verification and not greedy
    log_ratio: list[float] = []  # log P_i (block mode)
    if block:
        tau, log_ratio = _block_length(n, drafts, target_lp, draft_lp, u)
    else:
        tau = _chain_length(n, drafts, target_lp, draft_lp, u, greedy, mode)
    tokens = drafts[:tau]
    row = start + tau
    if tau == n or greedy:  # the bonus row, or a greedy correction: the target's own law at tau
        residual = target_lp[tau]
    else:
        log_scale = log_ratio[tau - 1] if block and tau > 0 else 0.0  # log P_{tau-1}
        residual = _residual_logits(target_lp[tau], draft_lp[tau], log_scale)
    if greedy:
        return tokens + [int(torch.argmax(residual).item())], tau + 1
    return tokens + [_gumbel_argmax(residual, seed_r, int(pos[row]), mode.clamp_keys)], tau + 1


def _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                      temperature, seed, num_speculative_steps, mode: _Mode):
    num_reqs = cu_num_logits.shape[0] - 1
    device = target_logits.device
    sampled = torch.full((num_reqs, num_speculative_steps + 1), -1, dtype=torch.int64, device=device)
    num_sampled = torch.zeros((num_reqs,), dtype=torch.int32, device=device)
    for r in range(num_reqs):
        tokens, count = _request(r, target_logits, draft_logits, draft_sampled, cu_num_logits.tolist(),
                                 pos.tolist(), idx_mapping.tolist(), temperature.tolist(), seed.tolist(), mode)
        sampled[r, :count] = torch.tensor(tokens, dtype=torch.int64, device=device)
        num_sampled[r] = count
    return sampled, num_sampled


def rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                     expanded_idx_mapping, expanded_local_pos, temperature, seed, num_speculative_steps,
                     synthetic_conditional_rates=None, use_fp64=False, use_block_verification=False,
                     fly_window_size=0, fly_entropy_threshold=0.3):
    """Canonical round in MRV2's layout (module docstring); ``use_fp64`` changes nothing on CPU here.
    ``fly_window_size > 0`` turns on FLy (lossy by design; module docstring)."""
    mode = _Mode(synthetic_conditional_rates, use_block_verification, fly_window_size, fly_entropy_threshold)
    return _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                             temperature, seed, num_speculative_steps, mode)


def rejection_sample_zero_gumbel_key(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                                     expanded_idx_mapping, expanded_local_pos, temperature, seed,
                                     num_speculative_steps, synthetic_conditional_rates=None, use_fp64=False,
                                     use_block_verification=False):
    """Bug (MRV2 Gumbel keys before the ``_TL_RAND_MIN`` clamp): ``u = 0`` keys ``+inf``, NaN wins."""
    mode = _Mode(synthetic_conditional_rates, use_block_verification, clamp_keys=False)
    return _rejection_sample(target_logits, draft_logits, draft_sampled, cu_num_logits, pos, idx_mapping,
                             temperature, seed, num_speculative_steps, mode)
