"""The structured laws, evaluated exactly: block verification, multi-draft, SpecTr, processors."""

import itertools
from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.proofs import ExactArith, ToyPair, law_tv, round_law
from specproof.proofs.laws.block import (Tables, block_continued_law, block_round_law, block_target_law,
                                    expected_accepted_block)
from specproof.proofs.laws.multidraft import recursive_rejection_law, spectr_instance, spectr_law
from specproof.proofs.laws.processors import PROCESSORS, draft_from_r_law, processed_law
from specproof.proofs.laws.sampler_match import sampler_match_law
from specproof.proofs.engine.counterexamples import simplex_grid

AR = ExactArith()
P, Q = (F(1, 3), F(2, 3)), (F(2, 3), F(1, 3))


@st.composite
def laws(draw, n, den=12):
    counts = draw(st.lists(st.integers(0, den), min_size=n, max_size=n).filter(lambda c: sum(c) > 0))
    return tuple(F(c, sum(counts)) for c in counts)


def test_block_check_vector_reproduces():
    tables = Tables.context_free(P, Q, 2)
    token_level = sum((len(s) - 1) * w for s, w in round_law(ToyPair.context_free(P, Q, 2)).items())
    assert token_level == F(10, 9)
    assert expected_accepted_block(AR, tables) == F(11, 9)
    law = block_continued_law(AR, tables)
    two = {}
    for seq, w in law.items():
        two[seq[:2]] = two.get(seq[:2], 0) + w
    assert all(two[(a, b)] == P[a] * P[b] for a, b in itertools.product(range(2), repeat=2))
    broken = block_continued_law(AR, tables, early_break=True)
    assert law_tv(broken, block_target_law(AR, tables)) == F(1, 3)
    assert expected_accepted_block(AR, tables, early_break=True) == F(5, 9)


@given(st.integers(2, 3), st.integers(1, 3), st.integers(0, 10**6))
@settings(max_examples=20)
def test_block_round_is_a_law_and_continues_to_the_target(vocab, k, seed):
    tables = Tables.from_pair(ToyPair.random(vocab, k, seed, zeros=seed % 2 == 0))
    law, expected = block_round_law(AR, tables)
    assert sum(law.values()) == 1 and 0 <= expected <= k
    assert block_continued_law(AR, tables) == block_target_law(AR, tables)


@given(st.integers(2, 4).flatmap(lambda n: st.tuples(laws(n), laws(n))), st.integers(1, 3), st.booleans())
@settings(max_examples=40)
def test_recursive_rejection_is_exact(pq, k, replacement):
    p, q = pq
    assert recursive_rejection_law(AR, p, q, k, replacement=replacement) == p


def test_recursive_rejection_with_raw_p_as_next_target_is_not_exact():
    """A broken copy: the second level keeps r = p instead of the residual."""
    p, q = (F(1, 2), F(1, 2)), (F(1), F(0))
    accept = AR.minimum(1, AR.safe_div(p, q, 0))
    accepted = AR.mul(q, accept)
    broken = AR.add(accepted, AR.mul(1 - AR.total(accepted), p))
    assert broken != p and recursive_rejection_law(AR, p, q, 2) == p


@given(st.integers(2, 4).flatmap(lambda n: laws(n, den=8)), st.sampled_from([F(11, 10), F(3, 2), F(9, 5)]))
@settings(max_examples=40)
def test_spectr_is_exact_when_rho_solves_the_equation(p, rho):
    q = spectr_instance(p, rho, min(range(len(p)), key=lambda x: p[x]))
    if q is None:
        return
    beta = sum((min(a, b / rho) for a, b in zip(q, p)), F(0))
    assert 1 - (1 - beta) ** 2 == rho * beta
    out, residual = spectr_law(AR, p, q, 2, rho)
    assert out == p and min(residual) >= 0


def test_spectr_with_a_wrong_rho_breaks_the_residual():
    p = (F(1, 2), F(1, 4), F(1, 4))
    q = spectr_instance(p, F(3, 2), 1)
    _, residual = spectr_law(AR, p, q, 2, F(1))  # rho = 1 does not solve the equation here
    assert min(residual) < 0 or sum(residual) != 1


def test_sampler_match_is_exact_with_acceptance_sum_pq():
    for p, q in itertools.product(simplex_grid(3, 4), repeat=2):
        accepted, _, out = sampler_match_law(AR, p, q)
        assert out == p and AR.total(accepted) == sum(a * b for a, b in zip(p, q))


def test_processors_are_laws_and_both_sides_is_exact():
    for name, proc in PROCESSORS.items():
        for p, q in itertools.product(simplex_grid(3, 4), repeat=2):
            assert sum(proc(AR, p)) == 1 and min(proc(AR, p)) >= 0
            out, target = processed_law(AR, p, q, proc, "both-sides")
            assert out == target, name
    top2 = PROCESSORS["top-k-2"](AR, (F(1, 2), F(1, 4), F(1, 4)))
    assert top2 == (F(2, 3), F(1, 3), 0)  # tie broken toward the lower index


def test_draft_from_r_is_exact_only_when_r_is_q():
    p, q = (F(1, 2), F(1, 2)), (F(1, 4), F(3, 4))
    assert draft_from_r_law(AR, p, q, q) == p
    assert draft_from_r_law(AR, p, q, (F(1, 2), F(1, 2))) != p
