"""Every contract and its options through ``report`` and ``campaign``, the same way as through ``check``:
one flag table (harness/cli/options.py), one target loader (harness/check/targets.py), one validation
(CheckOptions.build); rows name their adapter and options in their key, and compare never calls a change
of options a regression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from newcomer.commits import write_commit
from specproof.errors import SpecproofInputError
from specproof.harness.check.contracts import CONTRACTS
from specproof.harness.cli.parser import build_parser, main
from specproof.harness.report.compare import compare_documents, load_for_compare
from specproof.harness.report.targets import TargetPlan, options_text, target_table

TREE = "specproof.impls.verifiers.tree_rrs:tree_walk"
GENERATE = "specproof.impls.pipelines.canonical:canonical_generate"
VLLM = "specproof.impls.runtime_layouts.vllm_v1:rejection_sample"


def _flags(command: str) -> dict[str, set[str]]:
    """The flags of each contract group of ``command``'s parser."""
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {group.title: {s for action in group._group_actions for s in action.option_strings}
            for group in sub._action_groups if group.title.endswith(" contract")}


def test_check_and_report_take_the_same_contract_flags_from_the_contract_records():
    check, report = _flags("check"), _flags("report")
    assert check == report
    assert check == {f"{c.name} contract": {f for flags in c.options.values() for f in flags.split("/")}
                     for c in CONTRACTS.values()}


def _report(tmp_path: Path, capsys, *argv: str, code: int = 0) -> dict:
    out = tmp_path / "out"
    assert main(["report", *argv, "--samples", "64", "--quiet", "--out", str(out)]) == code, capsys.readouterr().err
    return json.loads((out / "results.json").read_text())


def _only_row(document: dict) -> tuple[str, dict]:
    (key, row), = document["rows"].items()
    return key, row


@pytest.mark.parametrize("target, argv, input, recorded", [
    (TREE, ("--contract", "tree", "--siblings", "topk"), "tree[siblings=topk]@cpu", (None, {"siblings": ["topk"]})),
    (GENERATE, ("--contract", "generate", "--temperature", "0.7", "--top-k", "3", "--new-tokens", "3"),
     "generate[new_tokens=3, temperature=0.7, top_k=3]@cpu",
     (None, {"sampling": {"temperature": 0.7, "top_k": 3}, "new_tokens": 3})),
    (VLLM, ("--adapter", "vllm-v1"), "batched[adapter=vllm-v1]@cpu", ("vllm-v1", {})),
])
def test_each_contract_and_the_adapter_run_through_report_with_their_options(tmp_path, capsys, target, argv, input,
                                                                             recorded):
    document = _report(tmp_path, capsys, target, *argv)
    key, row = _only_row(document)
    assert key == f"check/{target}/float32/{input}"
    assert (row["detail"]["adapter"], row["detail"]["contract_options"]) == recorded
    assert row["verdict"] == "underpowered"  # lossless, and 64 rows cannot state the power asked for
    plan = document["config"]["targets"]
    assert (plan["adapter"], plan["contract_options"]) == recorded and plan["contract"] == row["contract"]
    header, lines, _ = target_table(document)
    said = input.split("[", 1)[1].split("]", 1)[0]
    assert lines[0][header.index("target")].endswith(f"{said})")  # the table names the options too


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_report_on_ray_has_the_local_rows_of_a_target_with_options():
    from specproof.harness.report.compare import rows_differing_beyond_timing
    from specproof.harness.report.config import ReportConfig
    from specproof.harness.report.execute import ReportEngine
    from specproof.harness.report.run import run_report
    from specproof.harness.exact.sampling import Sampling

    config = ReportConfig.for_mode("default", catalogue=False, dtypes=("float32",), jobs=1)
    plan = TargetPlan((GENERATE,), "generate", samples=64,
                      options=(("sampling", Sampling(0.7, top_k=3)), ("new_tokens", 2)))
    local = run_report(config, progress=False, targets=plan)
    remote = run_report(config, progress=False, targets=plan, engine=ReportEngine("ray", None, 2))
    assert list(remote["rows"]) == [f"check/{GENERATE}/float32/generate[new_tokens=2, temperature=0.7, top_k=3]@cpu"]
    assert rows_differing_beyond_timing(local, remote) == []


