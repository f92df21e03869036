"""Each batched adapter around the canonical rule in its runtime's layout passes the check; each
runtime-layout mutant fails through the same adapter (statistically, by a certain finding, or by RNG
edge injection), so the adapter path can fail.

Power: samples=4096 rows per scenario gives a detectable TV well under the 0.2 asked here (the run
reports it; the PASS asserts it). The transformers layout runs one Python call per row, so its checks
use a few default-suite scenarios and fewer rows.
"""

import pytest
import torch

from specproof.harness import default_suite
from specproof.harness.check.contracts.batched import zero_target_scenarios
from specproof.harness.check.intercept.injection import inject_check
from specproof.harness.check.driver import check
from specproof.impls.adapters import get_adapter
from specproof.impls.runtime_layouts import flashinfer, transformers, vllm_v0, vllm_v1

CANONICAL = [("vllm-v1", vllm_v1.rejection_sample), ("vllm-v0", vllm_v0.forward),
             ("flashinfer", flashinfer.chain_speculative_sampling),
             ("flashinfer", flashinfer.chain_speculative_sampling_generator)]
SAMPLED_MUTANTS = [("vllm-v0", vllm_v0.forward_clamped_residual, "target probability 0"),
                   ("flashinfer", flashinfer.chain_speculative_sampling_reused_uniform, "differs"),
                   ("flashinfer", flashinfer.chain_speculative_sampling_empty_residual_last, "target probability 0")]
MAX_TV = 0.2


def few_scenarios():
    names = {"prefix-dependent V4 K2", "disjoint supports", "adversarial top-k"}
    return [s for s in default_suite() if s.name in names]


@pytest.mark.parametrize("name,fn", CANONICAL, ids=lambda x: getattr(x, "__name__", x))
def test_canonical_layout_passes_through_its_adapter(name, fn):
    result = check(get_adapter(name).wrap(fn), samples=4096, seed=1, max_detectable_tv=MAX_TV,
                            inject=False)
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


def test_transformers_layout_passes_through_its_adapter():
    verify = get_adapter("transformers").wrap(transformers.speculative_sampling)
    result = check(verify, samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False,
                            scenarios=few_scenarios())
    assert result.passed, result.summary()


@pytest.mark.parametrize("name,fn,words", SAMPLED_MUTANTS, ids=lambda x: getattr(x, "__name__", None))
def test_layout_mutant_fails_through_its_adapter(name, fn, words):
    result = check(get_adapter(name).wrap(fn), samples=4096, seed=1, max_detectable_tv=MAX_TV,
                            inject=False, fail_fast=True)
    assert not result.passed and result.findings
    assert words in result.summary()


def test_vllm_v1_ignoring_the_request_generators_is_not_reproducible():
    verify = get_adapter("vllm-v1").wrap(vllm_v1.rejection_sample_seeds_ignored)
    result = check(verify, samples=1024, seed=1, inject=False, fail_fast=True)
    assert not result.passed
    assert result.reproducibility and "global RNG" in result.summary()


@pytest.mark.parametrize("name,canonical,mutant", [
    ("vllm-v1", vllm_v1.rejection_sample, vllm_v1.rejection_sample_float32_ge),
    ("transformers", transformers.speculative_sampling, transformers.speculative_sampling_le),
], ids=["vllm-v1-float32-ge", "transformers-le"])
def test_u_zero_bugs_are_certain_under_rng_edge_injection(name, canonical, mutant):
    """u == 0 has probability 2^-24 per float32 draw: sampling cannot see it, injection makes it certain.
    The canonical layout under the same injection is not flagged (strict comparisons)."""
    adapter = get_adapter(name)
    scenarios = [s for s in zero_target_scenarios("float32") if s.name == "disjoint supports"]
    flagged = inject_check(adapter.wrap(mutant), rows=256, seed=3, scenarios=scenarios)
    assert flagged.verdict == "flagged", flagged.summary()
    assert "target probability 0" in flagged.findings[0].describe()
    clean = inject_check(adapter.wrap(canonical), rows=256, seed=3, scenarios=scenarios)
    assert clean.verdict == "not-flagged", clean.summary()


# -- the conversions themselves ------------------------------------------------------------------------

def probe(record):
    """A vLLM v1 rejection_sample that records what it was handed and defers to the canonical layout."""
    def rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                         target_probs, bonus_token_ids, sampling_metadata):
        record.update(ids=draft_token_ids, counts=num_draft_tokens, spec=max_spec_len, cu=cu_num_draft_tokens,
                      draft=draft_probs, target=target_probs, bonus=bonus_token_ids, meta=sampling_metadata)
        return vllm_v1.rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                                        draft_probs, target_probs, bonus_token_ids, sampling_metadata)
    return rejection_sample


