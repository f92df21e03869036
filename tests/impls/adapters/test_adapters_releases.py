"""Today's releases (December 2026) in their own layouts: vLLM 0.16 to 0.33's rejection_sample (target logits in,
softmax inside) and vLLM model runner V2's rejection_sample (log-space test, block verification, Gumbel
resampling).  Each canonical layout passes the check through its adapter; each mutant of a historic
or shipped bug is flagged under RNG edge injection, where the canonical layout is not.

Power: 2048 rows on two scenarios per check (the PASS asserts the detectable TV it reaches).
MRV2's layout runs one request at a time (its kernels' program order), so its checks use fewer rows.
"""

import functools

import pytest
import torch

from specproof.harness import default_suite
from specproof.harness.check.contracts.batched import zero_target_scenarios
from specproof.harness.check.intercept.injection import inject_check
from specproof.harness.check.driver import check
from specproof.impls.adapters import get_adapter, sglang_chain as sglang_chain_adapter, vllm_mrv2 as mrv2_adapter
from specproof.impls.runtime_layouts import flashinfer, sglang_chain, sglang_tree, vllm_mrv2, vllm_v1
from specproof.errors import SpecproofInputError

MAX_TV = 0.2
MRV2 = mrv2_adapter.ADAPTER


def two_scenarios():
    names = {"prefix-dependent V4 K2", "disjoint supports"}
    return [s for s in default_suite() if s.name in names]


def injection_scenarios():
    return [s for s in zero_target_scenarios("float32") if s.name == "disjoint supports"]


def test_vllm_033_logits_layout_passes_through_the_vllm_v1_adapter():
    verify = get_adapter("vllm-v1").wrap(vllm_v1.rejection_sample_target_logits)
    result = check(verify, samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False,
                            scenarios=two_scenarios())
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


def test_vllm_033_logits_form_hands_log_probabilities():
    seen = {}

    def rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs,
                         target_logits, bonus_token_ids, sampling_metadata):
        seen["logits"] = target_logits
        return vllm_v1.rejection_sample_target_logits(draft_token_ids, num_draft_tokens, max_spec_len,
                                                      cu_num_draft_tokens, draft_probs, target_logits,
                                                      bonus_token_ids, sampling_metadata)

    target = torch.tensor([[[0.5, 0.5, 0.0]] * 2])
    draft = torch.tensor([[[0.25, 0.25, 0.5]]])
    out = get_adapter("vllm-v1").wrap(rejection_sample)(draft, target, torch.tensor([[2]]),
                                                        torch.Generator().manual_seed(0))
    assert seen["logits"][0, 2] == -torch.inf and torch.allclose(seen["logits"][0, :2].exp(), torch.tensor(0.5))
    assert out.shape == (1, 2) and out[0, 0].item() in (0, 1)  # the draft 2 has p = 0: never accepted


def test_vllm_033_release_comparison_is_certain_under_injection():
    """0.33 as released: float64 u, ``p/q >= u``: u == 0 (2^-53 per draw) accepts a probability-0 draft."""
    adapter = get_adapter("vllm-v1")
    flagged = inject_check(adapter.wrap(vllm_v1.rejection_sample_target_logits_float64_ge), rows=256, seed=3,
                           scenarios=injection_scenarios())
    assert flagged.verdict == "flagged", flagged.summary()
    assert "target probability 0" in flagged.findings[0].describe() and "float64" in flagged.findings[0].describe()
    clean = inject_check(adapter.wrap(vllm_v1.rejection_sample_target_logits), rows=256, seed=3,
                         scenarios=injection_scenarios())
    assert clean.verdict == "not-flagged", clean.summary()


@pytest.mark.parametrize("mode", ["standard", "block"])
def test_mrv2_layout_passes_through_its_adapter(mode):
    fn = vllm_mrv2.rejection_sample
    if mode == "block":
        fn = functools.partial(fn, use_block_verification=True)
    result = check(MRV2.wrap(fn), samples=1024, seed=1, max_detectable_tv=MAX_TV, inject=False,
                            scenarios=two_scenarios())
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