def test_a_sibling_mode_reaches_the_tree_check(tmp_path, capsys):
    _, row = _only_row(_report(tmp_path, capsys, TREE, "--contract", "tree", "--siblings", "distinct"))
    _, every = _only_row(_report(tmp_path / "all", capsys, TREE, "--contract", "tree"))
    assert row["detail"]["scenarios"] < every["detail"]["scenarios"]  # only the distinct-sibling scenarios


def test_check_json_and_report_of_one_rule_share_a_row_and_compare_unchanged(tmp_path, capsys):
    target = write_commit(tmp_path / "repo", bonus_bug=False)
    check_json = tmp_path / "check.json"
    assert main(["check", target, "--rule", "canonical", "--vocab", "4096", "--samples", "64", "--quiet",
                 "--json", str(check_json)]) == 3
    written = json.loads(check_json.read_text())
    assert written["contract_options"] == {"rule": "canonical", "vocab": [4096]} and written["adapter"] is None
    document = _report(tmp_path, capsys, target, "--rule", "canonical", "--vocab", "4096")
    key, row = _only_row(document)
    assert key == f"check/{target}/float32/batched[rule=canonical, vocab=4096]@cpu"
    assert 4096 in row["detail"]["vocab_sizes"]
    capsys.readouterr()
    assert main(["compare", str(check_json), str(tmp_path / "out")]) == 0
    assert "1 rows: nothing changed" in capsys.readouterr().out


