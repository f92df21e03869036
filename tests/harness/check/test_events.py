"""harness/check/contracts/batched/families.py: the later-token and correction-floor families (expectations, validity, power)."""

import ast
from fractions import Fraction

import numpy as np
import pytest

from specproof.proofs.laws.sequences import target_law

from specproof.harness.bench.event_limit import event_means
from specproof.harness.check.contracts.batched.families import build_families
from specproof.harness.exact.tolerances import step_tolerance
from specproof.harness.check.driver import check
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.impls import get


def _scenario(name):
    return next(s for s in default_suite() if s.name == name)


@pytest.mark.parametrize("name", ["runtime-style context-free", "prefix-dependent V3 K3", "large vocabulary V1000 K4"])
def test_later_token_events_are_sums_of_full_length_prefix_events(name):
    """Each event is a union of full-length continued sequences (the j-th class in the union): its
    contributions and expectation are those sequences' lossless columns and probabilities, summed."""
    real = _scenario(name).realise("float32", "cpu")
    fams = {f.name: f for f in build_families(real)}
    later, lossless = fams["later-token"], fams["lossless"]
    c, k = real.classes, real.k
    assert later.n_keys == lossless.n_keys and later.size == k * (2 ** (c - 1) - 1)
    full = [i for i, n in enumerate(lossless.names) if lossless.positions[i] == k + 1]
    for e, label in enumerate(later.names):  # each event: the full-length sequences whose j-th class is in it
        j = later.positions[e]
        union = ast.literal_eval(label[label.index("{"):])
        members = [i for i in full if ast.literal_eval(lossless.names[i].split("= ")[1])[j - 1] in union]
        assert later.expected[e] == pytest.approx(lossless.expected[members].sum(), abs=1e-12)
        assert later.matrix[:, e] == pytest.approx(lossless.matrix[:, members].sum(axis=1), abs=1e-12)
    assert ((later.matrix >= 0) & (later.matrix <= 1)).all()


@pytest.mark.parametrize("name", ["runtime-style context-free", "prefix-dependent V3 K3", "adversarial top-k"])
def test_later_token_expectations_are_the_target_laws_marginals(name):
    """Independently of the lossless family: the j-th token's marginal of the exact target law of
    K+1 tokens, summed over each event's union; one of each complementary pair is kept."""
    real = _scenario(name).realise("float32", "cpu")
    later = next(f for f in build_families(real) if f.name == "later-token")
    law = target_law(real.rounded.toy_pair)
    assert real.classes == real.vocab
    for e, label in enumerate(later.names):
        j = later.positions[e]
        union = ast.literal_eval(label[label.index("{"):])
        assert 0 in union
        exact = sum((w for z, w in law.items() if z[j - 1] in union), Fraction(0))
        assert later.expected[e] == pytest.approx(float(exact), abs=1e-12), label
        assert later.zero_tolerance[e] == (exact == 0)
    assert later.size == real.k * 2 ** (real.vocab - 1) - real.k  # unions with token 0, the full set excluded


def test_a_bonus_only_bug_is_flagged_by_the_token_at_its_position():
    """min-p applied to the bonus draw alone changes only the (K+1)-th token's law: the later-token
    event at that position is the first finding in the runtime-style scenario."""
    suite = [_scenario("runtime-style context-free")]
    result = check(get("min-p-bonus-only").fn, scenarios=suite, fail_fast=True, seed=0, inject=False,
                            progress=False)
    assert result.findings
    first = max(result.findings, key=lambda f: f.statistic)
    assert first.family == "later-token" and first.position == suite[0].realise("float32", "cpu").k + 1
    assert result.rows <= 1024


def _floor_means(real, fam, law):
    """Means of the correction-floor events under an exact emission law (sequence -> probability)."""
    return event_means(law, real, [fam])[0]


@pytest.mark.parametrize("name", ["runtime-style context-free", "prefix-dependent V4 K2", "near-identical V4 K2",
                                  "adversarial resample-from-p", "disjoint supports"])
def test_correction_floors_hold_for_every_exact_rule_and_are_met_by_the_canonical_one(name):
    """Every exact step rule's exact emission law keeps every floor; the canonical rule meets them
    with equality (it accepts min(p, q) of each token); the resample-from-target rule breaks one."""
    from specproof.proofs.laws.sequences import round_law
    from specproof.proofs.laws.step_rules import get_step_rule, step_rules

    real = _scenario(name).realise("float32", "cpu")
    fam = next(f for f in build_families(real) if f.name == "correction-floor")
    assert fam.sides == "lower" and fam.n_keys == 2 * min(real.vocab, 8)
    pair = real.rounded.toy_pair
    for rule in step_rules():
        means = _floor_means(real, fam, round_law(pair, rule))
        if rule.claim == "exact":
            assert (means >= fam.expected - 1e-12).all(), rule.name
    canonical = _floor_means(real, fam, round_law(pair, get_step_rule("canonical")))
    assert canonical == pytest.approx(fam.expected, abs=1e-12)
    if name != "disjoint supports":  # there every draft is rejected: a resample from p is the residual
        resample = _floor_means(real, fam, round_law(pair, get_step_rule("resample-from-target")))
        assert (resample < fam.expected - 0.01).any()


