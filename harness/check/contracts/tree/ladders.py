"""Zero-site ladders: every acceptance site of a tree meets a token of target probability 0, by construction.

An acceptance site of the tree contract is a sibling index ``j`` at a depth ``d`` in a sibling mode
(:func:`tree_sites`).  A rare-draw bug (``u <= p/q``, ``coin <= prob_acc``) accepts a child of target
probability 0 only where a zero coin meets a tried child whose token the target rules out and the
draft does not.  The statistical scenarios put such a child at a site by chance; a *ladder* puts one
there in every row:

* a chain of ``d - 1`` single children, each holding the spine token ``a`` (draft one-hot at ``a``, target
  ``15/16`` at ``a`` and 0 elsewhere: a *sub-stochastic* row, the convention of the batched contract's
  "target sums below 1" scenario), accepted w.p. at least ``15/16`` each by every exact rule; when it is
  rejected (the coin falls in the missing sixteenth) the residual ``max(0, p - w)`` has no positive entry
  and the correction must fall back to ``p`` (token ``a``): a fallback to the last vocabulary index emits
  a token of target probability 0, a certain finding;
* then ``m`` siblings at depth ``d`` whose tokens ``z_1..z_m`` have target probability 0 and positive draft
  probability in every mode (the draft puts all its mass on them, ``q(z_i) ~ m + 1 - i``: the top-k ranks
  are ``z_1, z_2, ...``), under a *super-stochastic* target row (``9/8`` times ``(1/2, 1/2)`` on ``a`` and a
  last token ``b``).  An exact rule rejects every ``z`` and draws the correction from ``{a, b}``.

With the RNG edge injection writing the zero coin into a fraction ``f`` of the uniforms, a row
exercises site ``(d, j)`` (the chain accepted, the earlier siblings' coins not injected, its own
injected) with probability at least ``(15/16)^(d-1) (1 - f)^j f`` when each tried node reads its own
uniform entry (a walk with one coin per parent, as SGLang's, meets the zero coin at its first ``z``
already); :mod:`..coverage` turns that into the miss probability of the run.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from specproof.proofs.laws.sequences import ToyPair

from specproof.harness.check.contracts.coverage import Coverage, SiteCoverage, miss_probability
from specproof.proofs.laws.tree import SIBLING_MODES, Tree

__all__ = ["CHAIN_MASS", "FAN_MASS", "tree_sites", "ladder", "ladders_for", "site_name", "tree_coverage"]

CHAIN_MASS = Fraction(15, 16)  # the chain rows' target sum (sub-stochastic)
FAN_MASS = Fraction(9, 8)  # the fan rows' target sum (super-stochastic)
LADDER = "zero-site ladder"


def tree_sites(tree: Tree) -> set[tuple[int, int]]:
    """``(depth, sibling index)`` of every node of ``tree`` (siblings indexed in the order tried)."""
    depths, seen, out = tree.depths(), {}, set()
    for node, parent in enumerate(tree.parents):
        index = seen.get(parent, 0)
        seen[parent] = index + 1
        out.add((depths[node], index))
    return out


def site_name(mode: str, depth: int, index: int) -> str:
    return f"{mode} depth {depth} sibling {index}" + (" (first tried)" if index == 0 else "")


def _ladder_pair(depth: int, width: int) -> ToyPair:
    vocab = width + 2
    a, b = 0, width + 1
    spine = lambda prefix: all(t == a for t in prefix)  # noqa: E731
    uniform = tuple(Fraction(1, vocab) for _ in range(vocab))
    total = width * (width + 1) // 2
    fan_q = tuple(Fraction(0) if t in (a, b) else Fraction(width + 1 - t, total) for t in range(vocab))

    def target(prefix: tuple[int, ...]) -> tuple[Fraction, ...]:
        if spine(prefix) and len(prefix) < depth - 1:
            return tuple(Fraction(int(t == a)) for t in range(vocab))
        if spine(prefix) and len(prefix) == depth - 1:
            return tuple(Fraction(1, 2) if t in (a, b) else Fraction(0) for t in range(vocab))
        return uniform

    def draft(prefix: tuple[int, ...]) -> tuple[Fraction, ...]:
        if spine(prefix) and len(prefix) < depth - 1:
            return tuple(Fraction(int(t == a)) for t in range(vocab))
        return fan_q if spine(prefix) else uniform

    return ToyPair.from_functions(vocab, depth, target, draft)


def ladder(mode: str, depth: int, width: int) -> Any:
    """The ladder scenario of ``mode`` whose depth-``depth`` fan has ``width`` siblings (module docstring)."""
    from specproof.harness.check.contracts.tree.scenarios import TreeScenario

    parents = tuple(range(-1, depth - 2)) + (depth - 2,) * width
    scale = tuple((( 0,) * length, CHAIN_MASS) for length in range(depth - 1)) + (((0,) * (depth - 1), FAN_MASS),)
    return TreeScenario(f"{LADDER} {mode} d{depth}",
                        f"{mode} siblings: {depth - 1} accepted single children (target sums to 15/16), then "
                        f"{width} siblings of target probability 0 (target sums to 9/8)",
                        Tree(parents), mode, _ladder_pair(depth, width), certainty_probe=True, target_scale=scale)


def ladders_for(statistical: Sequence[Any]) -> list[Any]:
    """One ladder per sibling mode and depth of the ``statistical`` scenarios, its fan as wide as the
    widest sibling set at that depth in that mode."""
    widths: dict[tuple[str, int], int] = {}
    for scenario in statistical:
        for depth, index in tree_sites(scenario.tree):
            key = (scenario.scheme, depth)
            widths[key] = max(widths.get(key, 0), index + 1)
    return [ladder(mode, depth, widths[(mode, depth)]) for mode in SIBLING_MODES
            for depth in sorted(d for m, d in widths if m == mode)]


def _ladder_sites(scenario: Any) -> set[tuple[str, int, int]]:
    """The sites a ladder scenario gives a target zero in every row: its fan's."""
    depth = scenario.tree.depth
    return {(scenario.scheme, d, j) for d, j in tree_sites(scenario.tree) if d == depth}


