"""Tree verification in the tree contract: recursive rejection sampling and a target-only walk.

Layout (``specproof check --contract tree``): ``parents [N]`` int64 (``-1``: child of the root,
parents first), ``draft_probs [B, N, V]`` (row ``i``: the law node ``i``'s token was drawn from, given
its parent's path and its earlier siblings), ``target_probs [B, N+1, V]`` (row 0 the root, row
``i+1`` after node ``i``), ``node_tokens [B, N]`` int64, ``generator``; returns ``emitted [B, D+1]``
int64: the accepted path's tokens, then one correction or bonus token, padded with ``-1``.

:func:`tree_rrs` (SpecInfer's multi-draft rule on a tree): at a node with path ``s``, ``r = p(. | s)``;
its children are tried in increasing index, child ``c`` with token ``y`` and row ``w = draft_probs[c]``
is accepted iff ``u_c w(y) < r(y)`` (probability ``min(1, r(y)/w(y))``), and the walk moves to ``c``;
otherwise ``r <- norm(max(0, r - w))``.  When every child is rejected (or at a leaf) one token is drawn
from ``r`` by inverse CDF.  Exact for every sibling scheme whose rows are the true conditional laws
(i.i.d., without replacement, deterministic one-hot).  A residual with no positive entry (only
through rounding) falls back to ``p``.

:func:`tree_target_only` (SGLang's ``tree_speculative_sampling_target_only`` with thresholds 1): one
coin ``u`` per node; child ``j`` is accepted iff ``u < sum_{i <= j} p(y_i)`` over the *distinct* tokens
tried so far (a repeated token adds no mass); if none is, the correction is drawn from ``p`` with the
tried tokens zeroed.  It reads no draft probability and is exact for any tree and any way the siblings
were drawn (the accepted token is a draw from ``p`` whatever the sibling set).  A walk that adds a
repeated token's mass twice (SGLang's kernel, written for distinct top-k siblings) emits that token
with up to twice its probability: lossy whenever i.i.d. siblings repeat a token.

Randomness: ``torch.rand((B, N + 2))`` in the dtype under test: column ``i`` is node ``i``'s coin
(:func:`tree_rrs`: the acceptance test of node ``i``; :func:`tree_target_only`: column ``c + 1`` is the
coin at node ``c``, column 0 the root's), the last column drives the final draw.
"""

from __future__ import annotations

import torch

from specproof.impls.contract import SUPPORTED_DTYPES
from specproof.impls.kernels.sampling import draw_inverse_cdf

__all__ = ["tree_rrs", "tree_target_only", "tree_walk", "target_only_walk", "check_tree_inputs", "children_table"]


def check_tree_inputs(parents: object, draft_probs: object, target_probs: object, node_tokens: object,
                      generator: object) -> tuple[int, int, int]:
    """Validate the tree contract's inputs; returns ``(B, N, V)``."""
    for name, value in (("parents", parents), ("draft_probs", draft_probs), ("target_probs", target_probs),
                        ("node_tokens", node_tokens)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor; got {type(value).__name__}.")
    if draft_probs.dim() != 3:
        raise ValueError(f"draft_probs must have shape [B, N, V]; got {list(draft_probs.shape)}.")
    batch, nodes, vocab = draft_probs.shape
    for name, value, shape in (("parents", parents, (nodes,)), ("target_probs", target_probs, (batch, nodes + 1, vocab)),
                               ("node_tokens", node_tokens, (batch, nodes))):
        if tuple(value.shape) != shape:
            raise ValueError(f"{name} must have shape {list(shape)}; got {list(value.shape)}.")
        if value.device != draft_probs.device:
            raise ValueError(f"{name} is on {value.device} but draft_probs is on {draft_probs.device}.")
    for name, value in (("draft_probs", draft_probs), ("target_probs", target_probs)):
        if value.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} has dtype {value.dtype}; use a floating dtype.")
    for name, value in (("parents", parents), ("node_tokens", node_tokens)):
        if value.dtype != torch.int64:
            raise TypeError(f"{name} has dtype {value.dtype}; it must be int64.")
    if not isinstance(generator, torch.Generator) or generator.device.type != draft_probs.device.type:
        raise TypeError(f"generator must be a torch.Generator on {draft_probs.device.type}.")
    order = parents.tolist()
    if any(not -1 <= p < i for i, p in enumerate(order)):
        raise ValueError("parents must list each node after its parent (-1 <= parents[i] < i).")
    if nodes and bool(((node_tokens < 0) | (node_tokens >= vocab)).any()):
        raise ValueError(f"node_tokens must be ids in [0, {vocab}).")
    return batch, nodes, vocab


