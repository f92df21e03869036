"""The default registry: every implementation under test, correct ones first, then the zoo."""

from __future__ import annotations

from specproof.impls.kernels import rounds as _round
from specproof.impls.verifiers import block
from specproof.impls.verifiers import canonical
from specproof.impls.verifiers import compiled
from specproof.impls.verifiers import greedy
from specproof.impls.verifiers import multidraft
from specproof.impls import zoo as mutants
from specproof.impls.verifiers import whitebox
from specproof.impls.kernels.acceptance import ACCEPTANCE_TESTS
from specproof.impls.registry import Implementation, Registry
from specproof.impls.sampler_probe import MULTINOMIAL_FLOAT16_DEFECT
from specproof.impls.kernels.sampling import (
    correction_weights, draw_exponential_race, draw_inverse_cdf, draw_multinomial, race_winner,
)
from specproof.impls.adapters.transformers_adapter import (
    probs_to_logits, rows_through, transformers_speculative_sampling,
)
from specproof.impls.adapters.transformers_release import accepts_ratio_ties
from specproof.impls.runtime_layouts.records import runtime_layout_records
from specproof.proofs.laws.implemented import RULE_OF_FORM

__all__ = ["default_registry"]

_ROUND_PARTS = (_round.drafted_probs, _round.rows_at, _round.leading_accepts,
                _round.assemble_emitted, canonical.final_weights, correction_weights)
_DRAWS = {"multinomial": draw_multinomial, "race": draw_exponential_race}
_ACCEPTANCE_TEXT = {"ratio": "u < p/q", "product": "u*q < p", "log": "log u + log q < log p"}
_DRAW_TEXT = {"multinomial": "torch.multinomial", "race": "exponential race argmax(w/E)",
              "invcdf": "inverse CDF (cumsum + searchsorted) on injected uniforms"}


def _canonical_records() -> list[Implementation]:
    records = []
    for form, acceptance in ACCEPTANCE_TESTS.items():
        records.append(Implementation(
            name=f"canonical-{form}-uniforms", fn=getattr(canonical, f"canonical_{form}_uniforms"),
            contract="uniforms", rule=RULE_OF_FORM[form], expected_exact=True,
            description=f"Canonical round, acceptance {_ACCEPTANCE_TEXT[form]}, final draw by "
                        f"{_DRAW_TEXT['invcdf']}; uniforms [B, K+1] in the dtype under test.",
            sources=(canonical.inverse_cdf_round, acceptance, draw_inverse_cdf, *_ROUND_PARTS)))
        for draw in ("multinomial", "race", "invcdf"):
            name = f"canonical-{form}-{draw}"
            if draw == "invcdf":
                parts = (canonical.inverse_cdf_round, canonical.round_uniforms, draw_inverse_cdf)
            else:
                parts = (canonical.sampled_round, _DRAWS[draw], race_winner)
            records.append(Implementation(
                name=name, fn=getattr(canonical, name.replace("-", "_")), contract="batched",
                rule=RULE_OF_FORM[form], expected_exact=True,
                description=f"Canonical round, acceptance {_ACCEPTANCE_TEXT[form]}, final draw by "
                            f"{_DRAW_TEXT[draw]}.",
                uniforms_core=f"canonical-{form}-uniforms" if draw == "invcdf" else None,
                known_defects=(("cpu", "float16", MULTINOMIAL_FLOAT16_DEFECT),) if draw == "multinomial" else (),
                sources=(*parts, acceptance, *_ROUND_PARTS)))
    for form, acceptance in ACCEPTANCE_TESTS.items():
        core = getattr(compiled, f"_{form}_core")
        records.append(Implementation(
            name=f"canonical-{form}-uniforms-compiled",
            fn=getattr(compiled, f"canonical_{form}_uniforms_compiled"), contract="uniforms",
            rule=RULE_OF_FORM[form], expected_exact=True, compiled=True,
            description=f"torch.compile (inductor) of canonical-{form}-uniforms; float16/bfloat16 "
                        f"evaluate the acceptance test in float32 (see impls/compiled.py).",
            sources=(core, canonical.inverse_cdf_round, acceptance, draw_inverse_cdf,
                     *_ROUND_PARTS)))
        records.append(Implementation(
            name=f"canonical-{form}-invcdf-compiled",
            fn=getattr(compiled, f"canonical_{form}_invcdf_compiled"), contract="batched",
            rule=RULE_OF_FORM[form], expected_exact=True, compiled=True,
            uniforms_core=f"canonical-{form}-uniforms-compiled",
            description=f"Eager torch.rand uniforms, then the compiled canonical-{form} core.",
            sources=(core, canonical.round_uniforms, canonical.inverse_cdf_round, acceptance,
                     draw_inverse_cdf, *_ROUND_PARTS)))
    return records


