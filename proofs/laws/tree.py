"""Exact laws of one tree verification round (ints and Fractions only).

A tree of ``N`` nodes (``parents``: :class:`Tree`; the tree contract's signature,
``harness.check.contracts.tree.signature``) over a :class:`ToyPair` with ``k = D``
(the depth): node ``i`` at depth ``d`` holds a token drawn from its *sibling row*, a law over the
vocabulary that depends on the path to its parent ``s`` and on its earlier siblings (scheme):

* ``iid``      - ``q(. | s)`` for every sibling (with replacement, SpecInfer);
* ``distinct`` - ``q(. | s)`` with the earlier siblings' tokens zeroed, renormalised (without
  replacement); a row with no mass left is refused (scenarios give the draft full support);
* ``topk``     - deterministic: the ``j``-th most likely token of ``q(. | s)`` (ties: lower id first),
  its row the one-hot law of that token (EAGLE / SGLang top-k trees).

A realisation passes ``row(prefix, tried, j)`` returning the exact law the verifier's (rounded) row
stands for; here :func:`sibling_row` computes it from the exact pair.

Verification (:class:`TreeRule`, recursive rejection sampling over the node rows): at prefix ``s``
with children ``c_1..c_m`` (tried in the rule's ``order``), ``r = p(. | s)``; sibling ``c_i`` with
token ``y`` and the row ``w`` the rule reads is accepted w.p. ``min(1, r(y)/w(y))`` (0 when
``w(y) = 0``), then the walk continues at ``c_i``'s children with prefix ``s + (y,)``; on rejection
``r <- norm(max(0, r - w))`` (``residual="subtract"``) or ``r`` unchanged (``"keep"``); after the last
sibling one token is drawn from ``r``; at a leaf the bonus is drawn from ``p(. | s)``.
``rows="own"`` reads each node's own row (exact: each token is distributed as its row given the
earlier siblings, the induction of ``proofs.laws.multidraft``), ``"first"`` the first sibling's row for
all (the i.i.d. assumption), ``"onehot"`` the one-hot law of the token (the target-only walk of SGLang:
accept ``y`` w.p. ``r(y)``, exact for any draft).

:func:`tree_law` is the emitted sequence's law; :func:`continued` extends a law by target sampling
to ``D + 1`` tokens (lossless iff it equals ``target_law(pair)``, proofs.laws.sequences).

Rows as given (:class:`GivenRows`, the inputs' term of the derived band,
``specproof.harness.exact.tolerances``): the verifier reads rounded rows whose sums are not exactly
1, while the tokens are drawn from the exact laws those rows stand for.  With ``given``, a rule runs in
real arithmetic on the rows as read: recursive rejection sampling accepts with ``min(1, r(y)/w(y))``
on the unnormalised ``r`` and ``w``, normalises each residual and draws the final token from ``r``
normalised (an inverse CDF scales its uniform by the row's sum); the target-only walk (``"onehot"``)
accepts sibling ``j`` iff its coin ``u < M_j``, the target mass of the distinct tokens tried so far,
so given ``u >= M_{j-1}`` with probability ``min(1, p(y_j) / (1 - M_{j-1}))`` for a fresh token (0 for
a repeated one), and draws the correction from ``p`` with the tried tokens zeroed, normalised.  On
normalised rows both are the rules above exactly (``p(y_j) / (1 - M_{j-1})`` is the renormalised
residual's ``r(y_j)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Iterator, Sequence

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import SequenceLaw, ToyPair

__all__ = ["SIBLING_MODES", "TreeRule", "TREE_REFERENCE", "TREE_TARGET_ONLY", "TREE_MUTANT_RULES", "tree_rule",
           "Tree", "GivenRows", "sibling_row", "tree_law", "extensions", "continued", "conditionals"]

SIBLING_MODES = ("iid", "distinct", "topk")  # how a tree's siblings are drawn (module docstring, sibling_row)
Law = tuple[Fraction, ...]
RowFn = Callable[[tuple[int, ...], tuple[int, ...], int], Law]  # (prefix, earlier siblings, index) -> row


@dataclass(frozen=True)
class TreeRule:
    """One tree verification rule (module docstring): sibling order, row read, residual update."""

    name: str
    description: str
    order: str = "index"  # "index" | "reverse"
    rows: str = "own"  # "own" | "first" | "onehot"
    residual: str = "subtract"  # "subtract" | "keep"
    exact: bool = True


TREE_REFERENCE = TreeRule("tree-rrs", "recursive rejection sampling over each node's own draft row")
TREE_TARGET_ONLY = TreeRule("tree-target-only", "SGLang-style target-only walk (accept y w.p. r(y))",
                            rows="onehot")
TREE_MUTANT_RULES = (
    TreeRule("tree-keep-tried", "the residual keeps the already-tried siblings (no max(0, r - q))",
             residual="keep", exact=False),
    TreeRule("tree-iid-assumed", "every sibling verified with the first sibling's row (siblings "
             "treated as i.i.d. when drawn without replacement)", rows="first", exact=False),
    TreeRule("tree-reversed-siblings", "siblings tried in reverse index order (wrong sibling order)",
             order="reverse", exact=False),
)
_RULES = {r.name: r for r in (TREE_REFERENCE, TREE_TARGET_ONLY, *TREE_MUTANT_RULES)}


def tree_rule(name: str) -> TreeRule:
    if name not in _RULES:
        raise SpecproofInputError("rule", f"unknown tree rule {name!r}", f"use one of {sorted(_RULES)}")
    return _RULES[name]


@dataclass(frozen=True)
class Tree:
    """Parent indices (``-1``: child of the root), topological; children in increasing index."""

    parents: tuple[int, ...]

    def __post_init__(self) -> None:
        for i, parent in enumerate(self.parents):
            if isinstance(parent, bool) or not isinstance(parent, int) or not -1 <= parent < i:
                raise SpecproofInputError("parents", f"parents[{i}] = {parent!r} is not an int in [-1, {i})",
                                          "list nodes parent first, -1 for children of the root")
        if not self.parents:
            raise SpecproofInputError("parents", "is empty", "give a tree of at least one node")

    def children(self, node: int) -> tuple[int, ...]:
        """Children of ``node`` (``-1``: the root) in increasing index (the order they are tried)."""
        return tuple(i for i, parent in enumerate(self.parents) if parent == node)

    def depths(self) -> tuple[int, ...]:
        out: list[int] = []
        for parent in self.parents:
            out.append(1 if parent < 0 else out[parent] + 1)
        return tuple(out)

    @property
    def depth(self) -> int:
        return max(self.depths())

    @property
    def widest(self) -> int:
        return max(len(self.children(j)) for j in range(-1, len(self.parents)))


def sibling_row(q: Sequence[Fraction], scheme: str, tried: tuple[int, ...], index: int) -> Law:
    """The exact law sibling ``index`` is drawn from, given the draft row ``q`` and earlier tokens."""
    q = tuple(Fraction(x) for x in q)
    if scheme == "iid":
        return q
    if scheme == "distinct":
        kept = tuple(Fraction(0) if t in tried else x for t, x in enumerate(q))
        mass = sum(kept, Fraction(0))
        if mass == 0:
            raise SpecproofInputError("scenario", f"the draft row has no mass left after {len(tried)} "
                                      "distinct siblings", "give the draft full support or fewer siblings")
        return tuple(x / mass for x in kept)
    if scheme == "topk":
        ranked = sorted(range(len(q)), key=lambda t: (-q[t], t))
        if index >= len(q):
            raise SpecproofInputError("scenario", f"{index + 1} top-k siblings over {len(q)} tokens",
                                      "use at most V siblings per node")
        return tuple(Fraction(int(t == ranked[index])) for t in range(len(q)))
    raise SpecproofInputError("scheme", f"unknown sibling scheme {scheme!r}", f"use one of {SIBLING_MODES}")


def _sibling_draws(prefix: tuple[int, ...], m: int, row: RowFn) -> Iterator[tuple[tuple[int, ...], Fraction,
                                                                                 tuple[Law, ...]]]:
    """Every joint draw of ``m`` siblings: (tokens, probability, the rows they were drawn from)."""
    def extend(tokens: tuple[int, ...], weight: Fraction, rows: tuple[Law, ...]) -> Iterator:
        if len(tokens) == m:
            yield tokens, weight, rows
            return
        law = row(prefix, tokens, len(tokens))
        for y, w in enumerate(law):
            if w:
                yield from extend(tokens + (y,), weight * w, rows + (law,))

    yield from extend((), Fraction(1), ())


_ZERO, _ONE = Fraction(0), Fraction(1)


def _subtract(r: Law, w: Law, fallback: Law) -> Law:
    """``norm(max(0, r - w))``, ``fallback`` when it has no positive entry."""
    rest = tuple(max(_ZERO, a - b) for a, b in zip(r, w))
    mass = sum(rest, _ZERO)
    return tuple(x / mass for x in rest) if mass else fallback


class _Residuals:
    """:func:`_subtract` memoised on the identity of its rows, for one law: the walk meets the same row
    objects over and over (a realisation's rows and the residuals made here are cached tuples; i.i.d.
    siblings share theirs), and hashing or comparing tuples of Fractions costs more than the subtraction
    it saves.  Each entry keeps its rows alive, so an identity is never reused for another row."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int, int], tuple[Law, Law, Law, Law]] = {}

    def __call__(self, r: Law, w: Law, fallback: Law) -> Law:
        key = (id(r), id(w), id(fallback))
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = (r, w, fallback, _subtract(r, w, fallback))
        return hit[3]


