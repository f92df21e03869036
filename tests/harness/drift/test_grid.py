"""Exact RNG-grid drift: the grid models, counting against brute force, the registry, degraded code."""

import itertools
import json
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specproof.impls as impls
from specproof.errors import SpecproofInputError
from specproof.harness.drift.whitebox import round_to_dtype
from specproof.harness.drift.grid import (
    GridVerdict, UniformGrid, grid_round_tolerance, ideal_round_law, measure_grid, uniform_grid,
)
from specproof.harness.check.contracts.batched.scenarios import Scenario
from specproof.harness.exact.dtypes import TORCH_DTYPES
from specproof.harness.exact.tolerances import round_tolerance
from specproof.impls.kernels.rounds import assemble_emitted, drafted_probs, leading_accepts
from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.verifiers.canonical import final_weights, inverse_cdf_round
from specproof.impls.kernels.sampling import draw_inverse_cdf
from specproof.proofs.laws.sequences import ToyPair

DTYPES = ["float16", "bfloat16", "float32", "float64"]
EAGER_UNIFORMS = [r for r in impls.implementations(contract="uniforms") if not r.compiled]
COMPILED_UNIFORMS = [r for r in impls.implementations(contract="uniforms") if r.compiled]
H = Fraction(1, 2)
# token 3 has p = 0 but q = 1/4: the draft that `u <= p/q` accepts at u == 0
ZERO_TARGET = ToyPair.context_free([H, Fraction(1, 3), Fraction(1, 6), 0], [Fraction(1, 4)] * 4, 1)


def scenarios():
    return [Scenario.random("grid V3 K2", 3, 2, seed=11, zeros=0.3),
            Scenario.from_laws("zero target K2", "p(3) = 0, q uniform", [H, Fraction(1, 3), Fraction(1, 6), 0],
                               [Fraction(1, 4)] * 4, 2),
            Scenario.random("grid V2 K3", 2, 3, seed=12)]


# -- grids -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_cpu_grid_is_what_torch_rand_draws(dtype):
    grid = uniform_grid(dtype)
    draws = torch.rand(200_000, dtype=TORCH_DTYPES[dtype], generator=torch.Generator().manual_seed(0)).double()
    if grid.step_bits is not None:
        scaled = draws * 2.0**grid.step_bits
        assert bool((scaled == scaled.round()).all())
    else:
        assert bool(torch.isin(draws, grid.table_values).all())
        # the model: the float32 uniform of the same stream, rounded, 1 wrapped to 0
        same = torch.rand(200_000, generator=torch.Generator().manual_seed(0)).to(TORCH_DTYPES[dtype])
        same = torch.where(same == 1, torch.zeros_like(same), same).double()
        assert torch.equal(same, draws)
    assert grid.mass_below(grid.size) == grid.total


def test_half_grids_zero_mass_and_discrepancy():
    assert uniform_grid("float16").zero_mass() == Fraction(1, 2**24) + Fraction(1, 2**12)
    assert uniform_grid("bfloat16").zero_mass() == Fraction(1, 2**24) + Fraction(1, 2**9)
    for dtype in DTYPES:
        ideal = uniform_grid(dtype, "ideal")
        assert ideal.discrepancy == ideal.zero_mass() == Fraction(1, 2 ** ideal.step_bits)
        assert uniform_grid(dtype).discrepancy < 2 * ideal.discrepancy
        for vocab, k in ((3, 1), (6, 3)):
            assert grid_round_tolerance(ideal, vocab, k) == round_tolerance(dtype, vocab, k)


# -- counting is exact: compare with evaluating every grid point -----------------------------------