def test_mrv2_draft_logits_cache_form_of_034_passes_through_its_adapter():
    """vLLM 0.34 takes ``draft_logits_cache`` (a ``DraftLogitsCache``; ``rejection_sample`` reads its ``values``
    and ``row_mapping``) in place of ``draft_logits``: the adapter hands a replicated cache over ``log q``."""
    seen = []

    def rejection_sample_034(target_logits, draft_logits_cache, draft_sampled, cu_num_logits, pos, idx_mapping,
                             expanded_idx_mapping, expanded_local_pos, temperature, seed, num_speculative_steps,
                             synthetic_conditional_rates=None, use_fp64=False, use_block_verification=False,
                             skip_masked_vocab_blocks=False):
        seen.append((type(draft_logits_cache), draft_logits_cache.row_mapping, draft_logits_cache.values.ndim))
        return vllm_mrv2.rejection_sample(target_logits, draft_logits_cache.values, draft_sampled, cu_num_logits, pos,
                                          idx_mapping, expanded_idx_mapping, expanded_local_pos, temperature, seed,
                                          num_speculative_steps)

    assert MRV2.form_of(rejection_sample_034) is mrv2_adapter.CACHE_FORM
    assert MRV2.form_of(vllm_mrv2.rejection_sample) is MRV2.forms[0]
    result = check(MRV2.wrap(rejection_sample_034), samples=1024, seed=1, max_detectable_tv=MAX_TV, inject=False,
                   scenarios=two_scenarios())
    assert result.passed, result.summary()
    assert set(seen) == {(mrv2_adapter.ReplicatedDraftLogits, None, 3)}


def test_mrv2_synthetic_mode_is_lossy_by_design():
    rates = torch.tensor([0.9, 0.9])
    fn = functools.partial(vllm_mrv2.rejection_sample, synthetic_conditional_rates=rates)
    result = check(MRV2.wrap(fn), samples=1024, seed=1, inject=False, fail_fast=True,
                            scenarios=[s for s in default_suite() if s.name == "disjoint supports"])
    assert not result.passed


def _fly_round(first_target, window, rows=64):
    """``rows`` requests, ``K = 2``: the draft 3 at step 0 (``q = 1``, ``p = first_target[3]``), then the draft
    0 at step 1 with ``p = q = 1`` (always accepted natively); the bonus row's target is the point mass on 1."""
    target = torch.tensor([first_target, [1.0, 0, 0, 0], [0, 1.0, 0, 0]]).expand(rows, 3, 4).contiguous()
    draft = torch.tensor([[0, 0, 0, 1.0], [1.0, 0, 0, 0]]).expand(rows, 2, 4).contiguous()
    ids = torch.tensor([[3, 0]]).expand(rows, 2).contiguous()
    fn = functools.partial(vllm_mrv2.rejection_sample, fly_window_size=window)
    return MRV2.wrap(fn)(draft, target, ids, torch.Generator().manual_seed(5)).tolist()


def test_mrv2_fly_defers_a_rejection_whose_window_passes():
    spread = [0.3, 0.3, 0.3, 0.1]  # top-3 entropy 3 * 0.3 ln(1/0.3) = 1.08 nats >= 0.3
    standard = _fly_round(spread, window=0)
    assert sum(row[0] != 3 for row in standard) > 40  # u >= 0.1 rejects the draft 3 about 90% of the time
    assert all(row == [3, 0, 1] for row in _fly_round(spread, window=1))  # deferred, then kept by step 1
    assert _fly_round(spread, window=2) == standard  # the window does not fit: 0 + 2 < K = 2 fails


def test_mrv2_fly_failed_window_resamples_at_the_deferred_step():
    """The step-1 draft has ``p = 0``: it always fails natively. A deferral at step 0 then ends the round at
    step 0 with a correction from ``max(p_0 - q_0, 0)`` on {0, 1, 2}; a native accept at step 0 (u < 0.1)
    ends it at step 1 instead, with the correction from row 1 (the point mass on 0)."""
    rows = 64
    target = torch.tensor([[0.3, 0.3, 0.3, 0.1], [1.0, 0, 0, 0], [0, 1.0, 0, 0]]).expand(rows, 3, 4).contiguous()
    draft = torch.tensor([[0, 0, 0, 1.0], [0, 0, 1.0, 0]]).expand(rows, 2, 4).contiguous()
    ids = torch.tensor([[3, 2]]).expand(rows, 2).contiguous()
    out = MRV2.wrap(functools.partial(vllm_mrv2.rejection_sample, fly_window_size=1))(
        draft, target, ids, torch.Generator().manual_seed(5)).tolist()
    deferred = [row for row in out if row[0] != 3]
    assert all(row == [3, 0, -1] for row in out if row[0] == 3)
    assert len(deferred) > 40 and all(row[0] in (0, 1, 2) and row[1:] == [-1, -1] for row in deferred)
    assert {row[0] for row in deferred} == {0, 1, 2}  # drawn from row 0's residual, not row 1's


