"""``specproof report --engine ray`` (harness/report/ray_run.py): the same rows as the local engine,
a worker that dies retried to the same rows, a task lost for good incomplete (exit 4, never a pass),
an interrupt that cancels the cluster's tasks, and exit 2 without Ray.

The Ray tests (marker ``ray``) use the session's local Ray on 2 CPUs (tests/conftest.py).
"""

from __future__ import annotations

import os
import sys

import pytest
from specproof.harness.report.compare import without_timing

import specproof.impls as impls
from specproof.harness.cli import main
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.execute import ReportEngine
from specproof.harness.report.run import run_report
from specproof.harness.report.render import terminal_summary

needs_ray = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]  # without Ray: skipped, or failed in CI
RAY = ReportEngine("ray", None, 2)
RECORDS = ("whitebox-ratio", "canonical-ratio-uniforms", "canonical-ratio-race", "resample-from-target")


def small_config(**overrides):
    settings = dict(dtypes=("float32",), samples=200, large_vocab=0, whitebox_vocabs=(64,), closeness=(0.0,),
                    sweep_vocab=64, grid_scenario_limit=1, proofs=False, jobs=1, pipelines=())
    return ReportConfig.for_mode("quick", **(settings | overrides))


def test_report_engine_ray_without_ray_exits_2_and_writes_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    out = tmp_path / "report"
    code = main(["report", "--quick", "--no-proofs", "--impl", "whitebox-ratio", "--dtypes", "float32",
                 "--engine", "ray", "--quiet", "--out", str(out)])
    assert code == 2 and "pip install specproof[ray]" in capsys.readouterr().err
    assert not out.exists()


def test_report_refuses_an_address_without_the_ray_engine(tmp_path, capsys):
    code = main(["report", "--quick", "--no-proofs", "--address", "127.0.0.1:6379", "--quiet",
                 "--out", str(tmp_path / "r")])
    assert code == 2 and "--address" in capsys.readouterr().err


def test_a_lost_task_makes_the_cli_exit_4_and_is_listed(monkeypatch, tmp_path, capsys):
    """The exit code and the summary of an incomplete report (no Ray needed: the document is faked)."""
    import specproof.harness.cli.report as cli_report
    from specproof.harness.report.ray_run import lost_task
    from specproof.harness.report.plan import TaskSpec

    real = cli_report.run_report

    def with_a_lost_task(config, **kwargs):  # a small real report, then one task lost
        document = real(small_config(), records=[impls.get("whitebox-ratio")], progress=False)
        lost = lost_task(TaskSpec("statistical", "canonical-ratio-race", "float32", "default suite"), "node died")
        document["incomplete"] = lost.incomplete
        document["summary"]["incomplete"] = ["statistical canonical-ratio-race float32 default suite"]
        return document

    monkeypatch.setattr(cli_report, "run_report", with_a_lost_task)
    code = main(["report", "--quick", "--no-proofs", "--impl", "whitebox-ratio", "--dtypes", "float32",
                 "--jobs", "1", "--quiet", "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 4 and "INCOMPLETE (1 not measured" in out and "node died" in out
    assert "every implementation expected exact passed" not in out
    assert "Incomplete: not measured" in (tmp_path / "r" / "report.md").read_text()


class TestOnRay:
    pytestmark = needs_ray

    def test_same_rows_as_the_local_engine_apart_from_timing(self):
        config = small_config()
        records = [impls.get(n) for n in RECORDS]
        local = run_report(config, records=records, progress=False)
        remote = run_report(config, records=records, progress=False, engine=RAY)
        assert remote["provenance"]["engine"] == "ray" and local["provenance"]["engine"] == "local"
        assert sorted(remote["rows"]) == sorted(local["rows"]) and len(local["rows"]) >= 6
        assert without_timing(remote["rows"]) == without_timing(local["rows"])
        assert remote["zoo"] == local["zoo"] and remote["incomplete"] == [] == local["incomplete"]

    def test_a_worker_that_dies_once_is_retried_to_the_same_rows(self):
        import report_ray_records

        config = small_config()
        clean = run_report(config, records=[impls.get("canonical-ratio-race")], progress=False)
        retried = run_report(config, records=[report_ray_records.record("dies-once")], progress=False, engine=RAY)
        assert os.path.exists(os.environ["SPECPROOF_RAY_REPORT_MARKER"])  # a worker did end itself
        (key,) = retried["rows"]
        (clean_key,) = clean["rows"]
        row, clean_row = without_timing(retried["rows"][key]), without_timing(clean["rows"][clean_key])
        assert row["passed"] and row["verdict"] == clean_row["verdict"]
        assert row["figures"] == clean_row["figures"] and retried["incomplete"] == []

    def test_a_task_lost_for_good_is_incomplete_never_a_pass(self):
        import report_ray_records

        document = run_report(small_config(), records=[report_ray_records.record("dies-always")], progress=False,
                              engine=RAY)
        assert document["rows"] == {} and document["summary"]["incomplete"]
        (entry,) = document["incomplete"]
        assert entry["implementation"] == "dies-always" and "failed for good" in entry["reason"]
        assert any(s["reason"].startswith("incomplete:") for s in document["skipped"])
        text = terminal_summary(document)
        assert "INCOMPLETE" in text and "every implementation expected exact passed" not in text

    def test_an_interrupt_cancels_every_task_on_the_cluster(self, monkeypatch):
        import ray

        cancelled = []

        def cancel(ref, force=False):  # recorded, not sent: a real cancel racing a task's completion can
            cancelled.append(force)    # abort the driver in Ray 2.60 (harness/check/scale/ray_engine.py, discard)

        class Interrupting:
            def write(self, text):
                raise KeyboardInterrupt

            def flush(self):
                pass

        monkeypatch.setattr(ray, "cancel", cancel)
        with pytest.raises(KeyboardInterrupt):
            run_report(small_config(), records=[impls.get(n) for n in RECORDS], progress=True,
                       stream=Interrupting(), engine=RAY)
        assert cancelled and all(cancelled)  # every task still pending when the first one finished, force
        assert ray.is_initialized()  # a joined Ray is left running for its owner

    def test_cli_report_on_ray_writes_the_report(self, tmp_path, capsys):
        out = tmp_path / "report"
        code = main(["report", "--quick", "--no-proofs", "--impl", "whitebox-ratio", "canonical-ratio-race",
                     "--dtypes", "float32", "--samples", "200", "--engine", "ray", "--quiet", "--out", str(out)])
        assert code == 0, capsys.readouterr()
        assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md", "results.json"]


def test_an_interrupt_on_the_ray_engine_keeps_the_previous_report(monkeypatch, tmp_path, capsys):
    """Ctrl-C while the Ray tasks run (the executor raises it, as ray.wait does): exit 130, the previous
    report untouched (the cancellation on the cluster: TestOnRay.test_an_interrupt_cancels_...)."""
    import specproof.harness.report.ray_run as ray_run
    from specproof.harness.check.scale import ray_start

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ray_start, "require_ray", lambda: None)  # no Ray needed to reach the executor
    monkeypatch.setattr(ray_run, "execute_on_ray", interrupted)
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("previous\n")
    code = main(["report", "--quick", "--no-proofs", "--impl", "whitebox-ratio", "--dtypes", "float32",
                 "--engine", "ray", "--quiet", "--out", str(out)])
    assert code == 130 and "nothing was written" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["report.md"] and (out / "report.md").read_text() == "previous\n"
