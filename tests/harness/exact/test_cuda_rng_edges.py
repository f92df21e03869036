"""The CUDA edge model (harness.exact.cuda_rng_edges) against its cited derivation, on CPU: the curand
mappings on chosen integers, the per-dtype edges and their exact counts."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specproof.errors import SpecproofInputError
from specproof.harness.exact.cuda_rng_edges import (CUDA_EDGE_LABELS, cuda_draw_count, cuda_edge_values,
                                                    cuda_exponential_value, cuda_uniform_value,
                                                    curand_uniform_double, curand_uniform_float)

TOP = 1 << 32
P = lambda e: Fraction(1, 2**e)  # noqa: E731


@pytest.mark.parametrize("x, expected", [
    (0, P(33)),                                  # the smallest value: 2^-33, never 0
    (1, 3 * P(33)),                              # (2x+1) 2^-33 exactly while float(x) is exact
    ((1 << 23) - 1, ((1 << 24) - 1) * P(33)),    # exact while 2x + 1 < 2^24
    ((1 << 24) - 1, P(8)),                       # (2^25 - 1) 2^-33 needs 25 bits: the tie goes to even 2^-8
    (TOP - 1, Fraction(1)),                      # float(x) rounds up to 2^32: 1 + 2^-33 rounds to 1
    (TOP - 128, Fraction(1)),                    # the tie at 2^32 - 128 goes to the even 2^32
    (TOP - 129, 1 - P(24)),                      # float(x) = 2^32 - 256: 1 - 2^-24 + 2^-33 -> 1 - 2^-24
    (TOP - 383, 1 - P(24)),
    (TOP - 384, 1 - P(23)),                      # the tie at 2^32 - 384 goes to the even 2^32 - 512
])
def test_curand_uniform_float_on_chosen_integers(x, expected):
    assert curand_uniform_float(x) == expected


@pytest.mark.parametrize("x, y, expected", [
    (0, 0, P(54)),                                   # z = 0: 2^-54
    (1, 0, 3 * P(54)),                               # below 1/2 (2z+1) 2^-54 is exact
    ((1 << 21) - 1, TOP - 1, Fraction(1)),           # z = 2^53 - 1: the tie 1 - 2^-54 goes to the even 1
    ((1 << 21) - 2, TOP - 1, 1 - P(52)),             # z = 2^53 - 2: tie to the even 1 - 2^-52
    ((1 << 21) - 3, TOP - 1, 1 - P(52)),             # z = 2^53 - 3: tie to the even 1 - 2^-52 too
    (0, 1 << 31, Fraction(1, 2)),                    # z = 2^52: 1/2 + 2^-54 ties to 1/2
    (1 << 21, 1, P(54)),                             # x ^ (y << 21) cancels the shared bit: z = 0
])
def test_curand_uniform_double_on_chosen_integers(x, y, expected):
    assert curand_uniform_double(x, y) == expected


def test_uniform_reverses_one_to_zero_per_dtype():
    assert cuda_uniform_value(TOP - 1, "float32") == 0
    assert cuda_uniform_value(TOP - 129, "float32") == 1 - P(24)
    assert cuda_uniform_value((1 << 53) - 1, "float64") == 0
    assert cuda_uniform_value(0, "float16") == 0                  # 2^-33 rounds to 0 in float16
    assert cuda_uniform_value(0, "bfloat16") == P(33)              # bfloat16 keeps float32's range
    assert cuda_uniform_value(TOP - (1 << 20), "float16") == 0     # rounds to 1 in float16, reversed


def test_uniform_edges_match_the_derivation():
    zero, small, top = cuda_edge_values("uniform", "float32")
    assert (zero.value, zero.probability) == (0, P(25))           # the 128 x that give 1
    assert (small.value, small.probability) == (P(33), P(32))     # x = 0 only
    assert (top.value, top.probability) == (1 - P(24), Fraction(255, TOP))
    zero, small, top = cuda_edge_values("uniform", "float64")
    assert (zero.probability, small.value, small.probability) == (P(53), P(54), P(53))
    assert (top.value, top.probability) == (1 - P(52), P(52))     # z = 2^53 - 2 and 2^53 - 3
    zero16 = cuda_edge_values("uniform", "float16")[0]
    # 128 x round to 0 (rand < 2^-25) and 2^20 + 128 give 1 in float16: rand >= 1 - 2^-12
    assert zero16.probability == Fraction(128 + (1 << 20) + 128, TOP)
    assert [e.label for e in cuda_edge_values("uniform", "bfloat16")] == list(CUDA_EDGE_LABELS["uniform"])


def test_exponential_never_zero_and_its_edges():
    small, large = cuda_edge_values("exponential", "float32")
    # rand >= 1 - 2^-24: the 128 x giving 1 and the 255 giving 1 - 2^-24 -> -log clamped to 2^-24
    assert (small.value, small.probability) == (P(24), Fraction(383, TOP))
    assert large.probability == P(32) and abs(float(large.value) - 33 * 0.6931471805599453) < 2e-6
    small, large = cuda_edge_values("exponential", "float64")
    assert (small.value, small.probability) == (P(53), P(53))     # only z = 2^53 - 1 reaches the clamp
    assert float(large.value) == pytest.approx(54 * 0.6931471805599453, rel=1e-15)
    for dtype in ("float16", "bfloat16"):
        assert cuda_edge_values("exponential", dtype)[0].value == P(24)  # float's eps/2, kept by the cast
    assert all(e.value > 0 for d in ("float16", "bfloat16", "float32", "float64")
               for e in cuda_edge_values("exponential", d))


@given(st.integers(0, TOP - 2), st.sampled_from(["float16", "bfloat16", "float32"]))
def test_mappings_are_monotone_and_in_range(k, dtype):
    assert 0 < curand_uniform_float(k) <= curand_uniform_float(k + 1) <= 1
    assert 0 <= cuda_uniform_value(k, dtype) < 1
    assert cuda_exponential_value(k, dtype) >= cuda_exponential_value(k + 1, dtype) > 0


def test_edge_masses_are_counts_over_the_draws():
    assert cuda_draw_count("float32") == TOP and cuda_draw_count("float64") == 1 << 53
    # brute force over the top 2^12 integers: the count of float32 zeros is the model's
    assert sum(cuda_uniform_value(k, "float32") == 0 for k in range(TOP - 4096, TOP)) == 128


def test_bad_arguments_are_named():
    with pytest.raises(SpecproofInputError, match="kind"):
        cuda_edge_values("normal", "float32")
    with pytest.raises(SpecproofInputError, match="x"):
        curand_uniform_float(TOP)
