"""Each call's rows are sized from the scenario's measured time per row (issue 45): a correct but slow
target is measured in smaller calls and gets a verdict; a call that is slow per row still times out."""

import time
from fractions import Fraction

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


@pytest.mark.parametrize("contract, target", [("batched", "specproof.impls:canonical_ratio_race"),
                                              ("tree", "specproof.impls.verifiers.tree_rrs:tree_rrs"),
                                              ("generate", "specproof.impls.pipelines.canonical:canonical_generate")])
def test_a_target_timed_as_slow_keeps_the_coverage_aim_on_every_site(monkeypatch, contract, target):
    """A loaded machine times the target as slow; the injection passes shrink toward INJECTION_MIN_ROWS,
    but never below the rows every acceptance site needs for its miss aim (without a --time-budget)."""
    from specproof.harness.check.contracts.coverage import COVERAGE_AIM, rows_for_aim
    from specproof.harness.check.driver import INJECTION_MIN_ROWS
    from specproof.harness.check.targets import load_target

    monkeypatch.setattr(Caller, "seconds_per_row", lambda self: 1.0)  # 1 s a row: sized down to the minimum
    fn, _ = load_target(target, contract)
    result = check(fn, contract, samples=64, progress=False)
    sites = result.coverage.sites
    assert rows_for_aim([s.per_row for s in sites]) > INJECTION_MIN_ROWS  # the floor is what holds the aim
    assert result.coverage.worst_miss <= COVERAGE_AIM
    assert min(s.injection_rows for s in sites) >= rows_for_aim([s.per_row for s in sites])


def test_rows_for_aim_is_the_fewest_rows_within_the_aim():
    from specproof.harness.check.contracts.coverage import miss_probability, rows_for_aim

    for rate in (Fraction(1, 16), Fraction(1, 1000), 0.0515):
        rows = rows_for_aim([rate, 0, 0.5])
        assert miss_probability(rate, rows) <= 1e-6 < miss_probability(rate, rows - 1)
    assert rows_for_aim([]) == 0 and rows_for_aim([1]) == 1
