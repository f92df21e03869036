"""The default tree suite gives every sibling mode a real suite: several tree shapes and depths, a large
vocabulary, top-k / top-p truncated targets whose zeros meet the first-tried child; the zoo's exact rules
are lossy on it in every mode they are wrong for, the canonical rules in none; every acceptance site of
every mode meets a target zero (the ladders) and the zero coin there is missed w.p. below 1e-6."""

from __future__ import annotations

from fractions import Fraction

import pytest

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import law_tv, target_law

from specproof.proofs.laws.tree import (SIBLING_MODES, TREE_MUTANT_RULES, TREE_REFERENCE, TREE_TARGET_ONLY,
                                        _sibling_draws, continued, tree_law)
from specproof.harness.check.contracts.tree.scenarios import default_tree_suite, truncated_tree_pair
from specproof.harness.check.driver import check
from specproof.harness.check.result import Verdict
from specproof.impls.verifiers.tree_mutants import TREE_ZOO, tree_target_only_ties
from specproof.impls.verifiers.tree_rrs import tree_rrs

SUITE = default_tree_suite()
LARGE_VOCAB = 6  # the enumeration limit V^(D+1) <= 2^16 and the lossless family's V^(D+1)-square matrix bound V


def _mode(mode: str) -> list:
    return [s for s in SUITE if s.scheme == mode]


def _zero_sites(real) -> dict[tuple[int, int], Fraction]:
    """Exact per-row probability that the reference walk (recursive rejection sampling over each node's own
    row) *tries* a token of target probability 0 and positive draft probability at ``(depth, sibling
    index)``: the rate at which the real generator's zero coin would meet that site in this scenario."""
    pair, tree, out = real.pair, real.tree, {}

    def walk(prefix: tuple[int, ...], node: int, reach: Fraction, depth: int) -> None:
        kids = tree.children(node)
        p = pair.target[prefix]
        for tokens, weight, rows in _sibling_draws(prefix, len(kids), real.row):
            r, tried = p, reach * weight
            for i, y in enumerate(tokens):
                w = rows[i]
                if p[y] == 0 and w[y] > 0:
                    out[(depth + 1, i)] = out.get((depth + 1, i), Fraction(0)) + tried
                accept = min(Fraction(1), r[y] / w[y]) if w[y] else Fraction(0)
                if accept:
                    walk(prefix + (y,), kids[i], tried * accept, depth + 1)
                tried *= 1 - accept
                rest = tuple(max(Fraction(0), a - b) for a, b in zip(r, w))
                mass = sum(rest, Fraction(0))
                r = tuple(x / mass for x in rest) if mass else p

    walk((), -1, Fraction(1), 0)
    return out


@pytest.mark.parametrize("mode", SIBLING_MODES)
def test_every_mode_has_several_tree_shapes_and_depths(mode):
    scenarios = _mode(mode)
    assert len({s.tree.parents for s in scenarios}) >= 3, mode
    assert len({s.depth for s in scenarios}) >= 2, mode
    assert max(s.tree.widest for s in scenarios) >= 3, mode  # at least 3 siblings under one parent


@pytest.mark.parametrize("mode", SIBLING_MODES)
def test_every_mode_has_a_large_vocabulary_with_truncated_targets(mode):
    large = [s for s in _mode(mode) if s.vocab >= LARGE_VOCAB and "truncated" in s.name]
    assert large, mode
    for s in large:  # truncated: every target row rules out a token the draft gives mass
        pair = s.pair
        for prefix, q in pair.draft.items():
            assert any(p == 0 and x > 0 for p, x in zip(pair.target[prefix], q)), (s.name, prefix)


@pytest.mark.parametrize("mode", SIBLING_MODES)
def test_every_mode_meets_a_target_zero_at_a_first_tried_child_in_its_statistical_rows(mode):
    """The issue's finding: the old scenarios put a target zero where the first tried child lands in
    under 5% of rows (the top-k one: never).  A truncated scenario of every mode does so in at least
    10% of rows at depth 1 or 2, and every mode's suite reaches a first-tried zero at two depths."""
    rates: dict[int, Fraction] = {}
    for s in _mode(mode):
        for (depth, index), rate in _zero_sites(s.realise("float32")).items():
            if index == 0:
                rates[depth] = max(rates.get(depth, Fraction(0)), rate)
    assert len(rates) >= 2, (mode, rates)
    assert max(rates.get(1, 0), rates.get(2, 0)) >= Fraction(1, 10), (mode, rates)