def children_table(parents: list[int], reverse: bool = False) -> tuple[torch.Tensor, int]:
    """``[N+1, M]`` child indices of the root (row 0) and of each node (row ``i+1``), in the order
    they are tried, padded with ``-1``; and the depth ``D``."""
    kids: list[list[int]] = [[] for _ in range(len(parents) + 1)]
    depth = [0] * (len(parents) + 1)
    for i, p in enumerate(parents):
        kids[p + 1].append(i)
        depth[i + 1] = depth[p + 1] + 1
    if reverse:
        kids = [k[::-1] for k in kids]
    width = max(1, max(len(k) for k in kids))
    table = torch.full((len(kids), width), -1, dtype=torch.int64)
    for row, k in enumerate(kids):
        table[row, :len(k)] = torch.tensor(k, dtype=torch.int64)
    return table, max(depth)


def _start(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor, node_tokens: torch.Tensor,
           generator: torch.Generator, reverse: bool) -> tuple:
    """Checked sizes, the children table on the device, the depth, the uniforms ``[B, N+2]`` and the
    walk's state: ``emitted`` (all ``-1``), the current node per row (``-1``: root), rows still walking."""
    batch, nodes, vocab = check_tree_inputs(parents, draft_probs, target_probs, node_tokens, generator)
    device = draft_probs.device
    table, depth = children_table(parents.tolist(), reverse)
    u = torch.rand((batch, nodes + 2), dtype=draft_probs.dtype, device=device, generator=generator)
    emitted = torch.full((batch, depth + 1), -1, dtype=torch.int64, device=device)
    cur = torch.full((batch,), -1, dtype=torch.int64, device=device)
    active = torch.ones(batch, dtype=torch.bool, device=device)
    return (batch, nodes, vocab), table.to(device), depth, u, emitted, cur, active


def _slot(table: torch.Tensor, cur: torch.Tensor, slot: int, node_tokens: torch.Tensor) -> tuple:
    """Per row: whether the current node has a child in ``slot``, its index (0 if none), its token."""
    child = table[cur + 1, slot]
    c = child.clamp(min=0)
    return child >= 0, c, node_tokens.gather(1, c.unsqueeze(1)).squeeze(1)


def tree_walk(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
              node_tokens: torch.Tensor, generator: torch.Generator, *, reverse: bool = False,
              rows: str = "own", residual: str = "subtract", ties: bool = False) -> torch.Tensor:
    """Recursive rejection sampling down the tree (module docstring); the options select a variant:
    ``reverse`` tries siblings last index first, ``rows`` is the row each sibling is verified with
    (``"own"``, ``"first"``: the first sibling's), ``residual`` ``"subtract"`` or ``"keep"``, ``ties``
    accepts on ``u w(y) <= r(y)`` (wrong only when ``u = 0`` meets ``r(y) = 0``)."""
    (batch, nodes, vocab), table, depth, u, emitted, cur, active = _start(
        parents, draft_probs, target_probs, node_tokens, generator, reverse)
    device = draft_probs.device
    first = children_table(parents.tolist())[0][:, 0].to(device)
    arange = torch.arange(batch, device=device)
    for level in range(depth + 1):
        p = target_probs[arange, cur + 1]
        r = p
        moved = torch.zeros(batch, dtype=torch.bool, device=device)
        nxt = cur
        for slot in range(table.shape[1]):
            exists, c, y = _slot(table, cur, slot, node_tokens)
            tried = active & ~moved & exists
            w = draft_probs[arange, c] if rows == "own" else draft_probs[arange, first[cur + 1].clamp(min=0)]
            r_y = r.gather(-1, y.unsqueeze(-1)).squeeze(-1)
            w_y = w.gather(-1, y.unsqueeze(-1)).squeeze(-1)
            test = u[arange, c] * w_y
            accept = tried & (w_y > 0) & ((test <= r_y) if ties else (test < r_y))
            emitted[:, level] = torch.where(accept, y, emitted[:, level])
            nxt = torch.where(accept, c, nxt)
            moved = moved | accept
            if residual == "subtract":
                rest = torch.relu(r - w)
                mass = rest.sum(dim=-1, keepdim=True)
                update = torch.where(mass > 0, rest / torch.where(mass > 0, mass, 1), p)
                r = torch.where((tried & ~accept).unsqueeze(-1), update, r)
        finishing = active & ~moved
        final = draw_inverse_cdf(r, u[:, nodes + 1])
        emitted[:, level] = torch.where(finishing, final, emitted[:, level])
        active, cur = moved, nxt
    return emitted