def test_correction_floor_expectations_are_the_residual_mass_of_their_union():
    """Independently: each floor is the exact sum over its union of max(0, p - q) of the first
    token, on the rounded tables; unions holding a token without residual mass are not tested."""
    real = _scenario("runtime-style context-free").realise("float32", "cpu")
    fam = next(f for f in build_families(real) if f.name == "correction-floor")
    p = real.rounded.exact_row("target", (0, 0))
    q = real.rounded.exact_row("draft", (0, 0))
    excess = [max(Fraction(0), a - b) for a, b in zip(p, q)]
    for e, label in enumerate(fam.names):
        union = {int(t) for t in label[label.index("{") + 1:label.index("}")].replace("token ", "").split(", ")}
        assert all(excess[t] > 0 for t in union)
        assert fam.expected[e] == pytest.approx(float(sum(excess[t] for t in union)), abs=1e-12)
    assert fam.size == 2 ** sum(1 for x in excess if x > 0) - 1
    tau_64 = float(step_tolerance("float64", real.vocab))  # the float64 drafts' own drift
    assert fam.band(1e-3) == pytest.approx(np.full(fam.size, 1e-3 + tau_64), rel=1e-12) and tau_64 > 0


def test_bucketed_floors_at_a_large_vocabulary_are_the_residual_mass_of_their_buckets():
    """V = 1000 > 8: the first tokens fall in 8 buckets ordered by p - q (every token of a bucket has
    p - q at most that of every token of a later one), each holding about 1/8 of the target's mass;
    each floor is the exact residual mass of its buckets, and only buckets holding some are tested."""
    real = _scenario("large vocabulary V1000 K4").realise("float32", "cpu")
    fam = next(f for f in build_families(real) if f.name == "correction-floor")
    p = real.rounded.exact_row("target", (0, 0))
    q = real.rounded.exact_row("draft", (0, 0))
    assert real.vocab == 1000 and fam.n_keys == 16
    import torch

    first = torch.arange(real.vocab)[:, None]
    emitted = torch.cat([first, torch.full((real.vocab, real.k), -1)], dim=1)  # one-token rows: corrections
    bucket = fam.key(emitted) - 8  # corrected rows are keyed bucket + 8
    gap = [float(a - b) for a, b in zip(p, q)]
    for b in range(7):
        inside, later = bucket == b, bucket > b
        assert max(g for g, i in zip(gap, inside) if i) <= min(g for g, i in zip(gap, later) if i)
    top = float(max(p))
    for b in range(8):
        mass = float(sum(w for w, i in zip(p, bucket == b) if i))
        assert abs(mass - 1 / 8) <= top + 1e-12
    excess = [sum((max(Fraction(0), p[v] - q[v]) for v in range(real.vocab) if bucket[v] == b), Fraction(0))
              for b in range(8)]
    with_residual = [b for b in range(8) if excess[b] > 0]
    assert fam.size == 2 ** len(with_residual) - 1
    for e, label in enumerate(fam.names):
        union = {int(t.split(" ")[1]) for t in label[label.index("{") + 1:label.index("}")].split(", ")}
        assert union <= set(with_residual)
        assert fam.expected[e] == pytest.approx(float(sum(excess[b] for b in union)), abs=1e-12)


def test_a_reused_correction_uniform_is_flagged_below_its_floor():
    """FlashInfer's reused uniform (flashinfer-ai/flashinfer#424) biases corrections to late ids:
    the first tokens 0 and 2 are never corrections, below their floor 0.105 - the first finding."""
    result = check(get("flashinfer-layout-reused-uniform").fn, fail_fast=True, seed=0, progress=False,
                            scenarios=[_scenario("prefix-dependent V4 K2")])
    assert result.verdict.value == "fail"
    first = result.findings[0]
    assert first.family == "correction-floor" and first.observed < first.expected - 0.05
    assert "every lossless rule gives at least" in first.line()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_no_floor_is_crossed_by_an_exact_verifier_in_half_precision(dtype):
    """Half precision moves the law by up to its derived tau (about 0.1 in bfloat16 on these
    scenarios): the floors, held to tau + tau_64 below, stay unflagged on 20,000 rows per scenario."""
    suite = [_scenario(name) for name in ("near-identical V4 K2", "runtime-style context-free", "prefix-dependent V4 K2")]
    result = check(get("canonical-ratio-race").fn, samples=20_000, seed=7, dtype=dtype, progress=False,
                            scenarios=suite, inject=False)
    assert not [f for f in result.findings if f.family == "correction-floor"], result.summary()
    assert result.verdict.value in ("pass", "underpowered")
