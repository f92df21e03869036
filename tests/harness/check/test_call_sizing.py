"""Each call's rows are sized from the scenario's measured time per row (issue 45): a correct but slow
target is measured in smaller calls and gets a verdict; a call that is slow per row still times out."""

import time

import pytest

from specproof.harness.check.calls import Caller, VerifierError
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.check.driver import check
from specproof.impls import canonical_ratio_race

PER_ROW = 0.006  # seconds: 256 rows (the engine's batch after doubling from 4) take 1.5 s, past --timeout 1


def slow_but_correct(draft_probs, target_probs, draft_token_ids, generator):
    time.sleep(PER_ROW * draft_probs.shape[0])
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def test_a_slow_correct_verifier_gets_a_verdict_not_a_timeout():
    scenario = default_suite()[1]
    result = check(slow_but_correct, scenarios=[scenario], samples=512, inject=False, timeout=1.0, progress=False)
    assert result.verdict.value in ("pass", "underpowered") and result.scenarios[0].rows == 512
    assert not result.reproducibility


def test_rows_per_call_follow_the_measured_rate():
    call = Caller(canonical_ratio_race, None, timeout=2.0, hard=False)
    assert call.rows_per_call("s", 8192) == 8192  # nothing measured: the contract's rows
    call.by_scenario["s"] = [0.5, 4]  # 0.125 s a row: a quarter of 2 s is 4 rows
    assert call.rows_per_call("s", 8192) == 4
    call.seconds, call.rows = 1.0, 1_000_000  # another scenario's rate stands in for an unmeasured one
    assert call.rows_per_call("t", 8192) == 8192
    assert Caller(canonical_ratio_race, None, timeout=None, hard=False).rows_per_call("s", 8192) == 8192


def hangs_per_row(draft_probs, target_probs, draft_token_ids, generator):
    time.sleep(5.0)  # one row takes past the limit: no call size helps
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def test_a_call_slow_per_row_still_times_out():
    with pytest.raises(VerifierError, match="did not return within 1 s"):
        check(hangs_per_row, scenarios=[default_suite()[1]], samples=64, inject=False, timeout=1.0, progress=False)


def half_a_second_a_call(draft_probs, target_probs, draft_token_ids, generator):
    time.sleep(0.5)
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


@pytest.mark.parametrize("scenarios, budget", [(2, 6.0), (14, 4.0)], ids=["fits", "screening-past-budget"])
def test_the_time_budget_includes_the_last_batch_or_says_why_not(scenarios, budget):
    """A correct target at 0.5 s a call gets a verdict (never a time-out); the check ends within a tenth
    of the budget, or says why (14 scenarios need 14 calls, 7 s, before anything can stop)."""
    t0 = time.perf_counter()
    result = check(half_a_second_a_call, scenarios=default_suite()[:scenarios], time_budget=budget, progress=False)
    took = time.perf_counter() - t0
    assert result.verdict.value in ("pass", "underpowered")
    said = "past --time-budget" in (result.injection_summary or "")
    assert took <= 1.1 * budget or said
    if scenarios == 14:
        assert said and "needs at least one per scenario (14)" in result.injection_summary
