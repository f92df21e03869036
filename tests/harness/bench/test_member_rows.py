"""The member laws on realised scenarios (harness/bench/member_rows.py): the rows each member reads, built
from a realisation, give laws that sum to 1, put the generator's P(u == 0) where a member's rule reads it,
and are what the members emit."""

import math
from fractions import Fraction as F

import pytest
import torch

from specproof.harness.bench.member_rows import member_law, round_view
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.exact.uniform_grids import uniform_grid
from specproof.impls import get
from specproof.proofs.laws.members import CANONICAL_MODEL, MEMBER_LAWS, RAISED, TEMPERED_TARGET, leading_accepts_law
from specproof.proofs.laws.sequences import round_law


def test_canonical_model_walker_is_the_round_law():
    real = next(s for s in default_suite() if s.name == "prefix-dependent V3 K3").realise("float32")  # dyadic rows
    view = round_view(real)
    assert leading_accepts_law(view, CANONICAL_MODEL) == round_law(real.toy_pair)


def test_member_laws_are_laws_and_le_puts_the_zero_uniform_on_p_zero_tokens():
    suite = [s for s in default_suite() if s.vocab ** (s.k + 1) <= 256]
    for scenario in suite:
        real = scenario.realise("float32")
        for name in MEMBER_LAWS:
            assert sum(member_law(name, real).values()) == 1, (name, scenario.name)
    disjoint = next(s for s in suite if s.name == "disjoint supports").realise("float32")
    law = member_law("le-ratio-invcdf", disjoint)
    first_accepted = sum(v for s, v in law.items() if len(s) > 1)
    assert first_accepted == F(1, 2**24)  # every draft has p = 0: accepted iff u == 0
    below = next(s for s in suite if s.name.startswith("target sums below 1")).realise("float32")
    assert law_mass(member_law("transformers-speculative-sampling", below), RAISED) == 0  # softmax renormalises
    assert law_mass(member_law("residual-clamped-tiny", below), (2,)) > 0  # uniform residual reaches p = 0


def law_mass(law, key):
    return law.get(key, 0)


def _bernstein(p, n, cells, delta=1e-6):
    """Per-cell deviation bound of an empirical frequency (Bernstein, Bonferroni over the cells)."""
    log_term = math.log(2 * cells / delta)
    return math.sqrt(2 * p * (1 - p) * log_term / n) + 2 * log_term / (3 * n)


@pytest.mark.parametrize("name, scenario, rows", [
    ("continue-after-rejection", "prefix-dependent V2 K4", 20000),
    ("stale-residual-buffer", "adversarial resample-from-p", 20000),
    ("target-only-temperature", "runtime-style context-free", 20000),
    ("draft-top-k-in-verifier", "near-identical V4 K2", 20000),
    ("target-rows-shifted", "prefix-dependent V4 K2", 20000),
    ("residual-clamped-tiny", "target sums below 1 (p <= q)", 20000),
    ("bonus-from-wrong-row", "prefix-dependent V3 K3", 20000),
    ("flashinfer-layout-reused-uniform", "prefix-dependent V4 K2", 20000),
    ("flashinfer-layout-empty-residual-last", "target sums below 1 (p <= q)", 20000),
    ("vllm-v0-layout-clamped-residual", "target sums below 1 (p <= q)", 20000),
    ("vllm-v1-layout-float32-ge", "prefix-dependent V4 K2", 20000),
    pytest.param("transformers-speculative-sampling", "prefix-dependent V4 K2", 500,
                 marks=pytest.mark.slow),  # importing transformers dominates
])
def test_member_law_is_what_the_member_emits(name, scenario, rows):
    pytest.importorskip("transformers") if name.startswith("transformers") else None
    real = next(s for s in default_suite() if s.name == scenario).realise("float32")
    law = member_law(name, real)
    generator = torch.Generator().manual_seed(7)
    ids = real.sample_drafts(rows, generator)
    draft_probs, target_probs = real.rows(ids)
    out = get(name).fn(draft_probs.clone(), target_probs.clone(), ids.clone(), generator)
    counts = {}
    for row in out.tolist():
        key = tuple(x for x in row if x >= 0)
        counts[key] = counts.get(key, 0) + 1
    cells = set(counts) | set(law)
    for key in cells:
        p = float(law.get(key, 0))
        assert abs(counts.get(key, 0) / rows - p) <= _bernstein(p, rows, len(cells)), key


def test_the_view_reads_the_rounded_rows_unnormalised_and_processes_them_in_the_dtype():
    real = next(s for s in default_suite() if s.name == "runtime-style context-free").realise("bfloat16")
    view = round_view(real)
    rounded = real.rounded.row("target", ())
    assert view.p(()) == tuple(F(x) for x in rounded.double().tolist())  # bfloat16 values, exactly
    processor = get("target-only-temperature").fn.args[0].process_probs
    tempered = processor(rounded.reshape(1, 1, -1)).reshape(-1)
    assert tempered.dtype == torch.bfloat16 and view.row(TEMPERED_TARGET, ()) == tuple(
        F(x) for x in tempered.double().tolist())
    assert view.zero_uniform == uniform_grid("bfloat16", "torch-cpu").zero_mass() > F(1, 2**24)  # not float32's
    assert view.tiny == F(2) ** -126
    assert view.pair == real.toy_pair and (view.k, view.vocab) == (real.k, real.vocab)
