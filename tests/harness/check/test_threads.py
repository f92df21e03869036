"""The harness's own tensor work runs on one torch thread; every call of the target runs on the thread
count the caller had when the check began, and that count is restored after the check, whatever the
target did (calls.harness_threads)."""

import pytest
import torch

from specproof.harness.check.calls import VerifierError, harness_threads
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.check.contracts.tree.scenarios import TreeRealisation
from specproof.harness.check.driver import check
from specproof.impls import canonical_ratio_race
from specproof.impls.verifiers.tree_rrs import tree_rrs


@pytest.fixture
def three_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(before)


def test_the_target_runs_on_the_callers_threads_and_the_harness_on_one(three_threads, monkeypatch):
    seen_by_target, seen_by_harness = set(), set()

    def counting(parents, draft_probs, target_probs, node_tokens, generator):
        seen_by_target.add(torch.get_num_threads())
        return tree_rrs(parents, draft_probs, target_probs, node_tokens, generator)

    sample = TreeRealisation.sample

    def counted_sample(self, n, generator):
        seen_by_harness.add(torch.get_num_threads())
        return sample(self, n, generator)

    monkeypatch.setattr(TreeRealisation, "sample", counted_sample)
    result = check(counting, contract="tree", samples=64, inject=True, progress=False)
    assert result.verdict.value in ("pass", "underpowered")
    assert seen_by_target == {three_threads}  # stream calls, the precision probe and the injection alike
    assert seen_by_harness == {1}
    assert torch.get_num_threads() == three_threads


def test_the_callers_threads_come_back_when_the_target_raises_or_changes_them(three_threads):
    def rude(draft_probs, target_probs, draft_token_ids, generator):
        torch.set_num_threads(2)  # the target's own setting lasts for its call only
        return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)

    check(rude, scenarios=default_suite()[:1], samples=64, inject=False, progress=False)
    assert torch.get_num_threads() == three_threads

    def broken(draft_probs, target_probs, draft_token_ids, generator):
        raise RuntimeError("boom")

    with pytest.raises(VerifierError, match="boom"):
        check(broken, scenarios=default_suite()[:1], samples=64, inject=False, progress=False)
    assert torch.get_num_threads() == three_threads


def test_a_check_inside_a_check_gives_its_target_the_outer_callers_threads(three_threads):
    seen = []

    def inner_target(draft_probs, target_probs, draft_token_ids, generator):
        seen.append(torch.get_num_threads())
        return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)

    def outer_target(draft_probs, target_probs, draft_token_ids, generator):
        check(inner_target, scenarios=default_suite()[:1], samples=64, inject=False, progress=False)
        return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)

    with harness_threads():
        assert torch.get_num_threads() == 1
        check(outer_target, scenarios=default_suite()[:1], samples=64, inject=False, progress=False)
        assert torch.get_num_threads() == 1
    assert seen and set(seen) == {three_threads}
    assert torch.get_num_threads() == three_threads
