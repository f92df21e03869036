"""harness/check/diagnosis.py: each zoo member's diagnosis names its bug class in runtime words, chosen
from what the run observed (the failing rows, the injected draw, the recorded draw dtypes)."""

import numpy as np
import pytest

from specproof.harness.check.diagnosis import classify_round_row
from specproof.harness.check.driver import check
from specproof.impls import get

# zoo member -> the bug class its seed-0 default check (2,000 rows per scenario) names, and words the line
# must hold.  stale-residual-buffer reads a zeroed draft row at position 1: there the correction IS drawn
# from the raw target, which is what its diagnosis says.
CERTAIN = {
    "continue-after-rejection": ("rejected-draft-emitted", "a rejected draft emitted"),
    "bonus-from-wrong-row": ("bonus-wrong-row", "bonus token (position K+1) taken from the wrong row"),
    "target-rows-shifted": ("correction-wrong-row", "correction token taken from the wrong target row"),
    "residual-clamped-tiny": ("residual-zero-mass", "residual with mass on tokens of target probability 0"),
    "le-ratio-invcdf": ("zero-draw-accepts", "a draw of exactly 0 accepts a probability-0 token"),
    "vllm-v1-layout-float32-ge": ("zero-draw-accepts", "a draw of exactly 0 accepts a probability-0 token"),
    "flashinfer-layout-empty-residual-last": ("residual-zero-mass", "residual with mass on tokens of target"),
    # v0's clamp(p - q, min=tiny) gives p = 0 tokens a tiny weight; where the residual is all zero (the target
    # sums below 1) that tiny weight is the whole law, and the statistics see it before any injected key of 0
    "vllm-v0-layout-clamped-residual": ("residual-zero-mass", "clamp(p - q, min=tiny)"),
}
STATISTICAL = {
    "resample-from-target": ("rejected-token-resampled-from-target", "rejected token resampled from the raw target"),
    "top1-acceptance": ("top-choice-acceptance", "the target's top choice (greedy or top-k acceptance)"),
    "greedy-while-sampling": ("top-choice-acceptance", "the target's top choice (greedy or top-k acceptance)"),
    "stale-residual-buffer": ("rejected-token-resampled-from-target", "rejected token resampled from the raw target"),
    "min-p-bonus-only": ("bonus-law", "bonus token (position K+1) drawn from another law"),
    "draft-top-k-in-verifier": ("every-token-tilted", "applied to one side only"),
    "flashinfer-layout-reused-uniform": ("correction-misses-residual", "misses part of the residual"),
}


def _diagnosed(name, **options):
    result = check(get(name).fn, samples=2_000, max_detectable_tv=0.05, progress=False, **options)
    assert result.flagged, result.summary()
    return result, result.diagnosed()


@pytest.mark.parametrize("name", sorted(CERTAIN))
def test_a_certain_zoo_finding_names_its_runtime_bug_class(name):
    result, found = _diagnosed(name)
    bug_class, words = CERTAIN[name]
    assert found.bug_class == bug_class and found.finding.certain, result.diagnosis_line()
    assert words in result.diagnosis_line() and result.summary().splitlines()[1] == result.diagnosis_line()
    assert result.stop_reason == "settled"  # a certain finding settles the verdict: the default run stops


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STATISTICAL))
def test_a_statistical_zoo_finding_names_its_runtime_bug_class(name):
    result, found = _diagnosed(name)
    bug_class, words = STATISTICAL[name]
    assert found.bug_class == bug_class, result.diagnosis_line()
    assert words in result.diagnosis_line()


@pytest.mark.slow
def test_target_only_temperature_is_a_tilt_of_every_token_once_every_quota_ran():
    result, found = _diagnosed("target-only-temperature", collect_all=True)
    assert found.bug_class == "every-token-tilted", result.diagnosis_line()


def _round(k=2, vocab=4):
    """Rows whose supports are disjoint by position: row j allows tokens {2j, 2j+1} (mod vocab)."""
    probs = np.zeros((k + 1, vocab))
    for j in range(k + 1):
        probs[j, (2 * j) % vocab] = probs[j, (2 * j + 1) % vocab] = 0.5
    return probs


