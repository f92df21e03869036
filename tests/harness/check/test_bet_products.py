"""harness/check/contracts/batched/bet_products.py: every-token bet products (identity, Rao-Blackwellisation, validity, power)."""

import ast
import itertools
from types import SimpleNamespace
from fractions import Fraction

import numpy as np
import pytest
import torch

from specproof.proofs.laws.sequences import round_law, target_law
from specproof.proofs.laws.step_rules import get_step_rule, step_rules

from specproof.harness.bench.event_limit import event_means
from specproof.harness.check.contracts.batched.bet_products import BET_PRODUCT_FRACTIONS
from specproof.harness.check.stats.engine import alpha_shares
from specproof.harness.check.contracts.batched.families import build_families
from specproof.harness.check.driver import check
from specproof.harness.check.contracts.batched.scenarios import Scenario, default_suite
from specproof.impls import get

SCENARIOS = ["runtime-style context-free", "prefix-dependent V4 K2", "prefix-dependent V3 K3",
             "near-identical V4 K2", "adversarial resample-from-p", "random V6 K2 C3"]


def _scenario(name):
    if name == "random V6 K2 C3":  # classes below the vocabulary: bets on a token's class mod 3
        return Scenario.random(name, 6, 2, 3, classes=3)
    return next(s for s in default_suite() if s.name == name)


def _family(real):
    return next(f for f in build_families(real) if f.name == "every-token")


def _means(real, fam, law):
    """Means of the family's events under an exact emission law (the bench's own reading of a law)."""
    return event_means(law, real, [fam])[0]


def _event(label):
    """(class set, fraction) from an event's name."""
    union = ast.literal_eval(label[label.index("{"):label.index("}") + 1])
    fraction = Fraction(label.split("fraction ")[1].split(":")[0])
    return set(union), fraction


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_exact_rule_meets_the_mean_exactly_and_a_lossy_one_exceeds_it(name):
    """E[B] = 1 for every lossless emission law (each emitted token follows the target given its
    prefix), so every exact step rule's mean of ``B / max G`` is ``1 / max G``, whatever its lengths law."""
    real = _scenario(name).realise("float32", "cpu")
    fam = _family(real)
    assert fam.sides == "upper" and (fam.expected > 0).all() and (fam.expected < 1).all()
    pair = real.rounded.toy_pair
    excess = 0.0
    for rule in step_rules():
        means = _means(real, fam, round_law(pair, rule))
        if rule.claim == "exact":
            assert means == pytest.approx(fam.expected, rel=1e-9, abs=1e-12), rule.name
        else:
            excess = max(excess, float((means - fam.expected).max()))
    assert excess > 1e-3  # some catalogued bug moves some product


@pytest.mark.parametrize("name", ["runtime-style context-free", "prefix-dependent V3 K3"])
def test_a_row_contribution_is_the_continued_products_conditional_mean(name):
    """Rao-Blackwellisation, independently in exact rationals: for every emitted prefix s,
    ``B(s) = sum_z P_target(z | s) G(z)`` over the full-length continuations z, ``G`` the product of the
    fair bets ``1 + f (1[z_j in U] - pi_j) / pi_j`` over all K+1 tokens; and the matrix is ``B / max G``."""
    real = _scenario(name).realise("float32", "cpu")
    fam = _family(real)
    law = target_law(real.rounded.toy_pair)
    trans = real.target_class_transitions
    k = real.k
    seqs = [s for length in range(1, k + 2) for s in itertools.product(range(real.classes), repeat=length)]

    def product(z, union, f):
        out = Fraction(1)
        for j, y in enumerate(z):
            pi = sum((trans[j][z[j - 1] if j else 0][u] for u in union), Fraction(0))
            if 0 < pi < 1:
                out *= 1 + f * ((1 - pi) / pi if y in union else Fraction(-1))
        return out

    for e in range(0, fam.size, max(1, fam.size // 12)):
        union, f = _event(fam.names[e])
        assert f in BET_PRODUCT_FRACTIONS
        g = {z: product(z, union, f) for z in law}
        top = max(g.values())
        assert fam.expected[e] == pytest.approx(float(1 / top), rel=1e-12)
        for i, s in enumerate(seqs):
            mass = sum((w for z, w in law.items() if z[:len(s)] == s), Fraction(0))
            if mass == 0:
                continue
            conditional = sum((w * g[z] for z, w in law.items() if z[:len(s)] == s), Fraction(0)) / mass
            assert fam.matrix[i, e] == pytest.approx(float(conditional / top), rel=1e-9, abs=1e-15), (s, e)


def test_only_the_upper_side_has_a_share_of_alpha_and_constant_products_are_dropped():
    """A ceiling: its lower side gets no share; on the one-hot target every pi is 0 or 1, so every
    product is 1 on every row and none is an event."""
    real = _scenario("near-identical V4 K2").realise("float32", "cpu")
    families = build_families(real)
    stream = SimpleNamespace(families=families, tolerance=1e-6)
    f = next(i for i, fam in enumerate(families) if fam.name == "every-token")
    up, down = alpha_shares([stream], 1e-6)[0][f]
    assert np.isfinite(up).all() and np.isinf(down).all()
    one_hot = _scenario("one-hot target").realise("float32", "cpu")
    assert "every-token" not in {fam.name for fam in build_families(one_hot)}


def test_a_temperature_on_the_target_alone_is_flagged_by_a_bet_product():
    """target-only-temperature tilts every token's law the same way: in the runtime-style scenario a
    bet product over all emitted tokens is its first finding, read as a ceiling."""
    result = check(get("target-only-temperature").fn, fail_fast=True, seed=0, progress=False, inject=False,
                            scenarios=[_scenario("runtime-style context-free")])
    assert result.verdict.value == "fail"
    first = max(result.findings, key=lambda f: f.statistic)
    assert first.family == "every-token" and first.observed > first.expected + first.tolerance
    assert "every lossless rule gives at most" in first.line()


def test_the_ceiling_holds_a_law_moved_by_tau_and_not_one_moved_by_twice_that():
    """The band, exactly: move ``d`` of an exact rule's emission mass from the sequence of least
    contribution to the one of most; every mean stays at or below ``P + band`` for ``d = tau`` (the
    move a lossless system within tau can make), and the largest exceeds it for ``d = 2 tau``."""
    from specproof.harness.check.stats.engine import band_edges
    from specproof.harness.exact.tolerances import check_tolerance

    real = _scenario("runtime-style context-free").realise("float32", "cpu")
    fam = _family(real)
    tau = float(check_tolerance("float32", real.vocab, real.k))
    law = round_law(real.rounded.toy_pair, get_step_rule("canonical"))
    upper = band_edges(fam, tau)[0]
    assert upper == pytest.approx(fam.expected + tau + fam.tolerance_extra, rel=1e-12)
    for e in range(0, fam.size, max(1, fam.size // 8)):
        values = {s: fam.matrix[fam.key(_row(s, real.k))[0], e] for s in law}
        low, high = min(values, key=values.get), max(values, key=values.get)
        assert values[high] > values[low]
        for move, holds in ((tau, True), (2 * tau / (values[high] - values[low]), False)):
            moved = dict(law)
            assert law[low] >= Fraction(move)
            moved[low] -= Fraction(move)
            moved[high] += Fraction(move)
            mean = _means(real, fam, moved)[e]
            assert (mean <= upper[e]) == holds, (fam.names[e], move)


def _row(s, k):
    out = torch.full((1, k + 1), -1, dtype=torch.int64)
    out[0, :len(s)] = torch.tensor(s)
    return out
