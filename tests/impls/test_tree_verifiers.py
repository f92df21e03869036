"""Tree verifiers (impls): each realises its exact tree law; input validation; seeded reproducibility."""

from __future__ import annotations

import math

import pytest
import torch

from specproof.proofs.laws.tree import TREE_MUTANT_RULES, TREE_REFERENCE, TREE_TARGET_ONLY, tree_law
from specproof.harness.check.contracts.tree.scenarios import default_tree_suite
from specproof.impls.verifiers.tree_mutants import (tree_accept_ties, tree_iid_assumed, tree_keep_tried,
                                                    tree_reversed_siblings)
from specproof.impls.verifiers.tree_rrs import children_table, tree_rrs, tree_target_only

RULE_OF = {tree_rrs: TREE_REFERENCE, tree_target_only: TREE_TARGET_ONLY, tree_accept_ties: TREE_REFERENCE,
           tree_keep_tried: TREE_MUTANT_RULES[0], tree_iid_assumed: TREE_MUTANT_RULES[1],
           tree_reversed_siblings: TREE_MUTANT_RULES[2]}
SUITE = default_tree_suite()


@pytest.mark.parametrize("fn", list(RULE_OF), ids=lambda f: f.__name__)
@pytest.mark.parametrize("scenario", SUITE, ids=lambda s: s.name)
def test_emitted_frequencies_match_the_rules_exact_law(fn, scenario):
    """float64 inputs; every emitted sequence's frequency within six binomial deviations of the exact
    law of the rule the function implements (a fixed seed: deterministic)."""
    real = scenario.realise("float64")
    n = 6000
    batch = real.sample(n, torch.Generator().manual_seed(11))
    out = fn(*batch.arguments(torch.Generator().manual_seed(12)))
    counts: dict = {}
    for row in out.tolist():
        s = tuple(x for x in row if x >= 0)
        counts[s] = counts.get(s, 0) + 1
    law = tree_law(real.pair, real.tree, RULE_OF[fn], real.row)
    assert set(counts) <= set(law), "emitted a sequence the rule's law never produces"
    for s, p in law.items():
        p = float(p)
        assert abs(counts.get(s, 0) / n - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1 / n, s


def test_seeded_generator_reproduces_and_outputs_are_padded():
    real = SUITE[2].realise("float32")
    batch = real.sample(500, torch.Generator().manual_seed(0))
    a = tree_rrs(*batch.arguments(torch.Generator().manual_seed(5)))
    b = tree_rrs(*batch.arguments(torch.Generator().manual_seed(5)))
    assert torch.equal(a, b) and a.dtype == torch.int64 and a.shape == (500, real.depth + 1)
    present = a >= 0
    assert bool(present[:, 0].all()) and not bool((present[:, 1:] & ~present[:, :-1]).any())


def test_children_table_orders_siblings_by_index():
    table, depth = children_table([-1, -1, 0, 0, 2])
    assert depth == 3 and table.tolist() == [[0, 1], [2, 3], [-1, -1], [4, -1], [-1, -1], [-1, -1]]
    assert children_table([-1, -1], reverse=True)[0].tolist()[0] == [1, 0]


@pytest.mark.parametrize("change, error, match", [
    (lambda a: (a[0][:-1],) + a[1:], ValueError, "parents must have shape"),
    (lambda a: (a[0], a[1].long()) + a[2:], TypeError, "floating"),
    (lambda a: a[:3] + (a[3].int(), a[4]), TypeError, "int64"),
    (lambda a: (torch.tensor([0, 0, 0]),) + a[1:], ValueError, "after its parent"),
    (lambda a: a[:3] + (a[3] + 10, a[4]), ValueError, "ids in"),
    (lambda a: a[:4] + (None,), TypeError, "generator"),
])
def test_inputs_are_validated(change, error, match):
    real = SUITE[0].realise("float32")
    args = real.sample(4, torch.Generator().manual_seed(0)).arguments(torch.Generator())
    with pytest.raises(error, match=match):
        tree_rrs(*change(args))


@pytest.mark.gpu
def test_tree_references_on_cuda_show_no_finding():
    from specproof.harness.check.driver import check

    for fn in (tree_rrs, tree_target_only):
        for dtype in ("float32", "float16", "bfloat16"):
            result = check(fn, "tree", dtype=dtype, device="cuda", samples=20_000, progress=False)
            assert not result.findings, result.summary()