def _add(out: dict, seq: tuple[int, ...], w: Fraction) -> None:
    if w:
        out[seq] = out.get(seq, _ZERO) + w


@dataclass(frozen=True)
class GivenRows:
    """The rows a verifier reads (module docstring): ``target(prefix)`` and ``row(prefix, earlier
    siblings, index)``, exact values of the rounded rows, sums not necessarily 1."""

    target: Callable[[tuple[int, ...]], Law]
    row: RowFn


def _draw(out: dict, prefix: tuple[int, ...], reach: Fraction, r: Law) -> None:
    """The final token drawn from ``r`` normalised (a no-op on a normalised row)."""
    scale = reach / sum(r, _ZERO)  # reach * v / total, one division per row
    if scale:
        for t, v in enumerate(r):
            if v:
                out[prefix + (t,)] = out.get(prefix + (t,), _ZERO) + scale * v


def tree_law(pair: ToyPair, tree: Tree, rule: TreeRule, row: RowFn, given: GivenRows | None = None) -> SequenceLaw:
    """Exact law of the emitted sequence (length 1..D+1) of one round of ``rule`` on ``tree``; sibling
    tokens drawn from ``row``, the verifier reading ``given`` rows (default: the laws themselves)."""
    if pair.k != tree.depth:
        raise SpecproofInputError("pair", f"has k = {pair.k}, the tree has depth {tree.depth}",
                                  "build the pair with k = the tree's depth")
    target = given.target if given is not None else (lambda prefix: pair.target[prefix])
    subtract = _Residuals()

    @lru_cache(maxsize=None)
    def walk(prefix: tuple[int, ...], node: int) -> tuple[tuple[tuple[int, ...], Fraction], ...]:
        kids = tree.children(node)
        p = target(prefix)
        out: dict[tuple[int, ...], Fraction] = {}
        if not kids:
            _draw(out, prefix, _ONE, p)
            return tuple(out.items())
        order = range(len(kids)) if rule.order == "index" else range(len(kids) - 1, -1, -1)
        moves: dict[tuple[int, int], Fraction] = {}  # (sibling, token) -> probability the walk moves there
        for tokens, weight, rows in _sibling_draws(prefix, len(kids), row):
            read = rows if given is None else tuple(given.row(prefix, tokens[:j], j) for j in range(len(kids)))
            r, reach, tried = p, weight, _ZERO  # tried: the target-only walk's mass M of distinct tokens
            for i in order:
                y = tokens[i]
                if rule.rows == "onehot":
                    fresh = r[y] > 0  # r: p with the tried tokens zeroed
                    accept = min(_ONE, r[y] / (1 - tried)) if fresh and tried < 1 else (_ONE if fresh else _ZERO)
                else:
                    w = read[i] if rule.rows == "own" else read[0]
                    accept = min(_ONE, r[y] / w[y]) if w[y] else _ZERO
                _add(moves, (i, y), reach * accept)
                reach *= 1 - accept
                if rule.rows == "onehot":
                    tried += r[y]
                    r = tuple(_ZERO if t == y else x for t, x in enumerate(r))
                elif rule.residual == "subtract":
                    r = subtract(r, w, p)
            _draw(out, prefix, reach, r if any(r) else p)  # every token tried: the correction falls back to p
        for (i, y), m in moves.items():
            for seq, v in walk(prefix + (y,), kids[i]):
                _add(out, seq, m * v)
        return tuple(out.items())

    return dict(walk((), -1))


