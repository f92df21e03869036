"""Batched acceptance-site coverage (harness/check/contracts/batched/sites.py): every draft position of the
default suite meets a token of target probability 0 in the RNG edge injection, exactly counted."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from specproof.harness.check.contracts.batched import zero_target_scenarios
from specproof.harness.check.contracts.batched.scenarios import ZERO_SITE_POSITIONS, zero_site_ladder
from specproof.harness.check.contracts.batched.sites import site_reach
from specproof.harness.check.driver import check
from specproof.impls.verifiers.canonical import inverse_cdf_round, round_uniforms
from specproof.impls.zoo import accept_ratio_le


@pytest.mark.parametrize("position", [1, 2, 3, 4])
def test_a_zero_site_ladder_meets_its_position_only(position):
    assert site_reach(zero_site_ladder(position).realise("float32")) == \
        [Fraction(0)] * (position - 1) + [Fraction(3, 4)]


def test_site_reach_is_exact_on_a_hand_computed_scenario():
    # one-hot target p = (0, 1, 0), q uniform, K = 2: position 1 drafts a zero w.p. 2/3; token 1 is always
    # accepted (p/q = 3), so position 2 is reached w.p. 1/3 and meets a zero w.p. 2/3 there
    one_hot = next(s for s in zero_target_scenarios() if s.name == "one-hot target")
    assert site_reach(one_hot.realise("float32")) == [Fraction(2, 3), Fraction(2, 9)]


def _le_from_position_3(draft_probs, target_probs, draft_token_ids, generator):
    """``u < p/q`` at draft positions 1-2, ``u <= p/q`` from position 3 on: a zero coin there accepts a
    probability-0 token, a bug only the positions-3-and-4 sites can show."""
    from specproof.impls.kernels.acceptance import accept_ratio

    def acceptance(u, p_x, q_x):
        late = torch.arange(u.shape[1]) >= 2
        return torch.where(late, accept_ratio_le(u, p_x, q_x), accept_ratio(u, p_x, q_x))

    return inverse_cdf_round(acceptance, draft_probs, target_probs, draft_token_ids,
                             round_uniforms(draft_probs, generator))


def test_the_check_states_every_default_position_covered_and_catches_a_late_site_bug():
    result = check(_le_from_position_3, samples=500, max_detectable_tv=0.2, progress=False,
                   collect_all=True)  # the default stops the injection at the first flagging scenario
    coverage = result.coverage
    assert [s.site for s in coverage.sites] == [f"draft position {j}" for j in (1, 2, 3, 4)]
    assert not coverage.not_tested and coverage.worst_miss < 1e-6
    assert result.verdict.value == "fail" and any(f.certain for f in result.findings)
    assert any("zero site at draft position" in f.scenario for f in result.findings)
    assert "Acceptance-site coverage" not in result.summary()  # a FAIL states no scope; the JSON keeps it
    assert result.as_json()["coverage"]["worst_miss"] < 1e-6


def test_without_the_injection_the_coverage_says_the_zero_coin_was_not_tested():
    from specproof.impls.verifiers.canonical import canonical_ratio_invcdf

    result = check(canonical_ratio_invcdf, samples=300, max_detectable_tv=0.3, progress=False, inject=False)
    assert "the zero coin was NOT tested" in result.coverage.lines()[0]
    assert "Acceptance-site coverage (batched): 4 sites" in result.summary()
    assert all(s.miss == 1.0 for s in result.coverage.sites)


def test_ladders_are_injection_scenarios_only():
    from specproof.harness.check.contracts.batched.scenarios import default_suite

    names = {s.name for s in zero_target_scenarios()}
    assert {zero_site_ladder(j).name for j in ZERO_SITE_POSITIONS} <= names
    assert not any("zero site" in s.name for s in default_suite())  # the statistics' rows do not move
