"""The engine's guarantee: anytime-valid tests with adaptive allocation keep the family-wise
false-alarm rate at alpha (simulated null at the band's edge), and still flag real deviations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from specproof.harness.check.stats.engine import (LEVELS, SCREEN_ROWS, RowBatch, alpha_shares, run_streams,
                                            verdict_for)
from specproof.harness.check.stats.eprocess import SideEvidence, design_detectable_shift
from specproof.harness.check.events.family import FLOOR_FAMILY, EventFamily
from specproof.harness.check.result import Verdict
from specproof.harness.check.stats.statistics import detectable_shift
from specproof.errors import SpecproofInputError


def _family(expected_law: np.ndarray) -> EventFamily:
    """Every non-trivial union of tokens as an event (indicator rows)."""
    v = len(expected_law)
    subsets = [s for size in range(1, v) for s in itertools.combinations(range(v), size)]
    matrix = np.zeros((v, len(subsets)))
    for e, s in enumerate(subsets):
        matrix[list(s), e] = 1.0
    expected = matrix.T @ expected_law
    return EventFamily("first-token", lambda e: e, v, matrix, expected, [str(s) for s in subsets],
                       np.zeros(len(subsets), dtype=bool))


class CategoricalStream:
    """Rows are i.i.d. tokens of ``actual``; the events' exact law is ``expected``."""

    def __init__(self, name: str, expected: np.ndarray, actual: np.ndarray, tolerance: float, rng: np.random.Generator):
        self.name, self.vocab, self.k = name, len(expected), 1
        self.families = [_family(expected)]
        self.tolerance = tolerance
        self.actual, self.rng = actual, rng
        self.rows = 0

    def draw(self, rows: int) -> RowBatch:
        counts = self.rng.multinomial(rows, self.actual).astype(np.float64)
        self.rows += rows
        return RowBatch(rows, [counts])


LAW = np.array([0.4, 0.3, 0.2, 0.1])


def _edge_law(tau: float) -> np.ndarray:
    """Mass tau moved from token 3 to token 0: every event's mean is within tau, several exactly at +-tau."""
    law = LAW.copy()
    law[0] += tau
    law[3] -= tau
    return law