def test_mrv2_fly_greedy_request_keeps_or_corrects_the_deferred_draft():
    """Greedy (temperature 0): the draft 3 is not the argmax 0 of a spread target (entropy 1.07 nats), so it is
    deferred; the window passes when the step-1 draft is that row's argmax (then the bonus row's argmax 3),
    and fails otherwise, emitting the step-0 argmax."""
    target = torch.tensor([[[0.35, 0.3, 0.25, 0.1], [0, 1.0, 0, 0], [0, 0, 0, 1.0]]])
    draft = torch.full((1, 2, 4), 0.25)

    def greedy_round(step_1_draft):
        args = mrv2_adapter.mrv2_inputs(draft, target, torch.tensor([[3, step_1_draft]]), torch.Generator())
        args["temperature"] = torch.zeros(1)
        sampled, count = vllm_mrv2.rejection_sample(**args, fly_window_size=1)
        return sampled[0, :int(count[0])].tolist()

    assert greedy_round(1) == [3, 1, 3]
    assert greedy_round(2) == [0]


def test_mrv2_synthetic_rates_decide_greedy_requests_too():
    target = torch.tensor([[[0.9, 0.1], [0.9, 0.1]]])
    args = mrv2_adapter.mrv2_inputs(torch.full((1, 1, 2), 0.5), target, torch.tensor([[1]]), torch.Generator())
    args["temperature"] = torch.zeros(1)
    for rate, expected in ((1.0, [1, 0]), (0.0, [0])):  # u < 1 always; u < 0 never
        sampled, count = vllm_mrv2.rejection_sample(**args, synthetic_conditional_rates=torch.tensor([rate]))
        assert sampled[0, :int(count[0])].tolist() == expected


def test_mrv2_fly_gate_keeps_a_peaked_target_strict():
    peaked = [0.0, 0.0, 0.95, 0.05]  # entropy 0.95 ln(1/0.95) + 0.05 ln 20 = 0.20 nats < 0.3
    assert _fly_round(peaked, window=1) == _fly_round(peaked, window=0)
    assert vllm_mrv2.fly_entropy(torch.log(torch.tensor(peaked))) == pytest.approx(0.1985, abs=1e-4)
    assert vllm_mrv2.fly_entropy(torch.log(torch.full((8,), 0.125))) == pytest.approx(3 * 0.125 * 2.0794, abs=1e-4)


def test_mrv2_fly_mode_is_lossy_by_design():
    """FLy keeps drafts the native test rejected: the check names lenient acceptance."""
    fn = functools.partial(vllm_mrv2.rejection_sample, fly_window_size=1)
    result = check(MRV2.wrap(fn), samples=1024, seed=1, inject=False, fail_fast=True,
                   scenarios=[s for s in default_suite() if s.name == "prefix-dependent V4 K2"])
    assert not result.passed and "more lenient than min(1, p/q)" in result.summary(), result.summary()


@pytest.mark.parametrize("keywords", [{"use_block_verification": True},
                                      {"synthetic_conditional_rates": torch.tensor([0.5, 0.5])}])
def test_mrv2_fly_refuses_the_modes_it_cannot_combine_with(keywords):
    verify = MRV2.wrap(functools.partial(vllm_mrv2.rejection_sample, fly_window_size=1, **keywords))
    with pytest.raises(ValueError, match="FLy"):
        verify(torch.full((1, 2, 4), 0.25), torch.full((1, 3, 4), 0.25), torch.tensor([[0, 1]]),
               torch.Generator().manual_seed(0))


def test_mrv2_unclamped_gumbel_key_is_certain_under_injection():
    flagged = inject_check(MRV2.wrap(vllm_mrv2.rejection_sample_zero_gumbel_key), rows=128, seed=3,
                           scenarios=injection_scenarios())
    assert flagged.verdict == "flagged", flagged.summary()
    assert "target probability 0" in flagged.findings[0].describe()
    clean = inject_check(MRV2.wrap(vllm_mrv2.rejection_sample), rows=128, seed=3, scenarios=injection_scenarios())
    assert clean.verdict == "not-flagged", clean.summary()