def brute_force_law(fn, pair, grid, dtype):
    """Evaluate ``fn`` on every combination of grid values: the law by direct enumeration."""
    k, vocab = pair.k, pair.vocab
    values = grid.values(torch.arange(grid.size)).to(TORCH_DTYPES[dtype])
    weights = torch.tensor([grid.mass_below(j + 1) - grid.mass_below(j) for j in range(grid.size)])
    combos = torch.cartesian_prod(*[torch.arange(grid.size)] * (k + 1))
    combo_weight = weights[combos].prod(-1)  # integer: at most 2^(24 (K+1))
    rows = combos.shape[0]
    law = {}
    for x in itertools.product(range(vocab), repeat=k):
        draft = torch.stack([round_to_dtype(list(pair.draft[x[:i]]), dtype) for i in range(k)])
        target = torch.stack([round_to_dtype(list(pair.target[x[:i]]), dtype) for i in range(k + 1)])
        qx = Fraction(1)  # drafts are drawn from the rounded draft rows, renormalised
        for i in range(k):
            row = [Fraction(float(v)) for v in draft[i].double()]
            qx *= row[x[i]] / sum(row)
        if not qx:
            continue
        out = fn(draft.expand(rows, k, vocab), target.expand(rows, k + 1, vocab),
                 torch.tensor(x).expand(rows, k), values[combos])
        unique, inverse = torch.unique(out, dim=0, return_inverse=True)
        totals = torch.zeros(unique.shape[0], dtype=torch.int64).index_add_(0, inverse, combo_weight)
        for row, total in zip(unique.tolist(), totals.tolist()):
            seq = tuple(v for v in row if v >= 0)
            law[seq] = law.get(seq, Fraction(0)) + qx * Fraction(total, grid.total ** (k + 1))
    return law


@pytest.mark.parametrize("name", ["canonical-ratio-uniforms", "block-uniforms", "le-ratio-uniforms",
                                  "canonical-log-uniforms"])
def test_counting_equals_brute_force_on_a_coarse_grid(name):
    # a 2^-4 grid and prefix-dependent dyadic laws: 16^(K+1) points per draft sequence
    coarse = UniformGrid("float32", "coarse", 16, 16, Fraction(1, 16), step_bits=4)
    rows = [(H, Fraction(3, 8), Fraction(1, 8), 0), (Fraction(1, 8), H, Fraction(1, 8), Fraction(1, 4)),
            (0, Fraction(5, 8), Fraction(1, 4), Fraction(1, 8))]
    pair = ToyPair.from_functions(4, 2, lambda s: rows[(sum(s) + len(s)) % 3], lambda s: rows[(len(s) + 1) % 3])
    result = measure_grid(impls.get(name), pair, dtype="float32", grid=coarse)
    assert not result.violations
    assert result.law == brute_force_law(impls.get(name).fn, pair, coarse, "float32")


def test_counting_equals_brute_force_on_the_ideal_bfloat16_grid():
    pair = ToyPair.context_free([Fraction(1, 3), Fraction(1, 2), Fraction(1, 6)],
                                [Fraction(3, 5), Fraction(1, 5), Fraction(1, 5)], 1)
    grid = uniform_grid("bfloat16", "ideal")
    fn = impls.get("canonical-product-uniforms").fn
    result = measure_grid(fn, pair, dtype="bfloat16", grid="ideal", rule="canonical-mul")
    assert result.law == brute_force_law(fn, pair, grid, "bfloat16")
    assert result.verdict is GridVerdict.WITHIN


# -- the registry --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("record", EAGER_UNIFORMS, ids=lambda r: r.name)
def test_every_uniforms_record(record, dtype):
    for scenario in scenarios():
        result = measure_grid(record, scenario.realise(dtype))
        if record.expected_exact:
            assert result.verdict in (GridVerdict.EXACT, GridVerdict.WITHIN), (scenario.name, result.tv)
            assert result.impossible_mass == 0 and result.tv <= result.tolerance
        elif scenario.name == "zero target K2":
            assert result.verdict is GridVerdict.IMPOSSIBLE


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("grid", ["torch-cpu", "ideal"])
def test_le_ratio_impossible_mass_is_the_zero_atom_times_q(dtype, grid):
    result = measure_grid(impls.get("le-ratio-uniforms"), ZERO_TARGET, dtype=dtype, grid=grid)
    zero_atom = uniform_grid(dtype, grid).zero_mass()
    assert result.verdict is GridVerdict.IMPOSSIBLE
    assert result.impossible_mass == zero_atom * Fraction(1, 4)
    assert all(seq[0] == 3 for seq in result.impossible_sequences)
    if dtype == "float32":
        assert result.impossible_mass == Fraction(1, 2**24) / 4
    strict = measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET, dtype=dtype, grid=grid)
    assert strict.impossible_mass == 0 and strict.verdict is GridVerdict.WITHIN


