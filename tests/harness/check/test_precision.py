"""The observed-precision band (harness/check/intercept/precision.py, exact/tolerances.py), the user's band, scope
per scenario, and the drift figure's confidence sequence (stats/eprocess.confidence_radius)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import specproof
from specproof.errors import SpecproofInputError
from specproof.harness.check.contracts.batched import BatchedScenario, scenario_suite
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.intercept.precision import PrecisionProbe, observe
from specproof.harness.check.seeding import generator
from specproof.harness.check.stats.eprocess import confidence_radius
from specproof.harness.exact.dtypes import DTYPE_NAMES, dtype_info
from specproof.harness.exact.tolerances import (BAND_DERIVED, BAND_USER, BAND_WORST, Precision, check_tolerance,
                                                step_tolerance, unnormalised_step_tv)
from specproof.impls.verifiers.canonical import canonical_ratio_race
from specproof.impls.verifiers.upcast import upcast_product_invcdf, upcast_ratio_race


def _prepared(dtype: str, index: int = 0) -> BatchedScenario:
    return BatchedScenario(scenario_suite()[index].realise(dtype), None)


def _seen(verifier, dtype: str):
    prep = _prepared(dtype)
    batch = prep.sample(8, generator(1))
    seen, _ = observe(lambda: verifier(*prep.arguments(batch, generator(2))))
    return seen


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_probe_sees_the_dtypes_a_verifier_draws_and_rounds_in(dtype):
    upcast = _seen(upcast_ratio_race, dtype)
    assert upcast.observable and upcast.draws == {"float32"} and upcast.roundings == {"float32"}
    native = _seen(canonical_ratio_race, dtype)
    assert native.observable and native.draws == {dtype} and dtype in native.roundings
    assert _seen(upcast_product_invcdf, dtype).roundings == {"float32"}


def test_unobservable_arithmetic_falls_back_with_a_reason():
    def hidden(draft_probs, target_probs, draft_token_ids, generator):  # no draw the probe can see
        return canonical_ratio_race(draft_probs.float(), target_probs.float(), draft_token_ids, generator)[:, :0]

    seen = _seen(lambda d, t, ids, g: torch.zeros((ids.shape[0], ids.shape[1] + 1), dtype=torch.int64), "float16")
    assert not seen.observable and "no uniform" in seen.reason()

    def gaussian(d, t, ids, g):
        torch.randn(3, generator=g)
        return upcast_ratio_race(d, t, ids, g)

    seen = _seen(gaussian, "float16")
    assert not seen.observable and "randn" in seen.reason()


def test_derived_band_equals_the_worst_case_when_everything_runs_in_the_dtype():
    for dtype in DTYPE_NAMES:
        same = Precision(dtype, dtype, Fraction(0))
        for vocab in (2, 1000):
            assert step_tolerance(dtype, vocab, precision=same) == step_tolerance(dtype, vocab)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(DTYPE_NAMES), st.sampled_from(DTYPE_NAMES), st.sampled_from(DTYPE_NAMES),
       st.integers(2, 5000), st.fractions(0, Fraction(1, 100)))  # sigma: the inputs' t_in
def test_derived_band_never_exceeds_the_worst_case_and_grows_with_each_precision(inputs, draws, arith, vocab, sigma):
    band = step_tolerance(inputs, vocab, precision=Precision(draws, arith, sigma))
    info = {n: (dtype_info(n).uniform_step, dtype_info(n).unit_roundoff) for n in (inputs, draws, arith)}
    if info[draws][0] <= info[inputs][0] and info[arith][1] <= info[inputs][1]:
        assert band <= step_tolerance(inputs, vocab)  # no role coarser than the inputs
    else:
        assert band >= max((vocab + 2) * info[arith][1], info[draws][0] * (1 + Fraction(vocab, 2)))  # derived alone
    coarser = Precision("bfloat16", "bfloat16", sigma + Fraction(1, 1000))
    assert step_tolerance(inputs, vocab, precision=coarser) >= band


def test_half_inputs_with_float32_arithmetic_get_a_band_no_wider_and_the_large_vocabulary_in_scope():
    for dtype in ("float16", "bfloat16"):
        for index, scenario in enumerate(scenario_suite()):
            prep = _prepared(dtype, index)
            band = prep.band_for(Precision("float32", "float32", Fraction(0)))
            assert band <= float(check_tolerance(dtype, prep.vocab, prep.k)), (dtype, scenario.name)
            if prep.vocab == 1000:  # the worst case is vacuous (1) there
                assert band < 0.01, (dtype, band)


def test_unnormalised_step_tv_is_the_exact_law_of_the_step_on_rows_as_given():
    F = Fraction
    # p~ = (0.6, 0.3), q~ = (0.5, 0.5): accepted (0.5, 0.3), rejected 0.2 to the residual (0.1, 0): law (0.7, 0.3)
    assert unnormalised_step_tv([F(6, 10), F(3, 10)], [F(1, 2), F(1, 2)]) == F(7, 10) - F(2, 3)
    # p~ <= q~ everywhere: the empty residual falls back to p~, which renormalises exactly
    assert unnormalised_step_tv([F(1, 2), F(1, 4)], [F(1, 2), F(1, 2)]) == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=2, max_size=6), st.lists(st.integers(1, 50), min_size=2, max_size=6))
def test_unnormalised_step_tv_is_zero_on_normalised_rows(p, q):
    n = min(len(p), len(q))
    p, q = p[:n], q[:n]
    if sum(p) == 0:
        p[0] = 1
    assert unnormalised_step_tv([Fraction(x, sum(p)) for x in p], [Fraction(x, sum(q)) for x in q]) == 0


def test_max_drift_is_validated_and_named():
    with pytest.raises(SpecproofInputError, match="max_drift"):
        CheckOptions.build("batched", max_drift=1.5)
    with pytest.raises(SpecproofInputError, match="max_drift"):
        CheckOptions.build("batched", max_drift=float("nan"))


def _small(**options):
    return specproof.check(upcast_ratio_race, scenarios=scenario_suite()[:2], inject=False, seed=3, **options)


def test_bands_are_printed_and_in_the_json():
    derived = _small(dtype="float16", samples=2000)
    assert derived.band["basis"] == BAND_DERIVED and "draws in float32" in derived.band["detail"]
    assert f"Band: {BAND_DERIVED}" in derived.summary() and "assumes" in derived.summary()
    user = _small(dtype="float16", samples=2000, max_drift=0.001)
    assert user.band["basis"] == BAND_USER and all(s.tolerance == 0.001 for s in user.scenarios)
    assert "stated by the user" in user.summary().splitlines()[1]
    worst = specproof.check(canonical_ratio_race, scenarios=scenario_suite()[:1], inject=False, samples=2000,
                            dtype="float16")
    assert worst.band["basis"] in (BAND_DERIVED, BAND_WORST)


def test_a_vacuous_band_puts_the_scenario_out_of_scope_not_the_check():
    result = _small(dtype="float16", max_drift=0.05, max_detectable_tv=0.2, samples=2000)
    assert result.verdict.value == "pass" and not result.out_of_scope()
    vacuous = _small(dtype="float16", max_drift=0.3, max_detectable_tv=0.2, samples=2000)
    statistical = [s.name for s in vacuous.scenarios if not s.certainty_probe]
    assert vacuous.verdict.value == "underpowered" and [s.name for s in vacuous.out_of_scope()] == statistical
    text = vacuous.summary()
    assert "out of scope" in text and "raise --samples" not in text and "--max-drift" in text
    assert vacuous.as_json()["out_of_scope"] == statistical


def test_the_drift_figure_is_reported_per_scenario_and_overall():
    result = _small(dtype="float16", samples=4000)
    figure, _ = result.drift()
    assert 0 <= figure[1] <= figure[0] <= figure[2] <= 1
    assert all((s.drift is not None) != s.certainty_probe for s in result.scenarios)
    assert result.as_json()["drift"]["high"] == figure[2]
    assert "Drift (largest deviation on a tested event, TV)" in result.summary()


def test_confidence_radius_shrinks_and_is_anytime_valid_on_a_worst_case_coin():
    radius = confidence_radius(np.array([10, 100, 10_000]), 1e-3)
    assert radius[0] > radius[1] > radius[2] > 0
    # a fair coin (largest variance), 2,000 paths of 4,000 rows each read at every row: the sequence
    # leaves the radius on at most alpha of the paths (binomial: P(X >= 12 | n=2000, p=0.002) < 1e-2)
    rng = np.random.default_rng(0)
    alpha, paths, rows = 0.002, 2000, 4000
    n = np.arange(1, rows + 1)
    r = confidence_radius(n, alpha)
    misses = 0
    for _ in range(paths // 500):
        y = rng.random((500, rows)) < 0.5
        means = np.cumsum(y, axis=1) / n
        misses += int((np.abs(means - 0.5) >= r).any(axis=1).sum())
    assert misses < 12, misses


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_no_false_alarm_over_100_seeds_with_the_derived_band(dtype):
    """The runtime-style half-precision verifier (float32 uniforms and arithmetic) is lossless within its
    derived band: 100 seeds of the whole default suite (500 rows per scenario, alpha 1e-6) flag nothing."""
    for seed in range(100):
        result = specproof.check(upcast_ratio_race, dtype=dtype, seed=seed, samples=500, inject=False)
        assert result.band["basis"] == BAND_DERIVED
        assert not result.findings, (seed, result.summary())


@pytest.mark.slow
def test_a_compiled_verifier_falls_back_to_the_worst_case_and_says_so():
    from specproof.impls.verifiers.compiled import canonical_ratio_invcdf_compiled

    seen = _seen(canonical_ratio_invcdf_compiled, "float16")
    assert not seen.observable and "torch.compile" in seen.reason()


def _tree_prepared(dtype: str):
    from specproof.harness.check.contracts import tree as tree_contract

    options = CheckOptions.build("tree", dtype=dtype)
    return [tree_contract.prepare(s, options, torch.device("cpu")) for s in tree_contract.default_suite(options)]


def test_tree_band_is_the_worst_case_in_the_dtype_and_counts_the_rows_once_for_half_inputs():
    from specproof.harness.check.contracts.tree.families import rows_as_given_tv, tree_tolerance

    for p in _tree_prepared("float32"):  # float32 verifier observed in float32: the band of today, unchanged
        assert p.band_for(Precision("float32", "float32", Fraction(0))) == p.tolerance
    for dtype in ("float16", "bfloat16"):
        for p in _tree_prepared(dtype):
            real, nodes = p.real, len(p.real.tree.parents)
            t_in = rows_as_given_tv(real)
            band = p.band_for(Precision("float32", "float32", Fraction(0)))
            step = step_tolerance(dtype, real.vocab, precision=Precision("float32", "float32", Fraction(0)))
            # (N + 1) float32 steps, the rows' exact cost once, the harness's N float64 draws
            assert band == float(tree_tolerance(dtype, real.vocab, nodes, Precision("float32", "float32", 0),
                                                lambda: t_in))
            assert band == float(min(1, (nodes + 1) * step + t_in + nodes * step_tolerance("float64", real.vocab)))
            assert band <= p.tolerance and band < 0.002, (dtype, p.name, band)
            if real.scenario.scheme == "topk" or p.certainty_probe:
                continue
            assert t_in > 0, (dtype, p.name)  # the draft rows are not exact in a half type
            same = Precision(dtype, dtype, Fraction(0))  # everything in the dtype: the worst case itself
            assert p.band_for(same) == p.tolerance


def test_pipeline_band_is_the_worst_case_in_the_dtype_and_the_float32_one_for_an_upcast_pipeline():
    from specproof.harness.check.contracts import generate as generate_contract
    from specproof.harness.check.contracts.generate.families import pipeline_tolerance

    for dtype in ("float32", "float16"):
        options = CheckOptions.build("generate", dtype=dtype)
        for s in generate_contract.default_suite(options):
            p = generate_contract.prepare(s, options, torch.device("cpu"))
            assert p.band_for(Precision(dtype, dtype, Fraction(0))) == p.tolerance
            upcast = p.band_for(Precision("float32", "float32", Fraction(0)))
            # rows computed by the pipeline: g + V g / 2 + (V + 3) u_a per step, 2N steps, float32 roles, plus
            # the temperature's rounding at float32 (0 at T = 1)
            extra = s.pair.extra_tolerance(dtype, p.new_tokens, s.sampling, "float32")
            assert (extra == 0) == (s.sampling.temperature == 1)
            assert upcast == float(pipeline_tolerance("float32", p.vocab, p.new_tokens, extra))
            assert upcast <= p.tolerance


def test_tree_and_pipeline_checks_print_their_own_band_assumption():
    from specproof.harness.check.contracts.generate.families import PIPELINE_ROWS_ASSUMPTION
    from specproof.harness.check.contracts.generate.scenarios import pipeline_suite
    from specproof.harness.check.contracts.tree.families import TREE_ROWS_ASSUMPTION
    from specproof.harness.check.contracts.tree.scenarios import default_tree_suite
    from specproof.harness.exact.tolerances import BATCHED_ROWS_ASSUMPTION
    from specproof.impls.pipelines.variants import upcast_generate
    from specproof.impls.verifiers.upcast import upcast_tree_rrs

    tree = specproof.check(upcast_tree_rrs, contract="tree", dtype="float16", scenarios=default_tree_suite()[:1],
                           samples=2000, max_detectable_tv=0.2, inject=False, seed=1)
    assert tree.band["basis"] == BAND_DERIVED and "draws in float32; rounds in float32" in tree.band["detail"]
    assert TREE_ROWS_ASSUMPTION in tree.band["assumptions"] and BATCHED_ROWS_ASSUMPTION not in tree.band["assumptions"]
    assert TREE_ROWS_ASSUMPTION in tree.summary() and tree.verdict.value == "pass"
    assert tree.scenarios[0].tolerance < 1e-4
    pipeline = specproof.check(upcast_generate, contract="generate", dtype="float16", scenarios=pipeline_suite()[:1],
                               samples=2000, inject=False, seed=1)
    assert pipeline.band["basis"] == BAND_DERIVED and "draws in float32" in pipeline.band["detail"]
    assert PIPELINE_ROWS_ASSUMPTION in pipeline.band["assumptions"] and pipeline.verdict.value != "fail"
    assert pipeline.scenarios[0].tolerance < 1e-4


def test_a_pipeline_narrowing_its_logits_is_held_to_its_dtypes_worst_case():
    """bfloat16 arithmetic on float32 logits: the softmax bound does not cover the narrowed logits, so no
    derived band; the float32 worst case is used and says why."""
    from specproof.harness.check.contracts import generate as generate_contract

    options = CheckOptions.build("generate", dtype="float32")
    p = generate_contract.prepare(generate_contract.default_suite(options)[0], options, torch.device("cpu"))
    narrowing = Precision("float32", "bfloat16", Fraction(0))
    assert p.band_for(narrowing) is None and "rounds in bfloat16, below float32" in p.no_band_reason(narrowing)


def test_draws_coarser_than_a_pipelines_dtype_alone_get_the_derived_band():
    """float32 logits and arithmetic, bfloat16 uniforms: the derived band counts bfloat16's grid (the worst
    case in float32 would not), so it is used; only coarser arithmetic falls back."""
    from specproof.harness.check.contracts import generate as generate_contract
    from specproof.harness.check.contracts.generate.families import pipeline_tolerance

    options = CheckOptions.build("generate", dtype="float32")
    s = generate_contract.default_suite(options)[0]
    p = generate_contract.prepare(s, options, torch.device("cpu"))
    coarse_draws = Precision("bfloat16", "float32", Fraction(0))
    band = p.band_for(coarse_draws)
    assert band == float(pipeline_tolerance("float32", p.vocab, p.new_tokens, Fraction(0), coarse_draws))
    assert band > p.tolerance  # bfloat16's grid: wider than everything in float32


def _generate_scenario(name: str):
    from specproof.harness.check.contracts.generate.scenarios import pipeline_suite

    return next(s for s in pipeline_suite() if s.name == name)


def test_a_pipelines_law_follows_the_arithmetic_the_probe_observed():
    """top-p0.75 with bfloat16 logits: the mass before a token sits within bfloat16's margin of 0.75, not
    within float32's.  Prepared, the scenario is out of scope at its dtype's margin (the reason names the
    decision); once the probe's float32 arithmetic is set, its law builds, the same law as at float32."""
    from specproof.harness.check.contracts import generate as generate_contract
    from specproof.harness.check.contracts.generate.families import pipeline_law

    options = CheckOptions.build("generate", dtype="bfloat16")
    s = _generate_scenario("top-p0.75")
    p = generate_contract.prepare(s, options, torch.device("cpu"))
    assert "top_p=0.75: the mass before token 5" in p.out_of_scope and "processed in bfloat16" in p.out_of_scope
    with pytest.raises(SpecproofInputError, match="scenario 'top-p0.75'") as err:
        p.law
    assert err.value.argument == "sampling"
    assert not p.has_target_zeros  # injection subjects are chosen on the dtype's margin
    p.arithmetic = "float32"
    assert p.out_of_scope is None
    assert p.law.rows == pipeline_law(s.pair, p.target_model, s.sampling, s.new_tokens, "float32").rows


