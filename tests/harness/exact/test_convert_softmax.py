"""The one exact conversion, the dtype table, and the certified softmax."""

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
import torch
from hypothesis import given
from hypothesis import strategies as st

from specproof.harness import DTYPES, dyadic_array, exact_softmax, to_exact
from specproof.errors import SpecproofInputError
from specproof.harness.exact.dtypes import TORCH_DTYPES


@given(st.floats(allow_nan=False, allow_infinity=False, width=32), st.sampled_from(list(TORCH_DTYPES)))
def test_to_exact_is_exact_for_every_dtype(x, dtype):
    t = torch.tensor([x], dtype=torch.float32).to(TORCH_DTYPES[dtype])
    if not torch.isfinite(t).all():
        return
    value = to_exact(t)[0]
    assert isinstance(value, Fraction)
    assert value == Fraction(float(t.double()[0]))  # float64 holds every narrower float exactly
    assert Fraction(value).denominator & (Fraction(value).denominator - 1) == 0  # dyadic


@given(st.lists(st.floats(0, 1e6, allow_nan=False, width=64), min_size=1, max_size=50))
def test_dyadic_array_matches_to_exact(values):
    arr = np.array(values, dtype=np.float64)
    nums, exponent, name = dyadic_array(arr)
    assert name == "float64"
    assert [Fraction(int(n)) * Fraction(2) ** exponent for n in nums] == list(to_exact(arr))


def test_exact_inputs_pass_through_and_floats_never_leak():
    assert to_exact([1, Fraction(1, 3), sympy.Rational(2, 7)]) == (1, Fraction(1, 3), Fraction(2, 7))
    assert to_exact(0.1) == Fraction(3602879701896397, 2**55)
    with pytest.raises(SpecproofInputError, match="not a rational"):
        to_exact(sympy.sqrt(2))
    with pytest.raises(SpecproofInputError, match="bool"):
        to_exact(True)


def test_dtype_table_facts():
    assert DTYPES["bfloat16"].unit_roundoff == Fraction(1, 256)
    assert DTYPES["float16"].smallest_subnormal == Fraction(1, 2**24)
    assert float(DTYPES["float32"].eps) == float(torch.finfo(torch.float32).eps)
    assert float(DTYPES["float16"].smallest_subnormal) == torch.finfo(torch.float16).smallest_normal * 2**-10
    for name, info in DTYPES.items():
        assert float(info.eps) == torch.finfo(TORCH_DTYPES[name]).eps


def test_exact_softmax_matches_float64_and_bound_is_tiny():
    logits = [0.5, -1.25, 3.0, 2.0, -700.0]
    ref = exact_softmax(logits, temperature=0.8)
    assert sum(ref.probs) == 1
    assert ref.rel_error_bound < Fraction(1, 2**110)
    f64 = torch.softmax(torch.tensor(logits, dtype=torch.float64) / 0.8, -1)
    for exact, approx in zip(ref.probs, f64.tolist()):
        assert math.isclose(float(exact), approx, rel_tol=2**-45, abs_tol=0)


def test_exact_softmax_temperature_scaling_and_ties():
    ref = exact_softmax([1.0, 1.0], 3)
    assert list(ref.probs) == [Fraction(1, 2), Fraction(1, 2)]
    cold = exact_softmax([0.0, 1.0], Fraction(1, 50))
    assert float(cold.probs[1]) == pytest.approx(1 / (1 + math.exp(-50)), rel=1e-15)


@pytest.mark.parametrize("kwargs, argument", [
    ({"logits": [1.0], "temperature": 0}, "temperature"),
    ({"logits": [1.0], "temperature": -1.0}, "temperature"),
    ({"logits": [float("inf"), 0.0]}, "logits"),
    ({"logits": []}, "logits"),
    ({"logits": [1.0], "precision_bits": 16}, "precision_bits"),
])
def test_exact_softmax_bad_input(kwargs, argument):
    with pytest.raises(SpecproofInputError) as info:
        exact_softmax(**kwargs)
    assert info.value.argument == argument


def test_integer_arrays_stay_exact_above_2_to_53_and_complex_is_refused():
    big = [2**60 + 1, 2**60 - 1]
    for x in (np.array(big, dtype=np.int64), np.array(big, dtype=np.uint64), torch.tensor(big)):
        assert to_exact(x) == (Fraction(2**60 + 1), Fraction(2**60 - 1))
        nums, exponent, name = dyadic_array(x)
        assert list(nums) == big and exponent == 0 and name == "exact"
    for bad, fragment in ((torch.tensor([0.5 + 0j, 0.5]), "complex tensor"), (np.array([0.5 + 1j]), "complex array"),
                          (torch.tensor([True, False]), "bool tensor")):
        with pytest.raises(SpecproofInputError, match=fragment):
            to_exact(bad)


def test_exact_softmax_bounds_its_work_by_the_logit_span():
    from specproof.harness.exact.softmax import MAX_LOGIT_SPREAD

    assert 11432 < MAX_LOGIT_SPREAD < 11433  # 16494 ln 2: binary128's smallest subnormal is 2^-16494
    ref = exact_softmax([0, -10000])  # a -1e4 mask (common in practice) is still certified
    assert 0 < ref.probs[1] < Fraction(1, 2**14000) and ref.rel_error_bound < Fraction(1, 2**100)
    for logits in ([1e30, -1e30], [1e6, 0.0]):
        with pytest.raises(SpecproofInputError, match="drop masked tokens"):
            exact_softmax(logits)
    with pytest.raises(SpecproofInputError, match="span"):
        exact_softmax([0, -100], temperature=Fraction(1, 1000))  # the span is taken after the temperature