def tree_rrs(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
             node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Recursive rejection sampling over each node's own draft row; ``[B, D+1]`` int64."""
    return tree_walk(parents, draft_probs, target_probs, node_tokens, generator)


def tree_target_only(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     node_tokens: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """SGLang-style target-only walk: one coin per node against cumulative target mass; ``[B, D+1]``."""
    return target_only_walk(parents, draft_probs, target_probs, node_tokens, generator)


def target_only_walk(parents: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     node_tokens: torch.Tensor, generator: torch.Generator, *, ties: bool = False,
                     repeats: bool = False, threshold_acc: float = 1.0, remove_tried: bool = True,
                     empty: str = "target") -> torch.Tensor:
    """The target-only walk (module docstring); the options select a variant: ``ties`` accepts on
    ``coin <= mass`` (a zero coin accepts a child of target probability 0), ``repeats`` adds a repeated
    token's mass again (SGLang's kernel, written for distinct siblings), ``threshold_acc < 1`` accepts on
    ``coin < mass / threshold_acc`` (SGLang's relaxed threshold), ``remove_tried=False`` draws the
    correction from ``p`` with the rejected children left in, ``empty="last"`` keeps an all-zero
    correction row (the inverse CDF then returns the last vocabulary index) instead of falling back to ``p``."""
    (batch, nodes, vocab), table, depth, u, emitted, cur, active = _start(
        parents, draft_probs, target_probs, node_tokens, generator, False)
    device = target_probs.device
    arange = torch.arange(batch, device=device)
    for level in range(depth + 1):
        p = target_probs[arange, cur + 1]
        coin = u[arange, cur + 1]
        mass = torch.zeros(batch, dtype=p.dtype, device=device)
        seen = torch.zeros((batch, vocab), dtype=torch.bool, device=device)
        moved = torch.zeros(batch, dtype=torch.bool, device=device)
        nxt = cur
        for slot in range(table.shape[1]):
            exists, c, y = _slot(table, cur, slot, node_tokens)
            tried = active & ~moved & exists
            fresh = tried & (repeats | ~seen.gather(-1, y.unsqueeze(-1)).squeeze(-1))
            mass = mass + torch.where(fresh, p.gather(-1, y.unsqueeze(-1)).squeeze(-1), 0)
            bound = mass / threshold_acc
            accept = fresh & ((coin <= bound) if ties else (coin < bound))
            emitted[:, level] = torch.where(accept, y, emitted[:, level])
            nxt = torch.where(accept, c, nxt)
            moved = moved | accept
            seen = seen | (torch.nn.functional.one_hot(y, vocab).bool() & tried.unsqueeze(-1))
        rest = torch.where(seen, 0, p) if remove_tried else p
        weights = rest if empty == "last" else torch.where(rest.sum(dim=-1, keepdim=True) > 0, rest, p)
        final = draw_inverse_cdf(weights, u[:, nodes + 1])
        finishing = active & ~moved
        emitted[:, level] = torch.where(finishing, final, emitted[:, level])
        active, cur = moved, nxt
    return emitted