def test_the_upcasting_pipeline_in_bfloat16_judges_every_scenario():
    """bfloat16 logits processed in float32: the derived band and float32's margins, no scenario out of scope
    (it exited 2 before: the law was built at bfloat16's margin before the probe ran)."""
    from specproof.impls.pipelines.variants import upcast_generate

    result = specproof.check(upcast_generate, contract="generate", dtype="bfloat16", samples=1000, inject=False,
                             seed=3)
    assert result.band["basis"] == BAND_DERIVED and "rounds in float32" in result.band["detail"]
    assert not result.out_of_scope() and all(s.rows >= 1000 and s.scope_reason is None for s in result.scenarios)
    assert not result.findings, result.summary()


def test_a_scenario_whose_law_cannot_be_built_is_out_of_scope_with_the_reason():
    """The user's band assumes nothing of the arithmetic: the margins stay bfloat16's, top-p0.75 runs no row
    and is reported out of scope with its reason, and the other scenario is judged."""
    from specproof.impls.pipelines.variants import upcast_generate

    scenarios = [_generate_scenario("top-p0.75"), _generate_scenario("plain-T1")]
    result = specproof.check(upcast_generate, contract="generate", dtype="bfloat16", scenarios=scenarios,
                             samples=1000, inject=False, max_drift=0.01, max_detectable_tv=0.2)
    assert result.band["basis"] == BAND_USER
    out = {s.name: s for s in result.out_of_scope()}
    assert list(out) == ["top-p0.75"] and out["top-p0.75"].rows == 0
    assert "top_p=0.75: the mass before token 5" in out["top-p0.75"].scope_reason
    assert result.verdict.value != "fail" and next(s for s in result.scenarios if s.name == "plain-T1").rows >= 1000
    scope = result.scope_line()
    assert scope.startswith("Scope: 1 of 2 scenarios judged") and "'top-p0.75' (V = 6, no row run)" in scope
    assert "band is at least" not in scope and scope in result.summary()
    assert result.as_json()["out_of_scope"] == ["top-p0.75"]


