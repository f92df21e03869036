"""The bench's goals on measured drift (issue 41): the exact deviation of a law on a check's tested events,
and a pure half-precision verifier's drift interval against it."""

from __future__ import annotations

import pytest
import torch

from specproof.harness.bench.drift_goals import HALF_DTYPES, PURE_HALF, _pure_half_interval, exact_deviation
from specproof.harness.check.contracts import batched
from specproof.harness.check.driver import check
from specproof.harness.check.options import CheckOptions
from specproof.harness.cli.parser import main
from specproof.harness.drift.grid import measure_grid
from specproof.impls import get
from specproof.proofs.laws.sequences import continued_law, round_law
from specproof.proofs.laws.step_rules import get_step_rule

SCENARIO = "prefix-dependent V4 K2"


def _prepared(dtype: str, name: str = SCENARIO):
    options = CheckOptions.build("batched", dtype=dtype)
    scenario = next(s for s in batched.default_suite(options) if s.name == name)
    return scenario, batched.prepare(scenario, options, torch.device("cpu"))


def test_the_exact_law_the_events_are_built_from_deviates_by_nothing():
    _, prepared = _prepared("float16")
    law = round_law(prepared.real.rounded.toy_pair, get_step_rule("canonical"))
    assert exact_deviation(prepared, law) == pytest.approx(0.0, abs=1e-12)


def test_moving_mass_between_two_sequences_is_seen_as_that_mass():
    _, prepared = _prepared("float32")
    law = dict(round_law(prepared.real.rounded.toy_pair, get_step_rule("canonical")))
    first, second = sorted(s for s in law if len(s) == prepared.k + 1 and law[s] > 0.01)[:2]
    moved = law[first] / 2
    law[first] -= moved
    law[second] += moved
    assert exact_deviation(prepared, law) == pytest.approx(float(moved), rel=1e-9)  # a first-tokens event sees it


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_the_drift_interval_of_a_pure_half_verifier_contains_its_exact_deviation(dtype):
    scenario, prepared = _prepared(dtype)
    verifier = get(PURE_HALF)
    result = check(verifier.fn, dtype=dtype, scenarios=[scenario], samples=20_000, inject=False, progress=False)
    estimate, low, high = result.scenarios[0].drift
    exact = exact_deviation(prepared, measure_grid(get(verifier.uniforms_core).fn, prepared.real).law)
    assert exact > 0  # the dtype's grid and roundings move the law
    assert low <= exact <= high


@pytest.mark.parametrize("flags, argument", [(["--quick"], "--quick"), (["--device", "cuda"], "--device")])
def test_the_drift_part_has_one_configuration(tmp_path, capsys, flags, argument):
    assert main(["bench", "--only", "drift", "--out", str(tmp_path), *flags]) == 2
    assert argument in capsys.readouterr().err and not (tmp_path / "drift.json").exists()


@pytest.mark.slow
def test_every_enumerable_interval_contains_the_exact_deviation_in_both_half_dtypes():
    measured = _pure_half_interval(seed=0, say=lambda message: None)
    assert measured["goal"]["met"], measured["goal"]["measured"]
    assert all(len(block["scenarios"]) >= 10 for block in measured["dtypes"].values())
