"""Exact multi-token laws: round + continuation equals the target law for the canonical rule."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.proofs import SpecproofInputError, ToyPair, continued_law, law_tv, round_law, target_law


@given(st.integers(2, 3), st.integers(1, 2), st.integers(0, 10**6), st.booleans())
@settings(max_examples=40)
def test_round_then_continuation_is_the_target_law(vocab, k, seed, context_free):
    pair = ToyPair.random(vocab, k, seed, context_free=context_free)
    assert sum(round_law(pair).values()) == 1
    assert continued_law(pair) == target_law(pair)
    assert law_tv(continued_law(pair), target_law(pair)) == 0


def test_block_check_vector_token_level_acceptance():
    third = Fraction(1, 3)
    pair = ToyPair.context_free((third, 2 * third), (2 * third, third), 2)
    law = round_law(pair)
    assert sum((len(seq) - 1) * w for seq, w in law.items()) == Fraction(10, 9)
    assert all(1 <= len(seq) <= 3 for seq in law)


def test_round_law_is_not_a_product_of_conditionals():
    """A round's emission law has random length: only round + continuation is comparable."""
    pair = ToyPair.random(2, 2, seed=7, zeros=False)
    assert any(len(seq) < 3 for seq in round_law(pair))


def test_enumeration_limit_and_bad_tables():
    with pytest.raises(SpecproofInputError, match="enumeration limit"):
        ToyPair.random(64, 3, seed=0)
    with pytest.raises(SpecproofInputError, match="sums to"):
        ToyPair.from_functions(2, 1, lambda _: (Fraction(1, 2), Fraction(1, 3)), lambda _: (1, 0))
    with pytest.raises(SpecproofInputError, match="Fraction"):
        ToyPair.from_functions(2, 1, lambda _: (0.5, 0.5), lambda _: (1, 0))
    with pytest.raises(SpecproofInputError, match="no row"):
        ToyPair(2, 1, {(): (1, 0)}, {(): (1, 0)})
