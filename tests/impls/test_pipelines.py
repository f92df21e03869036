"""Pipelines under the generate contract: outputs, reproducibility, and the exact law (six sigma per sequence)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from specproof.harness import Sampling
from specproof.harness.check.contracts.generate.families import pipeline_law, sequence_codes_of
from specproof.harness.check.contracts.generate.scenarios import PipelineScenario, pipeline_suite, table_pair
from specproof.impls.pipelines.canonical import canonical_generate
from specproof.impls.pipelines.mutants import PIPELINE_MUTANTS
from specproof.impls.pipelines.processing import sampling_processors
from specproof.impls.pipelines.variants import LOSSLESS_VARIANTS

ALL = {"canonical": canonical_generate, **LOSSLESS_VARIANTS, **PIPELINE_MUTANTS}
COMBO = next(s for s in pipeline_suite() if s.name == "combo")


def _run(fn, scenario, rows, seed=0):
    target, draft = scenario.pair.build("float32", "cpu", scenario.new_tokens)
    prompt = torch.tensor([list(scenario.pair.prompt)] * rows)
    return fn(target, draft, prompt, scenario.new_tokens, scenario.sampling, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_pipeline_returns_n_tokens_and_follows_its_generator(name):
    first, again = _run(ALL[name], COMBO, 64), _run(ALL[name], COMBO, 64)
    assert first.shape == (64, COMBO.new_tokens) and first.dtype == torch.int64
    assert bool(((first >= 0) & (first < COMBO.pair.vocab)).all()) and torch.equal(first, again)
    assert not torch.equal(first, _run(ALL[name], COMBO, 64, seed=1))


def test_the_processors_follow_the_published_order():
    steps = sampling_processors(Sampling(0.7, top_k=3, top_p=0.9, min_p=0.1)).processors
    assert [type(p).__name__ for p in steps] == ["Temperature", "TopK", "TopP", "MinP"]
    assert [type(p).__name__ for p in sampling_processors(Sampling(1.0, min_p=0.1), skip=("min_p",)).processors] \
        == ["Temperature"]


def _six_sigma_misses(fn, scenario, rows: int) -> list[tuple[int, ...]]:
    target, _ = scenario.pair.build("float32", "cpu", scenario.new_tokens)
    law = pipeline_law(scenario.pair, target, scenario.sampling, scenario.new_tokens, "float32").law()
    out = _run(fn, scenario, rows).numpy()
    counts = np.bincount(sequence_codes_of(out, scenario.pair.vocab), minlength=scenario.pair.vocab ** scenario.new_tokens)
    misses = []
    for s, p in law.items():
        code = int(sequence_codes_of(np.array([s]), scenario.pair.vocab)[0])
        mean, sd = rows * float(p), math.sqrt(rows * float(p) * (1 - float(p)))
        if abs(counts[code] - mean) > 6 * sd + 1:
            misses.append(s)
    return misses


SMALL = PipelineScenario("small", table_pair("small", 4, 3, 3, 4, scale=1.2), Sampling(0.7, top_k=2), 3)


@pytest.mark.parametrize("name", ["canonical", *sorted(LOSSLESS_VARIANTS)])
def test_lossless_pipelines_realise_the_exact_law(name):
    assert _six_sigma_misses(ALL[name], SMALL, 40_000) == []


def test_the_six_sigma_test_sees_a_mutant():
    assert _six_sigma_misses(PIPELINE_MUTANTS["default-target"], SMALL, 40_000)