def test_mrv2_inputs_follow_the_kernels_layout():
    g = torch.Generator().manual_seed(0)
    draft = torch.full((2, 2, 3), 1 / 3)
    target = torch.tensor([[0.5, 0.5, 0.0]]).expand(2, 3, 3).contiguous()
    ids = torch.tensor([[0, 1], [2, 0]])
    args = mrv2_adapter.mrv2_inputs(draft, target, ids, g)
    assert args["draft_sampled"].tolist() == [0, 0, 1, 0, 2, 0]  # row 0 of each request precedes its drafts
    assert args["cu_num_logits"].tolist() == [0, 3, 6] and args["pos"].tolist() == [0, 1, 2, 0, 1, 2]
    assert args["expanded_idx_mapping"].tolist() == [0, 0, 0, 1, 1, 1]
    assert args["target_logits"].shape == (6, 3) and args["target_logits"][0, 2] == -torch.inf
    assert args["draft_logits"].shape == (2, 2, 3) and args["num_speculative_steps"] == 2
    sampled, num_sampled = vllm_mrv2.rejection_sample(**args)
    assert sampled.dtype == torch.int64 and num_sampled.dtype == torch.int32
    assert all(sampled[r, num_sampled[r]:].eq(-1).all() for r in range(2))


def test_mrv2_greedy_requests_emit_the_target_argmax_chain():
    draft = torch.full((1, 2, 3), 1 / 3)
    target = torch.tensor([[[0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]])
    args = mrv2_adapter.mrv2_inputs(draft, target, torch.tensor([[1, 2]]), torch.Generator().manual_seed(0))
    args["temperature"] = torch.zeros(1)
    sampled, num_sampled = vllm_mrv2.rejection_sample(**args)
    assert sampled[0, :num_sampled[0]].tolist() == [1, 0]  # draft 1 is the argmax; draft 2 is not: 0 instead


def test_mrv2_adapter_refuses_another_layout():
    with pytest.raises(SpecproofInputError, match="MRV2|model runner V2"):
        MRV2.wrap(vllm_v1.rejection_sample)


# -- SGLang 0.5.23's chain verifier -------------------------------------------------------------------------

SGLANG_CHAIN = sglang_chain_adapter.ADAPTER


CLASSIC = (sglang_chain.chain_speculative_sampling_triton, sglang_chain.chain_speculative_sampling_triton_le)
BLOCK = (sglang_chain.chain_block_speculative_sampling_triton, sglang_chain.chain_block_speculative_sampling_triton_le)


@pytest.mark.parametrize("layout", [CLASSIC[0], BLOCK[0]], ids=["classic", "block"])
def test_sglang_chain_layout_passes_through_its_adapter(layout):
    result = check(SGLANG_CHAIN.wrap(layout), samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False,
                   scenarios=two_scenarios())
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


@pytest.mark.parametrize("canonical, le", [CLASSIC, BLOCK], ids=["classic", "block"])
def test_sglang_chain_zero_coin_is_certain_under_injection(canonical, le):
    """The classic kernel's ``coin * q <= p`` and the block kernel's ``coin <= h`` (as released) FAIL on a zero
    coin; their strict forms do not."""
    flagged = inject_check(SGLANG_CHAIN.wrap(le), rows=256, seed=3, scenarios=injection_scenarios())
    assert flagged.verdict == "flagged", flagged.summary()
    assert "target probability 0" in flagged.findings[0].describe()
    clean = inject_check(SGLANG_CHAIN.wrap(canonical), rows=256, seed=3, scenarios=injection_scenarios())
    assert clean.verdict == "not-flagged", clean.summary()


def test_sglang_chain_last_id_fallback_emits_a_probability_zero_token():
    """A rejection whose residual max(p - q, 0) has no positive entry (here a target summing to 1/2, as a
    mask leaves it): the release emits V - 1, of target probability 0; the canonical layout falls back to p."""
    p = torch.tensor([0.5, 0.0, 0.0, 0.0])
    q = torch.tensor([0.5, 0.5, 0.0, 0.0])
    target = p.expand(64, 2, 4).contiguous()
    draft = q.expand(64, 1, 4).contiguous()
    ids = torch.ones((64, 1), dtype=torch.int64)  # p(1) = 0: always rejected
    released = SGLANG_CHAIN.wrap(sglang_chain.chain_speculative_sampling_triton_last_id)(
        draft, target, ids, torch.Generator().manual_seed(1))
    canonical = SGLANG_CHAIN.wrap(sglang_chain.chain_speculative_sampling_triton)(
        draft, target, ids, torch.Generator().manual_seed(1))
    assert (released[:, 0] == 3).all() and (canonical[:, 0] == 0).all() and (canonical[:, 1] == -1).all()


def _chain_call(kernel, candidates, coins, final, target, draft, **keywords):
    """One request through ``kernel`` with the caller's coins: the emitted tokens and the accepted count."""
    slots = candidates.shape[1]
    out = dict(predicts=torch.zeros(slots, dtype=torch.int32),
               accept_index=torch.full((1, slots), -1, dtype=torch.int32),
               accept_token_num=torch.zeros(1, dtype=torch.int32))
    kernel(**out, candidates=candidates, retrive_index=torch.arange(slots).reshape(1, slots), retrive_next_token=None,
           retrive_next_sibling=None, uniform_samples=coins, uniform_samples_for_final_sampling=final,
           target_probs=target, draft_probs=draft, **keywords)
    accepted = out["accept_token_num"].item()
    return out["predicts"][out["accept_index"][0, :accepted + 1]].tolist(), accepted


@pytest.mark.parametrize("q_x", [0.0, 1.5, float("nan")], ids=["zero", "above-one", "nan"])
def test_sglang_chain_rejects_a_draft_whose_draft_value_is_not_a_probability(q_x):
    """0.5.21 to 0.5.23 (``q_is_prob``): a drafted token with ``q`` outside ``(0, 1]`` is rejected whatever
    ``p`` and the coin, and the correction reads that ``q`` as 0: here ``max(p - q, 0) = p`` at every token
    (a ``q`` of 1.5 read as it is would leave ``(1/4, 0, 0)``, and token 0)."""
    target = torch.tensor([[[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]]])
    draft = torch.tensor([[[0.0, q_x, 1.0]]])
    for kernel in (sglang_chain.chain_speculative_sampling_triton,
                   sglang_chain.chain_speculative_sampling_triton_last_id):
        tokens, accepted = _chain_call(kernel, torch.tensor([[0, 1]]), torch.tensor([[0.0, 0.0]]),
                                       torch.tensor([0.5]), target, draft)
        assert accepted == 0 and tokens == [1], (kernel.__name__, tokens)  # p = (1/4, 3/4, 0) at 0.5: token 1


def test_sglang_chain_block_verification_keyword_is_the_block_round():
    """0.5.22's ``block_verification=True`` runs block verification in the same function, as the block function
    does, and it has no early stop.  x_1 = 1 with p = 1/2, q = 3/4: w_1 = 2/3; row 1 has p = q, so Z_1 = sum
    max(w_1 p - q, 0) = 0 and h_1 = 0 (every coin fails step 1, where token-wise verification with coin 0.9
    rejects too: 0.9 * 3/4 > 1/2); step 2 has h_2 = w_2 = 2/3 and its coin 0.5 passes, so both drafts are
    emitted, then the bonus from row 2 at 0.6."""
    quarter = [0.25, 0.25, 0.25, 0.25]
    target = torch.tensor([[[0.5, 0.5, 0.0, 0.0], quarter, quarter]])
    draft = torch.tensor([[[0.25, 0.75, 0.0, 0.0], quarter]])
    args = (torch.tensor([[0, 1, 3]]), torch.tensor([[0.9, 0.5, 0.0]]), torch.tensor([0.6]), target, draft)
    block = _chain_call(sglang_chain.chain_speculative_sampling_triton, *args, block_verification=True)
    assert block == _chain_call(sglang_chain.chain_block_speculative_sampling_triton, *args) == ([1, 3, 2], 2)
    assert _chain_call(sglang_chain.chain_speculative_sampling_triton, *args)[1] == 0


def test_sglang_block_verification_tests_the_weight_before_h():
    """The kernel passes step ``s`` only if ``coin < w_s`` and then ``coin < h_s``; ``h <= w`` wherever ``q >= 0``
    and the target sums to at most 1, but a negative draft entry on row 1 gives ``Z_1 = 1.25``, ``h_1 = 1.25 /
    1.75 > w_1 = 1/2``: a coin of 0.6 fails step 1 there, and step 2 (``h_2 = w_2 = 1/2``) fails at 0.9."""
    target = torch.tensor([[[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]])
    draft = torch.tensor([[[1.0, 0.0, 0.0], [-1.0, 0.5, 0.5]]])
    tokens, accepted = _chain_call(sglang_chain.chain_speculative_sampling_triton, torch.tensor([[0, 0, 1]]),
                                   torch.tensor([[0.6, 0.9, 0.0]]), torch.tensor([0.2]), target, draft,
                                   block_verification=True)
    assert accepted == 0 and tokens == [1], tokens  # max(p - q, 0) on row 0 is (0, 1/2, 0)


LOGITS_ENTRY = (sglang_chain.chain_speculative_sampling_from_logits_triton,
                sglang_chain.chain_speculative_sampling_from_logits_triton_le)


def test_sglang_chain_logits_entry_passes_through_its_adapter():
    verify = SGLANG_CHAIN.wrap(LOGITS_ENTRY[0])
    assert SGLANG_CHAIN.form_of(LOGITS_ENTRY[0]) is sglang_chain_adapter.LOGITS_FORM
    result = check(verify, samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False, scenarios=two_scenarios())
    assert result.passed, result.summary()


def test_sglang_chain_logits_entry_zero_coin_is_certain_under_injection():
    flagged = inject_check(SGLANG_CHAIN.wrap(LOGITS_ENTRY[1]), rows=256, seed=3, scenarios=injection_scenarios())
    assert flagged.verdict == "flagged" and "target probability 0" in flagged.findings[0].describe(), flagged.summary()
    clean = inject_check(SGLANG_CHAIN.wrap(LOGITS_ENTRY[0]), rows=256, seed=3, scenarios=injection_scenarios())
    assert clean.verdict == "not-flagged", clean.summary()


def test_sglang_chain_logits_form_hands_float32_log_probabilities_and_unit_temperatures():
    seen = {}

    def kernel(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_logits, temperatures,
               draft_probs, threshold_single, threshold_acc, deterministic):
        seen.update(logits=target_logits, temperatures=temperatures)
        LOGITS_ENTRY[0](predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
                        retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_logits,
                        temperatures, draft_probs)

    target = torch.tensor([[[0.5, 0.5, 0.0]] * 2], dtype=torch.bfloat16)
    draft = torch.tensor([[[0.25, 0.25, 0.5]]], dtype=torch.bfloat16)
    out = SGLANG_CHAIN.wrap(kernel)(draft, target, torch.tensor([[2]]), torch.Generator().manual_seed(0))
    logits = seen["logits"]
    assert logits.dtype == torch.float32 and logits.shape == (2, 3) and bool((logits[:, 2] == -torch.inf).all())
    assert torch.equal(seen["temperatures"], torch.ones(1))
    assert out.shape == (1, 2) and out[0, 0].item() in (0, 1) and out[0, 1].item() == -1  # p(2) = 0: rejected


def test_sglang_chain_logits_entry_softmax_matches_the_kernels_reduction():
    """``exp(logit / T_b - lse)`` per row, request ``b``'s temperature on all its slots; a ``-inf`` logit gives
    an exact 0, and an all-``-inf`` row gives NaN, as the kernel's reduction does."""
    logits = torch.tensor([[0.0, 1.0, -torch.inf], [2.0, -torch.inf, -torch.inf],
                           [0.5, -1.0, 3.0], [-torch.inf, -torch.inf, -torch.inf]])
    temperatures = torch.tensor([0.5, 2.0])
    law = sglang_chain._target_from_logits(logits, temperatures, 2)
    assert law.shape == (2, 2, 3)
    for b in range(2):
        assert torch.allclose(law[b, 0], torch.softmax(logits[2 * b] / temperatures[b], dim=-1))
    assert law[0, 1].tolist() == [1.0, 0.0, 0.0] and law[0, 0, 2].item() == 0.0
    assert bool(law[1, 1].isnan().all())


def test_sglang_chain_logits_entry_last_id_needs_a_draft_of_draft_probability_0():
    """The logits entry normalises its target, so its released ``V - 1`` fallback is reached only where
    ``p <= q`` everywhere and the draft is rejected: ``p == q`` and a drafted token that both laws forbid."""
    p = torch.tensor([0.5, 0.5, 0.0, 0.0])
    target = p.expand(64, 2, 4).contiguous()
    draft = p.expand(64, 1, 4).contiguous()
    ids = torch.full((64, 1), 2, dtype=torch.int64)  # q(2) = p(2) = 0: always rejected, residual all zero
    released = SGLANG_CHAIN.wrap(sglang_chain.chain_speculative_sampling_from_logits_triton_last_id)(
        draft, target, ids, torch.Generator().manual_seed(1))
    canonical = SGLANG_CHAIN.wrap(LOGITS_ENTRY[0])(draft, target, ids, torch.Generator().manual_seed(1))
    assert (released[:, 0] == 3).all() and (canonical[:, 0] < 2).all() and (canonical[:, 1] == -1).all()


def test_sglang_chain_logits_entry_last_id_is_not_reached_by_the_target_sums_scenario():
    """What the adapter's docstring states: on this entry the check's "target sums below 1" is renormalised,
    so the released fallback passes there, while the probabilities entry's fails."""
    scenarios = [s for s in default_suite() if s.name.startswith("target sums below 1")]
    assert scenarios, [s.name for s in default_suite()]
    logits = check(SGLANG_CHAIN.wrap(sglang_chain.chain_speculative_sampling_from_logits_triton_last_id),
                   samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False, scenarios=scenarios)
    probs = check(SGLANG_CHAIN.wrap(sglang_chain.chain_speculative_sampling_triton_last_id),
                  samples=2048, seed=1, max_detectable_tv=MAX_TV, inject=False, scenarios=scenarios)
    assert logits.passed, logits.summary()
    assert not probs.passed and any(f.certain for f in probs.findings), probs.summary()


# -- FlashInfer 0.6-0.7's generator API (seed and offset from the generator, or per request) -----------------

def test_flashinfer_seed_offset_layout_passes_through_its_adapter():
    adapter = get_adapter("flashinfer")
    assert adapter.form_of(flashinfer.chain_speculative_sampling_seed_offset).label.startswith("FlashInfer 0.2")
    result = check(adapter.wrap(flashinfer.chain_speculative_sampling_seed_offset), samples=2048, seed=1,
                            max_detectable_tv=MAX_TV, inject=False, scenarios=two_scenarios())
    assert result.passed, result.summary()
    assert result.detectable_tv <= MAX_TV


def test_flashinfer_rows_sharing_one_seed_fail():
    result = check(get_adapter("flashinfer").wrap(flashinfer.chain_speculative_sampling_seed_offset_first_seed),
                            samples=2048, seed=1, inject=False, fail_fast=True, scenarios=two_scenarios())
    assert not result.passed, result.summary()


def test_flashinfer_seed_offset_streams_are_per_request():
    draft = torch.full((3, 1, 4), 0.25)
    target = torch.full((3, 2, 4), 0.25)
    ids = torch.zeros((3, 1), dtype=torch.int32)
    seeds = torch.tensor([5, 5, 6])
    a = flashinfer.chain_speculative_sampling_seed_offset(draft, ids, target, seed=seeds, offset=torch.zeros(3))
    b = flashinfer.chain_speculative_sampling_seed_offset(draft, ids, target, seed=seeds, offset=torch.zeros(3))
    assert torch.equal(a[0], b[0])  # a function of (seed, offset) alone


# -- SGLang's block-verification chain kernel (chain_block_speculative_sampling_triton) ------------------------

def test_sglang_block_last_id_fallback_emits_a_probability_zero_token():
    """tau = 1 on a row whose target sums to 1/2 below its draft (p <= q everywhere): the release's normaliser
    (w_1 = 1, so the residual's own sum, not a scanned Z) is 0, no running sum passes 0 and it emits V - 1, of
    target probability 0; the canonical layout falls back to p.  Step 1 (p(x_1) = q(x_1)) has w = 1 and h = 1;
    step 2's draft has p = 0, so h_2 = 0."""
    target = torch.tensor([[[0.5, 0.5, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0]]]).expand(64, 3, 4)
    draft = torch.tensor([[[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]]).expand(64, 2, 4)
    ids = torch.tensor([[1, 1]]).expand(64, 2).contiguous()
    released = SGLANG_CHAIN.wrap(sglang_chain.chain_block_speculative_sampling_triton_last_id)(
        draft.contiguous(), target.contiguous(), ids, torch.Generator().manual_seed(1))
    canonical = SGLANG_CHAIN.wrap(sglang_chain.chain_block_speculative_sampling_triton)(
        draft.contiguous(), target.contiguous(), ids, torch.Generator().manual_seed(1))
    assert (released[:, :2] == torch.tensor([1, 3])).all()
    assert (canonical[:, :2] == torch.tensor([1, 0])).all() and (canonical[:, 2] == -1).all()


def _released_spelling(layout):
    """``layout`` behind SGLang's spelling: thresholds and ``deterministic`` without defaults."""
    def kernel(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_probs, draft_probs,
               threshold_single, threshold_acc, deterministic):
        layout(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
               retrive_next_sibling, uniform_samples, uniform_samples_for_final_sampling, target_probs, draft_probs,
               threshold_single, threshold_acc, deterministic)

    return kernel


def test_sglang_adapters_take_the_released_signature_without_defaults():
    """SGLang's chain kernels (and its JIT tree-kernel binding) take ``threshold_single, threshold_acc,
    deterministic`` without defaults; the adapters pass them positionally, so that spelling is accepted."""
    verify = SGLANG_CHAIN.wrap(_released_spelling(sglang_chain.chain_block_speculative_sampling_triton))
    p = torch.tensor([0.5, 0.5, 0.0])
    out = verify(p.expand(4, 1, 3).contiguous(), p.expand(4, 2, 3).contiguous(), torch.zeros((4, 1), dtype=torch.int64),
                 torch.Generator().manual_seed(0))
    assert out.shape == (4, 2) and bool((out[:, 0] == 0).all())  # p = q: the draft is always accepted
    tree = get_adapter("sglang-tree")
    assert tree.form_of(_released_spelling(sglang_tree.tree_speculative_sampling_target_only)) is tree.forms[0]


# -- SGLang DSpark's torch draft sampler (generate contract) ----------------------------------------------

def test_dspark_released_race_lets_a_zero_key_draft_a_token_of_draft_probability_0():
    from specproof.impls.runtime_layouts import sglang_dspark
    weights = torch.tensor([[0.0, 0.5, 0.5], [0.0, 0.5, 0.5]])
    noise = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]])
    # row 0: 0/0 = NaN at the zero weight and argmax lets it win; row 1: 0.5/0 = +inf, a token the law allows
    assert sglang_dspark.exponential_race(weights, noise, guard=False).tolist() == [0, 1]
    assert sglang_dspark.exponential_race(weights, noise, guard=True).tolist() == [1, 1]
    logits = torch.log(weights)
    step = sglang_dspark.sample_step_tokens(step_logits=logits, temperatures=torch.ones(2), exp_noise=noise,
                                            greedy_mask=torch.tensor([False, True]), guard=False)
    assert step.tolist() == [0, 1]  # a greedy row ignores its noise: argmax of p


