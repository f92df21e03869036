"""The tree contract: sampling, the output contract, streams through the one engine, verdicts, injection, CLI."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.calls import ContractViolation, VerifierError
from specproof.harness.check.result import Verdict
from specproof.harness.check.contracts.tree.signature import off_tree_rows, validate_tree_output
from specproof.harness.check.driver import check
from specproof.harness.check.contracts.tree.scenarios import default_tree_suite
from specproof.harness.check.contracts.tree.families import OFF_TREE, tree_tolerance
from specproof.harness.check.contracts.tree.ladders import ladders_for
from specproof.harness.check.calls import Caller
from specproof.harness.check.contracts import tree as tree_contract
from specproof.harness.check.contracts.prepared import ZERO_TOKEN
from specproof.harness.check.driver import REPRODUCIBILITY_ROWS, Stream, injection_passes
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.intercept.precision import PROBE_ROWS
from specproof.impls.verifiers.tree_mutants import (tree_accept_ties, tree_iid_assumed, tree_keep_tried,
                                                    tree_reversed_siblings)
from specproof.impls.verifiers.tree_rrs import tree_rrs, tree_target_only

SUITE = {s.name: s for s in default_tree_suite()}


def _suite(*schemes: str) -> list:
    return [s for s in SUITE.values() if s.scheme in schemes]


def _within(freq: float, p: float, n: int) -> bool:
    """Six binomial standard deviations (plus one count): a fixed-seed check, not a tuned one."""
    return abs(freq - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1 / n


@pytest.mark.parametrize("name", sorted(SUITE))
def test_node_tokens_follow_the_exact_sibling_laws(name):
    real = SUITE[name].realise("float32")
    n = 4000
    batch = real.sample(n, torch.Generator().manual_seed(3))
    kids = real.tree.children(-1)
    if len(kids) == 1:  # a chain: the root child, then its child after the root child's token
        kids = (kids[0], real.tree.children(kids[0])[0])
    first, second = batch.node_tokens[:, kids[0]], batch.node_tokens[:, kids[1]]
    sibling = real.tree.parents[kids[1]] == -1
    for x, px in enumerate(real.row((), (), 0)):
        if px == 0:
            assert not bool((first == x).any())
            continue
        assert _within(float((first == x).float().mean()), float(px), n)
        given = second[first == x]  # the second sibling given the first: its own row (scheme)
        if not sibling:
            for y, py in enumerate(real.row((x,), (), 0)):
                assert _within(float((given == y).float().mean()), float(py), given.numel())
            continue
        for y, py in enumerate(real.row((), (x,), 1)):
            assert _within(float((given == y).float().mean()), float(py), given.numel())
    assert batch.draft_probs.dtype == torch.float32 and batch.target_probs.shape[1] == len(real.tree.parents) + 1


def test_the_verifier_gets_fresh_copies():
    cpu = torch.device("cpu")
    prepared = tree_contract.prepare(SUITE["tree-iid-star"], CheckOptions.build("tree"), cpu)
    real = prepared.real
    batch = real.sample(8, torch.Generator().manual_seed(0))
    a, b = batch.arguments(torch.Generator()), batch.arguments(torch.Generator())
    assert all(x is not y and torch.equal(x, y) for x, y in zip(a[:4], b[:4]))
    a[3].fill_(0)
    assert not torch.equal(a[3], batch.node_tokens)


def test_off_tree_and_zero_positions():
    parents = (-1, -1, 0, 0, 2)
    nodes = torch.tensor([[1, 2, 3, 4, 0]]).expand(4, 5)
    emitted = torch.tensor([[3, 0, -1, -1], [1, 3, 0, 2], [1, 4, 0, 2], [2, 1, -1, -1]])
    assert off_tree_rows(emitted, parents, nodes).tolist() == [1, 0, 3, 0]
    cpu = torch.device("cpu")
    prepared = tree_contract.prepare(SUITE["tree-iid-star"], CheckOptions.build("tree"), cpu)
    real = prepared.real
    zeros = [t for t, p in enumerate(real.pair.target[()]) if p == 0]
    assert zeros, "the scenario needs a token of target probability 0"
    out = torch.tensor([[zeros[0], -1], [next(t for t in range(5) if t not in zeros), -1]])
    assert real.zero_positions(out).tolist() == [1, 0]


def test_tolerance_is_the_step_tolerance_per_node_plus_one_and_the_tree_tokens_own_drift():
    """``(N + 1) tau_step`` of the verifier, plus ``N tau_64``: the harness's float64 draws of the N tree tokens."""
    tau_64 = Fraction(1, 2**53) * (1 + 2 + 7)  # g + V g / 2 + (V + 3) u with g = u = 2^-53, V = 4
    assert tree_tolerance("float32", 4, 6) == 7 * (Fraction(1, 2**24) * (1 + 2 + 7)) + 6 * tau_64


