"""The certainty probe ('position-disjoint supports', first in the default suite): its shape, the
position mix-ups it makes certain, what it costs the statistical scenarios, and a row budget's split
around it (driver.rows_per_scenario)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.harness import default_suite
from specproof.harness.check.driver import check
from specproof.harness.check.result import Verdict
from specproof.impls import get
from specproof.errors import SpecproofInputError


POSITION_MIX_UPS = ["target-rows-shifted", "continue-after-rejection", "bonus-from-wrong-row"]


def test_the_position_disjoint_pair_gives_every_position_its_own_support_and_comes_first():
    """Supports {2i, 2i+1} per position, tokens 6 and 7 of target probability 0 everywhere, q_0 half on
    them and q_1 = p_1 (scenarios._position_disjoint); the screening pass reads it first."""
    first = default_suite()[0]
    assert first.name == "position-disjoint supports" and not first.context_free
    real = first.realise("bfloat16")  # dyadic values: exact in every dtype
    target, draft = real.target.double().numpy()[:, 0], real.draft.double().numpy()[:, 0]
    for i in range(3):
        support = set(np.flatnonzero(target[i]))
        assert support == {2 * i, 2 * i + 1}
    assert draft[0, 6:].sum() == 0.5 and draft[0, :2].sum() == 0.5 and np.array_equal(draft[1], target[1])


def test_a_certainty_probe_leaves_the_statistical_streams_rows_as_they_were():
    """Stream numbers seed the rows: statistical scenarios are numbered among themselves, so a run
    with the probe draws the very rows of a run without it in every other scenario (plus the probe's)."""
    from specproof.harness.check.driver import PROBE_STREAMS, stream_numbers

    suite = default_suite(vocab=())
    assert stream_numbers(suite) == [PROBE_STREAMS] + list(range(len(suite) - 1))
    # the runtime-sized tiled probe that ends the default suite is numbered among the probes too
    assert stream_numbers(default_suite()) == stream_numbers(suite) + [PROBE_STREAMS + 1]
    fn = get("resample-from-target").fn
    without = check(fn, scenarios=suite[1:], samples=2_000, fail_fast=True, inject=False)
    with_probe = check(fn, scenarios=suite, samples=2_000, fail_fast=True, inject=False)
    assert with_probe.scenarios[0].rows == 4 and not with_probe.scenarios[0].findings
    assert [s.rows for s in with_probe.scenarios[1:]] == [s.rows for s in without.scenarios]
    assert with_probe.rows == without.rows + 4 and with_probe.findings[0].line() == without.findings[0].line()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_exact_rules_never_emit_a_probability_0_token_in_the_probe(dtype):
    """The probe's tables are dyadic (exact in every dtype): the exact rules pass it at its quota."""
    for name in ("canonical-ratio-race", "canonical-ratio-invcdf", "canonical-log-race", "block", "vllm-v1-layout",
                 "flashinfer-layout"):
        result = check(get(name).fn, scenarios=default_suite()[:1], samples=2_000, dtype=dtype,
                                inject=False, max_detectable_tv=0.02)
        assert result.verdict == Verdict.PASS and not result.findings, (name, dtype)
        assert result.scenarios[0].rows == 228 and result.scenarios[0].certainty_probe


def test_the_injection_passes_the_interlude_plans_for_are_those_of_the_default_check():
    from specproof.harness.check.contracts.batched import zero_target_scenarios
    from specproof.harness.check.driver import injection_passes

    result = check(get("canonical-ratio-race").fn, samples=64, max_detectable_tv=1.0)
    assert result.injection["passes"] == injection_passes(len(zero_target_scenarios())) == 7 * len(zero_target_scenarios())


def test_a_fixed_samples_pass_names_its_worst_statistical_scenario_and_states_the_probe_apart():
    result = check(get("canonical-ratio-race").fn, samples=12_000, max_detectable_tv=0.05, inject=False)
    text = result.summary()
    assert result.verdict == Verdict.PASS and "worst scenario: position-disjoint" not in text
    probe, tiled = result.scenarios[0], result.scenarios[-1]
    assert result.detectable_tv == max(s.detectable_tv for s in result.scenarios if not s.certainty_probe) < 0.05
    assert f"certainty probe 'position-disjoint supports' ({probe.rows} rows)" in text and probe.rows == 90
    assert tiled.certainty_probe and f"certainty probe '{tiled.name}' ({tiled.rows} rows)" in text and tiled.rows == 90


def test_a_row_budget_is_spent_on_the_statistical_scenarios_past_the_probe_s_few_rows():
    """budget=B: each of the two probes (first, and the runtime-sized tiled one last) takes the 90 rows that
    see a rate of 0.05 (ceil(ln 0.01 / ln 0.95)), the 13 statistical scenarios share the rest; at most B
    stream rows in all, and no probe's share unspent."""
    from specproof.harness.check.driver import rows_per_scenario

    suite = default_suite()
    probe, tiled = suite[0], suite[-1]
    assert probe.certainty_probe and tiled.certainty_probe and len(suite) == 15
    assert not any(s.certainty_probe for s in suite[1:-1])
    assert rows_per_scenario(14_000, suite, 0.05) == (14_000 - 2 * 90) // 13 == 1_063
    assert rows_per_scenario(15 * 90 - 1, suite, 0.05) == (15 * 90 - 1) // 15  # below the probes' rows: even
    assert rows_per_scenario(14_000, suite[1:-1], 0.05) == 14_000 // 13  # no probe: the even split
    assert rows_per_scenario(500, [probe, probe], 0.05) == 250  # probes only: the even split
    result = check(get("canonical-ratio-race").fn, budget=14_000, max_detectable_tv=0.05, inject=False)
    rows = [s.rows for s in result.scenarios]
    assert result.samples == 1_063 and rows == [90] + [1_063] * 13 + [90] and 14_000 - 13 <= sum(rows) <= 14_000
    # 13 x 64 rows and each probe's min(90, 64)
    for bad, message in ((0, "0 rows give 0 rows per scenario.*at least 960 rows"), (2.5e4, "whole number"),
                         (True, "whole number")):
        with pytest.raises(SpecproofInputError, match="budget.*" + message):
            check(get("canonical-ratio-race").fn, budget=bad)


@settings(max_examples=200, deadline=None)
@given(probes=st.integers(0, 3), statistical=st.integers(0, 14), tv=st.floats(0.005, 1.0),
       budget=st.integers(-10, 40_000))
def test_a_row_budget_never_over_spends_and_smallest_budget_is_the_least_that_gives_64_rows(probes, statistical, tv,
                                                                                          budget):
    """Stream rows of the split, counting a probe's min(R, rows) (engine.plan_quota), never exceed the
    budget, and smallest_budget is the least budget giving every statistical scenario 64 rows."""
    from specproof.harness.check.driver import rows_per_scenario, smallest_budget
    from specproof.harness.check.options import MIN_ROWS
    from specproof.harness.check.stats.statistics import rows_to_see_rate

    suite = default_suite(vocab=())  # the position-disjoint probe, then the 13 statistical scenarios
    chosen = [suite[0]] * probes + suite[1:1 + statistical]
    if not chosen:
        with pytest.raises(SpecproofInputError, match="scenarios"):
            rows_per_scenario(budget, chosen, tv)
        return
    per = rows_per_scenario(budget, chosen, tv)
    seen = rows_to_see_rate(tv)
    if per >= 0:
        assert probes * min(seen, per) + len(chosen[probes:]) * per <= budget
    least = smallest_budget(chosen, tv)
    assert rows_per_scenario(least, chosen, tv) >= MIN_ROWS > rows_per_scenario(least - 1, chosen, tv)


@pytest.mark.parametrize("name", POSITION_MIX_UPS)
def test_a_position_mix_up_is_a_certain_finding_in_the_position_disjoint_pair(name):
    """Each mutant emits a probability-0 token there with probability 1 or 1/2 per row: a FAIL by an
    impossible outcome at its first batch of 4 rows or soon after (2^-64 chance of none in 64 rows)."""
    suite = default_suite()[:1]
    result = check(get(name).fn, scenarios=suite, samples=64, fail_fast=True, inject=False)
    best = result.diagnosis()
    assert result.verdict == Verdict.FAIL and best.certain and best.family == "impossible"
    assert best.scenario == "position-disjoint supports" and result.rows <= 64


@pytest.mark.parametrize("name", POSITION_MIX_UPS)
def test_the_default_suite_flags_a_position_mix_up_in_its_first_rows(name):
    """With the whole default suite under fail_fast the certain finding comes in the screening pass."""
    result = check(get(name).fn, samples=20_000, fail_fast=True, seed=3)
    assert result.verdict == Verdict.FAIL and result.diagnosis().certain and result.rows <= 64
