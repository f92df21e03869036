"""Registry records of the runtime-layout implementations, each behind its adapter (batched contract).

Every record's ``fn`` is ``get_adapter(name).wrap(layout_fn)``: the same path ``specproof check TARGET
--adapter NAME`` takes, so the report and the zoo measure the adapters too. ``sources`` names the
layout function, its building blocks and the adapter's conversion, so each record hashes differently.

Not registered (each registered batched record costs about a minute of CI in the registry-wide checks
of ``tests/harness/check``), with the reason:

- the transformers-layout functions (:mod:`.transformers`): a Python loop over rows; the registry's
  ``transformers-speculative-sampling`` is the real function through the same row loop;
- the SGLang tree walk (:mod:`.sglang_tree`): the registry has no tree contract;
- :func:`.flashinfer.chain_speculative_sampling_generator`: the 0.1.x record's core behind the other
  signature generation;
- :func:`.vllm_v1.rejection_sample_seeds_ignored`: not a deterministic function of the generator by
  design, which ``tests/impls/test_impls_contract.py`` requires of every batched record.

All of them are tested in ``tests/impls/adapters``.
"""

from __future__ import annotations

from specproof.impls.adapters import flashinfer_adapter, vllm_v0 as v0_adapter, vllm_v1 as v1_adapter
from specproof.impls.adapters.base import derived_seeds
from specproof.impls.kernels.sampling import correction_weights, draw_inverse_cdf, race_winner
from specproof.impls.registry import Implementation
from specproof.impls.runtime_layouts import flashinfer, vllm_v0, vllm_v1
from specproof.proofs.laws.implemented import RULE_OF_FORM

__all__ = ["runtime_layout_records"]

_V1 = (vllm_v1._sample, vllm_v1.request_uniforms, vllm_v1.request_exponentials, vllm_v1._positions,
       race_winner, correction_weights, v1_adapter._build, v1_adapter.request_generators, derived_seeds)
_V0 = (vllm_v0._round, vllm_v0.row_uniforms, vllm_v0.row_exponentials, race_winner, correction_weights,
       v0_adapter._build, v1_adapter.request_generators, derived_seeds)
_FI = (flashinfer._chain, flashinfer._counters, draw_inverse_cdf, correction_weights, flashinfer_adapter._build)


def _record(adapter, suffix, fn, parts, *, rule="canonical", exact=True, description="", bug=None,
            mirrors=None, bug_rule=None):
    name = f"{adapter.name}-layout{suffix}"
    return Implementation(name=name, fn=adapter.wrap(fn), contract="batched", rule=rule, expected_exact=exact,
                          description=description, bug=bug, mirrors=mirrors, bug_rule=bug_rule,
                          sources=(fn, *parts))


def runtime_layout_records() -> list[Implementation]:
    """The canonical rule in the vLLM v1, vLLM v0 and FlashInfer layouts, then their mutants."""
    v1, v0, fi = v1_adapter.ADAPTER, v0_adapter.ADAPTER, flashinfer_adapter.ADAPTER
    product = RULE_OF_FORM["product"]
    return [
        _record(v1, "", vllm_v1.rejection_sample, (vllm_v1._accept_ratio_gt, *_V1),
                description="Canonical round in vLLM v1's rejection_sample layout (float64 per-request "
                            "uniforms, p/q > u, race recovery) through --adapter vllm-v1."),
        _record(v0, "", vllm_v0.forward, (vllm_v0._accept_strict, vllm_v0._canonical_residual, *_V0),
                description="Canonical round in vLLM v0's RejectionSampler.forward layout (seeded_seqs, "
                            "u < p/q, residual race) through --adapter vllm-v0."),
        _record(fi, "", flashinfer.chain_speculative_sampling, (flashinfer._unique_needle, *_FI), rule=product,
                description="Canonical round in FlashInfer 0.1.x's chain_speculative_sampling layout "
                            "(caller uniforms, u*p_draft < q_target, inverse CDF) through --adapter flashinfer."),
        _record(v1, "-float32-ge", vllm_v1.rejection_sample_float32_ge, (vllm_v1._accept_ratio_ge, *_V1), exact=False,
                bug_rule="canonical-le",
                description="vLLM v1 layout with float32 uniforms and p/q >= u.",
                bug="u == 0 (2^-24 per float32 draw) accepts a draft with p(x) = 0",
                mirrors="vLLM v1 rejection_sample before its uniforms moved to float64 (notes/runtimes.md)"),
        _record(v0, "-clamped-residual", vllm_v0.forward_clamped_residual, (vllm_v0._accept_v0, vllm_v0._clamped_residual, *_V0),
                exact=False, description="vLLM v0 layout with its shipped clamp(p - q, min=tiny) residual.",
                bug="every token gets residual mass tiny/sum; an all-zero residual becomes uniform over V",
                mirrors="vLLM v0 rejection sampler (vllm-project/vllm#2336)"),
        _record(fi, "-reused-uniform", flashinfer.chain_speculative_sampling_reused_uniform, (flashinfer._reused_needle, *_FI),
                rule=product, exact=False,
                description="FlashInfer layout whose correction reuses the rejected test's uniform.",
                bug="the correction's needle is u_n, conditioned to u_n >= q/p: corrections skew to late ids",
                mirrors="model of the uniform reuse fixed by flashinfer-ai/flashinfer#424"),
        _record(fi, "-empty-residual-last", flashinfer.chain_speculative_sampling_empty_residual_last,
                (flashinfer._unique_needle, flashinfer._last_id, *_FI), rule=product, exact=False,
                description="FlashInfer layout emitting id V - 1 for an all-zero residual.",
                bug="an all-zero residual (p <= q everywhere) emits id V - 1, which may have p = 0",
                mirrors="FlashInfer ChainSpeculativeSampling kernel (sampled_id starts at d - 1)"),
    ]