@pytest.mark.parametrize("drafts, emitted, expected", [
    ([0, 2], [0, 2, 0], "bonus-wrong-row"),          # both drafts kept; row K+1 rules 0 out, row 1 allows it
    ([0, 3], [1, -1, -1], "unclassified"),            # a correction its row allows: nothing wrong in this row
    ([0, 3], [2, -1, -1], "correction-wrong-row"),    # row 1 rules 2 out, row 2 allows it
    ([3, 3], [3, 3, -1], "rejected-draft-emitted"),   # draft 3 has p = 0 at position 1 and is kept
    ([0, 2], [1, 0, -1], "not-the-drafts"),           # position 1 emits 1, not the draft 0, and the round goes on
])
def test_a_failing_row_is_classified_from_where_its_token_sits(drafts, emitted, expected):
    probs = _round()
    probs[2] = 0.0
    probs[2, 3] = 1.0  # row K+1 allows token 3 only
    assert classify_round_row(np.array(drafts), probs, np.array(emitted)) == expected


def test_a_token_no_row_allows_is_mass_on_zero_and_float16_multinomial_only_when_recorded():
    probs = _round()
    probs[:, 3] = 0.0
    probs[1, 2] = 1.0  # no row allows token 3
    assert classify_round_row(np.array([0, 2]), probs, np.array([0, 2, 3])) == "bonus-zero-mass"
    assert classify_round_row(np.array([0, 2]), probs, np.array([0, 2, 3]), multinomial_float16=True) == \
        "multinomial-float16"
    assert classify_round_row(np.array([0, 2]), probs, np.array([3, -1, -1])) == "residual-zero-mass"


def test_rules_a_short_run_cannot_tell_apart_are_named_together():
    """100 rows of the scenario built against resampling from p: the laws of 'ensemble' and
    'resample-from-target' both fit its excess sets within noise, so the diagnosis names both classes
    instead of asserting the closer one; the default run (more rows) names resample-from-target alone."""
    from specproof.harness.check.contracts import CONTRACTS
    from specproof.harness.check.options import CheckOptions

    options = CheckOptions.build("batched", dtype="float32", seed=0)
    suite = CONTRACTS["batched"].implementation().default_suite(options)
    scenario = next(s for s in suite if s.name == "adversarial resample-from-p")
    result = check(get("resample-from-target").fn, scenarios=[scenario], samples=100, fail_fast=True, inject=False,
                   progress=False, seed=0)
    found = result.diagnosed()
    classes = {found.bug_class, *found.alternatives}
    assert classes == {"ensemble-rule", "rejected-token-resampled-from-target"}, result.diagnosis_line()
    line = result.diagnosis_line()
    assert line.startswith("Diagnosis: either ") and "more rows tell them apart" in line
    assert found.as_json()["alternatives"] == list(found.alternatives)


def test_a_uniform_edge_is_an_acceptance_at_zero_unless_its_smallest_value_fails_too():
    """``u <= p/q`` fails at ``u == 0`` only; a key ``-log(1 - u)`` that collapses to 0 fails at the smallest
    positive uniform as well (Triton's ``2^-31``: ``1 - u`` rounds to 1), in the same scenario."""
    from specproof.harness.check.diagnosis import _injection_class
    from specproof.harness.check.contracts.prepared import ZERO_TOKEN

    zero = {"kind": "tl.rand", "label": "zero", "scenario": "s", "problem": ZERO_TOKEN}
    tiny = dict(zero, label="smallest-positive")
    elsewhere = dict(tiny, scenario="t")
    assert _injection_class(zero, [zero]) == "zero-draw-accepts"
    assert _injection_class(zero, [zero, elsewhere]) == "zero-draw-accepts"
    assert _injection_class(zero, [zero, tiny]) == _injection_class(tiny, [zero, tiny]) == "tiny-draw-key"
    assert _injection_class(dict(zero, kind="uniform"), [dict(zero, kind="uniform")]) == "zero-draw-accepts"
