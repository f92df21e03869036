"""The exact law of a pipeline's N new tokens from given next-token laws (proofs/laws/generate.py): plain data
only; the generate contract's laws from logits are tests/harness/check/test_pipeline_laws.py's."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.generate import PipelineLaw, sequence_code
from specproof.proofs.laws.sequences import MAX_SEQUENCES

# next-token law keyed by the last token (None: the first token), over V = 3; token 2 is impossible after 1
ROWS = {None: (F(1, 2), F(1, 4), F(1, 4)), 0: (F(1, 3), F(1, 3), F(1, 3)), 1: (F(3, 4), F(1, 4), F(0)),
        2: (F(0), F(1, 2), F(1, 2))}


def last_token(prefix: tuple[int, ...]):
    return prefix[-1] if prefix else None


def recording(asked: list):
    def next_laws(prefixes):
        asked.append(list(prefixes))
        return [ROWS[last_token(p)] for p in prefixes]
    return next_laws


def test_the_law_is_the_product_of_the_next_token_laws_each_asked_for_once_per_key():
    asked: list = []
    law = PipelineLaw.build(3, 4, last_token, recording(asked))
    assert len(asked) == 1 and sorted(map(last_token, asked[0]), key=repr) == sorted(ROWS, key=repr)
    sequences = law.law()
    assert len(sequences) == 3 ** 4 and sum(sequences.values()) == 1
    for s in itertools.product(range(3), repeat=4):
        expected = F(1)
        for j, token in enumerate(s):
            expected *= ROWS[last_token(s[:j])][token]
        assert sequences[s] == expected, s
    assert law.next_law((0, 2)) == ROWS[2] and law.prefix[(1,)] == F(1, 4)


def test_an_impossible_prefix_has_probability_0_and_first_zero_names_its_position():
    law = PipelineLaw.build(3, 3, last_token, recording([]))
    assert law.prefix[(1, 2)] == 0 and law.prefix[(1, 2, 0)] == 0 and law.prefix[(1, 2, 1)] == 0
    first = law.first_zero()
    assert first.shape == (27,)
    assert first[sequence_code((1, 2, 0), 3)] == 2 and first[sequence_code((0, 1, 2), 3)] == 3
    assert first[sequence_code((0, 0, 0), 3)] == 0 and first[sequence_code((2, 0, 0), 3)] == 2  # 0 after 2: p = 0
    assert (first == 0).sum() == sum(1 for w in law.law().values() if w)


def test_the_sequence_code_is_base_v():
    assert sequence_code((1, 0, 2), 3) == 11 and sequence_code((), 5) == 0
    codes = [sequence_code(s, 4) for s in itertools.product(range(4), repeat=3)]
    assert codes == list(range(64))


def test_the_enumeration_limit_names_the_argument_before_any_law_is_asked_for():
    asked: list = []
    with pytest.raises(SpecproofInputError, match="65,536") as err:
        PipelineLaw.build(8, 6, last_token, recording(asked), argument="new_tokens")
    assert err.value.argument == "new_tokens" and 8 ** 6 > MAX_SEQUENCES and not asked
    assert "at most 5 new tokens" in err.value.fix  # 8^5 = 32,768 <= 65,536 < 8^6