def _other_rules() -> list[Implementation]:
    return [
        Implementation(
            name="greedy", fn=greedy.greedy_verify, contract="batched", rule="greedy",
            expected_exact=True,
            description="Accept iff x_i == argmax p_i; emit argmax at the first mismatch or as bonus.",
            sources=_ROUND_PARTS[:4]),
        Implementation(
            name="block-uniforms", fn=block.block_verify_uniforms, contract="uniforms", rule="block",
            expected_exact=True,
            description="Block verification (Sun et al. 2024), no early break, injected uniforms.",
            sources=(block._block_round, block.block_weights, draw_inverse_cdf, *_ROUND_PARTS[:4])),
        Implementation(
            name="block", fn=block.block_verify, contract="batched", rule="block",
            expected_exact=True, uniforms_core="block-uniforms",
            description="Block verification; torch.rand uniforms, then the uniform core.",
            sources=(block._block_round, block.block_weights, canonical.round_uniforms,
                     draw_inverse_cdf, *_ROUND_PARTS[:4])),
        Implementation(
            name="multidraft-rrs", fn=multidraft.multidraft_rrs, contract="multidraft",
            rule="multidraft-rrs", expected_exact=True,
            description="SpecInfer recursive rejection sampling over n i.i.d. siblings of one "
                        "position; draft_probs [B,V], target_probs [B,V], ids [B,n] -> [B].",
            sources=(draw_inverse_cdf,)),
    ]


def _whitebox_records() -> list[Implementation]:
    records = [
        Implementation(
            name=f"whitebox-{form}", fn=getattr(whitebox, f"step_{form}"), contract="whitebox",
            rule=RULE_OF_FORM[form], expected_exact=True,
            description=f"Acceptance, residual and implied output law as computed by the "
                        f"{_ACCEPTANCE_TEXT[form]} form.",
            sources=(whitebox.normalised_residual, whitebox._assemble))
        for form in ("ratio", "product", "log")
    ]
    records.append(Implementation(
        name="whitebox-residual-clamped", fn=whitebox.step_residual_clamped, contract="whitebox",
        rule="canonical", expected_exact=False,
        description="Implied law of the vLLM v0 residual clamp(p - q, min=tiny) renormalised.",
        bug="every token gets residual mass tiny/sum; p <= q everywhere gives a uniform residual",
        mirrors="vLLM v0 rejection sampler (vllm-project/vllm#2336), notes/runtimes.md",
        sources=(whitebox._assemble,)))
    return records


def _batched_mutant(name, fn, bug, mirrors, *sources, bug_rule=None) -> Implementation:
    return Implementation(name=name, fn=fn, contract="batched", rule="canonical",
                          expected_exact=False, description=(fn.__doc__ or "").strip().split("\n")[0],
                          bug=bug, mirrors=mirrors, bug_rule=bug_rule, sources=sources)