def test_le_ratio_k2_impossible_mass_between_one_and_k_atoms():
    pair = ToyPair.context_free([H, Fraction(1, 3), Fraction(1, 6), 0], [Fraction(1, 4)] * 4, 2)
    result = measure_grid(impls.get("le-ratio-uniforms"), pair, dtype="float32")
    atom = Fraction(1, 2**24) / 4
    assert atom < result.impossible_mass < 2 * atom


@given(seed=st.integers(0, 10**6), vocab=st.integers(2, 4), k=st.integers(1, 2),
       dtype=st.sampled_from(DTYPES))
@settings(max_examples=15)
def test_random_pairs_canonical_within_tolerance(seed, vocab, k, dtype):
    pair = ToyPair.random(vocab, k, seed)
    result = measure_grid(impls.get("canonical-ratio-uniforms"), pair, dtype=dtype)
    assert result.verdict in (GridVerdict.EXACT, GridVerdict.WITHIN)
    assert sum(result.law.values()) == 1 == sum(result.ideal.values())


# -- degraded implementations ----------------------------------------------------------------------

def bf16_inside(draft_probs, target_probs, draft_token_ids, uniforms):
    """Claims float32, computes in bfloat16."""
    def cast(t):
        return t.to(torch.bfloat16)
    return impls.canonical_ratio_uniforms(cast(draft_probs), cast(target_probs), draft_token_ids, cast(uniforms))


def shifted_grid(draft_probs, target_probs, draft_token_ids, uniforms):
    """Off by one grid point: tests ``u - 2^-24 < p/q``, so k = 0 accepts a draft with p = 0."""
    def accept(u, p_x, q_x):
        return (q_x > 0) & (u - 2.0**-24 < p_x / q_x)
    return inverse_cdf_round(accept, draft_probs, target_probs, draft_token_ids, uniforms)


def left_searchsorted(draft_probs, target_probs, draft_token_ids, uniforms):
    """Inverse CDF with ``right=False`` and no clamp: u = 0 picks the first token even at weight 0."""
    drafts = draft_token_ids.shape[1]
    n = leading_accepts(accept_ratio(uniforms[:, :drafts], drafted_probs(target_probs, draft_token_ids),
                                     drafted_probs(draft_probs, draft_token_ids)))
    cdf = final_weights(draft_probs, target_probs, n).cumsum(-1)
    token = torch.searchsorted(cdf, (uniforms[:, drafts:] * cdf[:, -1:]), right=False).squeeze(-1)
    return assemble_emitted(draft_token_ids, n, token)


def final_uniform_in_acceptance(draft_probs, target_probs, draft_token_ids, uniforms):
    """Reuses the final draw's uniform in the acceptance test: not a threshold model."""
    drafts = draft_token_ids.shape[1]
    u = torch.maximum(uniforms[:, :drafts], uniforms[:, drafts:])
    n = leading_accepts(accept_ratio(u, drafted_probs(target_probs, draft_token_ids),
                                     drafted_probs(draft_probs, draft_token_ids)))
    token = draw_inverse_cdf(final_weights(draft_probs, target_probs, n), uniforms[:, drafts])
    return assemble_emitted(draft_token_ids, n, token)


def test_degraded_implementations_are_flagged():
    pair = ToyPair.context_free([Fraction(3, 7), Fraction(2, 7), Fraction(2, 7), 0],
                                [Fraction(1, 5), Fraction(1, 5), Fraction(2, 5), Fraction(1, 5)], 2)
    assert measure_grid(bf16_inside, pair, dtype="float32").verdict is GridVerdict.BIAS
    shifted = measure_grid(shifted_grid, pair, dtype="float32")
    assert shifted.verdict is GridVerdict.IMPOSSIBLE
    assert shifted.impossible_mass >= Fraction(1, 2**24) / 5
    residual_zero_first = ToyPair.context_free([0, H, H], [Fraction(1, 3)] * 3, 1)
    left = measure_grid(left_searchsorted, residual_zero_first, dtype="float32")
    assert left.verdict is GridVerdict.IMPOSSIBLE and left.impossible_sequences[0][-1] == 0
    tangled = measure_grid(final_uniform_in_acceptance, pair, dtype="float32")
    assert tangled.verdict is GridVerdict.UNANALYSABLE and tangled.violations


