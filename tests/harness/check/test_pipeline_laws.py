"""The generate contract's exact reference: processing, the law of N tokens, families, table models."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.generate import sequence_code

from specproof.harness import Sampling, apply_sampling
from specproof.harness.check.calls import ContractViolation
from specproof.harness.check.contracts.generate.signature import take_violations
from specproof.harness.check.contracts.generate.families import (pipeline_families, pipeline_law, pipeline_tolerance,
                                                                 sequence_codes_of)
from specproof.harness.check.contracts.generate.models import TablePair
from specproof.harness.check.contracts.generate.scenarios import pipeline_suite, table_pair, with_sampling
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.dtypes import dtype_info
from specproof.harness.exact.sampling import ORDER, processed_law
from specproof.harness.exact.softmax import exact_softmax
from specproof.harness.exact.tolerances import step_tolerance


def brute_processed(logits: tuple[Fraction, ...], sampling: Sampling) -> list[Fraction]:
    """The processing by its definitions, step by step in ``sampling.order``, formulated differently
    from ``processed_law``."""
    vocab = len(logits)
    keep, t = set(range(vocab)), Fraction(1)
    for step in sampling.order:
        probs = exact_softmax(logits, t).probs.fractions()
        if step == "temperature":
            t = to_exact(sampling.temperature)
        elif step == "top_k" and sampling.top_k is not None:  # fewer than k kept logits strictly above it
            keep = {i for i in keep if sum(logits[j] > logits[i] for j in keep) < sampling.top_k}
        elif step == "top_p" and sampling.top_p is not None:  # the smallest descending prefix reaching top_p
            order = sorted(keep, key=lambda i: (-probs[i], i))
            total = sum(probs[i] for i in order)
            size = next(m for m in range(1, len(order) + 1)
                        if sum(probs[i] for i in order[:m]) / total >= to_exact(sampling.top_p))
            keep = set(order[:size])
        elif step == "min_p" and sampling.min_p is not None:
            top = max(probs[i] for i in keep)
            keep = {i for i in keep if probs[i] >= to_exact(sampling.min_p) * top}
    probs = exact_softmax(logits, t).probs.fractions()
    mass = sum(probs[i] for i in keep)
    return [probs[i] / mass if i in keep else Fraction(0) for i in range(vocab)]


samplings = st.builds(
    Sampling,
    st.sampled_from([0.5, 0.7, 1.0, 1.5]),
    st.one_of(st.none(), st.integers(1, 3)),
    st.one_of(st.none(), st.sampled_from([0.5, 0.75, 0.9])),
    st.one_of(st.none(), st.sampled_from([0.1, 0.3])),
    st.permutations(ORDER).map(tuple),
)


@st.composite
def small_pairs(draw):
    vocab, classes, positions = draw(st.integers(2, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    grid = st.integers(-12, 12).map(lambda x: x / 4)
    shape = (positions, classes, vocab)
    target = np.array(draw(st.lists(grid, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))).reshape(shape)
    prompt = tuple(draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=2)))
    return TablePair("h", prompt, target, target.copy())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pair=small_pairs(), sampling=samplings, new_tokens=st.integers(1, 3))
def test_pipeline_law_matches_brute_force_enumeration(pair, sampling, new_tokens):
    target, _ = pair.build("float32", "cpu", new_tokens)
    try:
        law = pipeline_law(pair, target, sampling, new_tokens, "float32")
    except SpecproofInputError:
        assume(False)  # a decision within the float margin: refused by design
    got = law.law()
    assert len(got) == pair.vocab ** new_tokens and sum(got.values()) == 1
    for s in itertools.product(range(pair.vocab), repeat=new_tokens):
        ids = torch.tensor([list(pair.prompt) + list(s)])
        logits = target(ids)[0]  # the model itself, column by column
        expected = Fraction(1)
        for j, token in enumerate(s):
            row = to_exact(logits[len(pair.prompt) - 1 + j])
            expected *= brute_processed(row, sampling)[token]
        assert got[s] == expected, s


@settings(max_examples=60, deadline=None)
@given(logits=st.lists(st.integers(-40, 40).map(lambda x: x / 8), min_size=2, max_size=8), sampling=samplings)
def test_apply_sampling_masks_what_the_exact_law_removes(logits, sampling):
    try:
        exact = processed_law(logits, sampling, "float64")
    except SpecproofInputError:
        assume(False)
    torch_law = apply_sampling(torch.tensor(logits, dtype=torch.float64), sampling).softmax(-1)
    assert [x == 0 for x in exact] == (torch_law == 0).tolist()
    assert np.allclose([float(x) for x in exact], torch_law.numpy(), rtol=1e-12, atol=0)


def test_sampling_validation_and_runtime_spellings():
    assert Sampling.from_runtime(0.7, top_k=0, top_p=1.0, min_p=0) == Sampling(0.7)
    for kwargs, argument in (({"temperature": 0}, "temperature"), ({"top_k": 0}, "top_k"),
                             ({"top_p": 1.5}, "top_p"), ({"min_p": -0.1}, "min_p"),
                             ({"temperature": float("nan")}, "temperature")):
        with pytest.raises(SpecproofInputError) as err:
            Sampling(**kwargs)
        assert err.value.argument == argument
    with pytest.raises(SpecproofInputError):
        Sampling(order=("temperature", "top_k"))
    with pytest.raises(Exception):
        Sampling().temperature = 2.0  # frozen


def test_boundaries_are_refused_not_guessed():
    with pytest.raises(SpecproofInputError, match="top_p"):  # mass before the 2nd token is exactly 1/2
        processed_law([1.0, 1.0, -30.0], Sampling(1.0, top_p=0.5))
    with pytest.raises(SpecproofInputError, match="min_p"):  # ratio exp(-ln 2) = 0.5 up to rounding
        processed_law([0.0, -0.6931471805599453], Sampling(1.0, min_p=0.5))
    ties = processed_law([2.0, 2.0, 0.0], Sampling(1.0, top_k=1))  # ties at the top-k boundary are kept
    assert ties[0] == ties[1] == Fraction(1, 2) and ties[2] == 0


def test_families_expectations_and_impossible_rows():
    scenario = next(s for s in pipeline_suite() if s.name == "top-k2-offsupport")
    target, _ = scenario.pair.build("float32", "cpu", scenario.new_tokens)
    law = pipeline_law(scenario.pair, target, scenario.sampling, scenario.new_tokens, "float32")
    families = pipeline_families(law)
    prefix = families[0]
    by_length: dict[int, float] = {}
    for e, length in prefix.positions.items():
        by_length[length] = by_length.get(length, 0.0) + prefix.expected[e]
    assert all(abs(total - 1) < 1e-12 for total in by_length.values())
    for pair_family in families[1:]:
        assert abs(pair_family.expected.sum() - 1) < 1e-12 and pair_family.zero_tolerance.any()
    first = law.first_zero()
    good = max(law.law(), key=law.law().get)
    bad_token = next(t for t, p in enumerate(law.next_law(good[:1])) if p == 0)
    bad = good[:1] + (bad_token,) + good[2:]
    codes = sequence_codes_of(np.array([good, bad]), law.vocab)
    assert codes.tolist() == [sequence_code(good, law.vocab), sequence_code(bad, law.vocab)]  # the law's own codes
    assert first[codes].tolist() == [0, 2]


def test_tolerance_is_derived_from_the_step_tolerance():
    assert pipeline_tolerance("float32", 6, 5) == 10 * step_tolerance("float32", 6)
    assert pipeline_tolerance("bfloat16", 1000, 50) == 1


def test_table_models_are_exact_lookups_and_record_misuse():
    pair = table_pair("t", 1, 5, 2, 3, scale=2.0, offset=20.0)
    target, draft = pair.build("float32", "cpu", 4)
    ids = torch.tensor([[0, 1, 3, 4, 2]])
    logits = target(ids)
    for t in range(5):
        assert torch.equal(logits[0, t], torch.as_tensor(pair.target[min(t, 2), ids[0, t] % 2]).float())
    assert target.vocab_size == 5 and target.max_length == len(pair.prompt) + 4 + 8 + 1
    for bad in (torch.tensor([0, 1]), torch.tensor([[0, 7]]), torch.zeros((1, 30), dtype=torch.int64),
                torch.tensor([[0.0, 1.0]])):
        with pytest.raises(ContractViolation):
            target(bad)
    assert len(take_violations(target, draft)) == 4 and not take_violations(target)


def test_with_sampling_retargets_every_pair_once():
    suite = with_sampling(pipeline_suite(), Sampling(0.9, top_k=3), 4)
    assert len({id(s.pair) for s in suite}) == len(suite) == 5
    assert all(s.sampling == Sampling(0.9, top_k=3) and s.new_tokens == 4 for s in suite)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_temperature_is_counted_its_rounding_covers_the_real_quotients(dtype):
    """A table pair adds nothing at T = 1 (no division) and ``2 N delta_T`` otherwise; the per-token
    share ``2 delta_T`` bounds the total variation between the softmax of the quotients the pipeline
    rounds (``fl(l / fl(T))`` in its dtype) and the exact ``softmax(l / T)``, on every row of the
    T = 0.7 scenario (computed with 60-digit mpmath)."""
    import mpmath

    scenario = next(s for s in pipeline_suite() if s.name == "T0.7")
    pair, n = scenario.pair, scenario.new_tokens
    assert pair.extra_tolerance(dtype, n) == 0 and pair.extra_tolerance(dtype, n, Sampling(1.0)) == 0
    extra = pair.extra_tolerance(dtype, n, scenario.sampling)
    assert extra > 0
    # a float16 pipeline dividing in float32 (logits upcast first) gets float32's rounding of the quotient
    upcast = pair.extra_tolerance("float16", n, scenario.sampling, "float32")
    assert upcast < pair.extra_tolerance("float16", n, scenario.sampling)
    per_token = extra / n
    dt = {"float32": torch.float32, "float16": torch.float16}[dtype]
    t = to_exact(scenario.sampling.temperature)
    mpmath.mp.dps = 60
    rows = torch.as_tensor(pair.target).reshape(-1, pair.vocab).to(dt)
    worst = Fraction(0)
    for row in rows:
        rounded = (row / torch.tensor(scenario.sampling.temperature, dtype=dt)).tolist()
        exact = [mpmath.mpf(to_exact(v).numerator) / to_exact(v).denominator / (mpmath.mpf(t.numerator) / t.denominator)
                 for v in row.tolist()]
        def softmax(xs):
            m = max(xs)
            e = [mpmath.exp(mpmath.mpf(x) - m) for x in xs]
            return [x / sum(e) for x in e]
        tv = sum(abs(a - b) for a, b in zip(softmax(rounded), softmax(exact))) / 2
        worst = max(worst, to_exact(float(tv)))
    assert 0 < worst <= per_token, (float(worst), float(per_token))


def test_the_float_margin_includes_the_temperatures_move():
    """``rho = (1 + (V + 3) u)(1 + 4 delta_T) - 1``: the softmax's own margin at ``T = 1`` (and for a filter
    read before the temperature), widened by the temperature's move otherwise, and vacuous past
    ``delta_T = 1/2``."""
    from specproof.harness.exact.sampling import boundary_margin, decision_margin, shifted_margin, temperature_shift

    u = dtype_info("float16").unit_roundoff
    assert shifted_margin("float16", 6, Fraction(0)) == boundary_margin("float16", 6)
    assert temperature_shift("float16", Fraction(4), Fraction(1)) == 0
    assert decision_margin("float16", 6, Fraction(4), Fraction(1)) == boundary_margin("float16", 6) == 9 * u
    shift = temperature_shift("float16", Fraction(4), Fraction(4, 5))
    assert shift == 2 * u / (1 - u) * 5
    assert decision_margin("float16", 6, Fraction(4), Fraction(4, 5)) == (1 + 9 * u) * (1 + 4 * shift) - 1
    assert decision_margin("bfloat16", 6, Fraction(200), Fraction(1, 4)) == 1  # delta_T > 1/2


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_float_margin_covers_the_real_processing_of_every_tempered_row(dtype):
    """On every row of the suite's tempered tables (T0.7, combo), each probability of ``softmax(fl(l / T))``
    computed in the dtype lies within the margin ``rho`` of the exact ``softmax(l / T)``, relatively."""
    from specproof.harness.exact.sampling import decision_margin

    dt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    for scenario in (s for s in pipeline_suite() if s.sampling.temperature != 1):
        t = to_exact(scenario.sampling.temperature)
        for row in torch.as_tensor(scenario.pair.target).reshape(-1, scenario.pair.vocab).to(dt):
            values = to_exact(row.tolist(), "row")
            exact = exact_softmax(values, t).probs.fractions()
            real = torch.softmax(row / torch.tensor(scenario.sampling.temperature, dtype=dt), -1).tolist()
            worst = max(abs(to_exact(r) / e - 1) for r, e in zip(real, exact))
            rho = decision_margin(dtype, len(values), max(abs(v) for v in values), t)
            assert worst <= rho, (scenario.name, dtype, float(worst), float(rho))


def test_the_combo_scenario_is_refused_within_the_temperatures_move_and_built_at_float32():
    """combo (T = 0.8, top-p 0.9) in float16: a mass before a token 0.0119 from top-p, outside the softmax's
    margin 9u = 0.0044 but within the temperature's move: a float16 pipeline may decide either way there,
    so the law is refused at float16's margin (the check runs it out of scope) and built at float32's."""
    from specproof.harness.exact.sampling import boundary_margin

    combo = next(s for s in pipeline_suite() if s.name == "combo")
    target, _ = combo.pair.build("float16", "cpu", combo.new_tokens)
    with pytest.raises(SpecproofInputError, match="top_p=0.9: the mass before token 0 is 0.888") as err:
        pipeline_law(combo.pair, target, combo.sampling, combo.new_tokens, "float16")
    assert err.value.argument == "sampling" and Fraction(9, 10) - Fraction(888, 1000) > boundary_margin("float16", 6)
    law = pipeline_law(combo.pair, target, combo.sampling, combo.new_tokens, "float32")
    assert all(sum(row) == 1 for row in law.rows.values())
