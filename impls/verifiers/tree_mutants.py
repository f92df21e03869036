"""Incorrect tree verifiers (the tree zoo): one plausible bug each, in the tree contract.

Each is :func:`~specproof.impls.verifiers.tree_rrs.tree_walk` with one step changed:

* :func:`tree_keep_tried` - after a rejected sibling the residual is left as it was (``r`` keeps the
  already-tried siblings instead of ``norm(max(0, r - q))``): rejected tokens are re-emitted too often;
* :func:`tree_iid_assumed` - every sibling is verified with the first sibling's row, as if siblings
  were i.i.d. when they were drawn without replacement;
* :func:`tree_reversed_siblings` - siblings are tried last index first, while each sibling's row is
  its law *given the siblings before it in index order* (wrong sibling order);
* :func:`tree_accept_ties` - accepts on ``u q(y) <= r(y)``: a draw ``u = 0`` (probability ``2^-24`` per
  float32 draw) accepts a node token of target probability 0.  Its law equals the reference's for
  continuous uniforms, so only the RNG edge injection can see it;
* :func:`tree_target_only_ties` - the target-only walk accepting on ``coin <= prob_acc`` (SGLang's
  ``coin <= prob_acc / threshold_acc`` before its fix): a zero coin accepts a child of target probability 0;
* :func:`tree_repeated_mass` - the target-only walk adding a repeated sibling token's mass again (SGLang's
  kernel, written for distinct top-k siblings): lossy under i.i.d. siblings only;
* :func:`tree_relaxed_thresholds` - the target-only walk with ``threshold_acc = 1/2`` (SGLang's
  ``speculative_accept_threshold_acc``): children accepted twice as often as the target allows;
* :func:`tree_last_index_fallback` - the target-only walk whose correction, when its weights have no
  positive entry (a target row summing below 1 whose support was all tried and rejected), falls to the
  last vocabulary index (the inverse CDF of an all-zero row) instead of ``p``;
* :func:`tree_correction_keeps_tried` - the target-only walk drawing the correction from ``p`` with the
  rejected children's mass left in.

:data:`TREE_ZOO` lists each with the sibling modes it is wrong for; :data:`TREE_EXACT` the canonical tree
rules with the modes they are exact for.
"""

from __future__ import annotations

import torch

from typing import Callable, NamedTuple

from specproof.impls.verifiers.tree_rrs import target_only_walk, tree_rrs, tree_target_only, tree_walk

__all__ = ["tree_keep_tried", "tree_iid_assumed", "tree_reversed_siblings", "tree_accept_ties", "tree_target_only_ties",
           "tree_repeated_mass", "tree_relaxed_thresholds", "tree_last_index_fallback", "tree_correction_keeps_tried",
           "TreeMutant", "TREE_ZOO", "TREE_EXACT"]

ALL_MODES = ("iid", "distinct", "topk")


def tree_keep_tried(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                    node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bug: the residual keeps the already-tried siblings."""
    return tree_walk(parents, draft_probs, target_probs, node_tokens, generator, residual="keep")


def tree_iid_assumed(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bug: siblings treated as i.i.d. (the first sibling's row for all)."""
    return tree_walk(parents, draft_probs, target_probs, node_tokens, generator, rows="first")


def tree_reversed_siblings(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                           node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bug: siblings tried in reverse index order."""
    return tree_walk(parents, draft_probs, target_probs, node_tokens, generator, reverse=True)


def tree_accept_ties(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bug: ``<=`` in the acceptance test (``u = 0`` accepts a token the target rules out)."""
    return tree_walk(parents, draft_probs, target_probs, node_tokens, generator, ties=True)


def _target_only_variant(name: str, doc: str, **options: object) -> Callable:
    """The target-only walk with one step changed (:func:`.tree_rrs.target_only_walk`'s ``options``)."""
    def verify(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
               node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return target_only_walk(parents, draft_probs, target_probs, node_tokens, generator, **options)

    verify.__name__ = verify.__qualname__ = name
    verify.__doc__ = doc
    return verify


tree_target_only_ties = _target_only_variant(
    "tree_target_only_ties", "Bug: ``coin <= prob_acc`` in the target-only walk (a zero coin accepts a "
    "probability-0 child).", ties=True)
tree_repeated_mass = _target_only_variant(
    "tree_repeated_mass", "Bug: a repeated sibling token's target mass is added again (wrong under i.i.d. "
    "siblings).", repeats=True)
tree_relaxed_thresholds = _target_only_variant(
    "tree_relaxed_thresholds", "Bug: accept on ``coin < prob_acc / threshold_acc`` with ``threshold_acc = 1/2``.",
    threshold_acc=0.5)
tree_last_index_fallback = _target_only_variant(
    "tree_last_index_fallback", "Bug: an all-zero correction row falls to the last vocabulary index instead of "
    "``p``.", empty="last")
tree_correction_keeps_tried = _target_only_variant(
    "tree_correction_keeps_tried", "Bug: the correction is drawn from ``p`` with the rejected children's mass "
    "left in.", remove_tried=False)


class TreeMutant(NamedTuple):
    """One tree zoo member: its name, its verifier, the sibling modes it is wrong for, its bug."""

    name: str
    fn: Callable
    wrong_in: tuple[str, ...]
    bug: str


TREE_ZOO = (
    TreeMutant("tree-accept-ties", tree_accept_ties, ALL_MODES, "u q(y) <= r(y): a zero coin accepts p(y) = 0"),
    TreeMutant("tree-target-only-ties", tree_target_only_ties, ALL_MODES,
               "coin <= prob_acc: a zero coin accepts a child of target probability 0"),
    TreeMutant("tree-repeated-mass", tree_repeated_mass, ("iid",), "a repeated sibling token's mass counted twice"),
    TreeMutant("tree-relaxed-thresholds", tree_relaxed_thresholds, ALL_MODES, "threshold_acc = 1/2"),
    TreeMutant("tree-last-index-fallback", tree_last_index_fallback, ALL_MODES,
               "an all-zero correction falls to the last vocabulary index"),
    TreeMutant("tree-correction-keeps-tried", tree_correction_keeps_tried, ALL_MODES,
               "the rejected children's mass is not removed from the correction"),
    TreeMutant("tree-keep-tried", tree_keep_tried, ALL_MODES,
               "recursive rejection sampling whose residual is not updated between siblings"),
    TreeMutant("tree-iid-assumed", tree_iid_assumed, ("distinct",),
               "every sibling verified with the first sibling's row"),
    TreeMutant("tree-reversed-siblings", tree_reversed_siblings, ("distinct",), "siblings tried last index first"),
)

TREE_EXACT: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "tree-rrs": (tree_rrs, ALL_MODES),
    "tree-target-only": (tree_target_only, ALL_MODES),
}
"""The canonical tree rules and the sibling modes each is exact for."""