def test_a_check_with_every_scenario_out_of_scope_is_underpowered_and_runs_no_row():
    """The canonical pipeline processes in bfloat16: top-p0.75's law is refused at that margin, and with it
    the only scenario, the check draws nothing and says why (no sample size helps)."""
    from specproof.impls.pipelines.canonical import canonical_generate

    result = specproof.check(canonical_generate, contract="generate", dtype="bfloat16",
                             scenarios=[_generate_scenario("top-p0.75")], samples=500)
    assert result.verdict.value == "underpowered" and result.rows == 0
    assert result.scenarios[0].scope_reason and "rounds in bfloat16" in result.band["detail"]
    text = result.summary()
    assert "every statistical scenario is out of scope" in text and "raise --samples" not in text
    assert "not run: the run ended before it (no scenario in scope)" in text


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_no_false_alarm_over_100_seeds_for_the_runtime_style_tree_verifier(dtype):
    """Recursive rejection sampling with float32 uniforms and arithmetic on half-precision rows is lossless
    within its derived tree band: 100 seeds of the whole default tree suite (500 rows per scenario, alpha
    1e-6) flag nothing."""
    from specproof.impls.verifiers.upcast import upcast_tree_rrs

    for seed in range(100):
        result = specproof.check(upcast_tree_rrs, contract="tree", dtype=dtype, seed=seed, samples=500, inject=False)
        assert result.band["basis"] == BAND_DERIVED
        assert not result.findings and not result.injection_findings, (seed, result.summary())


