"""Adapter: Hugging Face transformers' ``_speculative_sampling`` behind the batched contract.

``transformers.generation.utils._speculative_sampling(candidate_input_ids, candidate_logits,
candidate_length, new_logits)`` verifies one row (batch size 1) from logits: it takes ``softmax`` of
the draft logits ``[1, K, V]`` and target logits ``[1, K+1, V]``, accepts with ``r <= p/q`` where
``r = torch.rand_like(p/q)``, stops at the first rejection, and draws the correction from
``clamp(p - q, min=0) / sum`` (or the bonus from ``p_K``) with ``torch.multinomial``. It returns the
valid tokens ``[1, n+1]`` and ``n``.

Faithfulness choices:

- Probabilities become logits as ``log p`` (``p = 0 -> -inf``), in the dtype under test, on the
  device under test; transformers applies ``softmax``, which gives back ``p / sum p`` up to about
  an ulp per entry (the exp/log round trip and the max subtraction). Preserved exactly: the
  support (zeros stay zero, no token gains mass) and the ordering of entries up to ties created
  by rounding. Not expressible through logits: the exact float values of ``p``, and a row's scale
  (an unnormalised row, e.g. a float16 softmax output, is renormalised before transformers sees it).
- Randomness: transformers draws from the GLOBAL RNG (``rand_like``, ``multinomial`` without a
  generator). Per call the adapter draws one 63-bit seed from the passed generator, enters
  ``torch.random.fork_rng`` (covering the probabilities' device), seeds the default generators of
  the CPU and of that device, and runs the rows in order. The output is a deterministic function
  of the generator's state, and the caller's global RNG state is restored on exit.
- The batch is a Python loop over rows, as transformers itself only handles batch size 1.
- Known deviations from the exact rule, kept as they are: releases before 5.25.0 accept with
  ``r <= p/q``, which accepts a draft with ``p(x) = 0`` when ``r == 0`` (on CPU ``2^-24`` per test in
  float32, about ``2^-12`` / ``2^-9`` in float16 / bfloat16); 5.25.0 tests ``r < p/q``
  (:func:`~specproof.impls.adapters.transformers_release.accepts_ratio_ties`, read from the installed
  release).  In both releases tested here (5.24.0, 5.25.0) there is no ``q > 0`` guard (a drafted
  id with ``q(x) = 0 < p(x)`` has ``p/q = inf`` and is accepted; a sampled draft never has
  ``q(x) = 0``), and an all-zero residual divides by zero and ``torch.multinomial`` raises, surfaced
  as ``RuntimeError`` naming the row.

Requires the optional dependency: ``pip install specproof[transformers]``.

``ADAPTER`` (``--adapter transformers``) puts any function with ``_speculative_sampling``'s signature
behind the batched contract with the same conversion and randomness (:func:`rows_through`); the
``is_done_candidate`` flag of older releases is passed as ``False``.
"""

from __future__ import annotations

import torch

from specproof.impls.adapters.base import Adapter, SignatureForm
from specproof.impls.contract import check_round

__all__ = ["transformers_speculative_sampling", "load_transformers_verifier", "probs_to_logits",
           "rows_through", "ADAPTER"]

_SEED_HIGH = 2**63 - 1


def load_transformers_verifier():
    """Import ``transformers.generation.utils._speculative_sampling`` lazily."""
    try:
        from transformers.generation.utils import _speculative_sampling
    except ImportError as error:
        raise ImportError("The transformers adapter needs Hugging Face transformers. "
                          "Fix: pip install specproof[transformers]") from error
    return _speculative_sampling


def probs_to_logits(probs: torch.Tensor) -> torch.Tensor:
    """``log p`` in the input dtype; ``p = 0`` maps to ``-inf`` so softmax gives back exact zeros."""
    return torch.log(probs)


def _seed_default_generators(device: torch.device, seed: int) -> None:
    """Seed the CPU default generator and, for an accelerator, only that device's default one
    (``torch.manual_seed`` would also reseed every other GPU, which ``fork_rng`` does not restore)."""
    torch.random.default_generator.manual_seed(seed)
    if device.type != "cpu":
        module = torch.get_device_module(device.type)
        with module.device(device):
            module.manual_seed(seed)


def transformers_speculative_sampling(draft_probs, target_probs, draft_token_ids, generator):
    """Batched contract around transformers' verifier: one call per row; returns ``[B, K+1]`` int64."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return rows_through(load_transformers_verifier(), (), draft_probs, target_probs, draft_token_ids,
                        generator)


def rows_through(verify_row, extra_args, draft_probs, target_probs, draft_token_ids, generator):
    """Run ``verify_row(ids [1, K], draft_logits [1, K, V], K, target_logits [1, K+1, V], *extra_args)``
    row by row on the global RNG seeded from ``generator`` inside ``fork_rng`` (module docstring);
    inputs already validated. Returns ``[B, K+1]`` int64 padded with ``-1``."""
    batch, drafts = draft_token_ids.shape
    device = draft_probs.device
    seed = int(torch.randint(0, _SEED_HIGH, (1,), generator=generator, device=device))
    draft_logits = probs_to_logits(draft_probs)
    target_logits = probs_to_logits(target_probs)
    emitted = torch.full((batch, drafts + 1), -1, dtype=torch.int64, device=device)
    fork_devices = [device] if device.type != "cpu" else []
    with torch.random.fork_rng(devices=fork_devices, device_type=device.type):
        _seed_default_generators(device, seed)
        for row in range(batch):
            try:
                valid_tokens, _ = verify_row(draft_token_ids[row:row + 1], draft_logits[row:row + 1],
                                             drafts, target_logits[row:row + 1], *extra_args)
            except RuntimeError as error:
                raise RuntimeError(f"transformers _speculative_sampling failed on batch row {row}: "
                                   f"{error} (an all-zero residual, p <= q everywhere at the "
                                   f"rejected position, makes it divide by zero)") from error
            emitted[row, :valid_tokens.shape[-1]] = valid_tokens.reshape(-1)
    return emitted


def _build(fn, form):
    extra = (False,) if form is _WITH_DONE_FLAG else ()

    def verify(draft_probs, target_probs, draft_token_ids, generator):
        check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
        return rows_through(fn, extra, draft_probs, target_probs, draft_token_ids, generator)

    return verify


_ROW_PARAMS = ("candidate_input_ids", "candidate_logits", "candidate_length", "new_logits")
_CURRENT = SignatureForm("transformers current form (5.x as installed here)", _ROW_PARAMS)
_WITH_DONE_FLAG = SignatureForm("older releases with is_done_candidate (passed False)",
                                _ROW_PARAMS + ("is_done_candidate",))

ADAPTER = Adapter(
    name="transformers", contract="batched",
    runtime="Hugging Face transformers _speculative_sampling(candidate_input_ids, candidate_logits, "
            "candidate_length, new_logits[, is_done_candidate]) (transformers/generation/utils.py; read in "
            "5.24): batch size 1, logits in; candidate_logits = draft q, new_logits = target p, no swap",
    randomness="global RNG: one 63-bit seed from the harness generator per call seeds the default "
               "generators inside torch.random.fork_rng (caller's RNG state restored); rows in order",
    forms=(_CURRENT, _WITH_DONE_FLAG), build=_build)
