"""Generate acceptance-site coverage (harness/check/contracts/generate/sites.py): every round position of the suite
meets a token of target probability 0 in the RNG edge injection, exactly counted; a ``<=`` bug at a late round
position only the zero-site ladders reach is a certain FAIL."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from specproof.harness import Sampling
from specproof.harness.check.contracts import generate as generate_contract
from specproof.harness.check.contracts.generate.models import TablePair
from specproof.harness.check.contracts.generate.scenarios import (ZERO_SITE, PipelineScenario, pipeline_suite,
                                                                  with_sampling, zero_site_ladder)
from specproof.harness.check.contracts.generate.sites import generate_coverage, site_reach
from specproof.harness.check.driver import check, injection_passes
from specproof.harness.check.intercept.injection import inject_check, scenario_passes
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.result import Verdict
from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts, rows_at
from specproof.impls.kernels.sampling import correction_weights, draw_multinomial
from specproof.impls.pipelines.canonical import CANONICAL, canonical_generate, run_pipeline

CPU = torch.device("cpu")
OPTIONS = CheckOptions.build("generate")
SUITE = {s.name: s for s in pipeline_suite()}


def _prepared(scenario: PipelineScenario):
    return generate_contract.prepare(scenario, OPTIONS, CPU)


@pytest.mark.parametrize("position", [1, 2, 3, 4, 5, 6])
def test_a_zero_site_ladder_meets_its_round_position_only_in_every_row(position):
    assert site_reach(_prepared(zero_site_ladder(position))) == [Fraction(0)] * (position - 1) + [Fraction(1)]


def test_site_reach_is_exact_on_a_hand_computed_pair():
    # top-k 2 with equal kept logits: p and q are exactly (1/2, 1/2) on their kept tokens.  Token 1: p on
    # {0, 1}, q on {1, 2}: a zero (token 2) w.p. 1/2; token 1 accepted w.p. min(p, q) = 1/2.  After token 1
    # (class 1): p on {2, 3}, q on {0, 3}: a zero (token 0) w.p. 1/2, so position 2 meets one w.p. 1/4
    low = -4.0
    target, draft = np.full((2, 4, 4), low), np.full((2, 4, 4), low)
    target[0, 0, [0, 1]] = draft[0, 0, [1, 2]] = 1.0
    target[1, 1, [2, 3]] = draft[1, 1, [0, 3]] = 1.0
    pair = TablePair("hand", (0,), target, draft)
    scenario = PipelineScenario("hand", pair, Sampling(1.0, top_k=2), 2)
    assert site_reach(_prepared(scenario)) == [Fraction(1, 2), Fraction(1, 4)]


def test_ladders_are_injection_only_and_cover_the_positions_not_met_in_every_row():
    prepared = [_prepared(s) for s in generate_contract.default_suite(OPTIONS)]
    names = [s.name for s in generate_contract.injection_scenarios(prepared, OPTIONS, CPU)]
    # top-k2-offsupport drafts a processed-away token first in every row: position 1 needs no ladder
    assert names == ["top-k2-offsupport", "combo"] + [f"{ZERO_SITE} {j}" for j in range(2, 7)]
    assert not any(ZERO_SITE in s.name for s in generate_contract.default_suite(OPTIONS))
    # a sampling setting without filters has no target zero: every position gets its ladder
    plain = [_prepared(s) for s in with_sampling(pipeline_suite(), Sampling(0.7), None)]
    names = [s.name for s in generate_contract.injection_scenarios(plain, OPTIONS, CPU)]
    assert names == [f"{ZERO_SITE} {j}" for j in range(1, 7)]


def test_a_ladder_runs_only_its_zero_edges():
    assert scenario_passes() == 7 and scenario_passes(("zero",)) == 3 and injection_passes(2) == 14
    result = inject_check(canonical_generate, contract="generate", rows=64, scenarios=[zero_site_ladder(3)])
    # the canonical pipeline draws uniforms (torch.rand) and multinomials (not injected by default): baseline
    # and the uniform zero only, none of smallest-positive / largest-below-1
    assert result.passes == 2 and [e.label for e in result.edges_tried] == ["zero"]
    assert result.verdict == "not-flagged"


def test_the_check_prints_the_coverage_table_and_writes_it_to_the_json_and_the_report():
    from specproof.harness.report.targets import _coverage_cell, check_row

    result = check(canonical_generate, "generate", scenarios=[SUITE["top-k2-offsupport"]], samples=300,
                   max_detectable_tv=0.3, progress=False)
    coverage = result.coverage
    assert [s.site for s in coverage.sites] == [f"round position {j}" for j in range(1, 6)]
    # each site has one covering scenario here: missed w.p. (1 - a)^rows, a = 1/16 on the ladders; the rows of
    # a pass are 256 unless a loaded machine makes the pipeline slower than the pass sizing allows
    assert not coverage.not_tested and all(0 < s.injection_rows <= 256 for s in coverage.sites)
    for s in coverage.sites:
        assert s.miss == pytest.approx(float((1 - s.per_row) ** s.injection_rows), rel=1e-9)
    assert all(s.per_row == Fraction(1, 16) for s in coverage.sites[1:])
    assert coverage.worst_miss == max(s.miss for s in coverage.sites)
    assert coverage.sites[0].scenarios == ("top-k2-offsupport",) and coverage.sites[0].probe_rows == 300
    assert coverage.sites[4].scenarios == (f"{ZERO_SITE} 5",) and coverage.sites[4].probe_rows == 0
    summary = result.summary()
    assert "Acceptance-site coverage (generate): 5 sites" in summary and "round position 5: zero site" in summary
    assert result.as_json()["coverage"]["contract"] == "generate"
    detail = check_row("canonical_generate", "generate", "cpu", result)["detail"]
    assert _coverage_cell(detail["coverage"]) == f"5 sites, zero coin missed w.p. <= {coverage.worst_miss:.2g}"


def test_without_the_injection_the_coverage_says_the_zero_coin_was_not_tested():
    result = check(canonical_generate, "generate", scenarios=[SUITE["top-k2-offsupport"]], samples=300,
                   max_detectable_tv=0.3, progress=False, inject=False)
    assert "the zero coin was NOT tested" in result.coverage.lines()[0]
    assert all(s.miss == 1.0 for s in result.coverage.sites)


def test_a_suite_without_table_models_states_every_site_not_tested():
    other = SimpleNamespace(name="hub model", pair=object(), new_tokens=3)
    coverage = generate_coverage([other], [], Fraction(1, 16), {}, {})
    assert not coverage.sites and len(coverage.not_tested) == 3
    assert all("table models only" in line for line in coverage.not_tested)


LATE = 6  # round position of the late `<=` (the default suite's largest N)


def _late_le_verify(r, generator):
    """``u < p/q`` at round positions 1..K-1, ``u <= p/q`` at the last (``K = 6``): a zero coin there accepts a
    draft of target probability 0; no statistical scenario's first round emits a sixth draft."""
    q, p, drafts = r.q_verify, r.p, r.drafts
    u = torch.rand(drafts.shape, dtype=q.dtype, device=q.device, generator=generator)
    p_x, q_x = drafted_probs(p, drafts), drafted_probs(q, drafts)
    late = torch.arange(r.k, device=u.device) == r.k - 1
    n = leading_accepts(torch.where(late, (q_x > 0) & (u <= p_x / q_x), accept_ratio(u, p_x, q_x)))
    weights = correction_weights(rows_at(p, n), rows_at(q, n.clamp(max=r.k - 1)), n == r.k)
    return assemble_emitted(drafts, n, draw_multinomial(weights, generator))


