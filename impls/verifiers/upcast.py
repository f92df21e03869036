"""Canonical rounds written the way runtimes write them for half-precision models: the probabilities
arrive in the model's dtype (float16, bfloat16), and the verifier upcasts them to float32 once, draws
float32 uniforms and exponentials, and computes ratios, residuals and sums in float32 (vLLM's rejection
sampler and FlashInfer's kernels accumulate in float32).  The upcast is exact, so the round is the
float32 canonical round on the rounded inputs.  :func:`upcast_tree_rrs` is the tree contract's recursive
rejection sampling (:func:`~specproof.impls.verifiers.tree_rrs.tree_rrs`) written the same way.
"""

from __future__ import annotations

import torch

from specproof.impls.contract import check_round
from specproof.impls.kernels.acceptance import accept_product, accept_ratio
from specproof.impls.kernels.sampling import draw_exponential_race, draw_inverse_cdf
from specproof.impls.verifiers.canonical import final_weights, inverse_cdf_round, round_uniforms, sampled_round
from specproof.impls.verifiers.tree_rrs import check_tree_inputs, tree_walk

__all__ = ["upcast_ratio_race", "upcast_product_invcdf", "upcast_tree_rrs"]


def upcast_ratio_race(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q`` and the exponential race, in float32 whatever the inputs' dtype."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return sampled_round(accept_ratio, draw_exponential_race, draft_probs.float(), target_probs.float(),
                         draft_token_ids, generator)


def upcast_product_invcdf(draft_probs, target_probs, draft_token_ids, generator):
    """``u*q < p`` and the inverse-CDF draw, float32 uniforms and cumulative sums."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    draft32, target32 = draft_probs.float(), target_probs.float()
    return inverse_cdf_round(accept_product, draft32, target32, draft_token_ids, round_uniforms(draft32, generator))


def upcast_tree_rrs(parents, draft_probs, target_probs, node_tokens, generator):
    """Recursive rejection sampling over each node's own draft row with float32 uniforms, ratios,
    residuals and cumulative sums whatever the inputs' dtype; ``[B, D+1]`` int64."""
    check_tree_inputs(parents, draft_probs, target_probs, node_tokens, generator)
    return tree_walk(parents, draft_probs.float(), target_probs.float(), node_tokens, generator)
