"""The oracle row count: KL, the lossless polytope, its reverse information projection, N*."""

import math
from fractions import Fraction as F

import pytest
from hypothesis import given, settings, strategies as st

from specproof.harness.bench.oracle import (LosslessPolytope, impossible_rows, kl_divergence, kl_rows,
                                            oracle_table, project, rows_against, scenario_oracle)
from specproof.harness.check.contracts.batched.scenarios import Scenario, default_suite
from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.laws.block import Tables, block_round_law
from specproof.proofs.laws.sequences import ToyPair, round_law, target_law

H = F(1, 2)


def test_kl_on_hand_made_laws():
    p, q = {(0,): 0.5, (1,): 0.5}, {(0,): 0.25, (1,): 0.75}
    assert kl_divergence(p, q) == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3))
    assert kl_divergence(p, p) == 0.0
    assert kl_divergence(p, {(0,): 1.0}) == math.inf
    assert kl_divergence({(0,): 1.0}, q) == pytest.approx(math.log(4))


def test_row_formulas():
    assert kl_rows(0.1, 1e-6) == pytest.approx(math.log(1e6) / 0.1)
    assert kl_rows(0.0) == math.inf
    assert kl_rows(math.inf) == 1.0 and kl_rows(1e3) == 1.0  # no test decides in fewer than one row
    assert impossible_rows(0.01, 0.01) == pytest.approx(math.log(100) / -math.log(0.99))
    assert impossible_rows(2.0**-24, 0.01) == pytest.approx(math.log(100) * 2**24, rel=1e-6)
    assert impossible_rows(0.0) == math.inf and impossible_rows(1.0) == 1.0


def test_projection_matches_the_closed_form_interior_optimum():
    # K=1, p=(1/2,1/2), q=(1,0): L is E(0) in [0, 1/2], Q = {0: 1/2-E, 00: E/2, 01: E/2, 1: 1/2}
    pair = ToyPair.context_free((H, H), (F(1), F(0)), 1)
    p_bad = {(1,): H, (0,): F(1, 8), (0, 0): F(1, 4), (0, 1): F(1, 8)}
    proj = project(p_bad, pair)
    e = 0.5 * (3 / 8) / (1 / 2)
    expected = {(0,): 0.5 - e, (0, 0): e / 2, (0, 1): e / 2, (1,): 0.5}
    for s, v in expected.items():
        assert proj.law[s] == pytest.approx(v, abs=1e-9)
    assert proj.kl == pytest.approx(0.25 * math.log(4 / 3) + 0.125 * math.log(2 / 3), abs=1e-9)
    assert proj.impossible_mass == 0 and proj.gap <= 1e-9


def test_projection_respects_the_draft_cap():
    # q(0) = 1/4 caps the continuation past 0; the bad law always continues after 0
    pair = ToyPair.context_free((H, H), (F(1, 4), F(3, 4)), 1)
    p_bad = {(0, 0): H, (1,): H}
    proj = project(p_bad, pair)
    assert proj.law[(0, 0)] == pytest.approx(1 / 8, abs=1e-9) and proj.law[(0,)] == pytest.approx(1 / 4, abs=1e-9)
    assert proj.kl == pytest.approx(math.log(2), abs=1e-9)


def test_impossible_mass_and_its_rows():
    # p = (1, 0): emitting token 1 first is impossible for every lossless verifier
    pair = ToyPair.context_free((F(1), F(0)), (H, H), 1)
    m = F(1, 1000)
    p_bad = {(1,): m, (0,): (1 - m) / 2, (0, 0): (1 - m) / 2}  # the rest is lossless (q(0) = 1/2)
    out = scenario_oracle(p_bad, pair)
    assert out["impossible_mass"] == pytest.approx(float(m))
    assert out["via"] == "impossible" and out["n_star"] == pytest.approx(impossible_rows(float(m)))
    assert out["n_star_kl"] == math.inf  # conditioned on possible outcomes it is the target law itself


def _continued(law, pair):
    """Continue a float law over sequences with the target up to K+1 tokens."""
    out = {}

    def extend(seq, w):
        if len(seq) == pair.k + 1:
            out[seq] = out.get(seq, 0.0) + w
            return
        for y, py in enumerate(pair.target[seq]):
            if py:
                extend(seq + (y,), w * float(py))

    for s, w in law.items():
        extend(s, w)
    return out