def _dspark_check(fn, scenarios):
    return check(fn, "generate", scenarios=scenarios, samples=1024, progress=False, inject=True)


def test_released_dspark_emits_the_last_id_when_a_zero_key_drafts_a_token_both_laws_forbid():
    """On the zero-site ladder the draft law equals the target law (top-k 2) before the site: a zero key at a
    removed token drafts it, the chain test rejects it (p = 0), the residual max(p - q, 0) is all zero and the
    released kernel emits V - 1, a removed token. A certain finding, with its CPU rate."""
    from specproof.harness.check.contracts.generate.scenarios import zero_site_ladder
    from specproof.impls.runtime_layouts import sglang_dspark
    result = _dspark_check(sglang_dspark.dspark_generate_released, [zero_site_ladder(2)])
    assert result.verdict.value == "fail" and any(f.certain for f in result.findings), result.summary()
    assert result.injection["verdict"] == "flagged"
    finding = result.injection["findings"][0]
    assert (finding["kind"], finding["label"], finding["reproducible"]) == ("exponential", "zero", True), finding
    assert finding["edges"][0]["probability"] == "1/9007199254740992"  # 2^-53 per entry on the CPU generator
    assert "-> tokens [3," in finding["example"]  # V - 1 = 3, outside the top-2 support
    assert result.summary().startswith("FAIL (certain, rare: at most 8.9e-16 per round")