@pytest.mark.parametrize("bad, match", [
    (lambda p, d, t, n, g: torch.zeros((n.shape[0], 1), dtype=torch.int64), "shape"),
    (lambda p, d, t, n, g: torch.zeros((n.shape[0], 2), dtype=torch.int32), "dtype"),
    (lambda p, d, t, n, g: torch.tensor([[-1, 0]]).expand(n.shape[0], 2).clone(), "no token"),
    (lambda p, d, t, n, g: "tokens", "not a tensor"),
])
def test_output_contract_violations_are_usage_errors(bad, match):
    with pytest.raises(ContractViolation, match=match):
        check(bad, "tree", samples=64, inject=False, scenarios=[SUITE["tree-iid-star"]], progress=False)


def test_a_raising_verifier_is_a_usage_error():
    def boom(*args):
        raise RuntimeError("no")

    with pytest.raises(VerifierError, match="RuntimeError: no"):
        check(boom, "tree", samples=64, inject=False, scenarios=[SUITE["tree-iid-star"]], progress=False)


def test_bad_arguments_name_the_argument():
    for kwargs, argument in (({"samples": 10}, "samples"), ({"seed": -1}, "seed"), ({"level": "x"}, "level"),
                             ({"max_detectable_tv": 2}, "max_detectable_tv"), ({"scenarios": []}, "scenarios")):
        with pytest.raises(SpecproofInputError) as info:
            check(tree_rrs, "tree", inject=False, progress=False, **kwargs)
        assert info.value.argument == argument


def test_stream_draws_counts_for_every_family_and_certain_impossible_outcomes():
    cpu = torch.device("cpu")
    prepared = tree_contract.prepare(SUITE["tree-iid-star"], CheckOptions.build("tree"), cpu)
    real = prepared.real
    zero = next(t for t, p in enumerate(real.pair.target[()]) if p == 0)

    def emits_a_zero(parents, d, t, nodes, g):
        out = tree_rrs(parents, d, t, nodes, g)
        out[:5, 0] = zero
        return out

    stream = Stream(0, prepared, Caller(emits_a_zero, cpu, None, False), 0, 8192)
    batch = stream.draw(300)
    assert batch.rows == 300 and all(int(c.sum()) == 300 for c in batch.counts)
    assert batch.impossible.get(ZERO_TOKEN, 0) >= 5 and batch.first_position[ZERO_TOKEN] == 1
    assert {f.name for f in stream.families} == {"lossless", "bug-class"}


def test_an_off_tree_path_is_a_certain_finding():
    def wanders(parents, d, t, nodes, g):
        out = tree_rrs(parents, d, t, nodes, g)
        out[:, 0] = (nodes[:, 0] + 1) % d.shape[-1]  # a first token no root child holds (mostly)
        out[:, 1] = 0
        return out

    result = check(wanders, "tree", samples=256, inject=False, scenarios=[SUITE["tree-topk-deep"]], progress=False)
    assert result.verdict is Verdict.FAIL
    assert any(f.event == OFF_TREE and f.certain for f in result.findings)


@pytest.mark.parametrize("mutant, schemes", [(tree_keep_tried, ("iid",)), (tree_iid_assumed, ("distinct",)),
                                             (tree_reversed_siblings, ("distinct",))])
def test_tree_mutants_are_flagged(mutant, schemes):
    result = check(mutant, "tree", samples=4096, fail_fast=True, inject=False, scenarios=_suite(*schemes),
                        progress=False)
    assert result.verdict is Verdict.FAIL and result.findings
    assert all(not f.certain for f in result.findings)  # statistical, through the engine's evidence


@pytest.mark.parametrize("reference", [tree_rrs, tree_target_only])
def test_tree_references_show_no_finding(reference):
    result = check(reference, "tree", samples=2048, inject=False, progress=False)
    assert not result.findings and result.verdict is Verdict.UNDERPOWERED  # 2048 rows cannot state 0.02
    assert all(r.rows == 2048 for r in result.scenarios if not r.certainty_probe)
    ladders = ladders_for(default_tree_suite())  # one per mode and depth: iid and distinct 1-3, topk 1-4
    assert sum(r.certainty_probe for r in result.scenarios) == len(ladders) == 10


@pytest.mark.slow
@pytest.mark.parametrize("reference", [tree_rrs, tree_target_only])
def test_tree_references_pass_at_the_default_level(reference):
    result = check(reference, "tree", progress=False)
    assert result.verdict is Verdict.PASS, result.summary()