def _draft(pair, x):
    w = F(1)
    for i in range(len(x)):
        w *= pair.draft[x[:i]][x[i]]
    return w


def _assert_in_polytope(law, pair, tol=1e-9):
    assert all(v >= -tol for v in law.values())
    target = target_law(pair)
    cont = _continued(law, pair)
    for z in set(target) | set(cont):
        assert cont.get(z, 0.0) == pytest.approx(float(target.get(z, 0)), abs=tol)  # (a)
    for s, v in law.items():  # (b)
        if v > tol:
            for j in range(len(s)):
                assert pair.target[s[:j]][s[j]] > 0
    prefixes = {s[:j] for s in law for j in range(1, len(s))}
    for x in prefixes:  # (c)
        more = sum(v for s, v in law.items() if len(s) > len(x) and s[:len(x)] == x)
        assert more <= float(_draft(pair, x)) + tol


@pytest.mark.parametrize("seed", [0, 1])
def test_projection_is_feasible_and_optimal(seed):
    pair = ToyPair.random(3, 2, seed)
    good = round_law(pair)
    block, _ = block_round_law(ExactArith(), Tables.from_pair(pair))
    proj = project(round_law(pair, "resample-from-target"), pair)
    _assert_in_polytope(proj.law, pair)
    _assert_in_polytope({s: float(v) for s, v in block.items()}, pair)
    # optimality: E_P[Q / Q*] <= 1 for every Q in L (lossless laws and their mixtures)
    mix = {s: 0.3 * float(good.get(s, 0)) + 0.7 * float(block.get(s, 0)) for s in set(good) | set(block)}
    for other in (good, block, mix):
        assert proj.e_value({s: float(v) for s, v in other.items()}) <= 1 + 1e-9


def test_polytope_point_of_a_lossless_law_is_feasible():
    pair = ToyPair.random(3, 2, 4)
    poly = LosslessPolytope(pair)
    e = poly.point(round_law(pair))
    assert (e <= poly.cap + 1e-12).all()
    assert min(poly.law(e).values()) >= -1e-12
    _assert_in_polytope(poly.law(poly.start()), pair)


@settings(max_examples=25, deadline=None)
@given(vocab=st.integers(2, 3), k=st.integers(1, 2), seed=st.integers(0, 10**6),
       rule=st.sampled_from(["resample-from-target", "top-k-accept", "canonical"]))
def test_projection_kl_is_at_most_kl_to_p_good_and_zero_on_lossless_laws(vocab, k, seed, rule):
    pair = ToyPair.random(vocab, k, seed)
    good = {s: float(v) for s, v in round_law(pair).items()}
    proj = project(round_law(pair, rule), pair)
    assert proj.kl <= kl_divergence(proj.conditioned, good) + proj.gap
    if rule == "canonical":
        assert proj.kl_upper <= 1e-9
    block, _ = block_round_law(ExactArith(), Tables.from_pair(pair))
    assert project(block, pair).kl_upper <= 1e-9  # lossless, not the canonical law


def test_rows_against_one_law():
    null = {(0,): 0.5, (1,): 0.5}
    assert rows_against({(0,): F(1)}, null) == pytest.approx(math.log(1e6) / math.log(2))
    assert rows_against({(2,): F(1, 10), (0,): F(9, 20), (1,): F(9, 20)}, null) == pytest.approx(impossible_rows(0.1))


def test_oracle_table_names_the_scenario_and_excludes_what_it_cannot_enumerate():
    suite = [next(s for s in default_suite() if s.name == "adversarial resample-from-p"),
             Scenario.random("big", 300, 2, seed=1, classes=2)]
    table = oracle_table(["resample-from-target", "no-such-member"], suite)
    assert set(table["excluded_scenarios"]) == {"big"} and set(table["unmodelled"]) == {"no-such-member"}
    rec = table["members"]["resample-from-target"]
    assert rec["scenario"] == "adversarial resample-from-p" and rec["via"] == "kl" and rec["in_goals"]
    assert 30 < rec["n_star"] < 200  # KL about 0.2 nats: ln(1e6) / KL rows
    assert rec["n_star_vs_p_good"] <= rec["n_star"]
