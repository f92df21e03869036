"""Tree scenarios: an exact pair, a tree and a sibling scheme; realised in a dtype, sampled by torch.

A :class:`TreeScenario` holds an exact :class:`ToyPair` with ``k = D`` (the tree's depth), the tree
and the sibling scheme of :mod:`specproof.proofs.laws.tree`.  Its :class:`TreeRealisation` in a dtype rounds every
row once (:class:`~specproof.harness.exact.rounded.RoundedPair`); the sibling rows of the ``distinct``
scheme (``q`` with tried tokens zeroed, renormalised) are computed exactly from the rounded draft row
and rounded once more.  The exact law of every row is its rounded value renormalised exactly
(:func:`exact_law_row`), so the harness draws node tokens from exactly the laws the verifier's rows
stand for, and rounding the inputs is never counted as drift.

Prefixes of length ``0..D`` are coded ``offset[L] + (base-V value)``, ``offset[L] = sum_{l<L} V^l``;
node ``i``'s draft row is looked up by ``(code of its parent's path, mask of earlier sibling tokens)``
(the mask matters for ``distinct`` only), its target row by the code of its own path.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import torch

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import ToyPair

from specproof.harness.exact.convert import round_to_dtype
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.rounded import RoundedPair, exact_law_row
from specproof.proofs.laws.tree import SIBLING_MODES, Tree, sibling_row

__all__ = ["TreeScenario", "TreeRealisation", "TreeBatch", "default_tree_suite", "tree_pair", "truncated_tree_pair"]


@dataclass(frozen=True)
class TreeScenario:
    name: str
    description: str
    tree: Tree
    scheme: str
    pair: ToyPair
    certainty_probe: bool = False  # only impossible outcomes are tested here (no event families)
    # (prefix, c): the verifier's target row after ``prefix`` is ``c`` times its law (c != 1: a row that
    # sums below or above 1, as a runtime's truncated or unnormalised float rows do; the law is the row
    # renormalised, the batched contract's convention)
    target_scale: tuple[tuple[tuple[int, ...], Fraction], ...] = ()

    def __post_init__(self) -> None:
        if self.scheme not in SIBLING_MODES:
            raise SpecproofInputError("scheme", f"unknown sibling scheme {self.scheme!r}", f"use one of {SIBLING_MODES}")
        if self.pair.k != self.tree.depth:
            raise SpecproofInputError("pair", f"k = {self.pair.k} but the tree has depth {self.tree.depth}",
                                      "build the pair with k = the tree's depth")
        if self.scheme == "topk" and self.tree.widest > self.pair.vocab:
            raise SpecproofInputError("parents", f"{self.tree.widest} top-k siblings over {self.pair.vocab} tokens",
                                      "use at most V siblings per node")

    @property
    def vocab(self) -> int:
        return self.pair.vocab

    @property
    def depth(self) -> int:
        return self.tree.depth

    def realise(self, dtype: str, device: str = "cpu") -> "TreeRealisation":
        return TreeRealisation(self, dtype_name(dtype), torch.device(device))


@dataclass
class TreeBatch:
    """One batch of rows: the node tokens, the verifier's inputs (its own copies), path codes."""

    node_tokens: torch.Tensor  # [n, N] int64, CPU
    parents: torch.Tensor  # [N] int64 on the device
    draft_probs: torch.Tensor  # [n, N, V] dtype, device
    target_probs: torch.Tensor  # [n, N+1, V] dtype, device
    extra: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return int(self.node_tokens.shape[0])

    def arguments(self, generator: torch.Generator) -> tuple:
        """The verifier's arguments: fresh copies on every call (a verifier may write into its inputs)."""
        dev = self.draft_probs.device
        return (self.parents.clone(), self.draft_probs.clone(), self.target_probs.clone(),
                self.node_tokens.to(dev, copy=True), generator)