def test_the_topk_trees_put_the_drafts_top_1_on_a_dropped_token():
    """Top-k over truncated targets: the wide tree's first-tried root child is a token the target dropped
    in every row, and the chain reaches a dropped top-1 at depth 4."""
    wide, chain = (next(s for s in SUITE if s.name == n) for n in ("tree-topk-wide-truncated",
                                                                  "tree-topk-chain-truncated"))
    assert _zero_sites(wide.realise("float32"))[(1, 0)] == 1
    assert _zero_sites(wide.realise("bfloat16")).get((2, 0), 0) > Fraction(1, 2)
    assert _zero_sites(chain.realise("float32")).get((4, 0), 0) > Fraction(1, 10)


def test_truncated_tree_pair():
    pair = truncated_tree_pair(8, 2, 5)
    assert pair == truncated_tree_pair(8, 2, 5) and pair != truncated_tree_pair(8, 2, 6)  # seeded
    dropped_top = 0
    for prefix, p in pair.target.items():
        assert sum(p) == 1 and 1 <= sum(x > 0 for x in p) <= 7  # renormalised, something dropped
        if prefix in pair.draft:
            q = pair.draft[prefix]
            assert sum(q) == 1 and all(x > 0 for x in q)  # full support: distinct never runs out
            top = sorted(range(8), key=lambda t: (-q[t], t))[0]
            dropped_top += p[top] == 0 and sum(x == q[top] for x in q) == 1  # strictly the top
    assert 3 <= dropped_top <= len(pair.draft)  # about half the prefixes (9 here), or more
    with pytest.raises(SpecproofInputError, match="vocab"):
        truncated_tree_pair(2, 1, 0)


@pytest.mark.parametrize("rule", (TREE_REFERENCE, TREE_TARGET_ONLY, *TREE_MUTANT_RULES), ids=lambda r: r.name)
def test_the_truncated_scenarios_see_each_exact_rule_in_every_mode_it_is_wrong_for(rule):
    """Exact TV on the truncated scenarios alone: 0 for the canonical rules, positive in every mode the
    zoo's member of that rule is wrong for (its statistics' bug-class family is built on that)."""
    wrong_in = {m.name: m.wrong_in for m in TREE_ZOO}.get(rule.name, ())
    assert rule.exact == (not wrong_in)
    for mode in SIBLING_MODES:
        tvs = []
        for s in (s for s in _mode(mode) if "truncated" in s.name):
            real = s.realise("float32")
            tvs.append(law_tv(continued(real.pair, tree_law(real.pair, real.tree, rule, real.row)),
                              target_law(real.pair)))
        assert any(tvs) == (mode in wrong_in), (rule.name, mode, tvs)


def test_the_truncated_topk_scenarios_alone_fail_the_zero_coin_walk_on_every_seed():
    """Without the ladders: ``coin <= prob_acc`` in a top-k walk over truncated targets is a certain FAIL
    (the wide tree's first-tried root child has target probability 0 in every row: an injection pass
    of R rows misses the zero coin w.p. (15/16)^R)."""
    truncated = [s for s in _mode("topk") if "truncated" in s.name]
    for seed in (0, 1):
        result = check(tree_target_only_ties, "tree", samples=256, seed=seed, scenarios=truncated, progress=False)
        assert result.verdict is Verdict.FAIL and result.injection_findings, result.summary()
    clean = check(tree_rrs, "tree", samples=256, scenarios=truncated, progress=False)
    assert not clean.findings and not clean.injection_findings


def test_every_acceptance_site_of_every_mode_meets_a_zero_and_the_zero_coin_is_missed_below_1e_6():
    """The default check judges the three modes; its coverage table lists every site of every scenario
    with a ladder, none untested, each missed w.p. below 1e-6 per run."""
    result = check(tree_rrs, "tree", samples=256, progress=False)
    coverage = result.coverage
    assert not coverage.not_tested and coverage.worst_miss < 1e-6, "\n".join(coverage.lines())
    assert coverage.scope == "sibling modes judged: " + ", ".join(SIBLING_MODES)
    names = {s.site for s in coverage.sites}
    for scenario in SUITE:
        depths, seen = scenario.tree.depths(), {}
        for node, parent in enumerate(scenario.tree.parents):
            index = seen[parent] = seen.get(parent, -1) + 1
            site = f"{scenario.scheme} depth {depths[node]} sibling {index}"
            assert site in names or site + " (first tried)" in names, site