@pytest.mark.parametrize("argv, flag, problem", [
    (["{spec}", "--siblings", "topk"], "--siblings", "applies to the tree contract only, not to batched"),
    (["{spec}", "--temperature", "0.7"], "--temperature", "applies to the generate contract only"),
    (["{spec}", "--models", "table"], "--models", "applies to the generate contract only"),
    ([TREE, "--contract", "tree", "--rule", "canonical"], "--rule", "applies to the batched contract only"),
    ([TREE, "--contract", "tree", "--vocab", "4096"], "--vocab", "applies to the batched contract only"),
    ([GENERATE, "--contract", "generate", "--siblings", "topk"], "--siblings", "applies to the tree contract"),
    ([GENERATE, "--contract", "generate", "--new-tokens", "1000000000"], "--new-tokens", "above the limit 16"),
    ([GENERATE, "--contract", "generate", "--top-k", "-1"], "--top-k", "negative"),
    ([GENERATE, "--contract", "generate", "--temperature", "0"], "--temperature", "not a finite number > 0"),
    ([TREE, "--contract", "tree", "--siblings", "sideways"], "--siblings", "unknown ones"),
    (["{spec}", "--vocab", "1"], "--vocab", "1 is below 2"),
    (["{spec}", "--adapter", "vllm-v9"], "--adapter", "not an adapter"),
    ([VLLM, "--adapter", "vllm-v1", "--contract", "tree"], "--adapter", "serves the batched contract, not tree"),
    (["{spec}", "--adapter", "vllm-v1"], "--adapter", "not the vLLM"),  # a batched verifier is not vLLM's layout
    ([TREE], "TARGET", "cannot take the batched contract"),  # a tree verifier under the default contract
    (["--rule", "canonical"], "--rule", "applies to TARGETs, and none is given"),
    (["--adapter", "vllm-v1"], "--adapter", "applies to TARGETs"),
])
def test_a_bad_contract_option_is_a_usage_error_naming_the_flag(tmp_path, capsys, argv, flag, problem):
    spec = write_commit(tmp_path, bonus_bug=False)
    out = tmp_path / "out"
    assert main(["report", *[a.replace("{spec}", spec) for a in argv], "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: {flag}: " in err and problem in err
    assert not out.exists()


def test_a_target_plan_refuses_options_as_the_check_does():
    with pytest.raises(SpecproofInputError) as err:
        TargetPlan(("m:f",), options=(("siblings", "topk"),)).validated()
    assert err.value.argument == "siblings" and "not to batched" in err.value.problem
    with pytest.raises(SpecproofInputError, match="not a contract option"):
        TargetPlan(("m:f",), options=(("contract", "tree"),)).validated()
    plan = TargetPlan(("m:f",), "tree", options=(("siblings", "topk,iid"),)).validated()
    assert plan.options == (("siblings", ("topk", "iid")),) and plan.options_text() == "siblings=topk+iid"
    assert TargetPlan(("m:f",), adapter="sglang-tree").validated().contract == "tree"


def test_options_text_is_canonical_whatever_the_order_of_the_record():
    a = options_text("vllm-v1", {"sampling": {"top_k": 3, "temperature": 0.7}, "new_tokens": 2})
    b = options_text("vllm-v1", {"new_tokens": 2, "sampling": {"temperature": 0.7, "top_k": 3}})
    assert a == b == "adapter=vllm-v1, new_tokens=2, temperature=0.7, top_k=3"
    assert options_text(None, {}) == ""
    from specproof.harness.check.options import CheckOptions
    from specproof.harness.exact.sampling import Sampling

    # an integer temperature (a campaign file's "temperature = 1") records as the flag's 1.0 does
    whole, flag = (CheckOptions.build("generate", sampling=Sampling(t)).contract_values() for t in (1, 1.0))
    assert whole == flag == {"sampling": {"temperature": 1.0}}
    assert options_text(None, whole) == "temperature=1.0"


# -- campaign --------------------------------------------------------------------------------------------

def _campaign(tmp_path: Path, matrices: str) -> Path:
    write_commit(tmp_path / "repo", bonus_bug=False)
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "opts"\n[budget]\ntarget_samples = 64\n{matrices}')
    return path


def test_a_campaign_checks_one_target_under_several_option_sets_as_distinct_rows(tmp_path):
    from specproof.harness.report.campaign import load_campaign, run_campaign

    path = _campaign(tmp_path, '[[matrix]]\ntargets = ["repo/spec.py:verify"]\n'
                               '[[matrix]]\ntargets = ["repo/spec.py:verify"]\nrule = "canonical"\n'
                               f'[[matrix]]\ntargets = ["{GENERATE}"]\ncontract = "generate"\nnew_tokens = 2\n'
                               'sampling = [{temperature = 1.0}, {temperature = 0.7, top_k = 3}]\n')
    campaign = load_campaign(path)
    assert [c.options for c in campaign.cells] == ["", "rule=canonical", "new_tokens=2, temperature=1.0",
                                                   "new_tokens=2, temperature=0.7, top_k=3"]
    assert len({c.key for c in campaign.cells}) == 4
    document = run_campaign(campaign, progress=False)
    spec = f"{tmp_path}/repo/spec.py:verify"
    assert sorted(document["rows"]) == sorted([
        f"check/{spec}/float32/batched@cpu", f"check/{spec}/float32/batched[rule=canonical]@cpu",
        f"check/{GENERATE}/float32/generate[new_tokens=2, temperature=1.0]@cpu",
        f"check/{GENERATE}/float32/generate[new_tokens=2, temperature=0.7, top_k=3]@cpu"])
    assert document["rows"][f"check/{spec}/float32/batched[rule=canonical]@cpu"]["detail"]["contract_options"] \
        == {"rule": "canonical"}
    assert {c["options"] for c in document["campaign"]["cells"]} == {None, "rule=canonical",
                                                                     "new_tokens=2, temperature=1.0",
                                                                     "new_tokens=2, temperature=0.7, top_k=3"}


@pytest.mark.parametrize("matrix, where, problem", [
    ('targets = ["repo/spec.py:verify"]\ncontract = "tree"\nrule = "canonical"', "matrix[0].rule",
     "applies to the batched contract only"),
    ('targets = ["repo/spec.py:verify"]\nrule = "no-such-rule"', "matrix[0].rule", "unknown step rule"),
    ('targets = ["repo/spec.py:verify"]\nrule = 3', "matrix[0].rule", "is not a rule name"),
    ('targets = ["repo/spec.py:verify"]\nsiblings = 3', "matrix[0].siblings", "is not a list of sibling modes"),
    ('targets = ["repo/spec.py:verify"]\nvocab = [1]', "matrix[0].vocab", "1 is below 2"),
    ('targets = ["repo/spec.py:verify"]\nsampling = [{temperature = 0.7}]', "matrix[0].sampling[0]",
     "applies to the generate contract only"),
    (f'targets = ["{GENERATE}"]\ncontract = "generate"\nnew_tokens = 100', "matrix[0].new_tokens",
     "above the limit 16"),
    (f'targets = ["{GENERATE}"]\ncontract = "generate"\nsampling = [{{temperature = 0}}]', "matrix[0].sampling[0]",
     "temperature"),
    ('targets = ["repo/spec.py:verify"]\nadapter = "sglang-tree"\ncontract = "batched"', "matrix[0].adapter",
     "serves the tree contract, not batched"),
    ('targets = ["repo/spec.py:verify"]\nadapter = "nope"', "matrix[0].adapter", "not an adapter"),
    ('implementations = ["canonical-ratio-race"]\nrule = "canonical"', "matrix[0].rule", "applies to targets"),
    ('pipelines = ["canonical"]\nnew_tokens = 3', "matrix[0].new_tokens", "applies to targets"),
])
def test_a_bad_option_in_a_target_matrix_names_the_file_key_and_the_fix(tmp_path, matrix, where, problem):
    from specproof.harness.report.campaign import load_campaign

    path = _campaign(tmp_path, f"[[matrix]]\n{matrix}\n")
    with pytest.raises(SpecproofInputError, match=problem) as err:
        load_campaign(path)
    assert err.value.argument == f"c.toml: {where}"
    if "applies to the" in problem:
        assert "write contract = " in err.value.fix


# -- compare ---------------------------------------------------------------------------------------------

def _check_file(verdict: str, options: dict | None, adapter: str | None = None) -> dict:
    result = {"verdict": verdict, "contract": "batched", "dtype": "float32", "device": "cpu", "seed": 0,
              "alpha": 1e-6, "samples_per_scenario": 0, "detectable_tv": 0.018, "max_detectable_tv": 0.02,
              "rows": 900000, "verifier_seconds": 3.0, "harness_seconds": 9.0, "findings_total": 0,
              "level": "default", "stop_reason": "complete", "rows_at_first_flag": None, "time_budget": None,
              "injection_summary": "RNG edge injection: not-flagged", "scenarios": [], "diagnosis": None}
    data = {"schema": 1, "kind": "check", "provenance": {"git": {}, "versions": {}, "device": "cpu"},
            "target": "mypkg.spec:verify", "adapter": adapter, "contract": "batched", "result": result}
    if options is not None:
        data["contract_options"] = options
    return data


def _compare(tmp_path: Path, baseline: dict, current: dict):
    for name, data in (("a.json", baseline), ("b.json", current)):
        (tmp_path / name).write_text(json.dumps(data))
    return compare_documents(load_for_compare(tmp_path / "a.json", "BASELINE"),
                             load_for_compare(tmp_path / "b.json", "CURRENT"))


@pytest.mark.parametrize("before, after, reason", [
    ((None, {}), (None, {"rule": "typical"}), "rule - -> typical"),
    ((None, {"rule": "canonical"}), (None, {"rule": "typical"}), "rule canonical -> typical"),
    ((None, {"vocab": [4096]}), (None, {"vocab": [4096, 151936]}), "vocab 4096 -> 4096+151936"),
    ((None, {}), ("vllm-v1", {}), "adapter - -> vllm-v1"),
])
def test_a_change_of_options_is_not_comparable_never_a_regression(tmp_path, before, after, reason):
    comparison = _compare(tmp_path, _check_file("pass", before[1], before[0]), _check_file("fail", after[1], after[0]))
    (row,) = comparison.rows
    assert row.mark == "x" and not comparison.regressed("worse")
    assert f"contract options differ: {reason}" in row.reason and "verdict pass -> fail" in row.reason
    assert row.key.startswith("check/mypkg.spec:verify/float32/batched") and " -> batched[" in row.key


def test_options_unrecorded_in_an_older_check_file_are_not_comparable(tmp_path):
    comparison = _compare(tmp_path, _check_file("pass", None), _check_file("fail", {}))
    (row,) = comparison.rows
    assert row.mark == "x" and "contract options not recorded in the baseline file" in row.reason
    same = _compare(tmp_path, _check_file("pass", {}), _check_file("fail", {}))
    assert [r.mark for r in same.rows] == ["!"]  # the same options: a new FAIL is a regression
