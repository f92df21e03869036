"""Emitted laws against the exact laws of ``specproof.harness`` (float64, small V and K).

Statistical design (see impls_lawcheck.py): N = 40,000 rounds per implementation and pair; Pearson
chi-square over emitted sequences (expected counts < 5 pooled), alpha = 1e-3, any sequence outside
the exact support is a certain violation. With df about 50-80 the power bound (lambda = 4 N eps^2)
gives a detectable TV of about 0.024 at power 0.99; each test asserts that figure, so a change of N
or of the binning that weakens the test fails loudly. Seeds are fixed, so outcomes are reproducible;
with fresh seeds the ~50 conformance assertions here would carry a family-wise false-alarm rate
of about 5% (1e-3 each).

Damage too rare to sample (u == 0, a tiny-clamped residual) is shown exactly in
test_impls_edge_cases.py.
"""

from fractions import Fraction

import pytest
import torch

from impls_lawcheck import conformance, continue_with_target, emitted_counts, sample_round_inputs
from specproof.proofs.laws.sequences import ToyPair, round_law, target_law
from specproof.impls import get, implementations
from specproof.proofs import ExactArith
from specproof.proofs.laws.block import Tables, block_round_law

ROUNDS = 40_000
ALPHA = 1e-3
MAX_DETECTABLE_TV = 0.03

PAIRS = {
    "prefix-dependent": ToyPair.random(4, 2, seed=7, zeros=False),
    "prefix-dependent-with-zeros": ToyPair.random(4, 2, seed=11),
    "context-free": ToyPair.random(4, 2, seed=3, zeros=False, context_free=True),
    "v6-k1-with-zeros": ToyPair.random(6, 1, seed=5),
}
# transformers' own function (exact from release 5.25.0, one row at a time): test_impls_transformers.py
EXACT_CANONICAL = [r for r in implementations(expected_exact=True) if r.rule.startswith("canonical")
                   and r.contract in ("batched", "uniforms") and not r.compiled and r.needs_extra is None]
STATISTICAL_ZOO = ["resample-from-target", "top1-acceptance", "greedy-while-sampling",
                   "continue-after-rejection", "stale-residual-buffer", "target-only-temperature",
                   "min-p-bonus-only", "draft-top-k-in-verifier", "bonus-from-wrong-row",
                   "target-rows-shifted"]


def run(record, draft, target, ids, seed=1):
    if record.contract == "uniforms":
        uniforms = torch.rand(ids.shape[0], ids.shape[1] + 1, dtype=draft.dtype,
                              generator=torch.Generator().manual_seed(seed))
        return record.fn(draft, target, ids, uniforms)
    return record.fn(draft, target, ids, torch.Generator().manual_seed(seed))