LATE_LE = CANONICAL.but(verify=_late_le_verify, k_of_round=lambda index, generator: LATE)


def late_le_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    return run_pipeline(LATE_LE, target, draft, prompt_ids, max_new_tokens, sampling, generator)


def test_a_late_position_le_bug_is_found_by_its_ladder_only():
    scenarios = [SUITE["top-k2-offsupport"], SUITE["prefix-dependent"]]
    result = check(late_le_generate, "generate", scenarios=scenarios, samples=300, max_detectable_tv=0.3,
                   progress=False)
    found = [f for f in result.findings if f.family == "rng-injection"]
    assert result.verdict is Verdict.FAIL and found and all(f.certain for f in found)
    assert all(f"{ZERO_SITE} {LATE}" in f.event for f in found), [f.event for f in found]
    # a FAIL keeps its coverage in the JSON (its figure follows the pass rows, sized by the measured speed: a
    # loaded machine timing 300-row calls sizes them down, 2.3e-04 was seen under CI's -n 2)
    assert 0 < result.as_json()["coverage"]["worst_miss"] == result.coverage.worst_miss < 1


@pytest.mark.slow
def test_the_late_position_le_mutant_fails_on_50_of_50_seeds():
    # the every-position mutant (accept_le_generate): tests/harness/check/test_zero_coin_seeds.py
    verdicts = [check(late_le_generate, "generate", seed=seed, fail_fast=True, progress=False).verdict
                for seed in range(50)]
    assert verdicts == [Verdict.FAIL] * 50