def conditionals(pair: ToyPair, s: tuple[int, ...] = ()) -> dict[tuple[int, ...], Fraction]:
    """``P_target(t | s)`` for every ``t`` of length up to ``k + 1`` extending ``s`` with positive
    weight (``s`` itself with weight 1); ``s = ()`` gives the target's prefix marginals."""
    out = {s: Fraction(1)}
    frontier = [s]
    while frontier:
        prefix = frontier.pop()
        if len(prefix) == pair.k + 1:
            continue
        for t, w in enumerate(pair.target[prefix]):
            if w:
                out[prefix + (t,)] = out[prefix] * w
                frontier.append(prefix + (t,))
    return out


def extensions(pair: ToyPair, s: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], Fraction]]:
    """``(u, P_target(u | s))`` for every ``k + 1``-token ``u`` extending ``s`` with positive weight
    (the target's conditionals after ``s``, defined even where ``s`` itself has target probability 0)."""
    frontier = [(s, Fraction(1))]
    while frontier:
        prefix, weight = frontier.pop()
        if len(prefix) == pair.k + 1:
            yield prefix, weight
            continue
        for t, w in enumerate(pair.target[prefix]):
            if w:
                frontier.append((prefix + (t,), weight * w))


def continued(pair: ToyPair, law: SequenceLaw) -> SequenceLaw:
    """The law of ``law``'s sequences extended by target sampling to ``k + 1`` tokens."""
    out: dict[tuple[int, ...], Fraction] = {}
    for s, w in law.items():
        for u, v in extensions(pair, s):
            _add(out, u, w * v)
    return out
