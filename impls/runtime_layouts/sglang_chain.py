"""Canonical speculative sampling in SGLang's chain verifier layout, and two of its bugs.

Layout (SGLang's ``chain_speculative_sampling_triton``: a Triton classic chain kernel for ``topk = 1``
drafts, called with the target-only tree kernel's arguments)::

    chain_speculative_sampling_triton(predicts [B*S] int32, accept_index [B, S] int32,
        accept_token_num [B] int32, candidates [B, S] int64, retrive_index [B, S] int64,
        retrive_next_token, retrive_next_sibling, uniform_samples [B, S] float32,
        uniform_samples_for_final_sampling [B] float32, target_probs [B, S, V], draft_probs [B, S-1, V],
        threshold_single, threshold_acc, deterministic, *, block_verification=False) -> None

Releases (read in the wheels on PyPI, 0.5.23 the newest): none before 0.5.14; ``sglang.srt.speculative.
reject_sampling`` in 0.5.14 and 0.5.15, ``sglang.kernels.ops.speculative.reject_sampling`` from 0.5.16; a
NaN ``q`` reads as 0 in the correction from 0.5.17; from 0.5.21 a drafted token whose ``q`` is not in
``(0, 1]`` is rejected outright (``q_is_prob``) and any ``q`` outside ``[0, 1]`` reads as 0 in the
correction; from 0.5.22 ``block_verification=True`` selects block verification in the same kernel. Every
release through 0.5.23 emits id ``V - 1`` on an empty residual. The file is the same within 0.5.14 to 0.5.16, 0.5.17 to
0.5.20 and 0.5.22 to 0.5.23. This layout follows 0.5.21 to 0.5.23. Called as the adapter calls them
(:func:`specproof.impls.adapters.sglang_tree.call_kernel`) under ``TRITON_INTERPRET=1``, on the same coins,
the released kernels of 0.5.21, and of 0.5.23 with ``block_verification`` off and on, emitted the same tokens
as :func:`chain_speculative_sampling_triton_last_id` on every row tried (480 rows a case: laws, targets
summing below 1, drafted tokens of draft probability 0, and draft values outside ``[0, 1]``: NaN, ``inf``,
``-0.25``, ``1.5``); those of 0.5.14 and 0.5.17 did on laws and targets summing below 1, and differed where
a draft value is 0 or outside ``[0, 1]`` (checked outside this repository, on the wheels' files).

Slot 0 of each request is the root (the token before the drafts), slot ``s >= 1`` draft ``s - 1``; the
``next``/``sibling`` links and the thresholds are not read by the chain kernel. Step ``s`` tests draft
``x = candidates[b, s]`` against row ``r`` (the last accepted slot, 0 at first) with the multiplication
form ``coin * q_r(x) < p_r(x)``, ``coin = uniform_samples[b, s - 1]``, and only if ``0 < q_r(x) <= 1``; an
accepted draft is written to ``predicts[retrive_index[b, r]]`` and ``accept_index[b, n] = retrive_index[b,
s]``. The final token (correction, or bonus from ``p`` when every draft was accepted) is the inverse CDF of
``max(p_r - q_r, 0)`` (``q`` outside ``[0, 1]`` read as 0) at ``uniform_samples_for_final_sampling[b] *
total``, written to ``predicts`` at the last accepted slot. Emitted sequence: ``predicts[accept_index[b,
j]]`` for ``j <= accept_token_num[b]``.

Block verification (``block_verification=True``; Sun et al. 2024, arXiv:2403.10444, Algorithm 2): along
the chain, ``w_0 = 1``, ``w_s = min(1, w_{s-1} p(x_s) / q(x_s))`` (0 when ``q(x_s)`` is not in ``(0, 1]``);
``h_s = Z_s / (Z_s + 1 - w_s)`` with ``Z_s = sum_x max(w_s p_s(x) - q_s(x), 0)`` on row ``s`` when ``0 < w_s <
1`` and ``s < K`` (this sum reads ``q`` unguarded: a value outside ``[0, 1]`` counts as it is; a NaN term
counts 0 here, while Triton leaves ``tl.maximum``'s NaN handling unspecified and its interpreter propagates
it), else ``h_s = w_s``; every step is tested (no early stop) and ``tau`` is the last step whose coin passes
``coin < w`` and then ``coin < h`` (the kernel's shortcut, equal to ``coin < h`` where ``h <= w``, i.e. ``Z
<= w``: so wherever ``q >= 0`` and the target row sums to at most 1); the final token is the inverse CDF of
``p_K`` (``tau = K``) or of ``max(w_tau p_tau - q_tau, 0)``, normalised by ``Z_tau`` where it was computed.
The same arguments also drive ``chain_block_speculative_sampling_triton``, a separate block function read
in two stored revisions of SGLang (``speculative_sampling_block_kernel``, testing ``coin <= h``) that no
release through 0.5.23 ships; :func:`chain_block_speculative_sampling_triton` and its mutants are this
module's functions with ``block_verification`` on by default.

Canonical here: as above (the released arithmetic, the ``q`` rules and the ``coin < w`` shortcut included),
with a residual that has no positive entry falling back to ``p`` (the library's
:func:`~specproof.impls.kernels.sampling.correction_weights`) and the draw normalised by the weights' own
sum; block verification with the strict ``coin < h`` (an ``h`` of 0 is never passed).

Mutants:

- :func:`chain_speculative_sampling_triton_le`: ``coin * q <= p``, the zero-coin class (SGLang issue
  #35771: a coin of exactly 0 accepts a draft whose target probability is 0; float32 coins are 0 with
  probability ``2^-24``), fixed by a ``target_prob > 0`` guard; with ``block_verification``, ``coin <= h``.
- :func:`chain_speculative_sampling_triton_last_id`: the fallback of every release through 0.5.23 for a
  residual without positive mass (``p <= q`` everywhere, reachable in floats): it emits id ``V - 1``, which
  may have ``p = 0``; with ``block_verification`` the threshold is ``coin * Z_tau`` where ``Z_tau`` was
  scanned (``0 < w_tau < 1``, ``tau < K``), else ``coin`` times the residual's own sum.
- :func:`chain_block_speculative_sampling_triton_le`: the released block arithmetic with only the unreleased
  block function's ``<=`` (``coin <= w`` and ``coin <= h``; that function's closed-form ``Z`` and its ratio
  rule for ``q = 0`` are not modelled): a coin of exactly 0 at a step whose draft has ``p = 0`` (``w = 0``,
  so ``h = 0``) takes ``tau`` there and emits that draft.
- :func:`chain_block_speculative_sampling_triton_last_id`: the block draw's ``V - 1`` (a target summing
  below 1 gets there).

Logits entry (``chain_speculative_sampling_from_logits_triton``, read in two stored revisions of
``python/sglang/kernels/ops/speculative/reject_sampling.py``, positional and keyword-only; no release through
0.5.23 ships it): the classic kernel of 0.5.17 to 0.5.20 (no ``q_is_prob`` rule, a NaN ``q`` read as 0)
with ``target_logits [B*S, V]`` float32 (asserted) and ``temperatures [B]`` in place of ``target_probs``; the
kernel computes ``p = exp(logit / T - lse)`` itself, ``lse = m + log(sum
exp(logit / T - m))`` from per-block maxima ``m`` (a block whose maximum is ``-inf`` counts 0; an all-``-inf``
row gives NaN), on every row it reads. :func:`chain_speculative_sampling_from_logits_triton` is the canonical
round on that law (the block statistics' combination written as one row reduction: equal up to float32
rounding). Mutants: :func:`chain_speculative_sampling_from_logits_triton_le` tests ``coin * q <= p`` (the
zero-coin class); :func:`chain_speculative_sampling_from_logits_triton_last_id` is the released kernel's
``V - 1`` on an empty residual. The kernel normalises the target itself, so that residual needs a draft row
with ``p <= q`` everywhere and a rejection: a draft that is not a law (summing above 1), or a drafted token
of draft probability 0 where ``p == q`` (:mod:`.sglang_dspark`'s released race). Well-formed draft laws
never get there, so the batched check's "target sums below 1" cannot reach it on this entry, and its
default check passes.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.sampling import draw_inverse_cdf

__all__ = ["chain_speculative_sampling_triton", "chain_speculative_sampling_triton_le",
           "chain_speculative_sampling_from_logits_triton", "chain_speculative_sampling_from_logits_triton_le",
           "chain_speculative_sampling_from_logits_triton_last_id",
           "chain_speculative_sampling_triton_last_id", "chain_block_speculative_sampling_triton",
           "chain_block_speculative_sampling_triton_le", "chain_block_speculative_sampling_triton_last_id"]


def _strict(coin, q, p):
    return coin * q < p


def _non_strict(coin, q, p):
    return coin * q <= p


def _draft_values(draft_probs: torch.Tensor, gated: bool = True) -> torch.Tensor:
    """The draft rows as the kernel reads them, float32: since 0.5.21 (``gated``) a value outside ``[0, 1]``
    (NaN, an infinity, a negative) reads as 0, and a drafted token whose value is then 0 fails every test
    (``q_is_prob``); before (the logits entry's revision), only NaN reads as 0."""
    draft = draft_probs.to(torch.float32)
    keep = (draft >= 0) & (draft <= 1) if gated else draft == draft
    return torch.where(keep, draft, torch.zeros_like(draft))


def _chain(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
           uniform_samples_for_final_sampling, target_probs, draft_probs, accept, empty_residual_last, gated=True):
    batch, slots = candidates.shape
    rows = torch.arange(batch, device=candidates.device)
    target = target_probs.to(torch.float32)
    draft = _draft_values(draft_probs, gated)
    row = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    active = torch.ones(batch, dtype=torch.bool, device=candidates.device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    for step in range(1, slots):
        token = candidates[:, step].to(torch.int64)
        p = target[rows, row, token]
        q = draft[rows, row.clamp(max=draft.shape[1] - 1), token]
        ok = active & ((q > 0) | (not gated)) & accept(uniform_samples[:, step - 1].to(torch.float32), q, p)
        accepted += ok.to(torch.int64)
        row = torch.where(ok, torch.full_like(row, step), row)
        active &= ok
    all_accepted = accepted == slots - 1
    p_row = target[rows, row]
    q_row = draft[rows, row.clamp(max=draft.shape[1] - 1)]
    weights = torch.where(all_accepted.unsqueeze(-1), p_row, torch.relu(p_row - q_row))
    final = _final_token(weights, p_row, uniform_samples_for_final_sampling.to(torch.float32), weights.sum(dim=-1),
                         empty_residual_last)
    _write(predicts, accept_index, accept_token_num, candidates, retrive_index, accepted, final)


def _final_token(weights, target_row, uniform, norm, empty_residual_last):
    """The correction or bonus token: the inverse CDF of ``weights`` at ``uniform * norm``.  Canonical
    (``empty_residual_last`` False): ``norm`` is the weights' sum, and weights without a positive entry
    fall back to ``p`` (:func:`~specproof.impls.kernels.sampling.correction_weights`).  Released: the
    kernel's ``norm`` as given, and id ``V - 1`` when no running sum passes the threshold."""
    if not empty_residual_last:
        empty = ~(weights > 0).any(dim=-1, keepdim=True)
        return draw_inverse_cdf(torch.where(empty, target_row, weights), uniform)
    found = torch.cumsum(weights, dim=-1) > (uniform * norm).unsqueeze(-1)
    last = torch.full_like(uniform, weights.shape[-1] - 1, dtype=torch.int64)
    return torch.where(found.any(dim=-1), found.to(torch.int64).argmax(dim=-1), last)


def _write(predicts, accept_index, accept_token_num, candidates, retrive_index, accepted, final):
    """The kernels' outputs: ``accept_index[b, j] = retrive_index[b, j]`` for ``j <= accepted[b]``, draft
    ``j + 1`` (or the final token at ``j = accepted[b]``) at ``predicts[retrive_index[b, j]]``."""
    slots = candidates.shape[1]
    slot = torch.arange(slots, device=candidates.device)
    on_path = slot.unsqueeze(0) <= accepted.unsqueeze(-1)
    accept_index.copy_(torch.where(on_path, retrive_index, accept_index.to(torch.int64)).to(accept_index.dtype))
    accept_token_num.copy_(accepted.to(accept_token_num.dtype))
    for j in range(slots):  # the j-th accepted slot holds draft j + 1, or the final token
        here = on_path[:, j]
        value = torch.where(accepted > j, candidates[:, min(j + 1, slots - 1)], final)
        predicts[retrive_index[here, j]] = value[here].to(predicts.dtype)


def _block(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
           uniform_samples_for_final_sampling, target_probs, draft_probs, stop, empty_residual_last):
    """Block verification in the kernel's arithmetic (module docstring): no early stop, ``tau`` the last
    step whose coin passes ``stop(coin, h)``, then the ``w_tau``-scaled residual."""
    batch, slots = candidates.shape
    drafts = slots - 1
    rows = torch.arange(batch, device=candidates.device)
    target = target_probs.to(torch.float32)
    raw, draft = draft_probs.to(torch.float32), _draft_values(draft_probs)
    tokens = candidates[:, 1:].to(torch.int64)
    p_x = target[:, :drafts].gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q_x = draft[:, :drafts].gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    weight = torch.ones(batch, dtype=torch.float32, device=candidates.device)
    tau = torch.zeros(batch, dtype=torch.int64, device=candidates.device)
    w_tau, z_tau = torch.ones_like(weight), torch.zeros_like(weight)
    scanned_tau = torch.zeros(batch, dtype=torch.bool, device=candidates.device)
    for step in range(1, slots):
        q = q_x[:, step - 1]
        # w_s = min(w_{s-1} p / q, 1) in the kernel's order of operations; a q that is not a probability gives 0
        ratio = weight * p_x[:, step - 1] / torch.where(q > 0, q, torch.ones_like(q))
        weight = torch.where(q > 0, torch.clamp(ratio, max=1.0), torch.zeros_like(weight))
        scanned = (weight > 0) & (weight < 1) if step < drafts else torch.zeros_like(tau, dtype=torch.bool)
        if step < drafts:
            # this scan reads q unguarded (a NaN term counts 0 here; Triton leaves it unspecified)
            terms = weight.unsqueeze(-1) * target[:, step] - raw[:, step]
            z = torch.where(terms > 0, terms, torch.zeros_like(terms)).sum(dim=-1)
            z = torch.where(scanned, z, torch.zeros_like(z))
            h = torch.where(scanned, z / torch.where(scanned, z + 1.0 - weight, torch.ones_like(z)), weight)
        else:
            z, h = torch.zeros_like(weight), weight
        coin = uniform_samples[:, step - 1].to(torch.float32)
        hit = stop(coin, weight) & stop(coin, h)  # the kernel tests w first (h <= w wherever Z <= w)
        tau = torch.where(hit, torch.full_like(tau, step), tau)
        w_tau, z_tau = torch.where(hit, weight, w_tau), torch.where(hit, z, z_tau)
        scanned_tau = torch.where(hit, scanned, scanned_tau)
    all_accepted = tau == drafts
    p_row = target[rows, tau]
    q_row = draft[rows, tau.clamp(max=drafts - 1)]
    weights = torch.where(all_accepted.unsqueeze(-1), p_row, torch.relu(w_tau.unsqueeze(-1) * p_row - q_row))
    # the kernel's normaliser: Z_tau where it was scanned for h, else the weights' own sum
    norm = torch.where(scanned_tau, z_tau, weights.sum(dim=-1))
    final = _final_token(weights, p_row, uniform_samples_for_final_sampling.to(torch.float32), norm,
                         empty_residual_last)
    _write(predicts, accept_index, accept_token_num, candidates, retrive_index, tau, final)


def _layout(name: str, chain_test, block_test, empty_residual_last: bool, doc: str, *, block: bool = False):
    """A function with the runtime's signature: :func:`_chain` with ``chain_test``, or, with
    ``block_verification`` (0.5.22's keyword; ``block`` its default), :func:`_block` with ``block_test``; both
    with one fallback for an empty residual."""
    def layout(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_probs, draft_probs,
               threshold_single=1.0, threshold_acc=1.0, deterministic=True, *, block_verification=block):
        core, test = (_block, block_test) if block_verification else (_chain, chain_test)
        core(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
             uniform_samples_for_final_sampling, target_probs, draft_probs, test, empty_residual_last)

    layout.__name__ = layout.__qualname__ = name
    layout.__doc__ = doc
    return layout


def _target_from_logits(target_logits: torch.Tensor, temperatures: torch.Tensor, slots: int) -> torch.Tensor:
    """The logits entry's target law ``[B, S, V]`` (module docstring): ``exp(logit / T - lse)`` in float32, with
    ``lse`` the row's ``max + log(sum exp(logit / T - max))``, request ``b``'s temperature on its ``S`` rows;
    an all-``-inf`` row gives NaN, as the kernel's does."""
    rows, vocab = target_logits.shape
    temperature = temperatures.to(torch.float32).repeat_interleave(slots).unsqueeze(-1)
    scaled = target_logits.to(torch.float32) / temperature
    top = scaled.amax(dim=-1, keepdim=True)
    sumexp = torch.exp(scaled - top).sum(dim=-1, keepdim=True)
    return torch.exp(scaled - (top + torch.log(sumexp))).reshape(rows // slots, slots, vocab)


def _logits_layout(name: str, accept, empty_residual_last: bool, doc: str):
    """The logits entry's signature running :func:`_chain` on :func:`_target_from_logits`'s law."""
    def layout(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_logits, temperatures,
               draft_probs, threshold_single=1.0, threshold_acc=1.0, deterministic=True):
        target = _target_from_logits(target_logits, temperatures, candidates.shape[1])
        _chain(predicts, accept_index, accept_token_num, candidates, retrive_index, uniform_samples,
               uniform_samples_for_final_sampling, target, draft_probs, accept, empty_residual_last, gated=False)

    layout.__name__ = layout.__qualname__ = name
    layout.__doc__ = doc
    return layout


def _below(coin, h):
    return coin < h


def _at_most(coin, h):
    return coin <= h


chain_speculative_sampling_triton = _layout(
    "chain_speculative_sampling_triton", _strict, _below, False,
    "Canonical chain round in SGLang's layout (module docstring); fills the three output tensors; "
    "``block_verification=True``: canonical block verification.")
chain_speculative_sampling_triton_le = _layout(
    "chain_speculative_sampling_triton_le", _non_strict, _at_most, False,
    "Bug (zero-coin class, SGLang #35771): ``coin * q <= p`` accepts ``p(x) = 0`` when the coin is 0 (with "
    "``block_verification=True``: ``coin <= h``).")
chain_speculative_sampling_triton_last_id = _layout(
    "chain_speculative_sampling_triton_last_id", _strict, _below, True,
    "Bug (every release, 0.5.14 to 0.5.23): a residual without positive mass emits id ``V - 1`` (with "
    "``block_verification=True`` too).")
chain_block_speculative_sampling_triton = _layout(
    "chain_block_speculative_sampling_triton", _strict, _below, False,
    "Canonical block verification in SGLang's chain layout (module docstring): ``coin < h``, an empty "
    "residual falls back to ``p``.", block=True)
chain_block_speculative_sampling_triton_le = _layout(
    "chain_block_speculative_sampling_triton_le", _non_strict, _at_most, False,
    "Bug (the unreleased block function's test, zero-coin class): ``coin <= h`` takes ``tau`` at a step with "
    "``h = 0`` when the coin is 0, which emits a draft of target probability 0.", block=True)
chain_block_speculative_sampling_triton_last_id = _layout(
    "chain_block_speculative_sampling_triton_last_id", _strict, _below, True,
    "Bug (as released): the residual's normaliser is ``Z_tau`` where it was scanned (else the residual's sum) "
    "and a draw that finds no running sum past it emits id ``V - 1``.", block=True)
chain_speculative_sampling_from_logits_triton = _logits_layout(
    "chain_speculative_sampling_from_logits_triton", _strict, False,
    "Canonical chain round on target logits, the softmax inside (module docstring's logits entry).")
chain_speculative_sampling_from_logits_triton_le = _logits_layout(
    "chain_speculative_sampling_from_logits_triton_le", _non_strict, False,
    "Bug (zero-coin class, SGLang #35771) on the logits entry: ``coin * q <= p`` accepts ``p(x) = 0`` when the "
    "coin is 0.")
chain_speculative_sampling_from_logits_triton_last_id = _logits_layout(
    "chain_speculative_sampling_from_logits_triton_last_id", _strict, True,
    "Bug (the released kernel) on the logits entry: a residual without positive mass emits id ``V - 1`` (reached "
    "only through a draft row that is not a law or a drafted token of draft probability 0; module docstring).")
