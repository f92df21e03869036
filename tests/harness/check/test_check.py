"""check (batched contract): exact implementations pass, the zoo is flagged, false alarms stay rare, bad
targets are usage errors."""

import math

import numpy as np
import pytest
import torch

from specproof.harness.check.driver import check
from specproof.harness import (ContractViolation, Scenario, VerifierError, assert_lossless,
                               default_suite, detectable_shift, samples_for_shift)
from specproof.harness.check.contracts.batched import INJECTION_ROWS, zero_target_scenarios
from specproof.harness.check.driver import REPRODUCIBILITY_ROWS, injection_passes
from specproof.harness.check.result import Verdict
from specproof.harness.check.intercept.precision import PROBE_ROWS
from specproof.harness.check.stats.statistics import bernoulli_kl, rejection_threshold
from specproof.impls import get, implementations
from specproof.errors import SpecproofInputError

import cli_targets

INJECTION_PASSES = injection_passes(len(zero_target_scenarios()))  # the default check's planned passes

# the runtime-layout records are checked through their adapters in tests/impls/adapters/
# transformers' own function (exact from release 5.25.0) runs one row at a time: its own tests
EXACT = [r for r in implementations(contract="batched", expected_exact=True)
         if r.rule != "greedy" and "compiled" not in r.name and "-layout" not in r.name and r.needs_extra is None]
