"""``specproof campaign FILE.toml`` (harness/report/campaign.py, harness/cli/campaign.py): the file is
checked key by key, cells are cached by source hash and skipped on a rerun, an edited implementation is
measured again, an unavailable device is exit 4, an interrupt keeps the completed cells and the
previous report, and the Ray engine writes the same rows.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from specproof.harness.report.compare import without_timing

import specproof.impls as impls
from specproof.errors import SpecproofInputError
from specproof.harness.cli import main
from specproof.harness.report.campaign import load_campaign, run_campaign
from specproof.harness.report.execute import ReportEngine

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "campaign.example.toml"

SMALL = """
[campaign]
name = "small"
out = "small-report"
jobs = 1

[budget]
samples = 200
large_vocab = 0
pipeline_rows = 128
whitebox_vocabs = [64]
closeness = [0.0]
sweep_vocab = 64
grid_scenarios = 1
proof_drift = false

[[matrix]]
implementations = ["canonical-ratio-race", "resample-from-target", "whitebox-ratio"]
devices = DEVICES

[[matrix]]
pipelines = ["canonical"]
sampling = [{temperature = 0.7, top_k = 3}]

[proofs]
rules = ["canonical"]
"""


def write(tmp_path: Path, text: str = SMALL, devices: str = '["cpu"]') -> Path:
    path = tmp_path / "small.toml"
    path.write_text(text.replace("DEVICES", devices))
    return path


@pytest.mark.parametrize("edit, where", [
    (("name = \"small\"", "name = \"\""), "campaign.name"),
    (("jobs = 1", "jobs = 1\ncolour = 3"), "campaign"),
    (("samples = 200", "samples = true"), "budget.samples"),
    (("samples = 200", "samples = 10"), "budget"),
    (("jobs = 1", "jobs = 1\nseed = \"x\""), "campaign.seed"),
    (("jobs = 1", "jobs = 1\nworkers = 0"), "campaign.workers"),
    (("jobs = 1", "jobs = 1\nengine = \"spark\""), "campaign.engine"),
    (("out = \"small-report\"", "out = 3"), "campaign.out"),
    (("grid_scenarios = 1", "grid_scenarios = -1"), "budget.grid_scenarios"),
    (("whitebox_vocabs = [64]", "whitebox_vocabs = [\"64\"]"), "budget.whitebox_vocabs"),
    (("\"whitebox-ratio\"]", "\"no-such-record\"]"), "matrix[0].implementations"),
    (("devices = DEVICES", "devices = [\"tpu\"]"), "matrix[0].devices"),
    (("devices = DEVICES", "devices = [\"cpu\"]\nsampling = [{temperature = 0.5}]"), "matrix[0].sampling"),
    (("pipelines = [\"canonical\"]", "pipelines = [\"canonical\"]\ndtypes = [\"float16\"]"), "matrix[1].dtypes"),
    (("{temperature = 0.7, top_k = 3}", "{temperature = 0}"), "matrix[1].sampling[0]"),
    (("{temperature = 0.7, top_k = 3}", "{temperature = 0.7, topk = 3}"), "matrix[1].sampling[0]"),
    (("rules = [\"canonical\"]", "rules = [\"no-such-rule\"]"), "proofs.rules"),
    (("[campaign]", "[campaign\n"), "FILE"),
])
def test_every_bad_key_is_a_usage_error_naming_it(tmp_path, edit, where):
    path = write(tmp_path, SMALL.replace(*edit))
    with pytest.raises(SpecproofInputError) as err:
        load_campaign(path)
    assert err.value.argument.endswith(where)


def test_a_bad_file_exits_2_and_runs_nothing(tmp_path, capsys):
    path = write(tmp_path, SMALL.replace("samples = 200", "samples = \"many\""))
    assert main(["campaign", str(path), "--quiet"]) == 2
    assert "budget" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]
    assert main(["campaign", str(tmp_path / "missing.toml"), "--quiet"]) == 2


def test_the_example_file_plans_every_cell():
    campaign = load_campaign(EXAMPLE)
    kinds = [c.kind for c in campaign.cells]
    assert kinds.count("implementation") == 4 * 2 * 2 and kinds.count("pipeline") == 2 * 3
    assert kinds.count("proof") == 3 and all(c.tasks for c in campaign.cells)
    targets = {c.name: c.options for c in campaign.cells if c.kind == "target"}  # the check's contract options
    assert targets == {"specproof.impls.runtime_layouts.vllm_v1:rejection_sample": "adapter=vllm-v1, rule=canonical",
                       "specproof.impls.verifiers.tree_rrs:tree_rrs": "siblings=iid+topk",
                       "specproof.impls.pipelines.canonical:canonical_generate":
                           "models=table, new_tokens=4, temperature=0.7, top_k=3"}
    assert len({c.key for c in campaign.cells}) == len(campaign.cells)
    assert campaign.cell_dir.name == "campaign-example.cells"


def edited_canonical(draft_probs, target_probs, draft_token_ids, generator):
    """The canonical verifier after an edit (another source: another source hash)."""
    return impls.canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def test_rerun_skips_cached_cells_and_an_edited_implementation_runs_again(tmp_path, monkeypatch, capsys):
    path = write(tmp_path)
    assert main(["campaign", str(path), "--quiet"]) == 0
    first = json.loads((tmp_path / "small-report" / "results.json").read_text())
    assert first["campaign"]["counts"] == {"ran": 5, "cached": 0, "unavailable": 0, "incomplete": 0}
    assert "pipeline/canonical/float32/generate-suite T=0.7, top_k=3" in first["rows"]
    assert {"proof/canonical", "statistical/resample-from-target/float32/default-suite"} <= set(first["rows"])
    assert len(list((tmp_path / "small-report.cells").iterdir())) == 5
    assert "## Campaign: small" in (tmp_path / "small-report" / "report.md").read_text()

    assert main(["campaign", str(path), "--quiet"]) == 0  # nothing changed: every cell from the cache
    second = json.loads((tmp_path / "small-report" / "results.json").read_text())
    assert second["campaign"]["counts"]["cached"] == 5 and second["rows"] == first["rows"]

    real_get = impls.get
    edited = dataclasses.replace(real_get("canonical-ratio-race"), fn=edited_canonical)  # a new source hash
    assert edited.source_hash != real_get("canonical-ratio-race").source_hash
    monkeypatch.setattr(impls, "get", lambda name: edited if name == "canonical-ratio-race" else real_get(name))
    assert main(["campaign", str(path), "--quiet"]) == 0
    third = json.loads((tmp_path / "small-report" / "results.json").read_text())
    statuses = {c["name"]: c["status"] for c in third["campaign"]["cells"]}
    assert statuses["canonical-ratio-race"] == "ran" and statuses["resample-from-target"] == "cached"
    assert "campaign small: 5 cells: 1 ran, 4 cached" in capsys.readouterr().out


def test_an_unavailable_device_is_listed_and_exits_4(tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    path = write(tmp_path, devices='["cpu", "cuda"]')
    assert main(["campaign", str(path), "--quiet"]) == 4
    out = capsys.readouterr().out
    assert "3 unavailable" in out and "INCOMPLETE" in out and "no CUDA device" in out
    document = json.loads((tmp_path / "small-report" / "results.json").read_text())
    assert not any("@cuda" in key for key in document["rows"])
    assert document["summary"]["incomplete"] and document["campaign"]["counts"]["unavailable"] == 3


def test_an_interrupt_keeps_the_finished_cells_and_the_previous_report(tmp_path):
    path = write(tmp_path)
    campaign = load_campaign(path)

    class Interrupting:
        def write(self, text):
            raise KeyboardInterrupt

        def flush(self):
            pass

    with pytest.raises(KeyboardInterrupt):
        run_campaign(campaign, progress=True, stream=Interrupting())
    assert len(list(campaign.cell_dir.iterdir())) == 1  # the first cell finished and is kept
    assert not campaign.out.exists()
    document = run_campaign(campaign, progress=False)
    assert document["campaign"]["counts"] == {"ran": 4, "cached": 1, "unavailable": 0, "incomplete": 0}


def test_rows_on_another_device_carry_it_in_their_key():
    from specproof.harness.report.campaign import _on_device

    row = {"kind": "statistical", "implementation": "x", "dtype": "float32", "input": "default-suite",
           "key": "statistical/x/float32/default-suite"}
    assert _on_device(row, "cpu") is row
    assert _on_device(row, "cuda")["key"] == "statistical/x/float32/default-suite @cuda"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_campaign_on_ray_has_the_local_rows(tmp_path):
    path = write(tmp_path)
    local = run_campaign(load_campaign(path), progress=False)
    (tmp_path / "small-report.cells").rename(tmp_path / "local.cells")
    remote = run_campaign(load_campaign(path, ReportEngine("ray", None, 2)), progress=False)
    assert remote["campaign"]["counts"]["ran"] == 5 and remote["provenance"]["engine"] == "ray"
    assert without_timing(remote["rows"]) == without_timing(local["rows"])


def test_the_committed_example_report_parses_and_lists_its_cells():
    from specproof.harness.report.render import render_report
    from specproof.harness.report.schema import load_results

    document = load_results(Path(__file__).resolve().parents[3] / "reports" / "campaign-example")
    cells = document["campaign"]["cells"]
    assert len(cells) == len(load_campaign(EXAMPLE).cells) and {c["status"] for c in cells} <= {"ran", "cached",
                                                                                                  "unavailable"}
    assert all(c["rows"] for c in cells if c["status"] == "ran")
    markdown, html = render_report(document)
    assert "## Campaign: example" in markdown and "Campaign: example" in html