def inputs(pair, seed=0, rounds=ROUNDS):
    return sample_round_inputs(pair, rounds, torch.float64, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("pair_name", ["prefix-dependent-with-zeros", "context-free",
                                       "v6-k1-with-zeros"])
@pytest.mark.parametrize("record", EXACT_CANONICAL, ids=lambda r: r.name)
def test_exact_canonical_conforms(record, pair_name):
    pair = PAIRS[pair_name]
    outcome = conformance(emitted_counts(run(record, *inputs(pair))),
                          round_law(pair, record.rule), ALPHA)
    assert outcome.detectable_tv < MAX_DETECTABLE_TV, outcome
    assert outcome.conforms, f"{record.name} on {pair_name}: {outcome}"


@pytest.mark.parametrize("name", STATISTICAL_ZOO)
def test_zoo_does_not_conform(name):
    pair = PAIRS["prefix-dependent"]
    outcome = conformance(emitted_counts(run(get(name), *inputs(pair))), round_law(pair), ALPHA)
    assert outcome.detectable_tv < MAX_DETECTABLE_TV, outcome
    assert not outcome.conforms, f"{name} was not caught: {outcome}"


@pytest.mark.parametrize("record", [r for r in implementations(expected_exact=False)
                                    if r.bug_rule and r.contract == "batched"
                                    and not r.needs_extra], ids=lambda r: r.name)
def test_zoo_follows_its_documented_law(record):
    """Where the catalogue has the bug's own exact law, the mutant reproduces it: the zoo
    implements exactly the documented bug, nothing more."""
    pair = PAIRS["prefix-dependent-with-zeros"]
    outcome = conformance(emitted_counts(run(record, *inputs(pair))),
                          round_law(pair, record.bug_rule), ALPHA)
    assert outcome.conforms, f"{record.name} vs {record.bug_rule}: {outcome}"


def bonus_marked(sequences, drafts):
    """Replace the bonus token of full-length sequences by a marker, merging their mass."""
    out: dict = {}
    for seq, mass in sequences.items():
        key = seq if len(seq) <= drafts else seq[:drafts] + ("bonus",)
        out[key] = out.get(key, 0) + mass
    return out


@pytest.mark.parametrize("pair_name", ["prefix-dependent-with-zeros", "context-free"])
def test_greedy_conforms_to_the_greedy_rule(pair_name):
    """Acceptance and correction follow the catalogue's greedy step rule. round_law draws every
    rule's bonus from p, while greedy verification takes argmax p (checked token by token in
    test_greedy_emits_the_target_argmax_chain), so the bonus token is compared as a marker."""
    pair = PAIRS[pair_name]
    counts = emitted_counts(run(get("greedy"), *inputs(pair)))
    outcome = conformance(bonus_marked(counts, pair.k), bonus_marked(round_law(pair, "greedy"), pair.k),
                          ALPHA)
    assert outcome.conforms, outcome


@pytest.mark.parametrize("name", ["target-rows-shifted", "bonus-from-wrong-row"])
def test_prefix_bugs_are_invisible_to_context_free_tests(name):
    """With the same law at every position the shifted rows coincide: the mutant's output is
    bit-identical to the canonical verifier drawing the same randomness, so no context-free test,
    however large, can catch it. The prefix-dependent pair above does."""
    draft, target, ids = inputs(PAIRS["context-free"], rounds=4000)
    reference = get("canonical-ratio-multinomial")
    assert torch.equal(run(get(name), draft, target, ids), run(reference, draft, target, ids))


def test_greedy_emits_the_target_argmax_chain():
    """Greedy is deterministic: every emitted token is the target's argmax at its position, and the
    drafts kept are exactly the prefix that matched it."""
    draft, target, ids = inputs(PAIRS["prefix-dependent-with-zeros"], rounds=2000)
    emitted = get("greedy").fn(draft, target, ids, None)
    argmax = target.argmax(-1)
    length = (emitted >= 0).sum(-1)
    for position in range(3):
        live = position < length
        assert torch.equal(emitted[live, position], argmax[live, position])
    matched = (ids == argmax[:, :2]).long().cumprod(-1).sum(-1)
    assert torch.equal(length - 1, matched)


@pytest.mark.parametrize("name", ["block", "block-uniforms"])
def test_block_check_vector(name):
    """notes/algorithms.md section 3: V = 2, p = (1/3, 2/3), q = (2/3, 1/3), K = 2: expected accepted
    drafts 11/9 for block verification, 10/9 token by token. The standard error at N = 40,000 is
    below 0.005; the two values are 0.111 apart."""
    pair = ToyPair.context_free((Fraction(1, 3), Fraction(2, 3)), (Fraction(2, 3), Fraction(1, 3)), 2)
    draft, target, ids = inputs(pair)
    block_accepted = ((run(get(name), draft, target, ids) >= 0).sum(-1) - 1).double()
    token_accepted = ((run(get("canonical-ratio-race"), draft, target, ids) >= 0).sum(-1) - 1).double()
    standard_error = block_accepted.std().item() / ROUNDS ** 0.5
    assert abs(block_accepted.mean().item() - 11 / 9) < 5 * standard_error
    assert abs(token_accepted.mean().item() - 10 / 9) < 5 * standard_error


@pytest.mark.parametrize("pair_name", ["prefix-dependent-with-zeros", "context-free"])
@pytest.mark.parametrize("name", ["block", "block-uniforms"])
def test_block_conforms_to_the_exact_block_law(name, pair_name):
    pair = PAIRS[pair_name]
    law, _ = block_round_law(ExactArith(), Tables.from_pair(pair))
    outcome = conformance(emitted_counts(run(get(name), *inputs(pair))), law, ALPHA)
    assert outcome.detectable_tv < MAX_DETECTABLE_TV, outcome
    assert outcome.conforms, f"{name} on {pair_name}: {outcome}"


@pytest.mark.parametrize("name", ["block", "block-uniforms"])
def test_block_round_then_target_is_the_target_law(name):
    """Exactness of block verification: one round continued by plain target sampling to K+1 tokens
    has the target's own law (target_law); the continuation is sampled from the exact tables."""
    pair = PAIRS["prefix-dependent-with-zeros"]
    emitted = run(get(name), *inputs(pair))
    continued = continue_with_target(pair, emitted, torch.Generator().manual_seed(2))
    outcome = conformance(emitted_counts(continued), target_law(pair), ALPHA)
    assert outcome.detectable_tv < MAX_DETECTABLE_TV, outcome
    assert outcome.conforms, f"{name}: {outcome}"


def test_block_early_break_law_is_rejected():
    """Power against the early-break misimplementation: the block verifier's sample is far from the
    exact early-break law (TV 1/3 on the check vector of notes/algorithms.md)."""
    pair = ToyPair.context_free((Fraction(1, 3), Fraction(2, 3)), (Fraction(2, 3), Fraction(1, 3)), 2)
    early, _ = block_round_law(ExactArith(), Tables.from_pair(pair), early_break=True)
    outcome = conformance(emitted_counts(run(get("block"), *inputs(pair))), early, ALPHA)
    assert not outcome.conforms, outcome


def test_continuation_test_has_power():
    """The continuation test above is not vacuous: a known-inexact round fails it."""
    pair = PAIRS["prefix-dependent-with-zeros"]
    emitted = run(get("resample-from-target"), *inputs(pair))
    continued = continue_with_target(pair, emitted, torch.Generator().manual_seed(2))
    assert not conformance(emitted_counts(continued), target_law(pair), ALPHA).conforms


@pytest.mark.parametrize("siblings", [1, 3])
def test_multidraft_emits_the_target_law(siblings):
    """Recursive rejection sampling over i.i.d. siblings emits exactly p at the position."""
    pair = ToyPair.random(6, 1, seed=13)
    p, q = pair.target[()], pair.draft[()]
    generator = torch.Generator().manual_seed(0)
    q_row = torch.tensor([float(x) for x in q], dtype=torch.float64).expand(ROUNDS, -1)
    p_row = torch.tensor([float(x) for x in p], dtype=torch.float64).expand(ROUNDS, -1)
    ids = torch.multinomial(q_row, siblings, replacement=True, generator=generator)
    tokens = get("multidraft-rrs").fn(q_row, p_row, ids, torch.Generator().manual_seed(1))
    outcome = conformance(emitted_counts(tokens.unsqueeze(-1)),
                          {(x,): px for x, px in enumerate(p)}, ALPHA)
    assert outcome.conforms, outcome