class TreeRealisation:
    """A tree scenario in a dtype: rounded rows, their exact laws, torch sampling of the node tokens."""

    def __init__(self, scenario: TreeScenario, dtype: str, device: torch.device):
        self.scenario, self.dtype, self.device = scenario, dtype, device
        self.tree, self.vocab, self.depth = scenario.tree, scenario.vocab, scenario.depth
        self.rounded = RoundedPair.from_toy_pair(scenario.pair, dtype)
        self.pair = self.rounded.toy_pair  # the exact renormalised pair the verifier's rows stand for
        v, d = self.vocab, self.depth
        self.offsets = [sum(v**l for l in range(length)) for length in range(d + 2)]
        self.prefixes = [s for length in range(d + 1) for s in itertools.product(range(v), repeat=length)]
        scale = dict(scenario.target_scale)
        self.target_rows = torch.stack([self._scaled(s, scale.get(s, 1)) for s in self.prefixes])  # [P, V]
        self.target_zero = np.array([[x == 0 for x in self.pair.target[s]] for s in self.prefixes], dtype=bool)
        self._rows: dict[tuple, tuple[torch.Tensor, tuple[Fraction, ...]]] = {}
        self._build_draft_tables()

    def _scaled(self, prefix: tuple[int, ...], c: Fraction | int) -> torch.Tensor:
        """The rounded target row after ``prefix`` times ``c``; refused unless exact in the dtype (the
        verifier must see a multiple of the very law the harness reasons about)."""
        row = self.rounded.row("target", prefix)
        if c == 1:
            return row
        scaled = round_to_dtype([Fraction(float(x)) * c for x in row.tolist()], self.dtype, "target_scale")
        if any(Fraction(float(y)) != Fraction(float(x)) * c for x, y in zip(row.tolist(), scaled.tolist())):
            raise SpecproofInputError("target_scale", f"{c} times the row after {prefix} is not exact in {self.dtype}",
                                      "use dyadic rows and a dyadic scale")
        return scaled

    # -- exact rows ----------------------------------------------------------------------------
    def _sibling(self, prefix: tuple[int, ...], tried: tuple[int, ...], index: int) -> tuple[torch.Tensor, tuple]:
        scheme = self.scenario.scheme
        key = (prefix, frozenset(tried) if scheme == "distinct" else (), index if scheme == "topk" else 0)
        hit = self._rows.get(key)
        if hit is None:
            q = self.pair.draft[prefix]
            if scheme == "iid":
                hit = (self.rounded.row("draft", prefix), q)
            else:
                exact = sibling_row(q, scheme, tried, index)
                rounded = round_to_dtype(list(exact), self.dtype, "draft")
                hit = (rounded, exact_law_row(rounded, "draft"))
            self._rows[key] = hit
        return hit

    def row(self, prefix: tuple[int, ...], tried: tuple[int, ...], index: int) -> tuple[Fraction, ...]:
        """The exact law sibling ``index`` after ``prefix`` (earlier siblings ``tried``) is drawn from."""
        return self._sibling(prefix, tried, index)[1]

    def code(self, prefix: tuple[int, ...]) -> int:
        value = 0
        for t in prefix:
            value = value * self.vocab + t
        return self.offsets[len(prefix)] + value

    def _build_draft_tables(self) -> None:
        """Rounded rows and float64 CDFs per (parent path code, tried mask, sibling index)."""
        v, m = self.vocab, self.tree.widest
        self.masks = 1 << v if self.scenario.scheme == "distinct" else 1
        self.slots = m if self.scenario.scheme == "topk" else 1
        drafting = [s for s in self.prefixes if len(s) < self.depth]
        shape = (len(drafting) * self.masks * self.slots, v)
        self.draft_rows = torch.zeros(shape, dtype=self.target_rows.dtype)
        self.draft_cdf = np.zeros(shape)  # float64
        for s in drafting:
            for mask in range(self.masks):
                tried = tuple(t for t in range(v) if mask >> t & 1)
                if len(tried) >= m:
                    continue
                for slot in range(self.slots):
                    index = slot if self.scenario.scheme == "topk" else len(tried)
                    at = self.state(self.code(s), mask, slot)
                    try:
                        rounded, exact = self._sibling(s, tried, index)
                    except SpecproofInputError:  # no mass left: refused if a row ever reaches it (sample)
                        self.draft_cdf[at] = float("nan")
                        continue
                    self.draft_rows[at] = rounded
                    self.draft_cdf[at] = np.cumsum([float(x) for x in exact])

    def state(self, code: int | np.ndarray, mask: int | np.ndarray, slot: int | np.ndarray) -> int | np.ndarray:
        return (code * self.masks + mask) * self.slots + slot

    # -- batches ---------------------------------------------------------------------------------
    def sample(self, n: int, generator: torch.Generator) -> TreeBatch:
        """``n`` rows: node tokens drawn node by node (CPU, float64 inverse CDF) and the inputs.  The
        uniforms are one ``[N, n]`` draw (node ``i``'s row ``i``: the same stream as one draw per node);
        the bookkeeping is numpy's, on one thread (torch's per-op cost and OpenMP hand-offs dominate at
        these sizes)."""
        tree, v = self.tree, self.vocab
        parents = tree.parents
        n_nodes = len(parents)
        uniforms = torch.rand((n_nodes, n), dtype=torch.float64, generator=generator).numpy()
        tokens = np.empty((n, n_nodes), dtype=np.int64)
        codes = np.zeros((n, n_nodes + 1), dtype=np.int64)  # column 0: the root's empty prefix
        states = np.empty((n, n_nodes), dtype=np.int64)
        depths = tree.depths()
        masks: dict[int, np.ndarray] = {}  # parent -> tried mask so far, per row
        index: dict[int, int] = {}
        for i, parent in enumerate(parents):
            tried = masks.get(parent, np.zeros(n, dtype=np.int64))
            slot = index.get(parent, 0)
            parent_code = codes[:, parent + 1]
            state = self.state(parent_code, tried if self.masks > 1 else 0, slot if self.slots > 1 else 0)
            cdf = self.draft_cdf[state]
            if np.isnan(cdf[:, -1]).any():
                raise SpecproofInputError("scenario", f"node {i}'s draft row has no mass left after its earlier "
                                          "distinct siblings", "give the draft full support or fewer siblings")
            # the inverse CDF: how many CDF entries lie at or below u * total (searchsorted(right=True) on a
            # non-decreasing row, as one comparison)
            token = np.minimum((cdf <= uniforms[i][:, None] * cdf[:, -1:]).sum(axis=1), v - 1)
            tokens[:, i], states[:, i] = token, state
            d = depths[i]
            codes[:, i + 1] = self.offsets[d] + (parent_code - self.offsets[d - 1]) * v + token
            masks[parent] = tried | (1 << token)
            index[parent] = slot + 1
        dev = self.device
        draft = self.draft_rows[torch.from_numpy(states)].to(dev)
        target = self.target_rows[torch.from_numpy(codes)].to(dev)
        parents_t = torch.tensor(parents, dtype=torch.int64, device=dev)
        return TreeBatch(torch.from_numpy(tokens), parents_t, draft, target)

    def zero_positions(self, emitted: torch.Tensor) -> np.ndarray:
        """``[B]`` int: 1-based position of the first emitted token of target probability 0 at its
        emitted prefix (exact tables), 0 for rows without one."""
        emitted = emitted.numpy()
        n, width = emitted.shape
        lengths = (emitted >= 0).sum(axis=1)
        code = np.zeros(n, dtype=np.int64)
        first = np.zeros(n, dtype=np.int64)
        for j in range(width):
            inside = j < lengths
            token = np.maximum(emitted[:, j], 0)
            first = np.where((first == 0) & inside & self.target_zero[code, token], j + 1, first)
            code = np.where(inside, self.offsets[j + 1] + (code - self.offsets[j]) * self.vocab + token, code)
        return first


