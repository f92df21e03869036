"""sglang-tree: SGLang's target-only walk in its own layout, through the adapter, under check_tree.

Power as in test_adapters_batched.py (4096 rows per scenario; the PASS asserts its detectable TV).
"""

import pytest
import torch

from specproof.harness.check.driver import check
from specproof.harness.check.contracts.tree.scenarios import default_tree_suite
from specproof.impls.adapters import get_adapter
from specproof.impls.runtime_layouts import sglang_tree

MAX_TV = 0.2


def scenario(name):
    return next(s for s in default_tree_suite() if s.name == name)


def test_target_only_walk_is_lossless_for_top_k_siblings():
    verify = get_adapter("sglang-tree").wrap(sglang_tree.tree_speculative_sampling_target_only)
    result = check(verify, "tree", samples=4096, seed=1, scenarios=[scenario("tree-topk-deep")],
                        max_detectable_tv=MAX_TV)
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


def test_target_only_walk_is_lossy_for_sampled_siblings():
    """The walk never reads the draft law: with i.i.d. sampled siblings it is not lossless, and says so."""
    verify = get_adapter("sglang-tree").wrap(sglang_tree.tree_speculative_sampling_target_only)
    result = check(verify, "tree", samples=4096, seed=1, scenarios=[scenario("tree-iid-star")], fail_fast=True)
    assert not result.passed


def test_keeping_tried_siblings_in_the_residual_is_flagged():
    verify = get_adapter("sglang-tree").wrap(sglang_tree.tree_target_only_keeps_tried)
    result = check(verify, "tree", samples=4096, seed=1, scenarios=[scenario("tree-topk-deep")], fail_fast=True)
    assert not result.passed and result.findings


def layout_inputs(p_root, children, coin=0.0, final=0.0):
    """One row, a root with the given child tokens (a star), target law ``p_root`` at the root and uniform
    laws below; coins injected directly."""
    vocab, n = len(p_root), len(children)
    target = torch.full((1, n + 1, vocab), 1.0 / vocab)
    target[0, 0] = torch.tensor(p_root)
    return dict(predicts=torch.zeros(n + 1, dtype=torch.int32),
                accept_index=torch.full((1, 2), -1, dtype=torch.int32),
                accept_token_num=torch.zeros(1, dtype=torch.int32),
                candidates=torch.tensor([[0, *children]]), retrive_index=torch.arange(n + 1).reshape(1, -1),
                retrive_next_token=torch.tensor([[1] + [-1] * n]),
                retrive_next_sibling=torch.tensor([[-1] + [s + 1 for s in range(1, n)] + [-1]]),
                uniform_samples=torch.full((1, n + 1), coin),
                uniform_samples_for_final_sampling=torch.full((1,), final),
                target_probs=target, draft_probs=torch.zeros_like(target))


def test_zero_coin_accepts_a_zero_probability_child_only_in_the_shipped_walk():
    """SGLang reads u <= a: a first child of target probability 0 is accepted when u == 0."""
    canonical = layout_inputs([0.0, 0.5, 0.5], children=[0, 1])
    sglang_tree.tree_speculative_sampling_target_only(**canonical)
    assert canonical["accept_token_num"].item() == 1 and canonical["predicts"][0].item() == 1
    shipped = layout_inputs([0.0, 0.5, 0.5], children=[0, 1])
    sglang_tree.tree_target_only_shipped_edges(**shipped)
    assert shipped["accept_token_num"].item() == 1 and shipped["predicts"][0].item() == 0


def test_empty_residual_emits_the_last_id_only_in_the_shipped_walk():
    """An unnormalised root law whose only positive token was tried and rejected (coin above its mass):
    the canonical walk falls back to p; SGLang's kernel emits id V - 1, of target probability 0 here."""
    for walk, token in ((sglang_tree.tree_speculative_sampling_target_only, 0),
                        (sglang_tree.tree_target_only_shipped_edges, 2)):
        inputs = layout_inputs([0.5, 0.0, 0.0], children=[0], coin=0.75)
        walk(**inputs)
        assert inputs["accept_token_num"].item() == 0 and inputs["predicts"][0].item() == token


def test_adapter_reads_the_accepted_path_back():
    """parents (-1, 0): a chain of two; a one-hot target along it accepts both, then the bonus."""
    verify = get_adapter("sglang-tree").wrap(sglang_tree.tree_speculative_sampling_target_only)
    vocab = 3
    target = torch.zeros(2, 3, vocab)
    target[:, 0, 1] = target[:, 1, 2] = target[:, 2, 0] = 1.0
    tokens = torch.tensor([[1, 2], [2, 2]])  # row 1's first node is off the target's mode
    out = verify(torch.tensor([-1, 0]), torch.zeros(2, 2, vocab), target, tokens, torch.Generator().manual_seed(0))
    assert out.tolist() == [[1, 2, 0], [1, -1, -1]]


@pytest.mark.parametrize("fn", [sglang_tree.tree_target_only_shipped_edges, sglang_tree.tree_target_only_keeps_tried])
def test_mutants_keep_the_layout_signature(fn):
    assert get_adapter("sglang-tree").wrap(fn).adapter == "sglang-tree"
