"""Implementations under test: runtime-style torch verifiers, adapters, and a zoo of known-bad ones.

Entry points: :func:`implementations` (every registered record, optionally filtered) and :func:`get`
(one record by name). Contracts are described in :mod:`specproof.impls.registry`; the batched
layout follows vLLM/FlashInfer: ``draft_probs [B,K,V]``, ``target_probs [B,K+1,V]``,
``draft_token_ids [B,K]`` -> ``emitted [B,K+1]`` int64 padded with ``-1``.

This package never imports ``specproof.harness``: it is the code under test.
"""

from __future__ import annotations

from specproof.impls.kernels.acceptance import accept_log, accept_product, accept_ratio
from specproof.impls.verifiers.block import block_verify, block_verify_uniforms
from specproof.impls.verifiers.canonical import (
    canonical_log_invcdf, canonical_log_multinomial, canonical_log_race, canonical_log_uniforms,
    canonical_product_invcdf, canonical_product_multinomial, canonical_product_race,
    canonical_product_uniforms, canonical_ratio_invcdf, canonical_ratio_multinomial,
    canonical_ratio_race, canonical_ratio_uniforms,
)
from specproof.impls.records import default_registry
from specproof.impls.verifiers.compiled import (
    canonical_log_invcdf_compiled, canonical_log_uniforms_compiled,
    canonical_product_invcdf_compiled, canonical_product_uniforms_compiled,
    canonical_ratio_invcdf_compiled, canonical_ratio_uniforms_compiled,
)
from specproof.impls.verifiers.greedy import greedy_verify
from specproof.impls.verifiers.multidraft import multidraft_rrs
from specproof.impls.processors import MinP, Processors, RepetitionPenalty, Temperature, TopK, TopP, VocabMask
from specproof.impls.registry import IMPLEMENTATION_CONTRACTS, RULES, Implementation, Registry
from specproof.impls.kernels.sampling import draw_exponential_race, draw_inverse_cdf, draw_multinomial
from specproof.impls.adapters.transformers_adapter import transformers_speculative_sampling
from specproof.impls.verifiers.whitebox import WhiteboxStepLaw, step_log, step_product, step_ratio, step_residual_clamped
from specproof.impls import zoo as mutants

__all__ = [
    "implementations", "get", "Implementation", "Registry", "IMPLEMENTATION_CONTRACTS", "RULES",
    "accept_ratio", "accept_product", "accept_log",
    "draw_multinomial", "draw_exponential_race", "draw_inverse_cdf",
    "canonical_ratio_multinomial", "canonical_ratio_race", "canonical_ratio_invcdf",
    "canonical_product_multinomial", "canonical_product_race", "canonical_product_invcdf",
    "canonical_log_multinomial", "canonical_log_race", "canonical_log_invcdf",
    "canonical_ratio_uniforms", "canonical_product_uniforms", "canonical_log_uniforms",
    "canonical_ratio_uniforms_compiled", "canonical_product_uniforms_compiled",
    "canonical_log_uniforms_compiled", "canonical_ratio_invcdf_compiled",
    "canonical_product_invcdf_compiled", "canonical_log_invcdf_compiled",
    "greedy_verify", "block_verify", "block_verify_uniforms", "multidraft_rrs",
    "WhiteboxStepLaw", "step_ratio", "step_product", "step_log", "step_residual_clamped",
    "Processors", "Temperature", "TopK", "TopP", "MinP", "RepetitionPenalty", "VocabMask",
    "transformers_speculative_sampling", "mutants",
]

_REGISTRY = default_registry()


def implementations(*, contract: str | None = None, rule: str | None = None,
                    expected_exact: bool | None = None) -> tuple[Implementation, ...]:
    """Registered records in registration order, optionally filtered by contract, rule, exactness."""
    return _REGISTRY.select(contract=contract, rule=rule, expected_exact=expected_exact)


def get(name: str) -> Implementation:
    """The record called ``name`` (``KeyError`` with close matches if there is none)."""
    return _REGISTRY.get(name)