@pytest.mark.slow
def test_no_false_alarm_over_100_seeds_for_the_upcasting_pipeline_in_bfloat16():
    """The upcasting pipeline on bfloat16 logits: its law's margins and its band follow the float32 arithmetic
    the probe observes, every scenario in scope; 100 seeds of the whole default generate suite at the default
    depth (about 588,000 rows each, alpha 1e-6) flag nothing and PASS."""
    from specproof.impls.pipelines.variants import upcast_generate

    for seed in range(100):
        result = specproof.check(upcast_generate, contract="generate", dtype="bfloat16", seed=seed, inject=False)
        assert result.band["basis"] == BAND_DERIVED and not result.out_of_scope(), (seed, result.summary())
        assert not result.findings and not result.injection_findings, (seed, result.summary())
        assert result.verdict.value == "pass", (seed, result.summary())


@pytest.mark.slow
def test_no_false_alarm_over_100_seeds_for_the_upcasting_pipeline_in_float16():
    """A pipeline that upcasts float16 logits to float32 before processing, as runtimes' samplers do, is
    lossless within its derived band (the float32 softmax, draws and verification, plus the temperature's
    rounding): 100 seeds of the whole default generate suite at the default depth (about 588,000 rows each,
    alpha 1e-6) flag nothing."""
    from specproof.impls.pipelines.variants import upcast_generate

    for seed in range(100):
        result = specproof.check(upcast_generate, contract="generate", dtype="float16", seed=seed, inject=False)
        assert result.band["basis"] == BAND_DERIVED
        assert not result.findings and not result.injection_findings, (seed, result.summary())
        assert result.verdict.value == "pass", (seed, result.summary())


