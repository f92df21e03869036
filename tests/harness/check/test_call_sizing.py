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
