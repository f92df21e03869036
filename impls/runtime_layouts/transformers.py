"""Canonical speculative sampling in Hugging Face transformers' ``_speculative_sampling`` layout.

Layout (``transformers/generation/utils.py``)::

    _speculative_sampling(candidate_input_ids [1, S] (the last K are the drafts), candidate_logits
        [1, K, V] (draft), candidate_length K, new_logits [1, K+1, V] (target))
        -> (valid_tokens [1, n+1], n_matches)

One row at a time (batch size 1), logits in, softmax inside, randomness from the *global* RNG
(``rand_like``, ``multinomial`` without a generator). Letters: ``q`` is the draft (assistant) law,
``p`` the target's, as in specproof.

Canonical rule here: ``q = softmax(candidate_logits)``, ``p = softmax(new_logits)``; accept draft
``i`` iff ``q_i(x_i) > 0`` and ``r_i < p_i(x_i)/q_i(x_i)`` (strict) with ``r = torch.rand_like``, stop
at the first rejection ``n``; then one token by ``torch.multinomial`` from ``max(0, p_n - q_n)`` (the
all-zero residual falling back to ``p_n``) or, after ``K`` acceptances, from ``p_K``.

Mutant :func:`speculative_sampling_le`: the comparison transformers shipped before 5.25.0, ``r <= p/q``, with no
``q > 0`` guard: ``r == 0`` accepts a draft of target probability 0 (``2^-24`` per test in float32 on
CPU); the harness's RNG edge injection makes it certain.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.sampling import correction_weights

__all__ = ["speculative_sampling", "speculative_sampling_le"]


def _row(candidate_input_ids, candidate_logits, candidate_length, new_logits, accept):
    drafts = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    p = new_logits.softmax(dim=-1)
    position = torch.arange(candidate_length, device=q.device)
    q_i = q[0, position, drafts[0]]
    p_i = p[0, position, drafts[0]]
    r = torch.rand_like(p_i)
    accepted = accept(r, p_i, q_i)
    n_matches = int(accepted.to(torch.int64).cumprod(dim=-1).sum())
    is_bonus = torch.tensor([n_matches == candidate_length], device=q.device)
    draft_row = q[:, min(n_matches, candidate_length - 1)]
    weights = correction_weights(p[:, n_matches], draft_row, is_bonus)
    token = torch.multinomial(weights, num_samples=1)
    valid_tokens = torch.cat((drafts[:, :n_matches], token), dim=-1)
    return valid_tokens, n_matches


def _accept_strict(r, p_i, q_i):
    return (q_i > 0) & (r < p_i / q_i)


def _accept_le(r, p_i, q_i):
    return r <= p_i / q_i


def speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits):
    """Canonical round for one row in transformers' layout (strict ``r < p/q``, residual fallback to ``p``)."""
    return _row(candidate_input_ids, candidate_logits, candidate_length, new_logits, _accept_strict)


def speculative_sampling_le(candidate_input_ids, candidate_logits, candidate_length, new_logits):
    """Bug (transformers' own comparison before 5.25.0): ``r <= p/q`` with no ``q > 0`` guard."""
    return _row(candidate_input_ids, candidate_logits, candidate_length, new_logits, _accept_le)