def test_the_probe_gives_a_running_cprofile_back():
    """A developer profiling a check with cProfile: the probe's hook replaces the profiler for the probed
    call and enables it again after (``sys.setprofile`` cannot take a ``cProfile.Profile`` back)."""
    import cProfile
    import sys

    from specproof.harness.check.intercept.precision import observe

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        _, out = observe(lambda: torch.ones(2) * 2)
        assert sys.getprofile() is profiler
    finally:
        profiler.disable()
    assert out.tolist() == [2.0, 2.0] and sys.getprofile() is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=2, max_size=8), st.integers(0, 5))
def test_tokens_zero_in_both_rows_add_nothing_to_the_unnormalised_step_tv(pairs, zeros):
    """RoundedPair.unnormalised_tv reads each pair on its support only: the same value as on the whole rows."""
    if all(a == 0 for a, _ in pairs) or all(b == 0 for _, b in pairs):
        pairs = pairs + [(1, 1)]
    p, q = [Fraction(a, 8) for a, _ in pairs], [Fraction(b, 8) for _, b in pairs]
    padded = lambda row: row[:1] + [Fraction(0)] * zeros + row[1:]  # noqa: E731
    assert unnormalised_step_tv(padded(p), padded(q)) == unnormalised_step_tv(p, q)
    kept = [(a, b) for a, b in zip(p, q) if a or b]
    assert unnormalised_step_tv([a for a, _ in kept], [b for _, b in kept]) == unnormalised_step_tv(p, q)
