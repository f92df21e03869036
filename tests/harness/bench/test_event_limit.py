"""harness/bench/event_limit.py: the rows the best single tested event needs, per member."""

import math

import pytest

from specproof.harness.bench.event_limit import best_side, event_limit_table, event_means, key_weights, prepare_suite
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.check.stats.statistics import bernoulli_kl
from specproof.proofs.laws.sequences import round_law
from specproof.proofs.laws.step_rules import get_step_rule


@pytest.fixture(scope="module")
def prepared():
    return prepare_suite(default_suite(), "float32", 1e-6)


def test_the_canonical_law_meets_every_event_expectation_and_has_no_side_beyond_its_band(prepared):
    """The keying of a law is the check's own: under P_good every event's mean is its exact P(A)."""
    canonical = get_step_rule("canonical")
    checked = 0
    for real, stream, thresholds in prepared:
        if not real.enumerable:
            continue
        law = round_law(real.toy_pair, canonical)
        means = event_means(law, real, stream.families)
        for fam, mean in zip(stream.families, means):
            assert mean == pytest.approx(fam.expected, abs=1e-9), (real.scenario.name, fam.name)
        assert best_side(real, stream, thresholds, key_weights(law, real, stream.families)) is None
        checked += 1
    assert checked >= 10


def test_a_known_bug_gets_the_rows_of_its_best_side(prepared):
    table = event_limit_table(["resample-from-target", "le-ratio-invcdf"], default_suite(), dtype="float32", alpha=1e-6)
    best = table["resample-from-target"]
    assert best is not None and math.isfinite(best["rows"]) and best["rows"] > 0
    beyond = best["bad_mean"] > best["edge"] if best["side"] == "above" else best["bad_mean"] < best["edge"]
    assert beyond
    assert best["rows"] * best["growth"] == pytest.approx(best["log_threshold"])
    assert 0.0 < best["growth"] < math.inf
    # log(1 + l (y - mu)) is concave in y: a [0, 1] law grows at least as fast as the indicator of the
    # same mean, whose best grid bet is within 5% of KL(m || mu) (harness.check.eprocess)
    assert best["growth"] >= 0.95 * bernoulli_kl(best["bad_mean"], best["edge"])
    assert best["log_threshold"] > math.log(1e6)  # a Bonferroni share of alpha = 1e-6
    # no other side of any scenario needs fewer rows
    for real, stream, thresholds in prepared:
        from specproof.harness.bench.member_rows import member_law

        law = member_law("resample-from-target", real) if real.enumerable else None
        if law is not None:
            side = best_side(real, stream, thresholds, key_weights(law, real, stream.families))
            assert side is None or side["rows"] >= best["rows"]
    # the u == 0 bug moves each event by about 2^-24, inside every band: no statistical side sees it
    assert table["le-ratio-invcdf"] is None


def test_the_prediction_is_the_size_of_what_a_check_in_that_scenario_spends():
    """Falsifiable against the engine itself: a fail-fast check of resample-from-target restricted to
    its best scenario stops within a small factor of the predicted rows (the mixture's regret and the
    doubling batches cost a few times more at most; it can stop early by luck, never by much)."""
    import statistics

    from specproof.harness.check.driver import check
    from specproof.impls import get

    suite = [s for s in default_suite() if s.name == "adversarial resample-from-p"]
    predicted = event_limit_table(["resample-from-target"], suite, dtype="float32", alpha=1e-6)["resample-from-target"]
    spent = [check(get("resample-from-target").fn, scenarios=suite, fail_fast=True, seed=seed,
                            inject=False, progress=False).rows for seed in range(5)]
    assert 0.5 * predicted["rows"] <= statistics.median(spent) <= 4 * predicted["rows"], (predicted["rows"], spent)