def tree_pair(vocab: int, depth: int, seed: int) -> ToyPair:
    """A prefix-dependent pair: target rows of denominator 64 with zeros, draft rows with full support
    (``(c + 1) / (64 + V)``: the ``distinct`` scheme never runs out of mass)."""
    base = ToyPair.random(vocab, depth, seed, resolution=64, zeros=True)
    return ToyPair.from_functions(vocab, depth, lambda s: base.target[s],
                                  lambda s: tuple((64 * x + 1) / (64 + vocab) for x in base.draft[s]))


def truncated_tree_pair(vocab: int, depth: int, seed: int, *, resolution: int = 64) -> ToyPair:
    """A prefix-dependent pair whose target rows are truncated as a runtime's sampler truncates them
    before verification: each row (random counts ``c + 1``, full support) keeps its ``k`` most likely
    tokens (top-k, ``k`` uniform in ``2..ceil(V/2)``) or the fewest whose mass reaches 3/4 (top-p), at
    most ``V - 1``, renormalised.  The draft rows have full support (``distinct`` never runs out of
    mass); in half the prefixes their most likely token is swapped onto one the target dropped, made
    strictly the most likely (``topk``'s lower-id tie rule cannot hide it), and a random top-1 lands on a
    dropped token in many of the others: a first-tried child of target probability 0 and positive draft
    probability is ordinary, as in a top-k tree over top-k / top-p truncated targets."""
    if vocab < 3:
        raise SpecproofInputError("vocab", f"{vocab} < 3", "truncated targets need at least 3 tokens")
    rng = random.Random(seed)

    def counts() -> list[int]:
        cuts = sorted(rng.randint(0, resolution) for _ in range(vocab - 1))
        return [b - a + 1 for a, b in zip([0] + cuts, cuts + [resolution])]

    target: dict[tuple[int, ...], tuple[Fraction, ...]] = {}
    draft: dict[tuple[int, ...], tuple[Fraction, ...]] = {}
    for length in range(depth + 1):
        for prefix in itertools.product(range(vocab), repeat=length):
            base = counts()
            ranked = sorted(range(vocab), key=lambda t: (-base[t], t))
            if rng.random() < 0.5:
                keep = rng.randint(2, (vocab + 1) // 2)
            else:
                cumulative = list(itertools.accumulate(base[t] for t in ranked))
                keep = next(i + 1 for i, c in enumerate(cumulative) if 4 * c >= 3 * cumulative[-1])
            kept = set(ranked[:max(1, min(keep, vocab - 1))])
            mass = sum(base[t] for t in kept)
            target[prefix] = tuple(Fraction(base[t], mass) if t in kept else Fraction(0) for t in range(vocab))
            if length == depth:
                continue
            q = counts()
            if rng.random() < 0.5:  # the draft's top-1 is a token the target dropped
                z = rng.choice(sorted(set(range(vocab)) - kept))
                top = max(range(vocab), key=lambda t: q[t])
                q[z], q[top] = q[top], q[z]
                q[z] += 1
            total = sum(q)
            draft[prefix] = tuple(Fraction(c, total) for c in q)
    return ToyPair(vocab, depth, target, draft)


_STAR = (-1, -1, -1)
_DEEP = (-1, -1, 0, 0, 1, 2)  # depth 3: two root children, two grandchildren under the first
_EAGLE = (-1, -1, -1, 0, 0, 1, 3)  # depth 3: top-3 at the root, top-2 under the best
_WIDE = (-1, -1, -1, -1, 0, 0, 1)  # depth 2: four root children; two grandchildren under the first, one under the 2nd
_CHAIN = (-1, 0, 1, 2)  # depth 4: one child per node (a top-1 chain: every node a first-tried child)
_LOPSIDED = (-1, -1, 0, 0, 0, 4)  # depth 3: three grandchildren under the first root child, one great-grandchild


def default_tree_suite() -> list[TreeScenario]:
    """i.i.d. siblings (with replacement), distinct siblings (without), top-k siblings; each mode with
    three tree shapes, depths 1 to 4, a vocabulary of 6 or 8 and top-k / top-p truncated targets
    (:func:`truncated_tree_pair`).  The top-k trees' seeds are picked for where the zeros fall (top-k
    siblings are deterministic): the wide tree's first-tried root child (the draft's top-1) has target
    probability 0 in every row, the top-2 root child is accepted in about 63% of rows and its one child is
    again a dropped token; the chain's target keeps the draft's top-1 at depths 1-3 and drops it at
    depth 4 (reached in about 15% of rows)."""
    return [
        TreeScenario("tree-iid-star", "3 i.i.d. siblings at the root (RRS with replacement), V=5",
                     Tree(_STAR), "iid", tree_pair(5, 1, 11)),
        TreeScenario("tree-distinct-star", "3 siblings drawn without replacement, V=5",
                     Tree(_STAR), "distinct", tree_pair(5, 1, 12)),
        TreeScenario("tree-iid-deep", "depth-3 tree of i.i.d. siblings, V=4", Tree(_DEEP), "iid",
                     tree_pair(4, 3, 13)),
        TreeScenario("tree-distinct-deep", "depth-3 tree, siblings without replacement, V=4", Tree(_DEEP),
                     "distinct", tree_pair(4, 3, 14)),
        TreeScenario("tree-topk-deep", "EAGLE/SGLang-style depth-3 tree of top-k draft children, V=4",
                     Tree(_EAGLE), "topk", tree_pair(4, 3, 15)),
        TreeScenario("tree-topk-wide-truncated", "depth-2 tree of top-4 / top-2 / top-1 draft children over "
                     "top-k / top-p truncated targets, V=8", Tree(_WIDE), "topk", truncated_tree_pair(8, 2, 28)),
        TreeScenario("tree-topk-chain-truncated", "depth-4 chain of top-1 draft children over truncated targets, "
                     "V=4", Tree(_CHAIN), "topk", truncated_tree_pair(4, 4, 93)),
        TreeScenario("tree-iid-lopsided-truncated", "lopsided depth-3 tree of i.i.d. siblings over truncated "
                     "targets, V=6", Tree(_LOPSIDED), "iid", truncated_tree_pair(6, 3, 18)),
        TreeScenario("tree-distinct-wide-truncated", "depth-2 tree, 4 root siblings without replacement, over "
                     "truncated targets, V=6", Tree(_WIDE), "distinct", truncated_tree_pair(6, 2, 19)),
    ]
