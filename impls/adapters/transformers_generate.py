"""Adapter: Hugging Face transformers' real assisted generation behind the ``generate`` contract.

``transformers_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)`` runs, for
each row of ``prompt_ids [B, L]``::

    target.generate(row, assistant_model=draft, do_sample=True, temperature=T, top_k=k or 0,
                    top_p=p or 1.0, min_p=m, max_new_tokens=N, eos_token_id=None, ...)

with transformers' own candidate generator (``AssistedCandidateGenerator``), logits processors and
``_speculative_sampling``, and returns the ``N`` new tokens ``[B, N]`` int64.  ``target`` and ``draft``
are ``transformers.PreTrainedModel`` causal LMs (the harness's ``models="transformers"``); ``sampling``
is any object with ``temperature``, ``top_k``, ``top_p``, ``min_p`` (``None`` when off): the harness is
never imported.

Quirks handled (transformers 5.x):

* "off": transformers' defaults are ``top_k=50``, ``top_p=1.0``, so off is passed as ``top_k=0`` and
  ``top_p=1.0``; ``min_p=None`` adds no processor; ``temperature=1.0`` adds none either.
* ``eos_token_id=None`` so no row stops early (``min_new_tokens`` is NOT passed: it makes the drafter,
  and only the drafter, mask its config's EOS token with ``MinNewTokensLengthLogitsProcessor``);
  ``pad_token_id`` from the target's config (silences the open-end warning); an all-ones
  ``attention_mask`` (no padding).  transformers drops an all-ones mask (``None``) before it builds the
  candidate generator, and the assistant's ``generate`` then infers its own mask from
  ``pad_token_id``: a prompt token equal to the pad id is masked for the drafter but not for the
  target (a drafter-context mismatch; lossless, since ``q`` stays the law the drafts were sampled from).
* batch size 1: assisted generation refuses ``B > 1``, so rows run one after the other, with one
  intra-op thread during the call (restored after; the order of a sum may change, which the harness's
  tolerance covers: any order).
* randomness: transformers draws from the GLOBAL RNG (``torch.multinomial`` in the drafter's sampling,
  ``rand_like`` and ``multinomial`` in ``_speculative_sampling``).  Per call one 63-bit seed is drawn from
  ``generator``; inside ``torch.random.fork_rng`` the default generators of the CPU and of the prompt's
  device are seeded with it and the rows run in order.  The output is a deterministic function of
  ``generator``'s state and the caller's global RNG is restored.
* draft length: the assistant's ``generation_config`` is read (``num_assistant_tokens``, default 20,
  schedule ``"constant"``; ``assistant_confidence_threshold``, default 0.4: drafting stops after a draft
  whose processed draft probability is below it).  With ``L + N`` as ``max_length`` a round drafts
  ``K = min(20, L + N - cur_len - 1)`` tokens at most, fewer when the confidence stop fires.
  ``num_assistant_tokens`` or ``assistant_confidence_threshold`` passed to ``target.generate`` are
  ignored (measured: K per round 1..7 at N = 8 either way); :func:`make_transformers_generate` sets them
  on the assistant's config for the call (restored afterwards).  The ``"heuristic"`` schedule would
  carry ``num_assistant_tokens`` from one call to the next (transformers writes it back to the
  assistant's config): not used by default.

Kept as they are (what specproof measures; ``harness.check.pipeline_transformers_probe``): the drafter
applies the processors twice (its ``generate`` gets the target's processor list and rebuilds the
warpers from the copied config: drafts follow ``l / T^2``, a twice-applied top-p), lossless because
the ``q`` handed to ``_speculative_sampling`` is bit for bit the law the drafts were sampled from; and,
in releases before 5.25.0 (5.25.0 tests ``r < p/q``), ``r <= p/q`` accepts a draft of processed-target
probability 0 when ``r`` is exactly 0 (``2^-24`` per test on CPU float32), which RNG edge injection
turns into a certain finding.

Requires the optional dependency: ``pip install specproof[transformers]``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from specproof.impls.adapters.transformers_adapter import _seed_default_generators

__all__ = ["transformers_generate", "make_transformers_generate", "generation_kwargs"]

_SEED_HIGH = 2**63 - 1


def generation_kwargs(sampling: Any) -> dict[str, Any]:
    """transformers' spelling of ``sampling`` (off: ``top_k=0``, ``top_p=1.0``, ``min_p=None``)."""
    return {
        "do_sample": True,
        "temperature": float(sampling.temperature),
        "top_k": 0 if sampling.top_k is None else int(sampling.top_k),
        "top_p": 1.0 if sampling.top_p is None else float(sampling.top_p),
        "min_p": None if sampling.min_p is None else float(sampling.min_p),
    }


def make_transformers_generate(num_assistant_tokens: int | None = None,
                               confidence_threshold: float | None = None) -> Callable[..., torch.Tensor]:
    """The contract function; ``num_assistant_tokens`` / ``confidence_threshold`` (``0`` turns the
    confidence stop off) override the assistant's generation config during each call."""

    def generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        batch, length = prompt_ids.shape
        device = prompt_ids.device
        seed = int(torch.randint(0, _SEED_HIGH, (1,), generator=generator, device=device))
        kwargs = generation_kwargs(sampling)
        out = torch.empty((batch, max_new_tokens), dtype=torch.int64, device=device)
        config = draft.generation_config
        saved = (config.num_assistant_tokens, config.assistant_confidence_threshold)
        if num_assistant_tokens is not None:
            config.num_assistant_tokens = int(num_assistant_tokens)
        if confidence_threshold is not None:
            config.assistant_confidence_threshold = float(confidence_threshold)
        fork_devices = [device] if device.type != "cpu" else []
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny tensors: intra-op threads only contend (5x slower on 2 busy cores)
        try:
            with torch.random.fork_rng(devices=fork_devices, device_type=device.type), torch.no_grad():
                _seed_default_generators(device, seed)
                for row in range(batch):
                    ids = prompt_ids[row:row + 1]
                    sequences = target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=draft,
                                                max_new_tokens=max_new_tokens, eos_token_id=None, pad_token_id=target.config.pad_token_id,
                                                **kwargs)
                    out[row] = sequences[0, length:length + max_new_tokens]
        finally:
            config.num_assistant_tokens, config.assistant_confidence_threshold = saved
            torch.set_num_threads(threads)
        return out

    generate.__name__ = "transformers_generate" if num_assistant_tokens is None and confidence_threshold is None \
        else f"transformers_generate_k{num_assistant_tokens}_c{confidence_threshold}"
    return generate


transformers_generate = make_transformers_generate()