@pytest.mark.parametrize("guard, kernel", [(True, "chain_speculative_sampling_triton"),
                                           (True, "chain_speculative_sampling_triton_last_id"),
                                           (False, "chain_speculative_sampling_triton")])
def test_dspark_needs_both_released_halves_for_a_certain_finding(guard, kernel):
    """The guarded race never drafts a token of draft probability 0; the canonical kernel's empty residual falls
    back to p. Either fix alone leaves no impossible emission (sglang_dspark's docstring)."""
    from specproof.harness.check.contracts.generate.scenarios import pipeline_suite, zero_site_ladder
    from specproof.impls.pipelines.canonical import run_pipeline
    from specproof.impls.runtime_layouts import sglang_chain, sglang_dspark
    steps = sglang_dspark._pipeline(guard=guard, kernel=getattr(sglang_chain, kernel))

    def generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        return run_pipeline(steps, target, draft, prompt_ids, max_new_tokens, sampling, generator)

    scenarios = [zero_site_ladder(2)] + [s for s in pipeline_suite() if s.name == "top-k2-offsupport"]
    result = _dspark_check(generate, scenarios)
    assert not result.findings and result.injection["verdict"] == "not-flagged", result.summary()
    assert any(d.startswith("aten.exponential_ float32") for d in result.injection["draws"])
    assert any(e["kind"] == "exponential" and e["label"] == "zero" for e in result.injection["edges_tried"])
