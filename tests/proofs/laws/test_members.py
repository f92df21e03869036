"""The zoo members' exact laws on plain data (proofs/laws/members.py): a view of hand-made rows, no harness.
The laws on realised scenarios, and against what the members emit: tests/harness/bench/test_member_rows.py."""

from __future__ import annotations

from fractions import Fraction as F

from specproof.proofs.laws.members import (CANONICAL_MODEL, MEMBER_LAWS, RAISED, TEMPERED_TARGET, RoundView,
                                           continue_after_rejection_law, leading_accepts_law)
from specproof.proofs.laws.sequences import ToyPair, round_law, target_law

H = F(1, 2)


def view_of(pair: ToyPair, tables: dict | None = None, *, zero_uniform=F(0), tiny=F(0), ratio_ties=False) -> RoundView:
    """The pair's own rows (and ``tables[name](prefix)`` for processed tables) as the rows read."""
    own = {"target": pair.target.__getitem__, "draft": pair.draft.__getitem__, **(tables or {})}
    return RoundView(pair, lambda table, prefix: own[table](prefix), zero_uniform, tiny, ratio_ties)


def test_the_canonical_model_on_normalised_rows_is_the_round_law():
    for seed in range(4):
        pair = ToyPair.random(3, 2, seed)
        assert leading_accepts_law(view_of(pair), CANONICAL_MODEL) == round_law(pair)


def test_every_member_law_is_a_law_on_a_random_pair():
    pair = ToyPair.random(3, 2, 5)
    view = view_of(pair, {TEMPERED_TARGET: pair.target.__getitem__, "target after min-p": pair.target.__getitem__,
                          "draft after top-k": pair.draft.__getitem__}, zero_uniform=F(1, 2**24), tiny=F(1, 2**126))
    for name, law in MEMBER_LAWS.items():
        assert sum(law(view).values()) == 1, name
        assert RAISED not in law(view), name  # normalised rows: a rejection always leaves a positive residual


def test_le_accepts_a_p_zero_draft_exactly_with_the_zero_uniform():
    pair = ToyPair.context_free((F(0), F(1)), (F(1), F(0)), 1)  # every draft has p = 0
    for name in ("le-ratio-invcdf", "vllm-v1-layout-float32-ge"):
        law = MEMBER_LAWS[name](view_of(pair, zero_uniform=F(1, 1000)))
        assert sum(v for s, v in law.items() if len(s) > 1) == F(1, 1000), name
    assert MEMBER_LAWS["le-ratio-invcdf"](view_of(pair)) == {(1,): 1}  # a continuous uniform never accepts it


def test_transformers_accepts_the_p_zero_draft_only_in_releases_with_ratio_ties():
    pair = ToyPair.context_free((F(0), F(1)), (H, H), 1)
    law = MEMBER_LAWS["transformers-speculative-sampling"]
    with_ties = law(view_of(pair, zero_uniform=F(1, 64), ratio_ties=True))
    assert with_ties[(0, 1)] == H * F(1, 64) and law(view_of(pair, zero_uniform=F(1, 64))).get((0, 1), 0) == 0


def test_the_clamped_residual_reaches_a_p_zero_token_by_tiny():
    pair = ToyPair.context_free((H, H, F(0)), (F(1, 4), F(1, 4), H), 1)  # draft 2 has p = 0: always rejected
    law = MEMBER_LAWS["residual-clamped-tiny"](view_of(pair, tiny=F(1, 1000)))
    assert law[(2,)] > 0 and MEMBER_LAWS["resample-from-target"](view_of(pair)).get((2,), 0) == 0


def test_target_only_temperature_reads_its_processed_table():
    pair = ToyPair.context_free((H, H), (F(1, 4), F(3, 4)), 1)
    tempered = {TEMPERED_TARGET: lambda prefix: pair.draft[()] if not prefix else pair.target[prefix]}
    law = MEMBER_LAWS["target-only-temperature"](view_of(pair, tempered))
    assert sum(v for s, v in law.items() if len(s) == 2) == 1  # the tempered target equals the draft: all accepted


def test_continuing_after_a_rejection_is_not_lossless():
    pair = ToyPair.random(2, 3, 1, zeros=False)
    law = continue_after_rejection_law(view_of(pair))
    assert sum(law.values()) == 1 and law != round_law(pair) and any(len(s) == 4 for s in law)
    assert target_law(pair) != law
