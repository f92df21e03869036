"""White-box drift: exact errors, the ULP definition, derived bounds, mutants and degraded code caught."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specproof.impls as impls
from specproof.errors import SpecproofInputError
from specproof.harness.drift.whitebox import FIELDS, measure_whitebox, round_to_dtype
from specproof.harness.check.testing.strategies import law_pairs
from specproof.harness.exact.dtypes import TORCH_DTYPES
from specproof.impls.verifiers.whitebox import WhiteboxStepLaw, step_log, step_product, step_ratio, step_residual_clamped

DTYPES = ["float16", "bfloat16", "float32", "float64"]
FORMS = {"ratio": step_ratio, "product": step_product, "log": step_log}
H, Q = Fraction(1, 2), Fraction(1, 4)


def dirichlet(vocab, seed, concentration=0.5):
    gen = torch.Generator().manual_seed(seed)
    gamma = torch._standard_gamma(torch.full((vocab,), concentration, dtype=torch.float64), generator=gen)
    return gamma / gamma.sum()


def perturbed(field_name, index, value):
    """A step function returning step_product's law with one entry of one field replaced."""
    def step(p, q):
        law = step_product(p, q)._asdict()
        tensor = law[field_name].clone().reshape(-1)
        tensor[index] = value
        law[field_name] = tensor.reshape(law[field_name].shape)
        return WhiteboxStepLaw(**law)
    return step


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", sorted(FORMS))
@given(data=st.data())
@settings(max_examples=20)
def test_correct_forms_within_their_bounds_every_dtype(dtype, form, data):
    p, q = data.draw(law_pairs(dtype=dtype, max_vocab=40))
    for bound_form in (form, "any"):
        result = measure_whitebox(FORMS[form], p, q, dtype=dtype, form=bound_form)
        assert result.within_tolerance, (result.failing_fields(), result.as_json()["fields"])
        assert all(f.impossible_mass == 0 and f.nonfinite == 0 for f in result.fields.values())


@pytest.mark.parametrize("dtype", DTYPES)
@given(pair=law_pairs(max_vocab=12))
@settings(max_examples=15)
def test_exact_inputs_rounded_once_then_within_bounds(dtype, pair):
    p, q = pair
    for fn in FORMS.values():
        assert measure_whitebox(fn, p, q, dtype=dtype).within_tolerance


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_laws_every_whitebox_record(dtype):
    for record in impls.implementations(contract="whitebox", expected_exact=True):
        for seed in range(3):
            result = measure_whitebox(record, dirichlet(300, seed), dirichlet(300, seed + 10), dtype=dtype)
            assert result.within_tolerance, (record.name, result.failing_fields())
            assert result.implementation == record.name


def test_reference_is_the_rounded_input_renormalised():
    p = [Fraction(1, 3), Fraction(2, 3)]
    result = measure_whitebox(step_ratio, p, [H, H], dtype="float16")
    rounded = round_to_dtype(p, "float16", "p")
    assert [Fraction(float(x)) for x in rounded] == [Fraction(1365, 4096), Fraction(1365, 2048)]
    assert list(result.reference.target) == [Fraction(1365, 4095), Fraction(2730, 4095)]
    # one correct rounding, ties to even (float16 spacing just above 1 is 2^-10)
    assert float(round_to_dtype([Fraction(2049, 2048)], "float16")[0]) == 1.0
    assert float(round_to_dtype([Fraction(2051, 2048)], "float16")[0]) == 1 + 2**-9


def test_representable_inputs_product_form_is_exact():
    result = measure_whitebox(step_product, [H, Q, Q], [Q, Q, H], dtype="float64")
    assert result.law.tv == 0 and result.law.acceptance_rate_error == 0 and result.law.kl == 0
    assert all(f.max_abs_error == 0 for f in result.fields.values())
    assert result.fields["output"].ulp_histogram[0]["count"] == 3


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_ulp_is_the_spacing_of_the_exact_values_binade(dtype):
    info_eps = torch.finfo(TORCH_DTYPES[dtype]).eps
    # exact accept of token 0 is 1: the binade [1, 2) has spacing eps, the float just below 1 is eps/2 away
    below_one = perturbed("accept", 0, 1 - info_eps / 2)
    result = measure_whitebox(below_one, [H, H], [H, H], dtype=dtype)
    assert result.fields["accept"].max_ulp_error == 0.5
    assert result.fields["accept"].max_abs_error == Fraction(info_eps) / 2
    above_one = perturbed("accept", 0, 1 + info_eps)
    assert measure_whitebox(above_one, [H, H], [H, H], dtype=dtype).fields["accept"].max_ulp_error == 1.0
    # exact 0 (q = 0 token): ulp(0) is the smallest subnormal
    tiny = torch.finfo(TORCH_DTYPES[dtype]).smallest_normal * info_eps  # 2^min_exponent
    subnormal = perturbed("accept", 2, tiny)
    result = measure_whitebox(subnormal, [H, Q, Q], [H, H, 0], dtype=dtype)
    assert result.fields["accept"].max_ulp_error == 1.0
    assert result.fields["accept"].max_rel_error == math.inf