def test_json_is_strict_and_exact():
    result = measure_grid(impls.get("le-ratio-uniforms"), ZERO_TARGET, dtype="float16")
    data = json.loads(json.dumps(result.as_json(), allow_nan=False))
    assert data["verdict"] == "impossible-mass" and data["kind"] == "grid-drift"
    num, den = data["impossible_mass"].split("/")
    assert Fraction(int(num), int(den)) == result.impossible_mass
    assert sum(Fraction(*map(int, c["grid"].split("/"))) for c in data["cells"]) == 1
    assert data["columns"][0]["below_threshold_mass"]


def test_ideal_law_for_block_is_the_block_round_law():
    pair = ToyPair.context_free([Fraction(1, 3), Fraction(2, 3)], [Fraction(2, 3), Fraction(1, 3)], 2)
    law = ideal_round_law(pair, "block")
    assert sum(law.values()) == 1 and all(m > 0 for m in law.values())


@pytest.mark.parametrize("call, argument", [
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), [H, H]), "source"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET), "dtype"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET, dtype="float32", grid="cuda"),
     "grid"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET, dtype="float32", rule="nope"),
     "rule"),
    (lambda: measure_grid(impls.get("canonical-ratio-invcdf"), ZERO_TARGET, dtype="float32"), "fn"),
    (lambda: measure_grid(42, ZERO_TARGET, dtype="float32"), "fn"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), Scenario.random("big", 17, 3, 0).realise("float32")),
     "source"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), scenarios()[0].realise("float16"),
                          dtype="float32"), "dtype"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET, dtype="float32",
                          grid=uniform_grid("float16")), "grid"),
    (lambda: measure_grid(impls.get("canonical-ratio-uniforms"), ZERO_TARGET, dtype="float32", device="x"),
     "device"),
    (lambda: measure_grid(lambda *a: torch.zeros(1), ZERO_TARGET, dtype="float32"), "fn"),
])
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises(SpecproofInputError) as info:
        call()
    assert info.value.argument == argument


# -- slow: compiled cores and the full torch-cpu half grids by brute force ----------------------------

@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("record", COMPILED_UNIFORMS, ids=lambda r: r.name)
def test_compiled_uniforms_records(record, dtype):
    for scenario in scenarios()[:2]:
        result = measure_grid(record, scenario.realise(dtype))
        assert result.verdict in (GridVerdict.EXACT, GridVerdict.WITHIN), (scenario.name, result.tv)


@pytest.mark.slow
def test_counting_equals_brute_force_on_the_torch_cpu_bfloat16_grid():
    pair = ToyPair.context_free([Fraction(1, 3), Fraction(1, 2), Fraction(1, 6), 0], [Fraction(1, 4)] * 4, 1)
    grid = uniform_grid("bfloat16")
    fn = impls.get("le-ratio-uniforms").fn
    result = measure_grid(fn, pair, dtype="bfloat16")
    assert result.law == brute_force_law(fn, pair, grid, "bfloat16")


def test_summary_and_repr_are_one_line_without_fractions():
    scenario = scenarios()[1]
    result = measure_grid(impls.get("le-ratio-uniforms"), scenario.realise("float32"))
    text = result.summary()
    assert "\n" not in text and "Fraction" not in repr(result) and len(repr(result)) < 300
    assert "impossible-mass" in text and "impossible mass" in text and "grid tolerance" in text


def test_one_enumeration_limit():
    """The grid law, scenarios and the proofs' toy pairs share one limit on V^(K+1)."""
    from specproof.harness.drift import grid
    from specproof.proofs.laws import sequences

    assert grid.MAX_SEQUENCES == sequences.MAX_SEQUENCES == 1 << 16
    assert Scenario.random("edge", 16, 3, 0).realise("float32").enumerable  # 16^4 = 2^16
    assert not Scenario.random("over", 17, 3, 0).realise("float32").enumerable
