"""The one rounded pair: scenarios, their events and the grid law read the same exact rows."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from specproof.errors import SpecproofInputError
from specproof.harness.check.contracts.batched.scenarios import Scenario
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.rounded import RoundedPair, exact_law_row
from specproof.proofs.laws.sequences import ToyPair


def test_exact_row_is_the_rounded_row_renormalised():
    row = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64).to(torch.bfloat16)
    values = to_exact(row)
    assert exact_law_row(row) == tuple(v / sum(values) for v in values)
    assert sum(exact_law_row(row)) == 1


def test_realisation_reads_the_one_rounded_pair():
    real = Scenario.random("r", 3, 2, seed=5, classes=2).realise("float16")
    pair = real.rounded
    assert pair.dtype == "float16" and (pair.vocab, pair.k) == (3, 2)
    assert torch.equal(pair.row("target", (0, 2)), real.target[2, 0])  # class of the last token: 2 mod 2 = 0
    assert real.exact_row("draft", 1, 1) == pair.exact_row("draft", (1, 1)) == exact_law_row(real.draft[1, 1])
    assert real.toy_pair is pair.toy_pair and pair.toy_pair.target[(1, 1)] == pair.exact_row("target", (2, 1))
    assert [sum(r) for r in real.target_class_transitions[1]] == [1, 1]


def test_toy_pair_rounded_once_per_prefix():
    third = Fraction(1, 3)
    pair = ToyPair.context_free((Fraction(1, 10), Fraction(9, 10)), (2 * third, third), 1)
    rounded = RoundedPair.from_toy_pair(pair, "bfloat16")
    assert rounded.row("target", (1,)).dtype == torch.bfloat16
    exact = rounded.toy_pair.target[()]
    assert sum(exact) == 1 and exact != (Fraction(1, 10), Fraction(9, 10))  # bfloat16 rounding of 1/3 is not undone
    with pytest.raises(SpecproofInputError, match="too large"):
        _ = RoundedPair(rounded.dtype, 17, 3, {}, {}, lambda s: s).toy_pair
