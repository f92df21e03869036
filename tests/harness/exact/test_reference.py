"""Exact reference: the canonical law, the normalisation policy, fast == plain, bad input."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.harness import exact_reference, sum_bound
from specproof.errors import SpecproofInputError
from specproof.harness.check.testing.strategies import law_pairs

DTYPES = ["float16", "bfloat16", "float32", "float64"]


def check_identities(ref):
    """Output == target; rejection == positive residual mass == 1 - sum min(p, q) == TV(p, q)."""
    assert ref.output_equals_target
    assert all(o == t for o, t in zip(ref.output, ref.target))
    min_mass = sum((min(p, q) for p, q in zip(ref.target, ref.draft)), Fraction(0))
    assert ref.rejection == ref.residual_mass == 1 - min_mass == ref.tv_target_draft
    assert sum(ref.output) == 1
    assert all(isinstance(x, Fraction) for x in ref.accept)


def same(a, b):
    fields = ("target", "draft", "accept", "accepted_mass", "residual", "output")
    return a.rejection == b.rejection and all(list(getattr(a, f)) == list(getattr(b, f)) for f in fields)


@given(law_pairs())
def test_exact_inputs_canonical_law_is_exact_and_paths_agree(pair):
    p, q = pair
    plain = exact_reference(p, q, method="plain")
    fast = exact_reference(p, q, method="fast")
    check_identities(plain)
    check_identities(fast)
    assert same(plain, fast)


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25)
def test_float_inputs_every_dtype(dtype, data):
    p, q = data.draw(law_pairs(dtype=dtype, max_vocab=40))
    fast = exact_reference(p, q, method="fast")
    plain = exact_reference(p, q, method="plain")
    check_identities(fast)
    assert same(fast, plain)
    assert fast.normalisation[0].dtype == dtype
    # the target is the input renormalised exactly: ratios of entries are the inputs' ratios
    exact_p = [Fraction(float(x)) for x in p.double()]
    total = sum(exact_p)
    assert list(fast.target) == [x / total for x in exact_p]


def test_edge_cases_named():
    h = Fraction(1, 2)
    one_hot = exact_reference([1, 0, 0], [0, 0, 1])  # disjoint supports: rejection 1
    assert one_hot.rejection == 1 and list(one_hot.residual) == [1, 0, 0]
    same_law = exact_reference([h, h], [h, h])  # p == q: residual mass 0, never reached
    assert same_law.rejection == 0 and list(same_law.residual) == [0, 0]
    q_zero = exact_reference([h, h], [1, 0])  # q(x) = 0: never proposed, A defined as 0
    assert list(q_zero.accept) == [h, 0]
    p_zero = exact_reference([1, 0], [h, h])  # p(x) = 0: never emitted
    assert p_zero.output[1] == 0 and p_zero.accept[1] == 0
    for ref in (one_hot, same_law, q_zero, p_zero):
        check_identities(ref)


def test_large_vocab_fast_path_and_subnormals():
    vocab = 262144
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.full(vocab, 0.1)).astype(np.float32)
    q = rng.dirichlet(np.full(vocab, 0.1)).astype(np.float32)
    p[:8] = np.float32(1e-45)  # the smallest float32 subnormal
    ref = exact_reference(p, q)
    assert ref.method == "fast" and ref.vocab == vocab
    assert ref.output_equals_target
    assert ref.rejection == ref.residual_mass
    assert ref.target[0] == Fraction(2) ** -149 / ref.normalisation[0].total


def test_fast_equals_plain_at_moderate_vocab():
    rng = np.random.default_rng(2)
    p = torch.tensor(rng.dirichlet(np.full(4096, 0.3)), dtype=torch.bfloat16)
    q = torch.tensor(rng.dirichlet(np.full(4096, 0.3)), dtype=torch.float32)
    assert same(exact_reference(p, q, method="fast"), exact_reference(p, q, method="plain"))


@pytest.mark.slow
def test_fast_equals_plain_at_262144():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(262144, 0.3)).astype(np.float32)
    q = rng.dirichlet(np.full(262144, 0.3)).astype(np.float32)
    assert same(exact_reference(p, q, method="fast"), exact_reference(p, q, method="plain"))


def test_normalisation_policy_records_and_bounds():
    p = np.array([0.1, 0.2, 0.7], dtype=np.float32)  # sums to 1 only up to float32 rounding
    ref = exact_reference(p, np.array([0.5, 0.25, 0.25], dtype=np.float32))
    norm = ref.normalisation[0]
    assert norm.total == sum(Fraction(float(x)) for x in p)
    assert norm.deviation == norm.total - 1
    assert norm.bound == sum_bound("float32", 3)
    assert abs(norm.deviation) <= norm.bound
    assert sum(ref.target) == 1
    # the bound: u_dtype + gamma_{V-1} of the accumulation dtype (float32 for half types)
    assert sum_bound("bfloat16", 1) == Fraction(1, 256)
    assert sum_bound("float32", 2) == Fraction(1, 2**24) + Fraction(1, 2**24) / (1 - Fraction(1, 2**24))


def test_weights_normalise_counts():
    ref = exact_reference([1, 2, 3], [3, 2, 1], weights=True)
    assert list(ref.target) == [Fraction(1, 6), Fraction(1, 3), Fraction(1, 2)]
    check_identities(ref)


@pytest.mark.parametrize(
    "p, q, argument, fragment",
    [
        ([float("nan"), 1.0], [0.5, 0.5], "p", "NaN or infinity"),
        ([0.5, 0.5], [float("inf"), 0.0], "q", "NaN or infinity"),
        (np.array([0.5, np.nan]), [0.5, 0.5], "p", "NaN or infinity"),
        ([Fraction(3, 2), Fraction(-1, 2)], [1, 0], "p", "negative"),
        ([1, 0], [1, 0, 0], "q", "differs"),
        ([], [], "p", "empty"),
        ([0, 0], [1, 0], "p", "sums to zero"),
        ([0.5, 0.6], [0.5, 0.5], "p", "bound"),
        ([Fraction(1, 2), Fraction(1, 3)], [1, 0], "p", "exact bound 0"),
        (np.array([1 + 1j, 0]), [1, 0], "p", "complex"),
        (["a", "b"], [1, 0], "p", "unsupported"),
        (torch.tensor([[0.5, 0.5]]), torch.tensor([[0.5, 0.5]]), "p", "1-D"),
    ],
)
def test_bad_input_names_argument(p, q, argument, fragment):
    with pytest.raises(SpecproofInputError) as info:
        exact_reference(p, q)
    assert info.value.argument == argument
    assert fragment in str(info.value)


def test_two_dimensional_input_is_refused():
    with pytest.raises(SpecproofInputError, match="1-D"):
        exact_reference(np.full((2, 2), 0.25), np.full((2, 2), 0.25))


def test_bad_method_and_rule():
    with pytest.raises(SpecproofInputError, match="method"):
        exact_reference([1], [1], method="quick")
    with pytest.raises(ValueError, match="unknown step rule"):
        exact_reference([1], [1], rule="nonsense")


def test_acceptance_of_refuses_never_proposed_token():
    ref = exact_reference([Fraction(1, 2), Fraction(1, 2)], [1, 0])
    assert ref.acceptance_of(0) == Fraction(1, 2)
    with pytest.raises(SpecproofInputError, match="q = 0"):
        ref.acceptance_of(1)
    with pytest.raises(SpecproofInputError, match="outside"):
        ref.acceptance_of(5)


def test_multiplication_and_log_forms_share_the_law():
    h = Fraction(1, 2)
    for rule in ("canonical-mul", "canonical-log"):
        check_identities(exact_reference([h, h], [Fraction(3, 4), Fraction(1, 4)], rule=rule))
