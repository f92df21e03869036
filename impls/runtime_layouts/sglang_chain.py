"""Canonical speculative sampling in SGLang's chain verifier layout, and two of its bugs.

Layout (SGLang 0.5.21 to 0.5.23, ``chain_speculative_sampling_triton``: a Triton classic chain kernel
for ``topk = 1`` drafts, called with the target-only tree kernel's arguments)::

    chain_speculative_sampling_triton(predicts [B*S] int32, accept_index [B, S] int32,
        accept_token_num [B] int32, candidates [B, S] int64, retrive_index [B, S] int64,
        retrive_next_token, retrive_next_sibling, uniform_samples [B, S] float32,
        uniform_samples_for_final_sampling [B] float32, target_probs [B, S, V], draft_probs [B, S-1, V],
        threshold_single, threshold_acc, deterministic) -> None

Slot 0 of each request is the root (the token before the drafts), slot ``s >= 1`` draft ``s - 1``; the
``next``/``sibling`` links and the thresholds are not read by the chain kernel. Step ``s`` tests draft
``x = candidates[b, s]`` against row ``r`` (the last accepted slot, 0 at first) with the multiplication
form ``coin * q_r(x) < p_r(x)``, ``coin = uniform_samples[b, s - 1]``; an accepted draft is written to
``predicts[retrive_index[b, r]]`` and ``accept_index[b, n] = retrive_index[b, s]``. The final token
(correction, or bonus from ``p`` when every draft was accepted) is the inverse CDF of
``max(p_r - q_r, 0)`` (NaN ``q`` read as 0) at ``uniform_samples_for_final_sampling[b] * total``,
written to ``predicts`` at the last accepted slot. Emitted sequence: ``predicts[accept_index[b, j]]``
for ``j <= accept_token_num[b]``.

Canonical here: as above, with a residual that has no positive entry falling back to ``p`` (the
library's :func:`~specproof.impls.kernels.sampling.correction_weights`).

Mutants:

- :func:`chain_speculative_sampling_triton_le`: ``coin * q <= p``, the zero-coin class (SGLang issue
  #35771: a coin of exactly 0 accepts a draft whose target probability is 0; float32 coins are 0 with
  probability ``2^-24``), fixed by a ``target_prob > 0`` guard.
- :func:`chain_speculative_sampling_triton_last_id`: the released kernel's fallback for a residual
  without positive mass (``p <= q`` everywhere, reachable in floats): it emits id ``V - 1``, which may
  have ``p = 0``.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.sampling import correction_weights, draw_inverse_cdf

__all__ = ["chain_speculative_sampling_triton", "chain_speculative_sampling_triton_le",
           "chain_speculative_sampling_triton_last_id"]


def _strict(coin, q, p):
    return coin * q < p


def _non_strict(coin, q, p):
    return coin * q <= p


def _chain(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
           uniform_samples_for_final_sampling, target_probs, draft_probs, accept, empty_residual_last):
    batch, slots = candidates.shape
    rows = torch.arange(batch, device=candidates.device)
    target = target_probs.to(torch.float32)
    draft = draft_probs.to(torch.float32)
    draft = torch.where(draft == draft, draft, torch.zeros_like(draft))  # NaN q read as 0
    row = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    active = torch.ones(batch, dtype=torch.bool, device=candidates.device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    for step in range(1, slots):
        token = candidates[:, step].to(torch.int64)
        p = target[rows, row, token]
        q = draft[rows, row.clamp(max=draft.shape[1] - 1), token]
        ok = active & accept(uniform_samples[:, step - 1].to(torch.float32), q, p)
        accepted += ok.to(torch.int64)
        row = torch.where(ok, torch.full_like(row, step), row)
        active &= ok
    all_accepted = accepted == slots - 1
    p_row = target[rows, row]
    q_row = draft[rows, row.clamp(max=draft.shape[1] - 1)]
    if empty_residual_last:
        weights = torch.where(all_accepted.unsqueeze(-1), p_row, torch.relu(p_row - q_row))
        total = weights.sum(dim=-1)
        found = torch.cumsum(weights, dim=-1) > (uniform_samples_for_final_sampling.to(torch.float32) * total).unsqueeze(-1)
        final = torch.where(found.any(dim=-1), found.to(torch.int64).argmax(dim=-1),
                            torch.full_like(row, target.shape[-1] - 1))
    else:
        weights = correction_weights(p_row, q_row, all_accepted)
        final = draw_inverse_cdf(weights, uniform_samples_for_final_sampling.to(torch.float32))
    slot = torch.arange(slots, device=candidates.device)
    on_path = slot.unsqueeze(0) <= accepted.unsqueeze(-1)
    accept_index.copy_(torch.where(on_path, retrive_index, accept_index.to(torch.int64)).to(accept_index.dtype))
    accept_token_num.copy_(accepted.to(accept_token_num.dtype))
    for j in range(slots):  # the j-th accepted slot holds draft j + 1, or the final token
        here = on_path[:, j]
        value = torch.where(accepted > j, candidates[:, min(j + 1, slots - 1)], final)
        predicts[retrive_index[here, j]] = value[here].to(predicts.dtype)

def _layout(name: str, accept, empty_residual_last: bool, doc: str):
    """A function with the runtime's signature running :func:`_chain` with one acceptance test and fallback."""
    def layout(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_probs, draft_probs,
               threshold_single=1.0, threshold_acc=1.0, deterministic=True):
        _chain(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
               uniform_samples_for_final_sampling, target_probs, draft_probs, accept, empty_residual_last)

    layout.__name__ = layout.__qualname__ = name
    layout.__doc__ = doc
    return layout


chain_speculative_sampling_triton = _layout(
    "chain_speculative_sampling_triton", _strict, False,
    "Canonical chain round in SGLang's layout (module docstring); fills the three output tensors.")
chain_speculative_sampling_triton_le = _layout(
    "chain_speculative_sampling_triton_le", _non_strict, False,
    "Bug (zero-coin class, SGLang #35771): ``coin * q <= p`` accepts ``p(x) = 0`` when the coin is 0.")
chain_speculative_sampling_triton_last_id = _layout(
    "chain_speculative_sampling_triton_last_id", _strict, True,
    "Bug (the released kernel): a residual without positive mass emits id ``V - 1``.")
