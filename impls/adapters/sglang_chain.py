"""Adapter ``sglang-chain``: SGLang's chain verifier ``chain_speculative_sampling_triton`` behind the
batched contract.

Follows SGLang's Triton classic chain verifier (``topk = 1`` drafts; 0.5.14 to 0.5.23, the newest
release: ``sglang.kernels.ops.speculative.reject_sampling`` from 0.5.16, ``sglang.srt.speculative.
reject_sampling`` before), which takes the target-only tree kernel's arguments (:mod:`.sglang_tree`'s
signature and conversion, with the chain ``parents = -1, 0, .., K-2``). Letters: ``target_probs`` is the
target (specproof's ``p``), ``draft_probs`` the draft (``q``); no swap. Conversion of one harness round
``[B, K, V]``:

- ``candidates [B, K+1]``: root token 0 (never emitted), then the drafts; ``retrive_index[b, s] =
  b (K+1) + s``; the ``next``/``sibling`` links of the chain (not read by the chain kernel);
- ``target_probs [B, K+1, V]`` and ``draft_probs [B, K, V]`` as given (the dtype under test);
- ``uniform_samples [B, K+1]`` and ``uniform_samples_for_final_sampling [B]`` float32 from the harness
  generator (``torch.rand``), as SGLang's caller draws them; thresholds ``1.0``, ``deterministic=True``;
- the emitted tokens ``predicts[accept_index[b, j]]`` for ``j <= accept_token_num[b]``, then ``-1``.

Block verification (0.5.22 and 0.5.23: the same function with ``block_verification=True``, a keyword the
adapter does not pass: check it through ``functools.partial`` in your own file, as the README shows) takes
the same conversion, and so does ``chain_block_speculative_sampling_triton``, a separate block function of
two stored SGLang revisions that no release through 0.5.23 ships
(:mod:`specproof.impls.runtime_layouts.sglang_chain` states the arithmetic and the release history).

Also follows the logits entry ``chain_speculative_sampling_from_logits_triton`` (unreleased through 0.5.23:
the classic kernel with ``target_logits [B*(K+1), V]`` float32 and ``temperatures [B]`` in place of
``target_probs``; the kernel applies the softmax itself): the adapter hands ``log(p)`` in float32 (the
kernel asserts float32; ``-inf`` where ``p = 0``), whose softmax is ``p / sum(p)`` up to rounding
(renormalised) and exactly 0 where ``p = 0``, and temperatures 1. The kernel's ``V - 1`` fallback on an
empty residual is therefore not reached by the batched suite's "target sums below 1" on this entry
(:mod:`specproof.impls.runtime_layouts.sglang_chain`). A keyword-only revision of that entry
(``target_log_norm``, ``draft_logits``, ``draft_log_norm``) is not followed.

Not followed: the seeded path of unreleased classic kernels (``sampling_seed`` and ``positions`` given: coins
from an integer hash of seed, position and domain, ``((h >> 8) + 0.5) 2^-24``, never 0): this adapter passes
neither, so the kernel reads the harness's ``uniform_samples``; a hash-driven coin is not a torch draw and the
RNG edge injection cannot reach it.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm
from specproof.impls.adapters.sglang_tree import SIGNATURE, call_kernel
from specproof.impls.contract import check_round

__all__ = ["ADAPTER", "LOGITS_FORM"]

LOGITS_FORM = SignatureForm("SGLang chain_speculative_sampling_from_logits_triton (target logits, softmax inside)",
                            SIGNATURE[:9] + ("target_logits", "temperatures", "draft_probs") + SIGNATURE[11:])


def _logits_values(target_probs, draft_probs):
    """The logits entry's value arguments: ``log p`` float32 ``[B*(K+1), V]``, temperatures 1, ``draft_probs``."""
    batch, slots, vocab = target_probs.shape
    logits = torch.log(target_probs.to(torch.float32)).reshape(batch * slots, vocab).contiguous()
    return logits, torch.ones(batch, dtype=torch.float32, device=target_probs.device), draft_probs.contiguous()


def _build(fn, form):
    def verify(draft_probs, target_probs, draft_token_ids, generator):
        shape = check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        chain = list(range(-1, shape.drafts - 1))
        values = _logits_values(target_probs, draft_probs) if form is LOGITS_FORM else None
        return call_kernel(fn, chain, draft_token_ids, target_probs, draft_probs, generator, values)

    return verify


ADAPTER = Adapter(
    name="sglang-chain", contract="batched",
    runtime="SGLang chain_speculative_sampling_triton (0.5.14 to 0.5.23, classic Triton chain kernel for "
            "topk = 1, called with the tree kernel's arguments: candidates / retrive_index, caller coins, "
            "coin * q < p, inverse CDF of max(p - q, 0); target_probs = target p, draft_probs = draft q; "
            "block_verification=True from 0.5.22) and, from unreleased revisions, "
            "chain_block_speculative_sampling_triton (same arguments) and the logits entry "
            "chain_speculative_sampling_from_logits_triton (target logits and temperatures, softmax inside; "
            "log p in float32 and temperatures 1 are handed)",
    randomness="uniform_samples [B, K+1] and uniform_samples_for_final_sampling [B] float32 drawn from the "
               "harness generator",
    forms=(SignatureForm("SGLang chain_speculative_sampling_triton", SIGNATURE), LOGITS_FORM), build=_build)