def test_residual_clamped_caught_where_the_residual_is_all_zero():
    law = [H, Q, Q, 0]  # p == q after rounding: exact residual mass 0, and token 3 has p = 0
    for dtype in DTYPES:
        bad = measure_whitebox(step_residual_clamped, law, law, dtype=dtype)
        assert not bad.within_tolerance and bad.failing_fields() == ["residual"]
        assert bad.fields["residual"].impossible_mass == Fraction(1, 4)
        record = impls.get("whitebox-residual-clamped")
        assert not measure_whitebox(record, law, law, dtype=dtype).within_tolerance
        for fn in FORMS.values():
            assert measure_whitebox(fn, law, law, dtype=dtype).within_tolerance


def test_residual_clamped_caught_by_the_bound_in_float16():
    p, q = dirichlet(1000, 1, 1.0), dirichlet(1000, 2, 1.0)  # no zeros: only the bound can catch it
    bad = measure_whitebox(step_residual_clamped, p, q, dtype="float16")
    assert bad.fields["residual"].violations > 0 and bad.fields["residual"].impossible_mass == 0
    assert measure_whitebox(step_ratio, p, q, dtype="float16").within_tolerance


def test_computing_in_bfloat16_while_claiming_float32_is_flagged():
    def bf16_inside(p, q):
        law = step_ratio(p.to(torch.bfloat16), q.to(torch.bfloat16))
        return WhiteboxStepLaw(*(t.to(p.dtype) for t in law))

    p, q = dirichlet(64, 3), dirichlet(64, 4)
    result = measure_whitebox(bf16_inside, p, q, dtype="float32")
    assert not result.within_tolerance
    assert {"accept", "accepted_mass", "output"} <= set(result.failing_fields())
    assert result.fields["accept"].max_ulp_error > 1000
    assert result.law.tv > result.law.tv_bound


def test_float32_claiming_float64_is_flagged():
    def f32_inside(p, q):
        return WhiteboxStepLaw(*(t.double() for t in step_ratio(p.float(), q.float())))

    result = measure_whitebox(f32_inside, dirichlet(64, 5), dirichlet(64, 6), dtype="float64")
    assert not result.within_tolerance and "accept" in result.failing_fields()


def test_unnormalised_residual_and_lost_mass_are_reported():
    def unnormalised(p, q):
        law = step_ratio(p, q)
        residual = torch.relu(p - q)
        return law._replace(residual=residual, output=law.accepted_mass + law.rejection * residual)

    p, q = [Fraction(3, 5), Fraction(1, 5), Fraction(1, 5)], [Fraction(1, 5), Fraction(2, 5), Fraction(2, 5)]
    result = measure_whitebox(unnormalised, p, q, dtype="float32")
    assert {"residual", "output"} <= set(result.failing_fields())

    dropped = perturbed("output", 1, 0.0)
    result = measure_whitebox(dropped, p, q, dtype="float32")
    assert result.law.lost_tokens == 1 and result.law.kl == math.inf
    assert result.law.lost_mass == result.reference.target[1]
    vanished = perturbed("residual", 0, 0.0)
    result = measure_whitebox(vanished, p, q, dtype="float32")
    assert result.law.residual_vanished and result.law.residual_lost_mass == 1
    assert not result.within_tolerance


def test_nonfinite_fields_are_violations_not_crashes():
    result = measure_whitebox(perturbed("accept", 0, float("nan")), [H, H], [H, H], dtype="float32")
    assert result.fields["accept"].nonfinite == 1 and not result.within_tolerance
    json.dumps(result.as_json(), allow_nan=False)


def test_large_vocabulary_is_exact():
    vocab = 262_144
    p, q = dirichlet(vocab, 7).float(), dirichlet(vocab, 8).float()
    result = measure_whitebox(step_ratio, p, q, dtype="float32")
    assert result.within_tolerance and result.vocab == vocab
    assert result.law.tv < 1e-6 and result.law.kl < 1e-12
    histogram = result.fields["output"].ulp_histogram
    assert sum(b["count"] for b in histogram) == vocab


def test_json_is_strict_and_exact_values_are_fractions():
    result = measure_whitebox(step_log, dirichlet(20, 9), dirichlet(20, 10), dtype="bfloat16")
    data = json.loads(json.dumps(result.as_json(), allow_nan=False))
    assert data["kind"] == "whitebox-drift" and data["schema"] == 1
    assert set(data["fields"]) == set(FIELDS)
    tv = data["law"]["tv"].split("/")
    assert Fraction(int(tv[0]), int(tv[1])) == result.law.tv
    assert data["fields"]["accept"]["ulp_histogram"][-1]["upper"] == "inf"