@pytest.mark.parametrize("fail_fast", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_simulated_null_false_alarm_rate_within_its_binomial_bound(fail_fast):
    """1,000 adaptive runs at alpha = 0.05 with the true law at the tolerance band's edge: the rate of
    runs with any finding is at most alpha, up to a one-sided binomial bound at level 1e-3."""
    alpha, runs, tau = 0.05, 1000, 0.01
    rng = np.random.default_rng(20261201 + fail_fast)
    alarms = 0
    for _ in range(runs):
        streams = [CategoricalStream(f"s{i}", LAW, _edge_law(tau), tau, rng) for i in range(3)]
        run = run_streams(streams, alpha=alpha, rows=3000, fail_fast=fail_fast, progress=False)
        alarms += any(r.findings for r in run.reports)
    bound = binom.ppf(1 - 1e-3, runs, alpha)
    assert alarms <= bound, f"{alarms} false alarms in {runs} runs (bound {bound:.0f} at alpha {alpha})"


def test_a_real_deviation_is_flagged_in_the_stream_that_shows_it_and_rows_go_there():
    rng = np.random.default_rng(1)
    quiet = [CategoricalStream(f"quiet {i}", LAW, LAW, 0.0, rng) for i in range(4)]
    shifted = LAW + np.array([0.08, 0.0, 0.0, -0.08])
    loud = CategoricalStream("loud", LAW, shifted, 0.0, rng)
    run = run_streams(quiet + [loud], alpha=1e-6, rows=200_000, fail_fast=True, progress=False)
    assert run.stop_reason == "fail-fast"
    flagged = [r for r in run.reports if r.findings]
    assert [r.name for r in flagged] == ["loud"]
    # the rows went where the evidence grew: each quiet stream got fewer than the loud one (whose last
    # batches shrink near its threshold, so it stops a few rows past its crossing)
    loud_rows = next(r.rows for r in run.reports if r.name == "loud")
    assert all(SCREEN_ROWS <= r.rows < loud_rows for r in run.reports if r.name != "loud")
    assert run.rows_at_first_flag == run.rows
    assert verdict_for(run.reports, [], 0.05) is Verdict.FAIL


def test_a_probability_zero_event_is_a_certain_finding():
    law = np.array([0.5, 0.5, 0.0])
    rng = np.random.default_rng(2)
    stream = CategoricalStream("zero", law, np.array([0.5, 0.49, 0.01]), 0.0, rng)
    stream.families[0].zero_tolerance[:] = stream.families[0].expected == 0
    run = run_streams([stream], rows=5000, progress=False)
    certain = [f for f in run.reports[0].findings if f.certain]
    assert certain and certain[0].event == "(2,)"


class ProbeStream:
    """A certainty probe: no events; ``impossible`` of its rows (per-row rate) are impossible outcomes."""

    certainty_probe = True

    def __init__(self, name: str, rate: float, rng: np.random.Generator):
        self.name, self.vocab, self.k, self.families, self.tolerance = name, 2, 1, [], 0.0
        self.rate, self.rng, self.rows = rate, rng, 0

    def draw(self, rows: int) -> RowBatch:
        self.rows += rows
        return RowBatch(rows, [], {"zero-token": int(self.rng.binomial(rows, self.rate))})


@pytest.mark.parametrize("level, tv, quota, fixed_quota", [("default", 0.02, 254, 228), ("default", 0.05, 101, 90),
                                                           ("thorough", 0.02, 919, 228)])
def test_a_certainty_probe_gets_the_rows_that_see_an_impossible_rate_of_the_target_tv(level, tv, quota, fixed_quota):
    """ceil(ln 0.01 / ln(1 - r)) rows for r = tv_factor * tv (no level minimum; worked out by hand:
    ln 100 / 0.018164 = 253.5, / 0.046044 = 100.02, / 0.0050125 = 918.7), at most a fixed ``rows``
    (then r = tv: ln 100 / 0.020203 = 227.9, / 0.051293 = 89.8), and its detectable TV is the rate
    those rows see with probability 0.99."""
    rng = np.random.default_rng(7)
    target = LEVELS[level].tv_factor * tv
    run = run_streams([ProbeStream("probe", 0.0, rng), CategoricalStream("s", LAW, LAW, 0.0, rng)],
                      level=level, max_detectable_tv=tv, progress=False)
    probe, other = run.reports
    assert probe.certainty_probe and not other.certainty_probe
    assert probe.rows == quota < LEVELS[level].min_rows
    assert probe.detectable_tv == pytest.approx(1 - 0.01 ** (1 / probe.rows)) and probe.detectable_tv <= target
    assert (1 - probe.detectable_tv) ** probe.rows == pytest.approx(0.01)
    assert other.rows >= LEVELS[level].min_rows and not probe.findings
    fixed = run_streams([ProbeStream("probe", 0.0, rng), CategoricalStream("s", LAW, LAW, 0.0, rng)],
                        rows=100, max_detectable_tv=tv, progress=False)
    assert [r.rows for r in fixed.reports] == [min(100, fixed_quota), 100]  # at most what sees tv itself
    more = run_streams([ProbeStream("probe", 0.0, rng)], rows=100_000, max_detectable_tv=tv, progress=False)
    assert more.reports[0].rows == fixed_quota


def test_a_certainty_probe_flags_its_impossible_outcome_and_is_read_first_but_cheaply():
    """Screening reads streams in order: a probe first flags a certain bug after its 4 rows; a bug
    seen elsewhere pays the probe's 4 screening rows and then the probe waits (far ahead in rows over
    quota) while the other streams deepen."""
    rng = np.random.default_rng(8)
    run = run_streams([ProbeStream("probe", 1.0, rng), CategoricalStream("s", LAW, LAW, 0.0, rng)],
                      rows=20_000, fail_fast=True, progress=False)
    assert run.rows == SCREEN_ROWS and run.reports[0].findings[0].certain
    shifted = np.array([0.5, 0.3, 0.2, 0.0])
    run = run_streams([ProbeStream("probe", 0.0, rng)] + [CategoricalStream(f"s{i}", LAW, shifted if i == 2 else LAW,
                                                                            0.0, rng) for i in range(4)],
                      rows=20_000, fail_fast=True, progress=False)
    assert run.stop_reason == "fail-fast" and run.reports[3].findings and run.reports[0].rows == SCREEN_ROWS


def test_the_design_process_keeps_the_fixed_sample_chernoff_power_at_the_quota():
    """At its planned rows the design bet rejects exactly where N KL(mean || mu) >= ln(2/a): the same
    detectable shift as the fixed-sample test with threshold ln(2/a)."""
    mu, rows, log_thr = 0.3, 50_000, 20.0
    side = SideEvidence(np.array([mu]), np.array([log_thr]), np.array([True]))
    side.plan(rows)
    side.update(np.array([0.0]), rows)  # only the row count matters for the power
    fixed = detectable_shift(mu, rows, log_thr + math.log(2.0))
    assert side.detectable_shift(0) == pytest.approx(fixed, rel=0.02)
    assert design_detectable_shift(mu, rows, float(side.design_bet[0]), log_thr) == side.detectable_shift(0)


def test_alpha_shares_sum_to_at_most_alpha():
    rng = np.random.default_rng(3)
    streams = [CategoricalStream(f"s{i}", LAW, LAW, 0.001, rng) for i in range(5)]
    total = 0.0
    for per_stream in alpha_shares(streams, 1e-6):
        for up, down in per_stream:
            total += float(np.exp(-up[np.isfinite(up)]).sum() + np.exp(-down[np.isfinite(down)]).sum())
    assert 0.999e-6 <= total <= 1e-6 * (1 + 1e-12)


def test_default_level_quota_reaches_the_target_power():
    rng = np.random.default_rng(4)
    stream = CategoricalStream("s", LAW, LAW, 0.0, rng)
    run = run_streams([stream], max_detectable_tv=0.02, progress=False)
    report = run.reports[0]
    assert report.detectable_tv <= 0.02
    assert LEVELS["default"].min_rows <= report.rows <= LEVELS["default"].max_rows
    thorough = run_streams([CategoricalStream("s", LAW, LAW, 0.0, rng)], level="thorough", progress=False)
    assert thorough.reports[0].detectable_tv <= 0.25 * 0.02 + 1e-9
    assert thorough.reports[0].rows >= LEVELS["thorough"].min_rows


def test_time_budget_stops_the_run_and_states_what_it_could_see():
    rng = np.random.default_rng(5)
    ticks = itertools.count()
    clock = lambda: next(ticks) * 0.5  # every reading of the clock advances half a second
    streams = [CategoricalStream(f"s{i}", LAW, LAW, 0.0, rng) for i in range(2)]
    run = run_streams(streams, time_budget=20.0, progress=False, clock=clock)
    assert run.stop_reason in ("time-budget", "complete")
    assert all(0 < r.rows for r in run.reports)
    assert all(0 < r.detectable_tv <= 1 for r in run.reports)


@pytest.mark.parametrize("kwargs, argument", [({"alpha": 0.0}, "alpha"), ({"level": "fast"}, "level"),
                                              ({"time_budget": -1.0}, "time_budget")])
def test_bad_engine_arguments_name_the_argument(kwargs, argument):
    rng = np.random.default_rng(6)
    with pytest.raises(SpecproofInputError) as info:
        run_streams([CategoricalStream("s", LAW, LAW, 0.0, rng)], progress=False, **kwargs)
    assert info.value.argument == argument


def _interlude_run(actual, *, found, fail_fast, after, rows=2000, seed=3):
    calls = []

    def interlude():
        calls.append(sum(s.rows for s in streams))
        return found

    rng = np.random.default_rng(seed)
    streams = [CategoricalStream(f"s{i}", LAW, actual, 0.0, rng) for i in range(3)]
    run = run_streams(streams, alpha=1e-6, rows=rows, fail_fast=fail_fast, progress=False,
                      interlude=(after, interlude))
    return run, calls


def test_the_interlude_runs_once_at_its_row_count_and_a_finding_stops_a_fail_fast_run():
    run, calls = _interlude_run(LAW, found=True, fail_fast=True, after=500)
    assert len(calls) == 1 and 500 <= calls[0] < 500 + 3000  # at the first read past 500 rows
    assert run.stop_reason == "fail-fast" and run.rows_at_first_flag == calls[0] == run.rows
    run, calls = _interlude_run(LAW, found=False, fail_fast=True, after=500)
    assert len(calls) == 1 and run.stop_reason == "complete" and run.rows == 3 * 2000


def test_the_interlude_runs_when_the_streams_finish_before_its_row_count():
    run, calls = _interlude_run(LAW, found=False, fail_fast=True, after=10**9, rows=200)
    assert calls == [600] and run.rows == 600


def test_a_stream_finding_first_means_no_interlude_under_fail_fast():
    shifted = LAW + np.array([0.08, 0.0, 0.0, -0.08])
    run, calls = _interlude_run(shifted, found=True, fail_fast=True, after=10**9)
    assert calls == [] and run.stop_reason == "fail-fast" and any(r.findings for r in run.reports)


def _with_floor(stream: CategoricalStream, floors: np.ndarray) -> CategoricalStream:
    """Add a floor family (``sides="lower"``) of the same unions: null ``E[Y] >= floor - band``."""
    base = stream.families[0]
    stream.families.append(EventFamily(FLOOR_FAMILY, base.key, base.n_keys, base.matrix, floors,
                                       list(base.names), np.zeros(base.size, dtype=bool), sides="lower"))
    draw = stream.draw

    def both(rows: int) -> RowBatch:  # the floor family reads the same token counts
        batch = draw(rows)
        return RowBatch(batch.rows, batch.counts * 2)

    stream.draw = both
    return stream


def test_a_floor_is_tested_on_its_lower_side_only():
    """Means far above their floors are no evidence (the upper side has no share of alpha and never
    rejects); a mean below its floor is flagged by the floor family; the power statement ignores floors."""
    rng = np.random.default_rng(5)
    means = _family(LAW).expected
    above = _with_floor(CategoricalStream("above", LAW, LAW, 0.0, rng), means - 0.3)
    up, down = alpha_shares([above], 1e-6)[0][1]
    assert np.isinf(up).all() and np.isfinite(down[means - 0.3 > 0]).all()
    run = run_streams([above], alpha=1e-6, rows=20_000, progress=False)
    assert not run.reports[0].findings
    plain = run_streams([CategoricalStream("plain", LAW, LAW, 0.0, np.random.default_rng(5))], alpha=1e-6,
                        rows=20_000, progress=False)
    assert run.reports[0].detectable_tv == pytest.approx(plain.reports[0].detectable_tv, rel=0.05)
    below = _with_floor(CategoricalStream("below", LAW, LAW, 0.0, rng), np.minimum(means + 0.05, 0.99))
    flagged = run_streams([below], alpha=1e-6, rows=20_000, fail_fast=True, progress=False).reports[0].findings
    assert flagged and {f.family for f in flagged} == {FLOOR_FAMILY}
    assert all(f.sides == "lower" and "every lossless rule gives at least" in f.line() for f in flagged)
    assert all(f.observed < f.expected for f in flagged)


def test_near_its_threshold_a_leader_gets_batches_of_half_its_need_not_a_doubling():
    """The loud stream's last batches shrink (APPROACH): none near the crossing is a doubling of its rows."""
    from specproof.harness.check.stats.engine import APPROACH_SHARE, MIN_APPROACH_BATCH

    rng = np.random.default_rng(1)
    loud = CategoricalStream("loud", LAW, LAW + np.array([0.08, 0.0, 0.0, -0.08]), 0.0, rng)
    sizes, draw = [], loud.draw
    loud.draw = lambda rows: (sizes.append(rows), draw(rows))[1]
    run = run_streams([loud], alpha=1e-6, rows=200_000, fail_fast=True, progress=False)
    assert run.stop_reason == "fail-fast" and len(sizes) >= 3
    before = np.cumsum([0] + sizes[:-1])
    assert sizes[-1] < before[-1] and sizes[-1] <= max(MIN_APPROACH_BATCH, APPROACH_SHARE * before[-1])


def test_screening_sees_the_stream_with_most_evidence_deeper_first_but_at_most_three_doublings_ahead():
    """Below FOCUS, the next batch goes to the highest score among the streams within SCREEN_LEAD of
    the least-seen one (so at most three doublings ahead); then it waits until the others catch up."""
    from specproof.harness.check.stats.engine import FOCUS, SCREEN_LEAD, _Ledger, _next_batch

    rng = np.random.default_rng(4)
    streams = [CategoricalStream(f"s{i}", LAW, LAW, 0.0, rng) for i in range(3)]
    ledgers = [_Ledger(s, thr) for s, thr in zip(streams, alpha_shares(streams, 1e-6))]
    for ledger in ledgers:
        ledger.plan(10_000)

    def fold(ledger, counts):
        ledger.fold(RowBatch(int(sum(counts)), [np.array(counts, dtype=np.float64)]))

    fold(ledgers[0], [2, 1, 1, 0])
    fold(ledgers[1], [1, 0, 0, 3])  # token 3, of probability 0.1, three times in four rows
    fold(ledgers[2], [2, 1, 1, 0])
    scores = [l.score() for l in ledgers]
    assert scores[1] > max(scores[0], scores[2]) and scores[1] < FOCUS
    grown = []
    while True:
        chosen, n = _next_batch(ledgers)
        if chosen is not ledgers[1]:
            break
        assert n == ledgers[1].rows  # a doubling
        fold(ledgers[1], [n // 4] * 4)  # rows at the exact law: its score stays the highest
        grown.append(ledgers[1].rows)
        assert len(grown) < 10
    assert grown == [8, 16, 32] and 2 * SCREEN_LEAD * ledgers[0].rows == 32
    assert chosen is not ledgers[1] and chosen.rows == 4 and n == 4


def test_a_time_budget_counts_the_streams_seconds_not_the_interludes():
    """The interlude (the check's RNG edge injection) has its own share of a time budget: its seconds
    do not cut the streams' budget short, and the streams' seconds stay within it."""
    now = [0.0]

    class Timed(CategoricalStream):
        def draw(self, rows):
            now[0] += 1e-3 * rows  # a millisecond a row
            return super().draw(rows)

    def interlude():
        now[0] += 30.0  # far longer than the streams' budget
        return False

    rng = np.random.default_rng(8)
    streams = [Timed(f"s{i}", LAW, LAW, 0.0, rng) for i in range(3)]
    run = run_streams(streams, time_budget=10.0, progress=False, clock=lambda: now[0], interlude=(200, interlude))
    streams_seconds = run.seconds - 30.0
    assert run.interlude_before_first_flag and run.rows_at_first_flag is None
    assert 8.0 <= streams_seconds <= 10.0 + 1e-3 * 8192  # the budget, up to one batch past it
    assert run.rows == sum(s.rows for s in streams) >= 8_000


@pytest.mark.slow
@pytest.mark.parametrize("deviation,band", [(0.0, 0.01), (0.02, 0.005)])
def test_the_drift_interval_covers_the_known_largest_deviation(deviation, band):
    """1,000 adaptive runs of 3 streams whose law deviates from the exact one by ``deviation`` on its
    worst event (mass moved from token 3 to token 0; no event moves more); with ``band`` below it the
    streams stop at their first rejection (a data-dependent time).  The joint 99% interval misses the
    true largest deviation in at most 1% of runs, up to a one-sided binomial bound at level 1e-3."""
    runs = 1000
    rng = np.random.default_rng(20261205 + int(1000 * deviation))
    misses = 0
    for _ in range(runs):
        streams = [CategoricalStream(f"s{i}", LAW, _edge_law(deviation), band, rng) for i in range(3)]
        run = run_streams(streams, alpha=1e-3, rows=4000, fail_fast=False, progress=False)
        for report in run.reports:
            low, high = report.drift[1], report.drift[2]
            misses += not (low <= deviation <= high)
    bound = binom.ppf(1 - 1e-3, runs, 0.01)
    assert misses <= bound, f"{misses} misses in {runs} runs (bound {bound:.0f})"


def test_the_drift_figure_brackets_a_clear_deviation():
    rng = np.random.default_rng(5)
    streams = [CategoricalStream("s", LAW, _edge_law(0.05), 0.1, rng)]
    estimate, low, high = run_streams(streams, alpha=1e-3, rows=20_000, progress=False).reports[0].drift
    assert 0 < low <= 0.05 <= high < 0.1 and abs(estimate - 0.05) < 0.02
