"""The adapter registry and signature checks: names, documentation fields, refusals naming --adapter."""

import functools

import pytest
import torch

from specproof.impls import canonical_ratio_race
from specproof.impls.adapters import ADAPTER_NAMES, adapters, get_adapter
from specproof.impls.adapters.sglang_tree import tree_links
from specproof.impls.runtime_layouts import (flashinfer, sglang_chain, sglang_tree, transformers, vllm_mrv2, vllm_v0,
                                             vllm_v1)
from specproof.errors import SpecproofInputError

LAYOUT = {"vllm-v1": vllm_v1.rejection_sample, "vllm-v0": vllm_v0.forward,
          "flashinfer": flashinfer.chain_speculative_sampling, "transformers": transformers.speculative_sampling,
          "sglang-tree": sglang_tree.tree_speculative_sampling_target_only, "vllm-mrv2": vllm_mrv2.rejection_sample,
          "sglang-chain": sglang_chain.chain_speculative_sampling_triton}


def test_the_five_adapters_are_registered_with_their_documentation():
    assert ADAPTER_NAMES == ("vllm-v1", "vllm-v0", "vllm-mrv2", "flashinfer", "transformers", "sglang-chain",
                             "sglang-tree")
    assert list(adapters()) == list(ADAPTER_NAMES)
    for name in ADAPTER_NAMES:
        adapter = get_adapter(name)
        assert adapter.name == name
        assert adapter.contract == ("tree" if name == "sglang-tree" else "batched")
        assert len(adapter.runtime) > 60 and len(adapter.randomness) > 40 and adapter.forms


def test_unknown_adapter_names_the_flag_and_the_choices():
    with pytest.raises(SpecproofInputError) as info:
        get_adapter("vllm")
    assert info.value.argument == "--adapter"
    assert "vllm-v1" in info.value.fix and "did you mean" in info.value.problem


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_a_batched_contract_function_is_refused_by_every_runtime_adapter(name):
    """canonical_ratio_race has the batched signature, which is none of the runtimes'."""
    with pytest.raises(SpecproofInputError) as info:
        get_adapter(name).wrap(canonical_ratio_race)
    assert info.value.argument == "--adapter"
    assert name in info.value.problem and get_adapter(name).forms[0].params[0] in info.value.problem
    assert "drop --adapter" in info.value.fix


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_each_adapter_accepts_its_own_layout(name):
    wrapped = get_adapter(name).wrap(LAYOUT[name])
    assert wrapped.runtime_fn is LAYOUT[name] and wrapped.adapter == name


@pytest.mark.parametrize("bad", [object(), 3, "rejection_sample"], ids=type)
def test_not_callable_is_refused(bad):
    with pytest.raises(SpecproofInputError, match="needs a callable"):
        get_adapter("vllm-v1").wrap(bad)


def test_another_runtimes_layout_is_refused():
    with pytest.raises(SpecproofInputError, match="vLLM v1"):
        get_adapter("vllm-v1").wrap(vllm_v0.forward)
    with pytest.raises(SpecproofInputError, match="FlashInfer"):
        get_adapter("flashinfer").wrap(vllm_v1.rejection_sample)


def test_an_extra_required_parameter_is_refused():
    def extra(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs, target_probs,
              bonus_token_ids, sampling_metadata, must_have):
        raise AssertionError("never called")

    with pytest.raises(SpecproofInputError, match="must_have"):
        get_adapter("vllm-v1").wrap(extra)


def test_flashinfer_generations_are_told_apart_by_signature():
    adapter = get_adapter("flashinfer")
    assert adapter.form_of(flashinfer.chain_speculative_sampling).label.startswith("FlashInfer 0.1")
    assert adapter.form_of(flashinfer.chain_speculative_sampling_generator).label.startswith("FlashInfer 0.2")

    def no_generator(draft_probs, draft_token_ids, target_probs):
        raise AssertionError("never called")

    with pytest.raises(SpecproofInputError, match="generator="):
        adapter.wrap(no_generator)


def test_partials_and_modules_are_inspected_through_their_signature():
    class Sampler(torch.nn.Module):
        def forward(self, target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids, seeded_seqs=None):
            return vllm_v0.forward(target_with_bonus_probs, bonus_token_ids, draft_probs, draft_token_ids,
                                   seeded_seqs)

    assert get_adapter("vllm-v0").wrap(Sampler()).adapter == "vllm-v0"
    bound = functools.partial(flashinfer.chain_speculative_sampling, deterministic=False)
    assert get_adapter("flashinfer").wrap(bound).adapter == "flashinfer"


def test_older_transformers_form_gets_is_done_candidate_false():
    seen = []

    def older(candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate):
        seen.append(is_done_candidate)
        return transformers.speculative_sampling(candidate_input_ids, candidate_logits, candidate_length,
                                                 new_logits)

    verify = get_adapter("transformers").wrap(older)
    draft = torch.full((2, 1, 3), 1 / 3)
    out = verify(draft, torch.full((2, 2, 3), 1 / 3), torch.zeros(2, 1, dtype=torch.int64), torch.Generator())
    assert seen == [False, False] and out.shape == (2, 2)


def test_tree_links_follow_sibling_order():
    # root children 0, 1; node 0 has children 2, 3; node 2 has child 4
    next_token, next_sibling, depth = tree_links([-1, -1, 0, 0, 2])
    assert next_token == [1, 3, -1, 5, -1, -1]
    assert next_sibling == [-1, 2, -1, 4, -1, -1]
    assert depth == 3
    with pytest.raises(ValueError, match="topological"):
        tree_links([0])
