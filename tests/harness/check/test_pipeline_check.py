"""check_generate: the pipeline mutants are flagged, the lossless pipelines are not, misuse is exit 2."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
import torch

from specproof.proofs.errors import SpecproofInputError

from specproof.harness import Sampling
from specproof.harness.check.calls import ContractViolation, VerifierError
from specproof.harness.check.pipeline_check import IMPOSSIBLE, GenerateStream, check_generate
from specproof.harness.check.pipeline_scenarios import PipelineScenario, pipeline_suite, table_pair
from specproof.harness.check.result import Verdict
from specproof.impls.pipelines.canonical import canonical_generate
from specproof.impls.pipelines.mutants import PIPELINE_MUTANTS
from specproof.impls.pipelines.variants import LOSSLESS_VARIANTS

TINY = PipelineScenario("tiny", table_pair("tiny", 2, 3, 3, 4), Sampling(1.0), 3)
SUITE = {s.name: s for s in pipeline_suite()}
LOSSLESS = {"canonical": canonical_generate, **LOSSLESS_VARIANTS}

# each mutant on the scenario that shows it best, with rows that flag it under the fixed seed 0
MUTANT_CASES = [
    ("raw-q", "top-k2-offsupport", 4096),
    ("default-target", "top-k2-offsupport", 1024),
    ("bonus-only-min-p", "min-p0.32", 1024),
    ("mixed-residual", "plain-T1", 8192),
    ("stale-context", "top-k2-offsupport", 1024),
    ("shifted-q", "prefix-dependent", 4096),
]


def _quick(fn, scenarios, rows, **kw):
    return check_generate(fn, scenarios=scenarios, rows=rows, progress=False, inject=kw.pop("inject", False), **kw)


@pytest.mark.parametrize("name", sorted(LOSSLESS))
def test_lossless_pipelines_show_no_finding(name):
    result = _quick(LOSSLESS[name], list(SUITE.values()), 1024)
    assert not result.findings, result.summary()
    assert result.verdict is not Verdict.FAIL


@pytest.mark.parametrize("mutant, scenario, rows", MUTANT_CASES)
def test_pipeline_mutants_are_flagged(mutant, scenario, rows):
    result = _quick(PIPELINE_MUTANTS[mutant], [SUITE[scenario]], rows, fail_fast=True)
    assert result.verdict is Verdict.FAIL, result.summary()


def test_bf16_drafting_is_flagged_on_llm_sized_logits():
    # first-token TV about 0.011 at this prompt (0.003-0.016 over the table's rows): flagged near 63,000 rows
    result = _quick(PIPELINE_MUTANTS["bf16-draft"], [SUITE["llm-logits"]], 120_000, fail_fast=True)
    assert result.verdict is Verdict.FAIL, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOSSLESS))
def test_lossless_pipelines_pass_at_the_default_level(name):
    result = check_generate(LOSSLESS[name], progress=False)
    assert result.verdict is Verdict.PASS, result.summary()


def test_injection_finds_the_accept_le_bug_the_statistics_cannot_see():
    scenario = SUITE["top-k2-offsupport"]
    quiet = _quick(PIPELINE_MUTANTS["accept-le"], [scenario], 1024)
    assert not quiet.findings  # u == 0 has probability 2^-24 per test
    loud = _quick(PIPELINE_MUTANTS["accept-le"], [scenario], 256, inject=True)
    found = [f for f in loud.findings if f.family == "injection"]
    assert loud.verdict is Verdict.FAIL and found and found[0].certain and "'zero'" in found[0].event
    assert "reproducible" in found[0].note and not [f for f in _quick(canonical_generate, [scenario], 256,
                                                                      inject=True).findings]


def test_a_time_budget_bounds_the_injection_and_lists_the_passes_it_did_not_run():
    """At 0.5 ms a row a 256-row pass under the dispatch mode is predicted at about ten plain ones
    (1.3 s); the injection's share of a 4 s budget is a tenth (0.4 s), so no pass fits: both streams'
    passes are listed as NOT run, and the check ends near the budget (slack: one engine batch)."""
    import time

    def slowed(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        start = time.perf_counter()
        out = canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)
        rest = int(prompt_ids.shape[0]) * 5e-4 - (time.perf_counter() - start)
        if rest > 0:
            time.sleep(rest)
        return out

    begin = time.perf_counter()
    result = check_generate(slowed, scenarios=[SUITE["top-k2-offsupport"], SUITE["combo"]], time_budget=4,
                            progress=False)
    took = time.perf_counter() - begin
    assert result.verdict is not Verdict.FAIL and took <= 1.5 * 4 + 2, (took, result.injection_summary)
    assert "2 passes NOT run" in result.injection_summary
    assert "top-k2-offsupport: its baseline and edge passes" in result.injection_summary
    assert "combo: its baseline and edge passes" in result.injection_summary
    assert result.time_budget == 4 and not any(f.family == "injection" for f in result.findings)


def test_stream_counts_rows_and_flags_impossible_ones():
    def first_token_removed(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        out = canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)
        out[:, 1] = 0  # token 0 is processed away at many prefixes of this scenario
        return out

    scenario = SUITE["top-k2-offsupport"]
    stream = GenerateStream(scenario, first_token_removed, "float32", torch.device("cpu"), 0, 0, None)
    batch = stream.draw(300)
    assert batch.rows == 300 and all(c.sum() == 300 for c in batch.counts)
    assert batch.impossible[IMPOSSIBLE] > 0 and batch.first_position[IMPOSSIBLE] == 2
    assert stream.k == scenario.new_tokens - 1 and stream.tolerance > 0


def _canonical_then(change):
    def generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        return change(canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator))
    return generate


def _swallows_a_bad_model_call(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    try:
        target(prompt_ids[0])  # 1-D: the model refuses, the pipeline carries on
    except Exception:
        pass
    return canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)


def _raises(*args):
    raise RuntimeError("no KV cache")


@pytest.mark.parametrize("generate, error, match", [
    (_canonical_then(lambda out: out[:, :-1]), ContractViolation, "shape"),
    (_canonical_then(lambda out: out + 3), ContractViolation, "outside"),
    (_canonical_then(lambda out: out.float()), ContractViolation, "dtype"),
    (_canonical_then(lambda out: out.tolist()), ContractViolation, "not a tensor"),
    (_swallows_a_bad_model_call, ContractViolation, "target model"),
    (_raises, VerifierError, "no KV cache"),
])
def test_contract_violations_are_usage_errors_naming_the_fix(generate, error, match):
    with pytest.raises(error, match=match) as info:
        _quick(generate, [TINY], 64)
    assert info.value.fix


def test_a_pipeline_on_the_global_rng_is_not_reproducible():
    def global_rng(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        return canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, torch.Generator().manual_seed(
            int(torch.randint(0, 2**31, (1,)))))

    result = _quick(global_rng, [TINY], 64)
    assert result.verdict is Verdict.FAIL and result.reproducibility


def test_bad_arguments_name_the_argument():
    for kwargs, argument in (({"rows": 10}, "rows"), ({"seed": -1}, "seed"), ({"device": "tpu"}, "device"),
                             ({"scenarios": []}, "scenarios"), ({"max_detectable_tv": 2}, "max_detectable_tv")):
        with pytest.raises(SpecproofInputError) as info:
            check_generate(canonical_generate, **({"scenarios": [TINY]} | kwargs))
        assert info.value.argument == argument
    with pytest.raises(SpecproofInputError, match="six arguments"):
        check_generate(lambda a, b: a, scenarios=[TINY])


def test_the_pytest_fixture_accepts_the_generate_contract(specproof_check):
    result = specproof_check(canonical_generate, contract="generate", scenarios=[TINY], samples=256, inject=False)
    assert not result.findings and result.rows >= 256


def _args(target: str, **extra) -> argparse.Namespace:
    base = dict(target=target, dtype="float32", device="cpu", seed=0, samples=1024, alpha=1e-6, timeout=120.0,
                max_detectable_tv=0.02, fail_fast=True, no_inject=True, adapter=None, rule=None, thorough=False,
                time_budget=None, json=None, quiet=True, models="table", temperature=None, top_k=None, top_p=None,
                min_p=None, new_tokens=None)
    base.update(extra)
    return argparse.Namespace(**base)


def test_cli_module_imports_without_torch_and_adds_only_its_flags():
    code = "import sys, specproof.harness.cli.check_generate as m; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    from specproof.harness.cli import check_generate as cli

    parser = argparse.ArgumentParser()
    cli.add_options(parser)
    assert {a.dest for a in parser._actions} == {"help", "models", "temperature", "top_k", "top_p", "min_p",
                                                 "new_tokens"}


def test_cli_run_exit_codes_and_usage_errors(tmp_path, capsys):
    from specproof.harness.cli import check_generate as cli

    out = tmp_path / "generate.json"
    target = "specproof.impls.pipelines.mutants:default_target_generate"
    assert cli.run(_args(target, json=str(out), top_k=2, new_tokens=3)) == 1
    assert out.exists() and "FAIL" in capsys.readouterr().out
    for args, flag in ((_args(target, top_p=1.5), "--top-p"), (_args(target, temperature=0.0), "--temperature"),
                       (_args(target, top_k=-1), "--top-k"), (_args(target, new_tokens=9), "--new-tokens"),
                       (_args(target, new_tokens=0), "--new-tokens"), (_args(target, rule="canonical"), "--rule"),
                       (_args("specproof.impls.pipelines.canonical:columns"), "TARGET"),
                       (_args(target, samples=3), "--samples")):
        with pytest.raises(SpecproofInputError) as info:
            cli.run(args)
        assert info.value.argument == flag, (flag, info.value)
