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
  continuous uniforms, so only the RNG edge injection can see it.
"""

from __future__ import annotations

import torch

from specproof.impls.verifiers.tree_rrs import tree_walk

__all__ = ["tree_keep_tried", "tree_iid_assumed", "tree_reversed_siblings", "tree_accept_ties"]


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