def small_round(batch=3, drafts=2, vocab=5, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    draft = torch.rand(batch, drafts, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    target = torch.rand(batch, drafts + 1, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    ids = torch.multinomial(draft.double().reshape(-1, vocab), 1, generator=g).reshape(batch, drafts)
    return draft, target, ids


def test_vllm_v1_adapter_flattens_the_round_as_vllm_does():
    seen = {}
    draft, target, ids = small_round()
    out = get_adapter("vllm-v1").wrap(probe(seen))(draft, target, ids, torch.Generator().manual_seed(0))
    assert seen["ids"].dtype == torch.int32 and torch.equal(seen["ids"].long(), ids.reshape(-1))
    assert seen["counts"] == [2, 2, 2] and seen["spec"] == 2 and seen["cu"].tolist() == [2, 4, 6]
    assert torch.equal(seen["draft"], draft.reshape(6, 5)) and torch.equal(seen["target"], target[:, :2].reshape(6, 5))
    assert seen["bonus"].shape == (3, 1) and seen["bonus"].dtype == torch.int32
    assert sorted(seen["meta"].generators) == [0, 1, 2] and seen["meta"].all_random
    assert out.dtype == torch.int64 and out.shape == (3, 3)


def test_vllm_v1_layout_handles_ragged_requests():
    """Requests with 2, 0 and 3 drafts: the empty request emits its bonus at position 0."""
    vocab, counts = 4, [2, 0, 3]
    target = torch.full((5, vocab), 0.25)
    draft = torch.full((5, vocab), 0.25)  # p == q: every draft is accepted
    ids = torch.tensor([1, 2, 3, 0, 1], dtype=torch.int32)
    cu = torch.tensor([2, 2, 5], dtype=torch.int32)
    bonus = torch.tensor([[3], [1], [2]], dtype=torch.int32)
    meta = type("Meta", (), {"generators": {r: torch.Generator().manual_seed(r) for r in range(3)}})()
    out = vllm_v1.rejection_sample(ids, counts, 3, cu, draft, target, bonus, meta)
    assert out.dtype == torch.int32
    assert out.tolist() == [[1, 2, 3, -1], [1, -1, -1, -1], [3, 0, 1, 2]]


def test_vllm_v1_request_generators_make_the_output_a_function_of_the_harness_generator():
    verify = get_adapter("vllm-v1").wrap(vllm_v1.rejection_sample)
    draft, target, ids = small_round(batch=64)
    first = verify(draft, target, ids, torch.Generator().manual_seed(7))
    torch.rand(5)  # the global RNG moves; the output must not
    assert torch.equal(first, verify(draft, target, ids, torch.Generator().manual_seed(7)))
    assert not torch.equal(first, verify(draft, target, ids, torch.Generator().manual_seed(8)))


def test_flashinfer_counters_follow_flashinfer():
    """accepted counts every draft passing its own test; emitted only the accepted prefix; both accumulate."""
    draft = torch.tensor([[[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]])
    target = torch.tensor([[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]]])
    ids = torch.tensor([[0, 0]], dtype=torch.int32)  # draft 0 has target 0: rejected; draft 1 would pass
    uniforms = torch.full((1, 3), 0.5)
    accepted, emitted = torch.ones(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    out, acc, emi = flashinfer.chain_speculative_sampling(draft, ids, uniforms, target, accepted, emitted)
    assert out.tolist() == [[1, -1, -1]] and out.dtype == torch.int32
    assert acc.tolist() == [2] and emi.tolist() == [0] and acc is accepted


def test_flashinfer_adapter_makes_float32_uniforms_from_the_generator():
    seen = {}

    def chain_speculative_sampling(draft_probs, draft_token_ids, uniform_samples, target_probs):
        seen.update(u=uniform_samples, ids=draft_token_ids)
        return flashinfer.chain_speculative_sampling(draft_probs, draft_token_ids, uniform_samples, target_probs)

    draft, target, ids = small_round(dtype=torch.float16)
    get_adapter("flashinfer").wrap(chain_speculative_sampling)(draft, target, ids, torch.Generator().manual_seed(2))
    assert seen["u"].dtype == torch.float32 and seen["u"].shape == (3, 3) and seen["ids"].dtype == torch.int32
    assert torch.equal(seen["u"], torch.rand((3, 3), generator=torch.Generator().manual_seed(2)))


def test_transformers_adapter_runs_the_real_function_like_the_registered_record():
    """transformers is a test dependency: the real _speculative_sampling through --adapter transformers is
    the registry's transformers-speculative-sampling record, token for token."""
    pytest.importorskip("transformers", reason="package not installed")
    from specproof.impls import get
    from specproof.impls.adapters.transformers_adapter import load_transformers_verifier

    verify = get_adapter("transformers").wrap(load_transformers_verifier())
    draft, target, ids = small_round(batch=32)
    out = verify(draft, target, ids, torch.Generator().manual_seed(4))
    reference = get("transformers-speculative-sampling").fn(draft, target, ids, torch.Generator().manual_seed(4))
    assert torch.equal(out, reference)