@pytest.mark.parametrize("kwargs, argument", [
    (dict(p=[-0.5, 1.5], q=[0.5, 0.5]), "p"),
    (dict(p=[0.5, 0.5], q=[0.5, 0.25, 0.25]), "q"),
    (dict(p=[Fraction(1, 2), Fraction(1, 3)], q=[H, H]), "p"),
    (dict(p=[0.5, 0.5], q=[[0.5, 0.5]]), "q"),
    (dict(p=[1e-30, 1e-30], q=[0.5, 0.5], dtype="float16"), "p"),
    (dict(p=[0.5, 0.5], q=[0.5, float("nan")]), "q"),
    (dict(p=[0.5, 0.5], q=[0.5, 0.5], dtype="int8"), "dtype"),
    (dict(p=[0.5, 0.5], q=[0.5, 0.5], form="exp"), "form"),
    (dict(p=[0.5, 0.5], q=[0.5, 0.5], device="nowhere"), "device"),
    (dict(p="0.5 0.5", q=[0.5, 0.5]), "p"),
])
def test_bad_input_names_the_argument(kwargs, argument):
    kwargs = {"dtype": "float32", **kwargs}
    p, q = kwargs.pop("p"), kwargs.pop("q")
    with pytest.raises(SpecproofInputError) as info:
        measure_whitebox(step_ratio, p, q, **kwargs)
    assert info.value.argument == argument


def test_bad_step_functions_name_step_fn():
    with pytest.raises(SpecproofInputError) as info:
        measure_whitebox("step_ratio", [H, H], [H, H], dtype="float32")
    assert info.value.argument == "step_fn"
    with pytest.raises(SpecproofInputError) as info:
        measure_whitebox(impls.get("canonical-ratio-uniforms"), [H, H], [H, H], dtype="float32")
    assert info.value.argument == "step_fn"
    with pytest.raises(SpecproofInputError) as info:
        measure_whitebox(lambda p, q: (p, q), [H, H], [H, H], dtype="float32")
    assert info.value.argument == "step_fn"
    with pytest.raises(SpecproofInputError):
        measure_whitebox(lambda p, q: step_ratio(p, q)._replace(accept=p[:1]), [H, H], [H, H], dtype="float32")


def test_bounds_use_the_measured_normalisation():
    p = torch.tensor(np.full(7, 1 / 7), dtype=torch.float16)  # sums to 1 - 2^-11 in float16
    result = measure_whitebox(step_ratio, p, p.clone(), dtype="float16")
    assert result.model.sigma == abs(result.reference.normalisation[0].total - 1) > 0
    assert result.within_tolerance


def test_the_form_sets_the_bound_log_form_in_bfloat16():
    # |ln p| near 69: bfloat16 logs carry absolute error about 69 u, the log form's bound is vacuous
    p, q = [1e-30, 2e-30, 1 - 3e-30], [3e-30, 1e-30, 1 - 4e-30]
    loose = measure_whitebox(step_log, p, q, dtype="bfloat16", form="log")
    assert loose.within_tolerance and loose.fields["accept"].bound_terms["relative"] == "inf"
    tight = measure_whitebox(step_log, p, q, dtype="bfloat16", form="ratio")
    assert "accept" in tight.failing_fields() and tight.fields["accept"].max_rel_error > 0.05
    assert measure_whitebox(step_ratio, p, q, dtype="bfloat16", form="ratio").within_tolerance


def test_summary_and_repr_are_short_and_name_zero_vs_nonzero():
    p = np.random.default_rng(3).dirichlet(np.full(64, 0.5))
    p[:8] = 0.0
    p /= p.sum()
    result = measure_whitebox(impls.get("whitebox-residual-clamped"), p, p.copy(), dtype="float64")
    assert len(repr(result)) < 200 and "Fraction" not in repr(result)
    text = result.summary()
    assert "BEYOND TOLERANCE" in text and "Fraction" not in text and len(text.splitlines()) == 2 + len(FIELDS)
    residual = result.fields["residual"]
    # p == q: the exact residual is 0 everywhere, the clamped one is tiny/sum on every token; its "ULP
    # error" over the smallest subnormal overflows, and is said as what it is
    assert residual.zero_mismatches == 64 and residual.max_ulp_error > 1e300
    assert residual.max_ulp_error_same_support == 0.0
    assert residual.ulp_text() == "zero vs non-zero (64); 0 elsewhere"
    assert "zero vs non-zero (64)" in text and "inf" not in text
    clean = measure_whitebox(impls.get("whitebox-ratio"), p, np.full(64, 1 / 64), dtype="float32")
    assert clean.fields["output"].zero_mismatches == 0 and "zero vs" not in clean.summary()
