"""harness/check/events.py: the later-token family's exact expectations and what it catches."""

import ast
from fractions import Fraction

import numpy as np
import pytest

from specproof.proofs.laws.sequences import target_law

from specproof.harness.check.events import build_families
from specproof.harness.check.runner import check_verifier
from specproof.harness.check.scenarios import default_suite
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
    result = check_verifier(get("min-p-bonus-only").fn, scenarios=suite, fail_fast=True, seed=0, inject=False,
                            progress=False)
    assert result.findings
    first = max(result.findings, key=lambda f: f.statistic)
    assert first.family == "later-token" and first.position == suite[0].realise("float32", "cpu").k + 1
    assert result.rows <= 1024
