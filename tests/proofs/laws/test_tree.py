"""Exact tree laws: against brute-force enumeration, the lossless theorem, the proofs' RRS, the mutants."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from specproof.proofs.arith.exact import ExactArith
from specproof.errors import SpecproofInputError
from specproof.proofs.laws.multidraft import recursive_rejection_law
from specproof.proofs.laws.sequences import ToyPair, law_tv, target_law
from specproof.proofs.laws.tree import (SIBLING_MODES, TREE_MUTANT_RULES, TREE_REFERENCE, TREE_TARGET_ONLY, Tree,
                                        TreeRule, conditionals, continued, sibling_row, tree_law, tree_rule)

from specproof.harness.check.contracts.tree.scenarios import default_tree_suite, tree_pair

ALL_RULES = (TREE_REFERENCE, TREE_TARGET_ONLY, *TREE_MUTANT_RULES)


def _rows(pair: ToyPair, scheme: str):
    return lambda prefix, tried, j: sibling_row(pair.draft[prefix], scheme, tried, j)


def brute_force_law(pair: ToyPair, tree: Tree, scheme: str, rule: TreeRule) -> dict:
    """Enumerate every joint assignment of all N node tokens (with its probability), then every
    accept/reject outcome of the walk on that assignment: a global enumeration, unlike tree_law's
    recursion per node."""
    n, v = len(tree.parents), pair.vocab
    depths = tree.depths()
    law: dict = {}

    def path(assign: tuple[int, ...], node: int) -> tuple[int, ...]:
        out = []
        while node >= 0:
            out.append(assign[node])
            node = tree.parents[node]
        return tuple(reversed(out))

    for assign in itertools.product(range(v), repeat=n):
        prob, rows = Fraction(1), {}
        for i in range(n):
            parent = tree.parents[i]
            prefix = path(assign, parent) if parent >= 0 else ()
            earlier = [j for j in tree.children(parent) if j < i]
            row = sibling_row(pair.draft[prefix], scheme, tuple(assign[j] for j in earlier), len(earlier))
            rows[i] = row
            prob *= row[assign[i]]
            if not prob:
                break
        if not prob:
            continue

        def emit(node: int, prefix: tuple[int, ...], weight: Fraction) -> None:
            kids = list(tree.children(node))
            p = pair.target[prefix]
            r = p
            if rule.order == "reverse":
                kids = kids[::-1]
            first = tree.children(node)[0] if kids else None
            for c in kids:
                y = assign[c]
                w = {"own": rows[c], "first": rows[first] if first is not None else None}.get(rule.rows)
                if w is None:
                    w = tuple(Fraction(int(t == y)) for t in range(v))
                a = min(Fraction(1), r[y] / w[y]) if w[y] else Fraction(0)
                if a:
                    emit(c, prefix + (y,), weight * a)
                weight *= 1 - a
                if rule.residual == "subtract":
                    rest = [max(Fraction(0), x - z) for x, z in zip(r, w)]
                    total = sum(rest)
                    r = tuple(x / total for x in rest) if total else p
            for t, x in enumerate(r):
                if weight * x:
                    law[prefix + (t,)] = law.get(prefix + (t,), Fraction(0)) + prob * weight * x

        emit(-1, (), Fraction(1))
        assert max(depths) == pair.k
    return law


@st.composite
def small_trees(draw):
    n = draw(st.integers(1, 4))
    parents = []
    for i in range(n):
        parents.append(draw(st.integers(-1, i - 1)))
    tree = Tree(tuple(parents))
    vocab = draw(st.integers(2, 3))
    scheme = draw(st.sampled_from(SIBLING_MODES))
    if scheme in ("topk", "distinct") and tree.widest > vocab:
        scheme = "iid"
    seed = draw(st.integers(0, 10_000))
    pair = tree_pair(vocab, tree.depth, seed) if scheme == "distinct" else ToyPair.random(vocab, tree.depth, seed)
    return tree, scheme, pair


@settings(deadline=None, max_examples=40)
@given(small_trees(), st.sampled_from(ALL_RULES))
def test_tree_law_equals_brute_force_enumeration(case, rule):
    tree, scheme, pair = case
    law = tree_law(pair, tree, rule, _rows(pair, scheme))
    assert law == {s: w for s, w in brute_force_law(pair, tree, scheme, rule).items() if w}
    assert sum(law.values()) == 1


@settings(deadline=None, max_examples=40)
@given(small_trees())
def test_exact_rules_are_lossless_on_every_small_tree(case):
    tree, scheme, pair = case
    for rule in (TREE_REFERENCE, TREE_TARGET_ONLY):
        assert continued(pair, tree_law(pair, tree, rule, _rows(pair, scheme))) == target_law(pair)


@pytest.mark.parametrize("replacement", [True, False])
def test_star_tree_first_token_is_the_proofs_recursive_rejection_law(replacement):
    p = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 8))
    q = (Fraction(1, 8), Fraction(3, 8), Fraction(1, 4), Fraction(1, 4))
    pair = ToyPair.context_free(p, q, 1)
    tree = Tree((-1, -1, -1))
    law = tree_law(pair, tree, TREE_REFERENCE, _rows(pair, "iid" if replacement else "distinct"))
    first = [sum((w for s, w in law.items() if s[0] == t), Fraction(0)) for t in range(4)]
    assert tuple(first) == tuple(recursive_rejection_law(ExactArith(), p, q, 3, replacement=replacement))


def test_every_mutant_is_lossy_on_some_default_scenario_and_the_references_on_none():
    lossy = {rule.name: [] for rule in ALL_RULES}
    for scenario in default_tree_suite():
        real = scenario.realise("float32")
        reference = target_law(real.pair)
        for rule in ALL_RULES:
            tv = law_tv(continued(real.pair, tree_law(real.pair, real.tree, rule, real.row)), reference)
            if tv:
                lossy[rule.name].append(scenario.name)
    assert not lossy["tree-rrs"] and not lossy["tree-target-only"]
    assert lossy["tree-keep-tried"] and lossy["tree-iid-assumed"] and lossy["tree-reversed-siblings"]
    # i.i.d. siblings are exchangeable: order and the i.i.d. assumption only matter without replacement
    assert all("distinct" in name for name in lossy["tree-iid-assumed"] + lossy["tree-reversed-siblings"])


def test_sibling_rows_and_refusals():
    q = (Fraction(1, 2), Fraction(1, 2), Fraction(0))
    assert sibling_row(q, "distinct", (0,), 1) == (0, 1, 0)
    assert sibling_row(q, "topk", (), 1) == (0, 1, 0)  # ties: lower id first
    with pytest.raises(SpecproofInputError, match="no mass left"):
        sibling_row(q, "distinct", (0, 1), 2)
    with pytest.raises(SpecproofInputError, match="parents"):
        Tree((0,))
    with pytest.raises(SpecproofInputError, match="rule"):
        tree_rule("nope")
    pair = ToyPair.random(2, 1, 0)
    assert conditionals(pair)[()] == 1 and sum(w for s, w in conditionals(pair).items() if len(s) == 2) == 1


def test_a_chain_tree_is_the_canonical_round():
    from specproof.proofs.laws.sequences import round_law

    pair = ToyPair.random(3, 3, 5)
    assert tree_law(pair, Tree((-1, 0, 1)), TREE_REFERENCE, _rows(pair, "iid")) == round_law(pair, "canonical")


def _first_tokens(law: dict) -> dict:
    out: dict = {}
    for seq, w in law.items():
        out[seq[0]] = out.get(seq[0], Fraction(0)) + w
    return out


@pytest.mark.parametrize("scenario", default_tree_suite(), ids=lambda s: s.name)
def test_given_rows_equal_to_the_laws_change_nothing(scenario):
    from specproof.proofs.laws.tree import GivenRows

    pair, row = scenario.pair, _rows(scenario.pair, scenario.scheme)
    given = GivenRows(lambda prefix: pair.target[prefix], row)
    for rule in (TREE_REFERENCE, TREE_TARGET_ONLY):
        assert tree_law(pair, scenario.tree, rule, row, given) == tree_law(pair, scenario.tree, rule, row)


def test_rules_on_unnormalised_rows_follow_their_coins():
    """A star of 3 i.i.d. siblings read from rows summing to 7/8 (target) and 9/8 (draft): RRS's first token
    is the batched canonical step on the rows as given when there is one sibling (unnormalised_step_tv), and
    the target-only walk accepts sibling j iff its coin falls in [M_{j-1}, M_j) (M: target mass of the
    distinct tokens tried), else draws from p~ with the tried tokens zeroed, normalised."""
    from specproof.proofs.laws.tree import GivenRows
    from specproof.harness.exact.tolerances import unnormalised_step_tv

    F = Fraction
    p, q = (F(1, 2), F(1, 4), F(1, 4), F(0)), (F(1, 4), F(1, 4), F(1, 4), F(1, 4))
    p_given, q_given = tuple(x * F(7, 8) for x in p), tuple(x * F(9, 8) for x in q)
    pair = ToyPair.from_functions(4, 1, lambda s: p if not s else q, lambda s: q)  # bonus rows: any law
    row = lambda prefix, tried, j: q  # noqa: E731
    given = GivenRows(lambda prefix: p_given if not prefix else pair.target[prefix], lambda prefix, tried, j: q_given)
    one = tree_law(pair, Tree((-1,)), TREE_REFERENCE, row, given)
    assert law_tv(_first_tokens(one), dict(enumerate(p))) == unnormalised_step_tv(p_given, q_given) > 0
    expected = {t: F(0) for t in range(4)}
    for ys in itertools.product(range(4), repeat=3):
        weight, mass, seen, low = F(1, 64), F(0), set(), F(0)
        for y in ys:
            if y not in seen:
                mass, seen = mass + p_given[y], seen | {y}
            expected[y] += weight * (min(mass, 1) - min(low, 1))  # coin in [M_{j-1}, M_j)
            low = mass
        rest = [F(0) if t in seen else p_given[t] for t in range(4)]
        rest = rest if any(rest) else list(p_given)
        for t in range(4):
            expected[t] += weight * (1 - min(mass, 1)) * rest[t] / sum(rest)
    walk = tree_law(pair, Tree((-1, -1, -1)), TREE_TARGET_ONLY, row, given)
    assert _first_tokens(walk) == {t: w for t, w in expected.items() if w}
