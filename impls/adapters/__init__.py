"""Adapters that put other runtimes' verifiers behind specproof's contracts (``--adapter NAME``).

``get_adapter(name).wrap(fn)`` checks ``fn``'s signature against the runtime's and returns a function in
the adapter's contract (``.contract``: ``"batched"`` or ``"tree"``); a mismatch raises
``SpecproofInputError("--adapter", ...)`` (exit 2). Each adapter documents the runtime version range it
follows, which side its letters mean, and how the harness generator becomes the runtime's randomness
(``.runtime``, ``.randomness``; the module docstrings give the full conversion):

- ``vllm-v1``: vLLM v1 ``rejection_sample`` (:mod:`.vllm_v1`), per-request generators; target probabilities
  (up to 0.15) or target logits (0.16 to 0.33; 0.34 dropped it);
- ``vllm-mrv2``: vLLM's model runner V2 ``rejection_sample`` (:mod:`.vllm_mrv2`), one seed per request;
- ``vllm-v0``: vLLM v0 ``RejectionSampler.forward`` (:mod:`.vllm_v0`), ``seeded_seqs``;
- ``flashinfer``: FlashInfer ``chain_speculative_sampling`` (:mod:`.flashinfer_adapter`), caller-made
  uniforms (0.1.x) or a generator (0.2.x+);
- ``transformers``: transformers ``_speculative_sampling`` (:mod:`.transformers_adapter`), one row at a
  time on the global RNG seeded inside ``fork_rng``;
- ``sglang-chain``: SGLang's Triton chain kernels ``chain_speculative_sampling_triton``, its block variant
  and its logits entry (:mod:`.sglang_chain`), caller coins;
- ``sglang-tree``: SGLang ``tree_speculative_sampling_target_only`` (:mod:`.sglang_tree`), tree contract.

Each is tested without the runtime against the canonical rule written in that runtime's layout
(:mod:`specproof.impls.runtime_layouts`).
"""

from __future__ import annotations

import difflib

from specproof.impls.adapters.base import Adapter, SignatureForm
from specproof.errors import SpecproofInputError

__all__ = ["Adapter", "SignatureForm", "ADAPTER_NAMES", "get_adapter", "adapters"]

ADAPTER_NAMES = ("vllm-v1", "vllm-v0", "vllm-mrv2", "flashinfer", "transformers", "sglang-chain", "sglang-tree")


def adapters() -> dict[str, Adapter]:
    """Every adapter by name, in :data:`ADAPTER_NAMES` order."""
    from specproof.impls.adapters import (flashinfer_adapter, sglang_chain, sglang_tree, transformers_adapter, vllm_mrv2,
                                          vllm_v0, vllm_v1)

    found = {module.ADAPTER.name: module.ADAPTER
             for module in (vllm_v1, vllm_v0, vllm_mrv2, flashinfer_adapter, transformers_adapter, sglang_chain,
                            sglang_tree)}
    return {name: found[name] for name in ADAPTER_NAMES}


def get_adapter(name: str) -> Adapter:
    """The adapter called ``name``; ``SpecproofInputError("--adapter", ...)`` listing the names otherwise."""
    table = adapters()
    if name not in table:
        close = difflib.get_close_matches(str(name), ADAPTER_NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SpecproofInputError("--adapter", f"{name!r} is not an adapter{hint}",
                                  f"use one of {', '.join(ADAPTER_NAMES)}")
    return table[name]