ZOO = [r for r in implementations(contract="batched", expected_exact=False) if "transformers" not in r.name]
# damage on an event too rare to sample (u == 0 has probability 2^-24): caught by the RNG edge injection
GRID_ONLY = {"le-ratio-invcdf"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("record", EXACT, ids=lambda r: r.name)
def test_exact_implementations_pass(record, dtype):
    # 10,000 rows per scenario (the default depth is the slow test below)
    result = check(record.fn, dtype=dtype, samples=10_000, seed=1, max_detectable_tv=0.09)
    assert result.passed, result.summary()
    assert result.detectable_tv <= 0.09


@pytest.mark.parametrize("record", [r for r in ZOO if r.name not in GRID_ONLY], ids=lambda r: r.name)
def test_zoo_is_flagged_with_default_settings(record):
    result = check(record.fn, dtype="float32", fail_fast=True)
    assert not result.passed, f"{record.name} slipped through"
    assert result.findings


def test_u_zero_member_is_invisible_to_sampling_and_certain_under_injection():
    """u == 0 has probability 2^-24 per test: sampling alone cannot see it (the exact grid does,
    test_grid.py); the default check's RNG edge injection flags it with certainty, black-box."""
    for record in ZOO:
        if record.name in GRID_ONLY:
            assert check(record.fn, samples=20_000, max_detectable_tv=0.06, inject=False).passed
            result = check(record.fn, samples=2_000, max_detectable_tv=0.06)
            assert result.flagged and result.injection_findings, result.summary()
            assert all(f.certain for f in result.injection_findings)
            assert "2^-24" in result.injection_summary or "1/16777216" in result.injection_summary


def test_accept_rate_accepts_only_rare_draws_of_known_rate():
    """A ``u <= p/q`` verifier fails only through a zero uniform (rate bound ~1e-7 per round): the FAIL says
    it is certain and rare with its bound; ``accept_rate`` above the bound turns it into a PASS listing the
    accepted residue, below it keeps the FAIL; a finding of unknown rate (unaided) is never accepted."""
    record = get("le-ratio-invcdf")
    failed = check(record.fn, samples=2_000, max_detectable_tv=0.06)
    assert failed.verdict is Verdict.FAIL and all(f.rate is not None for f in failed.findings)
    bound = max(f.rate for f in failed.findings)
    assert 0 < bound < 1e-6
    assert "FAIL (certain, rare: at most" in failed.summary()
    kept = check(record.fn, samples=2_000, max_detectable_tv=0.06, accept_rate=bound / 2)
    assert kept.verdict is Verdict.FAIL and all(f.rate <= bound / 2 for f in kept.accepted_residues)
    accepted = check(record.fn, samples=20_000, max_detectable_tv=0.06, accept_rate=1e-6)
    assert accepted.verdict is Verdict.PASS and accepted.accepted_residues and not accepted.findings
    assert all(f.rate <= 1e-6 for f in accepted.accepted_residues)
    assert accepted.summary().startswith("PASS (accepting rare draws up to 1e-06 per round")
    assert "Accepted residues" in accepted.summary()
    assert accepted.as_json()["accept_rate"] == 1e-6 and accepted.as_json()["accepted_residues"]
    unaided = check(get("target-rows-shifted").fn, samples=2_000, max_detectable_tv=0.06, accept_rate=0.5)
    assert unaided.verdict is Verdict.FAIL
    assert any(f.rate is None for f in unaided.findings)  # a certain finding of unknown rate is kept
    assert not unaided.accepted_residues or all(f.rate is not None for f in unaided.accepted_residues)


@pytest.mark.parametrize("value", [0, 1, -1e-3, float("nan"), "1e-9", True])
def test_accept_rate_must_be_a_rate(value):
    with pytest.raises(SpecproofInputError, match="accept_rate"):
        check(get("canonical-log-race").fn, samples=200, accept_rate=value)


def test_accept_rate_needs_the_injection():
    with pytest.raises(SpecproofInputError, match="accept_rate.*injection"):
        check(get("canonical-log-race").fn, samples=200, accept_rate=1e-9, inject=False)


def test_zoo_flagged_in_float64_too():
    for record in ZOO:
        if record.name in GRID_ONLY:
            continue
        assert not check(record.fn, dtype="float64", fail_fast=True).passed, record.name


def test_greedy_is_checked_against_temperature_zero_targets():
    greedy = next(r for r in implementations(contract="batched") if r.rule == "greedy")
    assert check(greedy.fn, rule="greedy", samples=20_000, max_detectable_tv=0.1).passed
    assert not check(greedy.fn, fail_fast=True).passed  # not lossless for sampling


def test_conformance_to_a_named_rule_separates_block_from_canonical():
    block = next(r for r in implementations(contract="batched") if r.rule == "block")
    assert check(block.fn, samples=20_000, max_detectable_tv=0.06).passed  # lossless
    assert not check(block.fn, rule="canonical", samples=20_000, fail_fast=True).passed


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("record", EXACT, ids=lambda r: r.name)
def test_exact_implementations_pass_with_default_settings(record, dtype):
    assert check(record.fn, dtype=dtype).passed


def test_repeated_seeds_never_cry_wolf():
    """False-alarm design: alpha = 1e-6 per check; 12 independent checks of an exact verifier (100 seeds
    in float32 and float64: the slow test_false_alarms.py)."""
    suite = [s for s in default_suite() if "large" not in s.tags]
    for seed in range(12):
        result = check(cli_targets.exact, samples=2_000, seed=1000 + seed, scenarios=suite)
        assert not result.flagged, result.summary()


def _rejected(p: float, m: float, n: int, c: float) -> bool:
    """The fixed-sample Chernoff test the power solvers plan with: the mean past either threshold."""
    return m >= rejection_threshold(p, n, c) or m <= rejection_threshold(p, n, c, upper=False)


def test_chernoff_thresholds_false_alarm_rate_is_below_its_bound():
    """Simulated null: Bernoulli means at p; rejections at c = ln(2/0.05) stay below 5%."""
    rng = np.random.default_rng(0)
    c = math.log(2 / 0.05)
    for p in (0.01, 0.3, 0.5):
        for n in (50, 2000):
            means = rng.binomial(n, p, size=4000) / n
            rate = np.mean([_rejected(p, m, n, c) for m in means])
            assert rate <= 0.05


def test_power_calculation_matches_simulation():
    """A shift of detectable_shift(p, n, c) is caught in at least 99% of simulated runs."""
    rng = np.random.default_rng(1)
    c, p, n = math.log(2 * 100 * 4 / 1e-6), 0.4, 20_000
    shift = detectable_shift(p, n, c)
    means = rng.binomial(n, p + shift, size=2000) / n
    assert np.mean([_rejected(p, m, n, c) for m in means]) >= 0.99
    assert samples_for_shift(shift, p, c) <= n * 1.02


def test_statistics_helpers():
    assert bernoulli_kl(0.5, 0.5) == 0
    assert bernoulli_kl(0.1, 0.0) == math.inf
    assert rejection_threshold(0.5, 100, 1.0) > 0.5 > rejection_threshold(0.5, 100, 1.0, upper=False)
    assert _rejected(0.0, 1e-5, 100_000, 20.0)  # a probability-0 event: any occurrence


def test_small_bias_detected_only_above_the_reported_resolution():
    """A verifier that resamples from p on a fraction eps of its rows: flagged when eps*TV is well
    above the detectable TV, passed when far below."""
    def mixture(eps):
        def verify(draft_probs, target_probs, draft_token_ids, generator):
            good = cli_targets.exact(draft_probs, target_probs, draft_token_ids, generator)
            bad = cli_targets.lossy(draft_probs, target_probs, draft_token_ids, generator)
            pick = torch.rand(good.shape[0], generator=generator) < eps
            return torch.where(pick.unsqueeze(1), bad, good)
        return verify

    suite = [Scenario.from_laws("resample counterexample", "p=(1/2,1/2), q=(1,0)", [0.5, 0.5], [1, 0], 2)]
    strong = check(mixture(0.5), scenarios=suite, samples=20_000)
    assert not strong.passed
    faint = check(mixture(0.002), scenarios=suite, samples=20_000, max_detectable_tv=0.05)
    assert faint.passed and 0.002 * 0.25 < faint.detectable_tv <= faint.max_detectable_tv


def test_assert_lossless_message_shape():
    with pytest.raises(AssertionError) as info:
        assert_lossless(cli_targets.lossy, fail_fast=True)
    text = str(info.value)
    assert text.startswith("FAIL:") and text.splitlines()[1].startswith("Diagnosis: ")
    assert "Mismatched events:" in text and "where the exact law gives" in text and "nats, threshold" in text
    assert assert_lossless(cli_targets.exact, samples=2_000, max_detectable_tv=0.5).passed
    with pytest.raises(AssertionError, match="^UNDERPOWERED"):
        assert_lossless(cli_targets.exact, samples=2_000)


@pytest.mark.parametrize("name, error, fragment", [
    ("raises", VerifierError, "kernel exploded"),
    ("wrong_shape", ContractViolation, "shape"),
    ("wrong_dtype", ContractViolation, "int64"),
    ("out_of_range", ContractViolation, "outside"),
    ("holes", ContractViolation, "holes"),
    ("not_a_tensor", ContractViolation, "not a tensor"),
    ("on_meta", ContractViolation, "meta device"),
])
def test_misbehaving_verifiers_are_usage_errors(name, error, fragment):
    with pytest.raises(error, match=fragment):
        check(getattr(cli_targets, name), samples=200)


def test_hanging_verifier_times_out():
    with pytest.raises(VerifierError, match="did not return within"):
        check(cli_targets.hangs, samples=200, timeout=0.5)


def test_api_has_a_default_timeout_and_tells_the_verifiers_own_timeout_apart():
    from specproof.harness.check.options import CheckOptions

    assert CheckOptions.build().timeout == 120.0
    with pytest.raises(VerifierError, match="raised TimeoutError: backend queue timed out"):
        check(cli_targets.own_timeout, samples=200)
    with pytest.raises(VerifierError, match="did not return within 0.5 s"):
        check(cli_targets.swallows_everything, samples=200, timeout=0.5)
    with pytest.raises(VerifierError, match=r"called sys.exit\(0\)"):
        check(cli_targets.exits_zero, samples=200)


def test_bad_arguments():
    for kwargs in ({"samples": 10}, {"alpha": 2.0}, {"dtype": "int8"}, {"device": "tpu"},
                   {"device": "meta"}, {"device": "mps"}, {"timeout": float("nan")}, {"timeout": float("inf")},
                   {"seed": 10**25}, {"seed": -1}, {"max_detectable_tv": 0.0}, {"max_detectable_tv": 1.5},
                   {"scenarios": []}, {"samples": 100, "budget": 1000}):
        with pytest.raises(SpecproofInputError):
            check(cli_targets.exact, **kwargs)


def test_inputs_reused_as_scratch_do_not_cause_a_false_fail():
    result = check(cli_targets.scribbles_on_inputs, samples=2_000, max_detectable_tv=0.5)
    assert result.passed, result.summary()


def test_a_verifier_on_the_global_rng_is_a_reproducibility_finding():
    result = check(cli_targets.global_rng, samples=500)
    assert result.verdict is Verdict.FAIL and result.exit_code == 1
    assert [f.family for f in result.reproducibility] == ["reproducibility"]
    assert result.diagnosed().bug_class == "global-rng"
    assert "the generator argument does not control" in result.diagnosis_line()
    assert result.as_json()["reproducibility"][0]["statistic"] == "inf"


def test_a_time_budget_that_runs_out_before_the_interlude_still_runs_it():
    """The budget ends the streams (their clock, or the quotas it set) before they drew the interlude's
    rows (11,264 for a verifier faster than 0.68 ms a row; this one takes at least 0.1 ms, so under
    9,000 fit in the budget): the interlude runs anyway, at the end, within its share of the budget. On an
    idle machine the reproducibility pair fits and flags the global RNG; on a loaded one the pair may not fit
    its 0.1 s share at the measured speed, and the check says so and is not a PASS. Never is the interlude
    dropped because the streams ended ("not run: the run ended before it")."""
    import time


    def slowed(draft_probs, target_probs, draft_token_ids, generator):
        time.sleep(1e-4 * draft_token_ids.shape[0])
        return cli_targets.global_rng(draft_probs, target_probs, draft_token_ids, generator)

    result = check(slowed, time_budget=1.0, progress=False)
    text = result.summary()
    assert result.stop_reason in ("time-budget", "complete", "settled")
    assert result.rows < 2 * REPRODUCIBILITY_ROWS + INJECTION_ROWS * INJECTION_PASSES  # it was not yet due
    assert "the run ended before it" not in text and result.injection is not None, text
    if result.reproducibility:
        assert result.verdict is Verdict.FAIL
        assert [f.family for f in result.reproducibility] == ["reproducibility"]
    else:  # the pair did not fit at this machine's speed
        assert result.verdict is Verdict.UNDERPOWERED and "Reproducibility check not run: two runs of" in text, text


def test_a_deadline_fits_passes_at_the_measured_rate_and_shrinks_the_reproducibility_pair():
    from specproof.harness.check.calls import REPRODUCIBILITY_MIN_ROWS, Deadline

    rate = [0.01]
    deadline = Deadline(1.0, lambda: rate[0])
    assert deadline.fits(50) and not deadline.fits(200)
    assert deadline.pair_rows(256, 0.2) == 10  # both runs in the pair's 0.2 s
    assert deadline.pair_rows(4, 0.2) == 4
    assert deadline.pair_rows(256, 0.01) == REPRODUCIBILITY_MIN_ROWS  # its floor, while it fits the deadline
    rate[0] = 0.1
    assert deadline.pair_rows(256, 0.2) == 0 and "Reproducibility check not run" in deadline.pair_skipped()
    rate[0] = 0.0  # nothing timed yet: everything fits
    assert deadline.fits(10**9) and deadline.pair_rows(256, 0.0) == 256


@pytest.mark.parametrize("seconds_per_row, budget, pair_ran", [(0.02, 10.0, True), (0.1, 5.0, False)])
def test_a_time_budget_bounds_the_interlude_of_a_slow_verifier_and_lists_what_it_skipped(seconds_per_row, budget,
                                                                                         pair_ran):
    """At 0.02 s a row the injection's 28 passes of at least 64 rows would take 36 s; under a 10 s
    budget the interlude gets 1 s (a tenth), so passes are skipped and listed, and the check ends near
    the budget (the slack, the budget again and 2 s, allows a batch of the streams and a loaded machine).  At 0.1 s a row not even
    the pair's two runs of 8 rows fit its share of a 5 s budget: it is skipped, and said."""
    import time

    from specproof.harness.bench.check_goals import SlowedVerifier

    start = time.perf_counter()
    result = check(SlowedVerifier(get("canonical-ratio-race").fn, seconds_per_row), time_budget=budget,
                            progress=False)
    took = time.perf_counter() - start
    assert result.verdict is not Verdict.FAIL and took <= 2 * budget + 2, (took, result.injection_summary)
    assert result.injection["verdict"] == "incomplete" and result.injection["not_run"]
    assert "passes NOT run" in result.injection_summary
    assert bool(result.reproducibility) is False
    assert ("Reproducibility check not run" in result.injection_summary) is not pair_ran


def test_the_interlude_is_sized_from_calls_at_scale_not_from_the_per_call_cost_of_small_ones():
    """A verifier with a large cost per call looks slow per row on the 4-row screening calls; its
    rate per row is taken on calls of at least 256 rows once there are some (driver: pass_rows)."""
    from specproof.harness.check.calls import Caller
    from specproof.harness.check.contracts import batched
    from specproof.harness.check.options import CheckOptions

    cpu = torch.device("cpu")
    real = batched.prepare(default_suite()[0], CheckOptions.build(), cpu)
    call = Caller(get("canonical-ratio-race").fn, cpu, None, False)
    gen = torch.Generator().manual_seed(0)
    assert call.seconds_per_row() == 0.0
    call(real, real.sample(4, gen), 1)
    assert call.seconds_per_row() == pytest.approx(call.seconds / 4)
    small = call.seconds
    call(real, real.sample(512, gen), 2)
    assert call.scale_rows == 512 and call.seconds_per_row() == pytest.approx((call.seconds - small) / 512)


def test_fail_fast_runs_the_reproducibility_pair_after_the_streams_first_rows():
    """The reproducibility pair is part of the interlude (driver docstring: Order): a global-RNG
    verifier whose law is exact is flagged by it once the streams have drawn the interlude's rows, the
    injection is then skipped under fail_fast, and the pair's rows are counted whole."""

    result = check(cli_targets.global_rng, fail_fast=True, progress=False)
    assert result.verdict is Verdict.FAIL and result.stop_reason == "fail-fast" and result.injection is None
    assert [f.family for f in result.reproducibility] == ["reproducibility"]
    assert "reproducibility check flagged the verifier first" in result.injection_summary
    cost = 2 * REPRODUCIBILITY_ROWS + INJECTION_ROWS * INJECTION_PASSES
    assert result.rows_at_first_flag == result.rows >= cost
    probed = PROBE_ROWS * len(result.scenarios)  # the precision probe's one call per scenario comes first
    assert result.verifier_rows_at_first_flag == result.rows + 2 * REPRODUCIBILITY_ROWS + probed


def test_verdict_vocabulary_and_underpowered_bfloat16():
    assert [v.value for v in Verdict] == ["pass", "fail", "underpowered", "inconclusive"]  # inconclusive: --engine ray
    result = check(cli_targets.exact, dtype="bfloat16", samples=500)
    assert result.detectable_tv == 1.0 and result.verdict is Verdict.UNDERPOWERED and not result.passed
    assert result.exit_code == 3 and result.summary().startswith("UNDERPOWERED")


def test_diagnosis_names_the_bug_class_whose_law_fits_best():
    """The resample-from-target verifier: its rule predicts the observed excess-set means within
    sampling noise (a misfit of a few nats per scenario), every other known class misses by thousands."""
    result = check(cli_targets.lossy, samples=2_000, collect_all=True)
    best = result.diagnosis()
    assert best.rule == "resample-from-target" and best.position == 1 and best.exact_tv > 0
    misfit = result.misfit_by_rule()
    assert min(misfit, key=misfit.get) == "resample-from-target"
    assert misfit["resample-from-target"] < 100 and min(v for r, v in misfit.items() if r != best.rule) > 1000
    assert "predicts the observed excess-set means within noise" in result.diagnosis_line()
    assert result.diagnosis_line().startswith("Diagnosis: rejected token resampled from the raw target")


def test_the_summary_shows_the_ten_strongest_findings_and_counts_the_rest():
    result = check(get("target-rows-shifted").fn, samples=2_000, collect_all=True)
    assert len(result.findings) > 10
    lines = result.summary().splitlines()
    assert sum(line.startswith("  [") for line in lines) == 10
    assert f"  ... {len(result.findings) - 10} more in --json" in lines


def test_result_json_and_summary():
    result = check(cli_targets.exact, samples=1_000, max_detectable_tv=1.0)
    data = result.as_json()
    assert data["verdict"] == "pass" and data["rows"] == result.rows > 0
    assert data["exit_code"] == 0 and data["max_detectable_tv"] == 1.0 and data["diagnosis"] is None
    assert {s["name"] for s in data["scenarios"]} >= {"prefix-dependent V4 K2", "large vocabulary V1000 K4"}
    assert "Detectable TV" in result.summary()


def test_a_probability_0_token_is_certain_and_names_its_position():
    suite = [Scenario.from_laws("zero at position 2", "p=(1/2,1/2,0), q=(1/3,1/3,1/3)",
                                [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3], 2)]
    result = check(cli_targets.emits_impossible_second_token, scenarios=suite, samples=500)
    best = result.diagnosis()
    assert result.flagged and best.certain and best.family == "impossible" and best.position == 2
    assert "at token position 2" in result.diagnosis_line()


def test_progress_is_one_bar_with_percentage_or_lines_to_a_callable(capsys):
    suite = [s for s in default_suite() if "large" not in s.tags][:3]
    check(cli_targets.exact, samples=200, scenarios=suite, progress=True)
    err = capsys.readouterr().err
    assert "specproof check: 100%" in err and "600/600" in err
    lines = []
    check(cli_targets.exact, samples=200, scenarios=suite, progress=lines.append)
    # one line per batch the engine draws: every scenario seen, each up to its 200 rows, nothing rejected
    assert all(line.endswith("0 events rejected") for line in lines)
    assert {line.split(":")[0] for line in lines} == {s.name for s in suite}
    assert all(any(line == f"{s.name}: 200 rows, 0 events rejected" for line in lines) for s in suite)
    check(cli_targets.exact, samples=200, scenarios=suite, progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name, by_injection", [("top1-acceptance", False), ("le-ratio-invcdf", True)])
def test_default_run_flags_after_the_same_rows_as_fail_fast(name, by_injection):
    """Until the first finding a run with and without fail_fast calls the verifier with the same
    batches, the RNG edge injection's included (driver docstring: Order), so the default run (which
    goes on collecting findings) records the very row count at which a fail-fast run stops: for a bug
    the statistics see, and for a u == 0 bug only the injection sees."""

    def recording(calls):
        def verify(draft_probs, target_probs, draft_token_ids, generator):
            calls.append((tuple(target_probs.shape), hash(draft_token_ids.numpy().tobytes())))
            return get(name).fn(draft_probs, target_probs, draft_token_ids, generator)
        return verify

    fast_calls, full_calls = [], []
    fast = check(recording(fast_calls), samples=4_096, fail_fast=True, progress=False)
    full = check(recording(full_calls), samples=4_096, progress=False, collect_all=True)
    assert fast.flagged and full.flagged
    assert fast.stop_reason == "fail-fast" and full.stop_reason == "complete"
    assert full.rows_at_first_flag == fast.rows_at_first_flag == fast.rows
    assert len(full_calls) > len(fast_calls) and full_calls[:len(fast_calls)] == fast_calls
    called = sum(shape[0] for shape, _ in fast_calls)  # every verifier row of the fail-fast run
    assert fast.verifier_rows_at_first_flag == called
    if by_injection:  # the default run counts the injection whole; fail-fast stopped at the flagging pass
        assert called <= full.verifier_rows_at_first_flag <= 2 * called
    else:
        assert full.verifier_rows_at_first_flag == called
    assert bool(fast.injection_findings) == by_injection and bool(full.injection_findings) == by_injection
    assert (fast.rows >= INJECTION_ROWS * INJECTION_PASSES) == by_injection
    assert full.injection is not None and "not run" not in full.injection_summary  # it runs without fail_fast


def test_fail_fast_runs_the_statistics_before_the_injection():
    """With fail_fast the streams go first, up to the interlude's own rows: a bug they see is flagged
    without the reproducibility pair or the injection (and says so); a u == 0 bug they cannot see is flagged by the injection
    after those rows (driver docstring: Order)."""
    from specproof.impls import get

    seen = check(get("resample-from-target").fn, fail_fast=True, progress=False)
    assert seen.verdict == Verdict.FAIL and seen.injection is None
    assert "injection and reproducibility check not run: the statistics flagged the verifier first" in seen.injection_summary
    assert 0 < seen.rows_at_first_flag == seen.rows < INJECTION_ROWS * INJECTION_PASSES
    probed = PROBE_ROWS * len(seen.scenarios)  # the precision probe's one call per scenario
    assert seen.verifier_rows_at_first_flag == seen.rows + probed and not seen.reproducibility  # nothing else
    assert "reproducibility check not run" in seen.as_json()["injection_summary"]  # what --json readers see
    rare = check(get("le-ratio-invcdf").fn, fail_fast=True, progress=False)
    assert rare.verdict == Verdict.FAIL and rare.injection_findings and math.isinf(rare.findings[0].statistic)
    assert rare.rows_at_first_flag == rare.rows >= INJECTION_ROWS * INJECTION_PASSES


def test_a_shard_that_fails_for_good_still_leaves_the_certain_injection_finding():
    """Rows lost on a shard conclude nothing statistically (INCONCLUSIVE), but the RNG edge injection
    needs no shard: a u == 0 bug is still a certain FAIL."""
    from specproof.harness.check.scale.ray_engine import ShardFailure

    class LostShard:
        def __init__(self, stream):
            self.stream = stream
            self.name, self.vocab, self.k = stream.name, stream.vocab, stream.k
            self.families, self.tolerance = stream.families, stream.tolerance

        def draw(self, rows):
            raise ShardFailure(f"{self.name}: piece lost for good")

    class FailingEngine:
        def shard(self, streams, verify, options):
            return [LostShard(s) for s in streams]

        def release(self):
            pass

    rare = check(get("le-ratio-invcdf").fn, samples=1_024, engine=FailingEngine(), progress=False)
    assert rare.verdict == Verdict.FAIL and rare.injection_findings and rare.inconclusive
    assert rare.rows_at_first_flag == 0 and rare.verifier_rows_at_first_flag > 0  # the interlude's rows alone
    assert "First finding after 0 rows" in rare.summary()
    exact = check(get("canonical-ratio-race").fn, samples=1_024, engine=FailingEngine(), progress=False)
    assert exact.verdict == Verdict.INCONCLUSIVE and exact.injection is not None and not exact.injection_findings


def test_a_time_budget_bounds_a_hanging_call_too():
    """A verifier that hangs is stopped at the end of the time budget (plus a tenth of it), not at the
    120 s per-call limit, and the error names the budget."""
    import time

    calls = []

    def hangs_later(draft_probs, target_probs, draft_token_ids, generator):
        calls.append(1)
        if len(calls) > 20:
            time.sleep(60)
        return get("canonical-ratio-race").fn(draft_probs, target_probs, draft_token_ids, generator)

    start = time.perf_counter()
    with pytest.raises(VerifierError, match=r"did not return before the time budget \(3 s\) ran out") as info:
        check(hangs_later, time_budget=3.0, progress=False)
    assert time.perf_counter() - start < 3.0 + 1.0 + 2.0 and "--time-budget" in info.value.fix


def test_a_sparse_output_is_a_contract_violation_not_a_traceback():
    def sparse(draft_probs, target_probs, draft_token_ids, generator):
        return get("canonical-ratio-race").fn(draft_probs, target_probs, draft_token_ids, generator).to_sparse()

    with pytest.raises(ContractViolation, match="sparse_coo tensor") as info:
        check(sparse, samples=64, inject=False, progress=False)
    assert "to_dense" in info.value.fix
