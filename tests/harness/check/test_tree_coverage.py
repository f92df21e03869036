"""Acceptance-site coverage of the tree contract: zero-site ladders, sub-/super-stochastic rows, sibling
modes declared by the target, the tree zoo (non-slow: one seed each; slow: 50 / 100 seeds)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts.coverage import miss_probability
from specproof.harness.check.contracts.tree import default_suite
from specproof.harness.check.contracts.tree.ladders import CHAIN_MASS, FAN_MASS, ladder, ladders_for, tree_sites
from specproof.proofs.laws.tree import Tree
from specproof.harness.check.contracts.tree.scenarios import TreeScenario, default_tree_suite, tree_pair
from specproof.harness.check.driver import check
from specproof.harness.check.options import CheckOptions
from specproof.proofs.laws.tree import SIBLING_MODES
from specproof.harness.check.result import Verdict
from specproof.impls.adapters import get_adapter
from specproof.impls.runtime_layouts import sglang_tree
from specproof.impls.verifiers.tree_mutants import TREE_EXACT, TREE_ZOO
from specproof.impls.verifiers.tree_rrs import tree_rrs

ZOO = {m.name: m for m in TREE_ZOO}
STATISTICAL = default_tree_suite()


def _ladders(mode: str) -> list:
    return [s for s in ladders_for(STATISTICAL) if s.scheme == mode]


def test_every_site_of_the_default_suite_has_a_ladder_in_every_mode():
    suite = default_suite(CheckOptions.build("tree"))
    ladders = [s for s in suite if s.certainty_probe]
    assert suite[:len(ladders)] == ladders  # probes first (the screening pass reads the suite in order)
    for mode in SIBLING_MODES:
        wanted = {site for s in STATISTICAL if s.scheme == mode for site in tree_sites(s.tree)}
        fans = {(s.tree.depth, j) for s in ladders if s.scheme == mode
                for d, j in tree_sites(s.tree) if d == s.tree.depth}
        assert wanted and wanted <= fans, mode


@pytest.mark.parametrize("mode", SIBLING_MODES)
def test_a_ladder_puts_a_target_zero_with_draft_mass_at_every_fan_sibling_in_every_row(mode):
    scenario = ladder(mode, 3, 2)
    real = scenario.realise("float32")
    batch = real.sample(512, torch.Generator().manual_seed(0))
    fan = [i for i, d in enumerate(scenario.tree.depths()) if d == 3]
    chain = [i for i, d in enumerate(scenario.tree.depths()) if d < 3]
    assert (batch.node_tokens[:, chain] == 0).all()  # the spine token
    for node in fan:
        token = batch.node_tokens[:, node]
        prefix_code = real.code((0, 0))
        assert real.target_zero[prefix_code, token].all()  # target probability 0 there
        draft = batch.draft_probs[torch.arange(512), node, token]
        assert (draft > 0).all()  # positive draft probability
    sums = batch.target_probs[0].sum(-1).tolist()
    assert sums[:3] == [float(CHAIN_MASS), float(CHAIN_MASS), float(FAN_MASS)]  # sub- then super-stochastic


def test_a_scale_that_is_not_exact_in_the_dtype_is_refused():
    bad = TreeScenario("x", "x", Tree((-1,)), "iid", tree_pair(3, 1, 1), target_scale=(((), Fraction(1, 3)),))
    with pytest.raises(SpecproofInputError, match="target_scale"):
        bad.realise("float32")


def test_the_miss_probability_of_a_site():
    assert miss_probability(Fraction(1, 16), 1024) == pytest.approx((15 / 16) ** 1024)
    assert miss_probability(0, 1024) == 1.0 and miss_probability(Fraction(1, 2), 0) == 1.0


def test_the_coverage_is_in_the_output_and_the_json_and_names_the_modes_judged():
    result = check(tree_rrs, "tree", samples=256, siblings="topk", progress=False)
    summary, record = result.summary(), result.as_json()["coverage"]
    assert "sibling modes judged: topk" in summary.splitlines()[0]
    assert "Acceptance-site coverage" in summary and "topk depth 1 sibling 0 (first tried)" in summary
    assert record["scope"] == "sibling modes judged: topk" and not record["not_tested"]
    sites = {s["site"]: s for s in record["sites"]}
    assert set(sites) == {"topk depth 1 sibling 0 (first tried)", "topk depth 1 sibling 1", "topk depth 1 sibling 2",
                          "topk depth 1 sibling 3", "topk depth 2 sibling 0 (first tried)", "topk depth 2 sibling 1",
                          "topk depth 3 sibling 0 (first tried)", "topk depth 4 sibling 0 (first tried)"}
    rows = result.injection["rows"]  # 1,024 unless the machine is slow (driver: pass_rows)
    for s in sites.values():
        assert s["injection_rows"] == rows and s["miss"] == miss_probability(s["per_row"], rows)
        assert s["per_row"] >= float(CHAIN_MASS ** 3 * Fraction(15, 16) ** 3 / 16)
    assert record["worst_miss"] == max(s["miss"] for s in sites.values())


def test_without_the_injection_the_zero_coin_is_said_to_be_untested():
    ladders = _ladders("iid")[:1]
    result = check(tree_rrs, "tree", samples=256, scenarios=ladders, inject=False, progress=False)
    assert result.coverage.worst_miss == 1.0 and "the zero coin was NOT tested" in result.summary()


def test_a_site_no_scenario_reaches_is_a_stated_scope_limit():
    deep = next(s for s in STATISTICAL if s.name == "tree-iid-deep")
    result = check(tree_rrs, "tree", samples=256, scenarios=[deep], progress=False)
    assert not result.coverage.sites and len(result.coverage.not_tested) == 5  # d1: 0, 1; d2: 0, 1; d3: 0
    assert "not tested: iid depth 1 sibling 0 (first tried): no scenario" in result.summary()


def test_the_adapter_declares_its_sibling_modes_and_the_released_walk_passes_them():
    released = get_adapter("sglang-tree").wrap(sglang_tree.tree_speculative_sampling_target_only)
    assert released.contract_defaults == {"siblings": ("topk",)}
    assert CheckOptions.build("tree").for_target(released).siblings == ("topk",)
    assert CheckOptions.build("tree", siblings="iid").for_target(released).siblings == ("iid",)  # the user's wins
    result = check(released, "tree", samples=512, progress=False, max_detectable_tv=0.5)
    assert {s.name for s in result.scenarios} == {s.name for s in _ladders("topk") + STATISTICAL if s.scheme == "topk"}
    assert result.verdict is Verdict.PASS, result.summary()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_shipped_sglang_walk_fails_on_every_seed_through_its_adapter(seed):
    """The issue's report: u <= a and the last-index fallback PASSed --adapter sglang-tree."""
    shipped = get_adapter("sglang-tree").wrap(sglang_tree.tree_target_only_shipped_edges)
    result = check(shipped, "tree", samples=256, seed=seed, scenarios=_ladders("topk"), progress=False,
                   collect_all=True)  # the default stops at the first certain finding: the injection runs too here
    assert result.verdict is Verdict.FAIL
    assert result.injection_findings  # the zero coin, at the ladders' fans