def tree_coverage(suite: Sequence[Any], fraction: Fraction, injected: dict[str, int], probe_rows: dict[str, int],
                  modes: Sequence[str]) -> Coverage:
    """The coverage record of a tree check: the sites of its statistical scenarios and ladders (per mode), each
    covered by the ladders of the run (``injected``: rows per injection pass per scenario name, absent
    when its passes did not run; ``probe_rows``: the statistics' rows per scenario name)."""
    ladders = [s for s in suite if s.certainty_probe and s.name.startswith(LADDER)]
    wanted = {(s.scheme, d, j) for s in suite if not s.certainty_probe for d, j in tree_sites(s.tree)}
    wanted = sorted(wanted.union(*(_ladder_sites(s) for s in ladders)),
                    key=lambda x: (SIBLING_MODES.index(x[0]), x[1], x[2]))
    sites, missing = [], []
    for mode, depth, index in wanted:
        covering = [s for s in ladders if (mode, depth, index) in _ladder_sites(s)]
        if not covering:
            missing.append(f"{site_name(mode, depth, index)}: no scenario of this run tries a token of target "
                           "probability 0 there")
            continue
        per_row = CHAIN_MASS ** (depth - 1) * (1 - fraction) ** index * fraction
        rows = max((injected.get(s.name, 0) for s in covering), default=0)
        probe = sum(probe_rows.get(s.name, 0) for s in covering)
        sites.append(SiteCoverage(site_name(mode, depth, index), tuple(s.name for s in covering), per_row, rows,
                                  probe, miss_probability(per_row, rows)))
    model = ("per row: the chain accepted, (15/16)^(d-1), the site's own uniform injected to 0 and the earlier "
             f"siblings' not, (1 - f)^j f with f = {fraction}; a verifier with one coin per parent meets it at the "
             "first sibling")
    return Coverage("tree", f"sibling modes judged: {', '.join(modes)}", tuple(sites), tuple(missing), model)
