"""A zoo of known-bad verifiers: real, runnable, each with one documented bug.

All follow the batched contract of :mod:`.canonical` (``le_ratio_uniforms`` also the uniform-injection
one) and share its validation, so they differ from the canonical verifier only in the bug. Unless a
docstring says otherwise each uses the correct parts: acceptance ``u < p/q`` with
``torch.rand((B, K))`` uniforms, final draw by ``torch.multinomial``. The intended law is always the
``target_probs`` passed in.

Processor mutants (:func:`target_only_temperature`, :func:`min_p_bonus_only`,
:func:`draft_top_k_in_verifier`) keep the batched contract: the caller passes the laws the round must
preserve (processed identically on both sides, as a correct pipeline would), and the mutant re-applies
a processor of its own to one side or one row, with :meth:`.Processors.process_probs` (through
``log p``), as a runtime does when its sampling parameters reach only one code path.
:func:`make_target_only_processed`, :func:`make_bonus_only_processed` and
:func:`make_draft_processed_in_verifier` build the same bugs around any pipeline.
"""

from __future__ import annotations

import functools

import torch

from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.contract import check_round
from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.verifiers.canonical import final_weights, inverse_cdf_round, round_uniforms
from specproof.impls.processors import MinP, Processors, Temperature, TopK
from specproof.impls.kernels.sampling import correction_weights, draw_multinomial

__all__ = [
    "resample_from_target", "make_top_k_acceptance", "top1_acceptance", "greedy_while_sampling",
    "continue_after_rejection", "le_ratio_uniforms", "le_ratio_invcdf", "residual_clamped_tiny",
    "stale_residual_buffer", "make_target_only_processed", "target_only_temperature",
    "make_bonus_only_processed", "min_p_bonus_only", "make_draft_processed_in_verifier",
    "draft_top_k_in_verifier", "bonus_from_wrong_row", "target_rows_shifted",
]


def _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator) -> torch.Tensor:
    """Correct part: ``u < p/q`` with ``torch.rand((B, K))`` uniforms; returns the prefix length."""
    batch, drafts = draft_token_ids.shape
    uniforms = torch.rand((batch, drafts), dtype=draft_probs.dtype, device=draft_probs.device,
                          generator=generator)
    accepted = accept_ratio(uniforms, drafted_probs(target_probs, draft_token_ids),
                            drafted_probs(draft_probs, draft_token_ids))
    return leading_accepts(accepted)