# one seed and one mode each: (mutant, mode, statistical scenarios or ladders)
_ONE = [("tree-accept-ties", "topk"), ("tree-target-only-ties", "distinct"), ("tree-repeated-mass", "iid"),
        ("tree-relaxed-thresholds", "topk"), ("tree-last-index-fallback", "iid"),
        ("tree-correction-keeps-tried", "distinct"), ("tree-keep-tried", "topk")]


@pytest.mark.parametrize("name, mode", _ONE)
def test_each_tree_mutant_fails(name, mode):
    mutant = ZOO[name]
    assert mode in mutant.wrong_in
    result = check(mutant.fn, "tree", siblings=mode, samples=4096, fail_fast=True, progress=False)
    assert result.verdict is Verdict.FAIL, result.summary()


def test_the_repeated_mass_walk_is_exact_without_repeats():
    result = check(ZOO["tree-repeated-mass"].fn, "tree", siblings="topk", samples=2048, progress=False)
    assert not result.findings


def _ladder_rows(name: str, mode: str, seed: int) -> tuple[Verdict, int | None]:
    mutant = ZOO[name]
    result = check(mutant.fn, "tree", siblings=mode, seed=seed, fail_fast=True, progress=False)
    return result.verdict, result.verifier_rows_at_first_flag


@pytest.mark.slow
@pytest.mark.parametrize("name, mode", [(m.name, mode) for m in TREE_ZOO for mode in m.wrong_in])
def test_every_tree_mutant_fails_on_50_of_50_seeds_in_every_mode_it_is_wrong_for(name, mode):
    outcomes = [_ladder_rows(name, mode, seed) for seed in range(50)]
    assert all(v is Verdict.FAIL for v, _ in outcomes), outcomes


@pytest.mark.slow
@pytest.mark.parametrize("name, mode", [(n, mode) for n, (_, modes) in TREE_EXACT.items() for mode in modes])
def test_canonical_tree_rules_raise_no_false_alarm_over_100_seeds_per_mode(name, mode):
    fn = TREE_EXACT[name][0]
    alarms = [seed for seed in range(100)
              if check(fn, "tree", siblings=mode, seed=seed, progress=False).findings]
    assert not alarms
