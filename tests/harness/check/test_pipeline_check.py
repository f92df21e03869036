"""The generate contract: the pipeline mutants are flagged, the lossless pipelines are not, misuse is exit 2."""

from __future__ import annotations


import pytest
import torch

from specproof.errors import SpecproofInputError

from specproof.harness import Sampling
from specproof.harness.check.calls import ContractViolation, VerifierError
from specproof.harness.check.contracts import generate as generate_contract
from specproof.harness.check.contracts.prepared import ZERO_TOKEN
from specproof.harness.check.driver import Stream, check
from specproof.harness.check.calls import Caller
from specproof.harness.check.options import CheckOptions
from specproof.harness.check.contracts.generate.scenarios import PipelineScenario, pipeline_suite, table_pair
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
    return check(fn, "generate", scenarios=scenarios, samples=rows, progress=False, inject=kw.pop("inject", False), **kw)


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
    # first-token TV about 0.011 at this prompt (0.003-0.016 over the table's rows): 400,000 rows see TV 0.007
    result = _quick(PIPELINE_MUTANTS["bf16-draft"], [SUITE["llm-logits"]], 400_000, fail_fast=True)
    assert result.verdict is Verdict.FAIL, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOSSLESS))
def test_lossless_pipelines_pass_at_the_default_level(name):
    result = check(LOSSLESS[name], "generate", progress=False)
    assert result.verdict is Verdict.PASS, result.summary()


def test_injection_finds_the_accept_le_bug_the_statistics_cannot_see():
    scenario = SUITE["top-k2-offsupport"]
    quiet = _quick(PIPELINE_MUTANTS["accept-le"], [scenario], 1024)
    assert not quiet.findings  # u == 0 has probability 2^-24 per test
    loud = _quick(PIPELINE_MUTANTS["accept-le"], [scenario], 256, inject=True)
    found = [f for f in loud.findings if f.family == "rng-injection"]
    assert loud.verdict is Verdict.FAIL and found and found[0].certain and "is zero" in found[0].event
    assert "; reproducible" in found[0].event and not [f for f in _quick(canonical_generate, [scenario], 256,
                                                                         inject=True).findings]


def test_a_time_budget_bounds_the_whole_check_shrinking_the_injection_passes():
    """At 0.5 ms a row the interlude's share of a 4 s budget (a tenth) holds 16 passes of at most 50 rows:
    the passes shrink to their floor of 64 rows (driver docstring: Order), those that would end past the
    share are listed as NOT run, and the check ends near the budget (slack: one engine batch)."""
    import time

    from specproof.harness.check.driver import INJECTION_MIN_ROWS

    def slowed(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        start = time.perf_counter()
        out = canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)
        rest = int(prompt_ids.shape[0]) * 5e-4 - (time.perf_counter() - start)
        if rest > 0:
            time.sleep(rest)
        return out

    begin = time.perf_counter()
    result = check(slowed, "generate", scenarios=[SUITE["top-k2-offsupport"], SUITE["combo"]], time_budget=4,
                   progress=False)
    took = time.perf_counter() - begin
    assert result.verdict is not Verdict.FAIL and took <= 1.5 * 4 + 2, (took, result.injection_summary)
    assert result.injection["rows"] == INJECTION_MIN_ROWS
    assert ("passes NOT run" in result.injection_summary) == bool(result.injection["not_run"])
    assert result.time_budget == 4 and not result.injection_findings


def test_stream_counts_rows_and_flags_impossible_ones():
    def first_token_removed(target, draft, prompt_ids, max_new_tokens, sampling, generator):
        out = canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)
        out[:, 1] = 0  # token 0 is processed away at many prefixes of this scenario
        return out

    scenario = SUITE["top-k2-offsupport"]
    cpu = torch.device("cpu")
    prepared = generate_contract.prepare(scenario, CheckOptions.build("generate"), cpu)
    stream = Stream(0, prepared, Caller(first_token_removed, cpu, None, False), 0, 8192)
    batch = stream.draw(300)
    assert batch.rows == 300 and all(c.sum() == 300 for c in batch.counts)
    assert batch.impossible[ZERO_TOKEN] > 0 and batch.first_position[ZERO_TOKEN] == 2
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
    for kwargs, argument in (({"samples": 10}, "samples"), ({"rows": 100}, "rows"), ({"rule": "canonical"}, "rule"), ({"seed": -1}, "seed"), ({"device": "tpu"}, "device"),
                             ({"scenarios": []}, "scenarios"), ({"max_detectable_tv": 2}, "max_detectable_tv")):
        with pytest.raises(SpecproofInputError) as info:
            check(canonical_generate, "generate", **({"scenarios": [TINY]} | kwargs))
        assert info.value.argument == argument
    with pytest.raises(SpecproofInputError, match="6 arguments"):
        check(lambda a, b: a, "generate", scenarios=[TINY])


def test_the_pytest_fixture_accepts_the_generate_contract(specproof_check):
    result = specproof_check(canonical_generate, contract="generate", scenarios=[TINY], samples=256, inject=False)
    assert not result.findings and result.rows >= 256


def _cli(*argv: str) -> int:
    from specproof.harness.cli import main

    return main(["check", *argv])


def test_cli_run_exit_codes_and_usage_errors(tmp_path, capsys):
    out = tmp_path / "generate.json"
    target = "specproof.impls.pipelines.mutants:default_target_generate"
    base = ("--contract", "generate", "--samples", "1024", "--fail-fast", "--no-inject", "--quiet")
    assert _cli(target, *base, "--json", str(out), "--top-k", "2", "--new-tokens", "3") == 1
    assert out.exists() and "FAIL" in capsys.readouterr().out
    for extra, flag in ((("--top-p", "1.5"), "--top-p"), (("--temperature", "0"), "--temperature"),
                        (("--top-k", "-1"), "--top-k"), (("--new-tokens", "9"), "--new-tokens"),
                        (("--new-tokens", "0"), "--new-tokens"), (("--new-tokens", "1000000000"), "--new-tokens"),
                        (("--rule", "canonical"), "--rule"), (("--siblings", "iid"), "--siblings"),
                        (("--samples", "3"), "--samples")):
        assert _cli(target, *base[:2], *base[4:], *extra) == 2, extra
        assert flag in capsys.readouterr().err, (extra, flag)
    assert _cli("specproof.impls.pipelines.canonical:columns", *base) == 2
    assert "TARGET" in capsys.readouterr().err