def resample_from_target(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: after a rejection at ``n`` the correction is drawn from ``p_n``, not the residual.

    Output law per position ``min(p, q) + (1 - beta) p``: over-weights tokens the draft already
    favours (p = (1/2, 1/2), q = (1, 0) gives (3/4, 1/4)).
    """
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    n_accepted = _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator)
    token = draw_multinomial(rows_at(target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def _top_k_acceptance(k, draft_probs, target_probs, draft_token_ids, generator):
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    order = target_probs[:, :drafts].sort(dim=-1, descending=True, stable=True).indices
    top = order[..., :k]  # ties go to the lower index, as in the catalogue's top-k-accept rule
    n_accepted = leading_accepts((top == draft_token_ids.unsqueeze(-1)).any(dim=-1))
    token = draw_multinomial(rows_at(target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def make_top_k_acceptance(k: int):
    """Build the top-k acceptance mutant: accept iff ``x_i`` is in ``p_i``'s top-k, else draw from ``p_i``.

    Output law per position ``q(x) 1[x in T] + q(not T) p(x)``; exact only when q is supported on T
    and equals p there. The bonus is drawn from ``p_K`` (correct).
    """
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"make_top_k_acceptance(k={k!r}): k must be an int >= 1.")
    fn = functools.partial(_top_k_acceptance, k)
    fn.__doc__ = (f"Accept iff the draft is in the target's top-{k}; else draw from p "
                  f"(make_top_k_acceptance({k})).")
    return fn


top1_acceptance = make_top_k_acceptance(1)


def greedy_while_sampling(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: greedy acceptance (``x_i == argmax p_i``) in a sampling round; corrections sampled from ``p``.

    Only argmax drafts survive, so the emitted law piles onto the target's mode.
    """
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    n_accepted = leading_accepts(draft_token_ids == target_probs[:, :drafts].argmax(dim=-1))
    token = draw_multinomial(rows_at(target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def continue_after_rejection(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: the prefix length is the number of accepted drafts (``accepted.sum()``), not the length
    of the all-accepted prefix, so drafts after a rejection are emitted and the correction lands
    at the wrong position."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    batch, drafts = draft_token_ids.shape
    uniforms = torch.rand((batch, drafts), dtype=draft_probs.dtype, device=draft_probs.device,
                          generator=generator)
    accepted = accept_ratio(uniforms, drafted_probs(target_probs, draft_token_ids),
                            drafted_probs(draft_probs, draft_token_ids))
    n_accepted = accepted.to(torch.int64).sum(dim=-1)
    token = draw_multinomial(final_weights(draft_probs, target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def accept_ratio_le(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """``u <= p/q``: with ``u == 0`` it accepts a draft whose target probability is 0."""
    return (q_x > 0) & (u <= p_x / q_x)


def le_ratio_uniforms(draft_probs, target_probs, draft_token_ids, uniforms):
    """Bug: acceptance ``u <= p/q`` (uniform-injection core, inverse-CDF draw).

    Differs from ``u < p/q`` only where ``u == p/q``; the harmful point is ``u == 0`` with
    ``p(x) = 0``, which emits a token the target never produces. On CPU (torch 2.13) ``torch.rand``
    returns 0 with probability ``2^-24`` in float32 (multiples of ``2^-24``); float16 and bfloat16
    uniforms are rounded from float and those that round to 1 wrap to 0, so ``P(u == 0)`` is about
    ``2^-12`` (float16) and ``2^-9`` (bfloat16).
    """
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return inverse_cdf_round(accept_ratio_le, draft_probs, target_probs, draft_token_ids, uniforms)


def le_ratio_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """Batched wrapper of :func:`le_ratio_uniforms`: ``torch.rand((B, K+1))`` in the dtype under test."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return inverse_cdf_round(accept_ratio_le, draft_probs, target_probs, draft_token_ids,
                             round_uniforms(draft_probs, generator))


def residual_clamped_tiny(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: residual ``clamp(p - q, min=tiny)`` renormalised (vLLM v0).

    Every token, including ``p = 0`` ones, gets residual weight ``tiny``; an all-zero residual
    (``p <= q`` everywhere) becomes uniform over the vocabulary instead of a sane fallback.
    """
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    n_accepted = _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator)
    target_row = rows_at(target_probs, n_accepted)
    draft_row = rows_at(draft_probs, n_accepted.clamp(max=drafts - 1))
    clamped = torch.clamp(target_row - draft_row, min=torch.finfo(target_row.dtype).tiny)
    residual = clamped / clamped.sum(dim=-1, keepdim=True)
    weights = torch.where((n_accepted == drafts).unsqueeze(-1), target_row, residual)
    return assemble_emitted(draft_token_ids, n_accepted, draw_multinomial(weights, generator))


def stale_residual_buffer(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: the residual at position ``n`` reads a draft buffer holding stale contents.

    Models a recovery buffer made with ``torch.empty_like`` and filled per position only after it
    is read: position ``n`` sees the draft row of position ``n - 1``, and position 0 sees fresh
    (zeroed) memory, so its residual is ``max(0, p_0 - 0) = p_0``. A real ``empty_like`` would make
    the output depend on allocator state; pinning the stale contents keeps the law testable.
    Invisible when every position has the same ``q`` except at position 0.
    """
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    n_accepted = _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator)
    stale = torch.cat([torch.zeros_like(draft_probs[:, :1]), draft_probs[:, :-1]], dim=1)
    weights = correction_weights(rows_at(target_probs, n_accepted),
                                 rows_at(stale, n_accepted.clamp(max=drafts - 1)),
                                 n_accepted == drafts)
    return assemble_emitted(draft_token_ids, n_accepted, draw_multinomial(weights, generator))


def _processed_round(draft_probs, target_probs, draft_token_ids, generator):
    n_accepted = _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator)
    token = draw_multinomial(final_weights(draft_probs, target_probs, n_accepted), generator)
    return assemble_emitted(draft_token_ids, n_accepted, token)


def _target_only_processed(processors, draft_probs, target_probs, draft_token_ids, generator):
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _processed_round(draft_probs, processors.process_probs(target_probs), draft_token_ids,
                            generator)


def make_target_only_processed(processors: Processors):
    """Bug: ``processors`` applied to every target row, not to the draft side or the intended law.

    The round is self-consistent for the processed target, so it emits exactly the processed law
    instead of the intended ``target_probs``.
    """
    fn = functools.partial(_target_only_processed, processors)
    fn.__doc__ = f"Target-only processing with {processors!r} (make_target_only_processed)."
    return fn


target_only_temperature = make_target_only_processed(Processors([Temperature(0.7)]))


def _bonus_only_processed(processors, draft_probs, target_probs, draft_token_ids, generator):
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    processed = torch.cat([target_probs[:, :-1], processors.process_probs(target_probs[:, -1:])],
                          dim=1)
    return _processed_round(draft_probs, processed, draft_token_ids, generator)


def make_bonus_only_processed(processors: Processors):
    """Bug: ``processors`` honoured only on the bonus row (row ``K``), not on verified positions."""
    fn = functools.partial(_bonus_only_processed, processors)
    fn.__doc__ = f"Bonus-row-only processing with {processors!r} (make_bonus_only_processed)."
    return fn


min_p_bonus_only = make_bonus_only_processed(Processors([MinP(0.3)]))


def _draft_processed_in_verifier(processors, draft_probs, target_probs, draft_token_ids, generator):
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _processed_round(processors.process_probs(draft_probs), target_probs, draft_token_ids,
                            generator)


def make_draft_processed_in_verifier(processors: Processors):
    """Bug: the verifier processes ``q`` (acceptance and residual) while the drafts were drawn from
    the ``q`` passed in: drafts from ``r`` verified as if from ``q'``. Output law
    ``r min(1, p/q') + [1 - sum r min(1, p/q')] norm(max(0, p - q'))``, exact only when ``q' = r``.
    Drafts outside ``q'``'s support have ``q'(x) = 0`` and are rejected."""
    fn = functools.partial(_draft_processed_in_verifier, processors)
    fn.__doc__ = f"Draft side re-processed with {processors!r} (make_draft_processed_in_verifier)."
    return fn


draft_top_k_in_verifier = make_draft_processed_in_verifier(Processors([TopK(2)]))


def bonus_from_wrong_row(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: when all ``K`` drafts pass, the bonus is drawn from row ``K-1`` instead of row ``K``."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    n_accepted = _ratio_prefix(draft_probs, target_probs, draft_token_ids, generator)
    bonus = n_accepted == drafts
    target_row = rows_at(target_probs, torch.where(bonus, drafts - 1, n_accepted))
    draft_row = rows_at(draft_probs, n_accepted.clamp(max=drafts - 1))
    weights = correction_weights(target_row, draft_row, bonus)
    return assemble_emitted(draft_token_ids, n_accepted, draw_multinomial(weights, generator))


def target_rows_shifted(draft_probs, target_probs, draft_token_ids, generator):
    """Bug: off-by-one target rows: draft ``i`` is tested and corrected against ``p_{i+1}``.

    Acceptance and residual at position ``i`` read target row ``i + 1``; the bonus reads row ``K``.
    With the same law at every position (context-free tests) rows ``i`` and ``i + 1`` coincide and
    the bug is invisible; only prefix-dependent laws expose it.
    """
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    drafts = draft_token_ids.shape[1]
    n_accepted = _ratio_prefix(draft_probs, target_probs[:, 1:], draft_token_ids, generator)
    target_row = rows_at(target_probs, (n_accepted + 1).clamp(max=drafts))
    draft_row = rows_at(draft_probs, n_accepted.clamp(max=drafts - 1))
    weights = correction_weights(target_row, draft_row, n_accepted == drafts)
    return assemble_emitted(draft_token_ids, n_accepted, draw_multinomial(weights, generator))
