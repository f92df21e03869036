"""Non-finite floats in JSON: one spelling, written and read back."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from specproof.harness.files.json_numbers import json_safe, number_word, read_number


@pytest.mark.parametrize("x, word", [(math.inf, "inf"), (-math.inf, "-inf"), (1.5, 1.5), (0.0, 0.0)])
def test_words(x, word):
    assert number_word(x) == word
    assert read_number(word) == x


def test_nan_round_trips():
    assert number_word(math.nan) == "nan"
    assert math.isnan(read_number("nan"))
    assert read_number(None) is None


def test_other_strings_are_refused():
    with pytest.raises(ValueError, match="not a number word"):
        read_number("Infinity")


@settings(deadline=None)
@given(st.recursive(st.floats() | st.integers() | st.text(max_size=3) | st.none(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=10))
def test_json_safe_is_strict_json(value):
    text = json.dumps(json_safe(value), allow_nan=False)  # raises on a bare Infinity/NaN
    assert json.loads(text) == json.loads(json.dumps(json_safe(json_safe(value)), allow_nan=False))
