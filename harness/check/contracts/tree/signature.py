"""The tree / multi-draft contract (``specproof check TARGET --contract tree``).

Signature of the verifier under test::

    verify(parents, draft_probs, target_probs, node_tokens, generator) -> emitted

* ``parents``      ``[N]`` int64 on the device, shared by every row: ``parents[i]`` is the index of
  node ``i``'s parent, ``-1`` for a child of the root; topological order, ``-1 <= parents[i] < i``.
  Siblings (nodes with one parent) are *tried in increasing index*.
* ``draft_probs``  ``[B, N, V]`` float (the dtype under test): row ``i`` is the law node ``i``'s
  token was drawn from, *conditional on the path to its parent and on its earlier siblings*:
  i.i.d. siblings: the draft law ``q(. | path)`` at the parent (one row repeated per sibling);
  without replacement: ``q`` with the earlier siblings' tokens zeroed, renormalised;
  deterministic siblings (EAGLE / SGLang top-k of the draft): the one-hot law of the node's token.
* ``target_probs`` ``[B, N+1, V]`` float: row ``0`` is the target law ``p(. | context)`` at the
  root, row ``i+1`` the target law after the path root -> node ``i`` (the position of its children).
* ``node_tokens``  ``[B, N]`` int64: the token of node ``i`` in row ``b``.
* ``generator``    a ``torch.Generator`` on the device: the verifier's only source of randomness.
* returns ``emitted [B, D+1]`` int64, ``D`` the depth of the tree (most nodes on a root-to-leaf
  path): the tokens of the accepted nodes along one root-to-node path, then exactly one more token
  (the correction drawn at the first node whose children were all rejected, or the bonus at an
  accepted leaf), padded with ``-1``.

Lossless means ``emitted`` followed by plain target sampling up to ``D+1`` tokens has the target's
law of ``D+1`` tokens (recursive rejection sampling over per-node draft laws is exact when each
node's token is distributed as its row given the earlier siblings: ``proofs.laws.multidraft``).

Checked here (:func:`validate_tree_output`, a violation is a :class:`ContractViolation`, exit 2):
a tensor of shape ``[B, D+1]``, int64, readable on the CPU, ids in ``[-1, V)``, at least one token
per row, no ``-1`` holes.  Not a usage error but a certain finding (:func:`off_tree_rows`): emitted
tokens before the last that do not follow a root-to-node path of the row's tree; an emitted token
of target probability 0 is certain as well (the scenario's law says so, :mod:`.families`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from specproof.harness.check.calls import ContractViolation, validate_output

__all__ = ["ContractViolation", "TREE_SIGNATURE", "tree_depths", "validate_tree_output", "off_tree_rows"]

TREE_SIGNATURE = ("verify(parents [N] int64, draft_probs [B,N,V], target_probs [B,N+1,V], "
                  "node_tokens [B,N] int64, generator) -> emitted [B, D+1] int64 padded with -1")


def tree_depths(parents: Sequence[int]) -> list[int]:
    """Depth of each node (a child of the root has depth 1); raises ValueError on a bad parent list."""
    depths: list[int] = []
    for i, parent in enumerate(parents):
        if not (-1 <= parent < i):
            raise ValueError(f"parents[{i}] = {parent} is not in [-1, {i}) (topological order required)")
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return depths


def validate_tree_output(emitted: Any, batch: int, depth: int, vocab: int, scenario: str) -> torch.Tensor:
    """The output contract: ``[B, D+1]`` int64, ids in ``[-1, V)``, no holes, >= 1 token (the batched
    contract's own check with ``K = D``); returns a CPU copy."""
    return validate_output(emitted, batch, depth, vocab, f"tree {scenario} (D = {depth})")


def off_tree_rows(emitted: torch.Tensor, parents: Sequence[int], node_tokens: torch.Tensor) -> np.ndarray:
    """``[B]`` int: 0 for rows whose tokens before the last follow a root-to-node path of the row's
    tree (``node_tokens [B, N]``, CPU), else the 1-based position of the first token that leaves it.
    Duplicate sibling tokens are allowed: a row is on the tree when *some* node path spells its prefix."""
    n, width = emitted.shape
    parent_t = torch.as_tensor(list(parents), dtype=torch.int64)
    depths = tree_depths(parents)
    lengths = (emitted >= 0).sum(dim=1)
    # reach[:, j]: node j ends a path spelling the row's first depth(j) tokens
    reach = torch.zeros((n, len(parents)), dtype=torch.bool)
    spelled = torch.zeros(n, dtype=torch.int64)  # longest prefix a path spells
    for j, d in enumerate(depths):
        if d > width - 1:
            continue
        above = torch.ones(n, dtype=torch.bool) if parent_t[j] < 0 else reach[:, int(parent_t[j])]
        reach[:, j] = above & (node_tokens[:, j] == emitted[:, d - 1])
        spelled = torch.where(reach[:, j], torch.clamp(spelled, min=d), spelled)
    needed = lengths - 1  # tokens before the last
    return torch.where(spelled >= needed, 0, spelled + 1).numpy()
