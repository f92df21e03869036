"""The Triton edge model (harness.exact.triton_rng_edges) against triton/language/random.py's mapping,
on chosen words; needs no triton."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specproof.errors import SpecproofInputError
from specproof.harness.exact.triton_rng_edges import (TRITON_EDGE_LABELS, TRITON_UNIFORM_SCALE, triton_edge_values,
                                                      triton_normal_value, triton_uniform_value)

WORDS = 1 << 32
SCALE = Fraction(float(TRITON_UNIFORM_SCALE))


def test_scale_is_just_below_two_to_minus_31():
    assert SCALE == (1 - Fraction(1, 2**24)) / 2**31


@pytest.mark.parametrize("word, expected", [
    (0, Fraction(0)),                        # int32 0
    (WORDS - 1, Fraction(0)),                # int32 -1 -> ~(-1) = 0: the second word giving 0
    (1, SCALE),
    (WORDS - 2, SCALE),                      # int32 -2 -> 1
    ((1 << 31) - 1, 1 - Fraction(1, 2**24)),  # float(2^31 - 1) = 2^31, 2^31 * scale = 1 - 2^-24 < 1
    (1 << 31, 1 - Fraction(1, 2**24)),        # int32 -2^31 -> 2^31 - 1
    ((1 << 31) - 64, 1 - Fraction(1, 2**24)),  # the tie at 2^31 - 64 goes to the even 2^31
])
def test_uniform_mapping_on_chosen_words(word, expected):
    assert triton_uniform_value(word) == expected


def test_rand_edges():
    zero, small, top = triton_edge_values("rand")
    assert (zero.value, zero.probability) == (0, Fraction(1, 2**31))
    assert (small.value, small.probability) == (SCALE, Fraction(1, 2**31))
    # folded x in [2^31 - 64, 2^31): 64 values, two words each
    assert (top.value, top.probability) == (1 - Fraction(1, 2**24), Fraction(128, WORDS))
    assert sum(triton_uniform_value(w) == top.value for w in range((1 << 31) - 256, 1 << 31)) == 64


def test_randn_and_randint_edges():
    largest, smallest = triton_edge_values("randn")
    assert largest.value == -smallest.value == triton_normal_value(Fraction(0), Fraction(0))
    assert 5.6 < float(largest.value) < 5.7 and 0 < largest.probability < Fraction(1, 2**36)
    assert [e.value for e in triton_edge_values("randint", "uint32")] == [0, 2**31 - 1, 2**31, 2**32 - 1]
    assert [e.label for e in triton_edge_values("randint", "uint32")] == list(TRITON_EDGE_LABELS["randint"])


@given(st.integers(0, WORDS - 1))
def test_uniform_is_in_unit_interval(word):
    assert 0 <= triton_uniform_value(word) < 1


def test_bad_arguments_are_named():
    with pytest.raises(SpecproofInputError, match="dtype"):
        triton_edge_values("rand", "float16")
    with pytest.raises(SpecproofInputError, match="kind"):
        triton_edge_values("gumbel")