def _zoo_records() -> list[Implementation]:
    prefix = (mutants._ratio_prefix, *_ROUND_PARTS)
    processed = (mutants._processed_round, mutants._ratio_prefix, *_ROUND_PARTS)
    return [
        _batched_mutant(
            "resample-from-target", mutants.resample_from_target,
            "after a rejection the correction is drawn from p instead of norm(max(0, p - q))",
            "SafeAILab/EAGLE#329; ShopeeLLM/Spec-RL#14", *prefix, bug_rule="resample-from-target"),
        _batched_mutant(
            "top1-acceptance", mutants.top1_acceptance,
            "accept iff the draft is the target's top-1, else resample from p",
            "threshold/top-k acceptance samplers; notes/algorithms.md section 6", *_ROUND_PARTS,
            bug_rule="top-k-accept"),
        _batched_mutant(
            "greedy-while-sampling", mutants.greedy_while_sampling,
            "greedy acceptance (x == argmax p) in a sampling round, corrections sampled from p",
            "z-lab/dflash#74; jaymody/speculative-sampling#3", *_ROUND_PARTS),
        _batched_mutant(
            "continue-after-rejection", mutants.continue_after_rejection,
            "prefix length = number of accepted drafts (accepted.sum()), so drafts after a "
            "rejection are emitted", "vllm-project/vllm#2658 and #10604 (accepted.sum() vs the "
            "accepted prefix, there in counters)", *_ROUND_PARTS),
        Implementation(
            name="le-ratio-uniforms", fn=mutants.le_ratio_uniforms, contract="uniforms",
            rule="canonical", expected_exact=False, bug_rule="canonical-le",
            description="Acceptance u <= p/q with injected uniforms.",
            bug="u == 0 accepts a draft with p(x) = 0",
            mirrors="transformers _speculative_sampling before 5.25.0 (r <= p/q); vLLM v1 before float64 "
                    "uniforms; vllm-project/vllm-ascend#13766 (u pinned to 0 accepted every draft)",
            sources=(mutants.accept_ratio_le, canonical.inverse_cdf_round, draw_inverse_cdf,
                     *_ROUND_PARTS)),
        Implementation(
            name="le-ratio-invcdf", fn=mutants.le_ratio_invcdf, contract="batched",
            rule="canonical", expected_exact=False, uniforms_core="le-ratio-uniforms",
            bug_rule="canonical-le",
            description="Acceptance u <= p/q; torch.rand uniforms, then the uniform core.",
            bug="u == 0 accepts a draft with p(x) = 0 (CPU torch.rand: P(u == 0) = 2^-24 float32, "
                "about 2^-12 float16 and 2^-9 bfloat16, where values rounding to 1 wrap to 0)",
            mirrors="transformers _speculative_sampling before 5.25.0 (r <= p/q); vllm-project/vllm-ascend#13766",
            sources=(mutants.accept_ratio_le, canonical.inverse_cdf_round,
                     canonical.round_uniforms, draw_inverse_cdf, *_ROUND_PARTS)),
        _batched_mutant(
            "residual-clamped-tiny", mutants.residual_clamped_tiny,
            "residual clamp(p - q, min=tiny) renormalised: p = 0 tokens get mass, an all-zero "
            "residual becomes uniform over the vocabulary",
            "vLLM v0 rejection sampler (vllm-project/vllm#2336), notes/runtimes.md", *prefix),
        _batched_mutant(
            "stale-residual-buffer", mutants.stale_residual_buffer,
            "residual at position n uses the draft row of position n-1 (zeros at n = 0), a "
            "deterministic model of an uninitialised empty_like buffer",
            "vllm-project/vllm#6034 (torch.empty uniforms filled only for seeded rows); "
            "NVIDIA/TensorRT-LLM#15775 review (stale per-slot draft probs reach the kernel)",
            *prefix),
        _batched_mutant(
            "target-only-temperature", mutants.target_only_temperature,
            "temperature 0.7 applied to the target rows only: emits the tempered target",
            "sgl-project/sglang#10617 (sampling params not applied on every spec-decode path); "
            "notes/runtimes.md (processor applied on one side only)",
            mutants._target_only_processed, *processed),
        _batched_mutant(
            "min-p-bonus-only", mutants.min_p_bonus_only,
            "min-p 0.3 applied to the bonus row only, not to verified positions",
            "vllm-project/vllm#42744 (min_p/logit_bias honoured only for the bonus token)",
            mutants._bonus_only_processed, *processed),
        _batched_mutant(
            "draft-top-k-in-verifier", mutants.draft_top_k_in_verifier,
            "top-2 applied to q inside the verifier while drafts were drawn from the q passed in",
            "huggingface/transformers#47932 (q reported raw vs processed, TV up to 0.31); "
            "deepseek-ai/DeepSpec#31 (drafts sampled from another q than verified)",
            mutants._draft_processed_in_verifier, *processed),
        _batched_mutant(
            "bonus-from-wrong-row", mutants.bonus_from_wrong_row,
            "the bonus token is drawn from target row K-1 instead of row K",
            "bonus-position confusion discussed in vllm-project/vllm#8320", *prefix),
        _batched_mutant(
            "target-rows-shifted", mutants.target_rows_shifted,
            "off-by-one: draft i is tested and corrected against target row i+1 (prefix-dependent, "
            "invisible to context-free tests)",
            "ohdearquant/lattice#243 (draft verified against the logits one position later)",
            *prefix),
        _transformers_record(accepts_ratio_ties()),
    ]


def _transformers_record(ties: bool) -> Implementation:
    """transformers' own function: a zoo member (``r <= p/q``) before release 5.25.0, exact from it."""
    return Implementation(
        name="transformers-speculative-sampling", fn=transformers_speculative_sampling,
        contract="batched", rule="canonical", expected_exact=not ties, needs_extra="transformers",
        bug_rule="canonical-le" if ties else None,
        description="Hugging Face transformers' _speculative_sampling per row, fed log p, "
                    "global RNG seeded from the generator inside fork_rng (installed release: "
                    + ("before 5.25.0, r <= p/q)." if ties else "5.25.0 or later, r < p/q)."),
        bug="acceptance r <= p/q (transformers before 5.25.0): r == 0 accepts a draft with p(x) = 0 "
            "(2^-24 per test in float32 on CPU); an all-zero residual divides by zero and raises"
            if ties else None,
        mirrors="transformers.generation.utils._speculative_sampling itself",
        sources=(probs_to_logits, rows_through))


def default_registry() -> Registry:
    """A fresh registry holding every implementation shipped in :mod:`specproof.impls`."""
    return Registry([*_canonical_records(), *_other_rules(), *_whitebox_records(), *_zoo_records(),
                     *runtime_layout_records()])