def test_fail_fast_runs_the_tree_statistics_before_the_reproducibility_pair_and_the_injection():
    """The one driver's order (driver docstring): a bug the statistics see is flagged with no other
    verifier rows; a tie bug only the injection sees is flagged once the streams have drawn the
    interlude's rows, which are then counted whole."""

    seen = check(tree_keep_tried, "tree", samples=4096, fail_fast=True, scenarios=_suite("iid"), progress=False)
    assert seen.verdict is Verdict.FAIL and seen.injection is None and not seen.reproducibility
    assert "injection and reproducibility check not run: the statistics flagged" in seen.injection_summary
    probed = PROBE_ROWS * len(seen.scenarios)  # the precision probe's one call per scenario comes first
    assert seen.verifier_rows_at_first_flag == seen.rows_at_first_flag + probed == seen.rows + probed
    suite = _suite("iid", "distinct")
    rare = check(tree_accept_ties, "tree", samples=16_384, fail_fast=True, scenarios=suite, progress=False)
    cost = 2 * REPRODUCIBILITY_ROWS + injection_passes(len(suite)) * tree_contract.INJECTION_ROWS
    assert rare.verdict is Verdict.FAIL and rare.injection_findings and not any(r.findings for r in rare.scenarios)
    assert rare.rows_at_first_flag == rare.rows >= cost
    assert rare.verifier_rows_at_first_flag > rare.rows + 2 * REPRODUCIBILITY_ROWS


def test_injection_finds_the_tie_bug_the_statistics_cannot_see():
    result = check(tree_accept_ties, "tree", samples=256, scenarios=_suite("iid", "distinct"), progress=False)
    assert result.injection_findings and all(f.certain and f.family == "rng-injection"
                                             for f in result.injection_findings)
    assert "zero" in result.injection_findings[0].event and result.verdict is Verdict.FAIL
    clean = check(tree_rrs, "tree", samples=256, scenarios=_suite("iid"), progress=False)
    assert not clean.injection_findings and "not-flagged" in clean.injection_summary


def test_a_time_budget_bounds_the_tree_interlude_shrinking_its_passes_and_listing_what_it_skipped():
    """At 2 ms a row the 76 injection passes of 1,024 rows (19 scenarios) would take 156 s; under a 10 s budget the
    interlude gets 1 s: its passes shrink to 64 rows, those that still do not fit are listed, and the
    check ends near the budget (driver docstring; slack for a batch and a loaded machine)."""
    import time

    def slowed(parents, d, t, nodes, g):
        began = time.perf_counter()
        out = tree_rrs(parents, d, t, nodes, g)
        time.sleep(max(0.0, d.shape[0] * 2e-3 - (time.perf_counter() - began)))
        return out

    start = time.perf_counter()
    result = check(slowed, "tree", time_budget=10.0, progress=False)
    took = time.perf_counter() - start
    assert result.verdict is not Verdict.FAIL and took <= 17.0, (took, result.injection_summary)
    assert result.injection["rows"] == 64 and result.injection["not_run"]
    assert "passes NOT run" in result.injection_summary and not result.reproducibility


def test_a_verifier_on_the_global_rng_is_not_reproducible():
    def global_rng(parents, d, t, nodes, g):
        return tree_rrs(parents, d, t, nodes, torch.Generator().manual_seed(int(torch.randint(0, 2**30, ()))))

    result = check(global_rng, "tree", samples=64, inject=False, fail_fast=True, scenarios=[SUITE["tree-iid-star"]],
                        progress=False)
    assert result.verdict is Verdict.FAIL and result.reproducibility


# -- CLI -----------------------------------------------------------------------------------------

def _cli(*argv: str) -> int:
    from specproof.harness.cli import main

    return main(["check", *argv])


def test_cli_run_exit_codes_and_usage_errors(tmp_path, capsys):
    out = tmp_path / "tree.json"
    base = ("--contract", "tree", "--fail-fast", "--no-inject", "--quiet", "--siblings", "iid")
    assert _cli("specproof.impls.verifiers.tree_mutants:tree_keep_tried", *base, "--json", str(out)) == 1
    assert out.exists() and "FAIL" in capsys.readouterr().out
    for target, extra, flag in (("x:y", ("--siblings", "iid,nope"), "--siblings"),
                                ("x:y", ("--rule", "canonical"), "--rule"),
                                ("x:y", ("--temperature", "0.7"), "--temperature"),
                                ("specproof.impls.verifiers.tree_rrs:children_table", (), "TARGET"),
                                ("specproof.impls.verifiers.tree_rrs:tree_rrs", ("--adapter", "vllm-v1"), "--adapter"),
                                ("x:y", ("--samples", "3"), "--samples")):
        assert _cli(target, *base, *extra) == 2, extra
        assert flag in capsys.readouterr().err, flag


def test_the_pytest_fixtures_dispatch_through_the_contract_table(specproof_check, specproof_assert_lossless):
    from specproof.impls import canonical_ratio_race

    result = specproof_check(tree_rrs, "tree", scenarios=[SUITE["tree-iid-star"]], samples=256, inject=False)
    assert result.contract == "tree" and not result.findings and result.rows == 256
    with pytest.raises(SpecproofInputError, match="is not a check contract"):
        specproof_assert_lossless(tree_rrs, "no-such-contract")
    with pytest.raises(SpecproofInputError, match="cannot take the tree contract's 5 arguments"):
        specproof_assert_lossless(canonical_ratio_race, "tree")  # a batched verifier is not a tree verifier
    with pytest.raises(SpecproofInputError, match="applies to the tree contract only"):
        specproof_check(canonical_ratio_race, siblings="iid")
