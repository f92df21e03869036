"""``--engine ray`` (harness/check/scale/ray_engine.py, harness/cli/check_engine.py): sharded rows, merged
counts, the same verdict, reproducible rows, worker death retried, a shard lost for good INCONCLUSIVE.

The Ray tests (marker ``ray``) share one local Ray on 2 CPUs (the session fixture ``local_ray`` of
tests/conftest.py) and are skipped when Ray is not importable; the pure ones (the shard grid, the merge) always run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from specproof.errors import SpecproofInputError
from specproof.harness.check.stats.engine import RowBatch
from specproof.harness.check.scale.ray_engine import merge_batches, shard_plan
from specproof.harness.check.scale.ray_start import RAY_INSTALL, require_ray

TARGETS = str(Path(__file__).with_name("ray_targets.py"))
CANONICAL = "specproof.impls:canonical_ratio_race"

needs_ray = [pytest.mark.ray]  # with the fixture local_ray (tests/conftest.py): without Ray, skipped or failed in CI


@settings(deadline=None, max_examples=200)
@given(st.integers(0, 10_000), st.integers(1, 20_000), st.integers(1, 3_000))
def test_shard_plan_tiles_the_rows_on_a_fixed_grid(offset, rows, grid):
    pieces = shard_plan(offset, rows, grid)
    assert pieces[0][0] == offset and sum(n for _, n in pieces) == rows
    for (a, n), (b, _) in zip(pieces, pieces[1:]):
        assert a + n == b and b % grid == 0  # every cut is a grid point
    assert all(0 < n <= grid and a // grid == (a + n - 1) // grid for a, n in pieces)  # one cell each


@settings(deadline=None, max_examples=50)
@given(st.lists(st.integers(1, 500), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_merge_is_exact_and_order_free(sizes, rnd):
    gen = np.random.default_rng(len(sizes))
    batches = [RowBatch(n, [np.bincount(gen.integers(0, 7, n), minlength=7).astype(float),
                            np.bincount(gen.integers(0, 3, n), minlength=3).astype(float)],
                        {"zero": int(gen.integers(0, 2))}, {"zero": int(gen.integers(0, 4))}) for n in sizes]
    merged = merge_batches(batches)
    shuffled = list(batches)
    rnd.shuffle(shuffled)
    again = merge_batches(shuffled)
    assert merged.rows == again.rows == sum(sizes)
    assert all(np.array_equal(x, y) for x, y in zip(merged.counts, again.counts))
    assert merged.impossible == again.impossible and merged.first_position == again.first_position
    assert merged.counts[0].sum() == sum(sizes)


def test_no_ray_exits_2_with_the_install_command(monkeypatch, capsys):
    from specproof.harness.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(SpecproofInputError, match="pip install specproof\\[ray\\]"):
        require_ray()
    assert main(["check", CANONICAL, "--engine", "ray", "--samples", "64", "--quiet"]) == 2
    assert RAY_INSTALL in capsys.readouterr().err


def test_engine_flags_are_refused_where_they_cannot_apply(capsys):
    from specproof.harness.cli import main

    assert main(["check", CANONICAL, "--address", "127.0.0.1:6379", "--samples", "64", "--quiet"]) == 2
    assert "--address" in capsys.readouterr().err
    assert main(["check", CANONICAL, "--engine", "ray", "--workers", "0", "--quiet"]) == 2
    assert "--workers" in capsys.readouterr().err


def _check(target, *, max_retries=3, verify=None, **kw):
    """A 3-scenario check with rows drawn by Ray tasks running ``target`` (the driver's own calls -
    the reproducibility batch - use the canonical verifier)."""
    import specproof.impls as impls
    from specproof.harness.check.scale.ray_engine import RayEngine
    from specproof.harness.check.driver import check
    from specproof.harness.check.contracts.batched.scenarios import default_suite

    options = dict(scenarios=default_suite()[1:4], samples=2048, inject=False, max_detectable_tv=0.2) | kw
    with RayEngine(workers=2, verify=target, max_retries=max_retries) as engine:
        return check(verify or impls.canonical_ratio_race, engine=engine, **options)


def _counts(result):
    return [(s.name, s.rows, s.detectable_tv, s.rejected_events, s.bug_class_evidence) for s in result.scenarios]


@pytest.mark.usefixtures("local_ray")
class TestOnRay:
    pytestmark = needs_ray

    def test_same_verdict_and_rows_as_local_and_reproducible(self):
        import specproof.impls as impls
        from specproof.harness.check.driver import check
        from specproof.harness.check.contracts.batched.scenarios import default_suite

        local = check(impls.canonical_ratio_race, scenarios=default_suite()[1:4], samples=2048,
                               inject=False, max_detectable_tv=0.2)
        first, second = _check(CANONICAL), _check(CANONICAL)
        assert local.verdict.value == first.verdict.value == "pass" and local.rows == first.rows == 3 * 2048
        assert _counts(first) == _counts(second)  # same seed: the same rows on the workers
        assert first.verifier_seconds > 0  # the workers' verifier time is counted

    @pytest.mark.parametrize("contract, target, mutant, suite", [
        ("tree", "specproof.impls.verifiers.tree_rrs:tree_rrs",
         "specproof.impls.verifiers.tree_mutants:tree_keep_tried", "tree"),
        ("generate", "specproof.impls.pipelines.canonical:canonical_generate",
         "specproof.impls.pipelines.mutants:default_target_generate", "generate"),
    ])
    def test_every_contract_runs_on_ray_with_the_local_rows_and_verdicts(self, contract, target, mutant, suite):
        from specproof.loading import load_object
        from specproof.harness.check.driver import check
        from specproof.harness.check.contracts.generate.scenarios import pipeline_suite
        from specproof.harness.check.scale.ray_engine import RayEngine
        from specproof.harness.check.contracts.tree.scenarios import default_tree_suite

        scenarios = (default_tree_suite()[:2] if suite == "tree" else
                     [s for s in pipeline_suite() if s.name == "top-k2-offsupport"])
        options = dict(scenarios=scenarios, samples=1024, inject=False, max_detectable_tv=0.5)
        local = check(load_object(target, "TARGET"), contract, **options)
        with RayEngine(workers=2, verify=target) as engine:
            sharded = check(load_object(target, "TARGET"), contract, engine=engine, **options)
        assert sharded.contract == contract and sharded.rows == local.rows == 1024 * len(scenarios)
        assert sharded.verdict.value == local.verdict.value != "fail" and not sharded.findings
        with RayEngine(workers=2, verify=mutant) as engine:
            flagged = check(load_object(mutant, "TARGET"), contract, engine=engine, fail_fast=True,
                            **(options | {"samples": 8192}))
        assert flagged.verdict.value == "fail" and flagged.findings

    def test_a_lossy_verifier_fails_on_ray(self):
        import specproof.impls.zoo as zoo

        result = _check("specproof.impls.zoo:resample_from_target", verify=zoo.resample_from_target,
                        samples=4096, max_detectable_tv=0.1)
        assert result.verdict.value == "fail" and result.exit_code == 1 and result.findings

    def test_a_worker_that_dies_once_is_retried_to_the_same_verdict(self):
        clean = _check(CANONICAL)
        retried = _check(TARGETS + ":dies_once")
        assert os.path.exists(os.environ["SPECPROOF_RAY_MARKER"])  # a worker did end itself
        assert retried.verdict == clean.verdict and _counts(retried) == _counts(clean)

    def test_a_shard_lost_for_good_is_inconclusive_never_pass(self):
        result = _check(TARGETS + ":dies_always", max_retries=1)
        assert result.verdict.value == "inconclusive" and result.exit_code == 4 and not result.passed
        assert "failed for good" in result.inconclusive and "WorkerCrashedError" in result.inconclusive
        assert result.summary().startswith("INCONCLUSIVE") and result.as_json()["inconclusive"]

    def test_the_verifiers_own_error_is_exit_2_as_locally(self):
        from specproof.harness.check.calls import VerifierError

        with pytest.raises(VerifierError, match="RuntimeError: boom"):
            _check(TARGETS + ":raises")

    def test_an_adapter_target_is_wrapped_on_the_workers(self):
        from specproof.impls.adapters import get_adapter
        from specproof.impls.runtime_layouts import vllm_v1

        target = "specproof.impls.runtime_layouts.vllm_v1:rejection_sample"
        from specproof.harness.check.scale.ray_engine import RayEngine
        from specproof.harness.check.driver import check
        from specproof.harness.check.contracts.batched.scenarios import default_suite

        with RayEngine(workers=2, verify=target, adapter="vllm-v1") as engine:
            result = check(get_adapter("vllm-v1").wrap(vllm_v1.rejection_sample), engine=engine,
                                    scenarios=default_suite()[1:3], samples=1024, inject=False, max_detectable_tv=0.3)
        assert result.verdict.value == "pass" and result.rows == 2048

    def test_an_interrupt_cancels_the_pieces_in_flight(self, monkeypatch):
        """Ctrl-C while the driver waits: every submitted task is cancelled, then the interrupt propagates."""
        import ray

        from specproof.harness.check.scale.ray_engine import RayEngine

        cancelled = []
        with RayEngine(workers=2, verify=CANONICAL) as engine:
            def interrupted(*args, **kwargs):
                raise KeyboardInterrupt

            monkeypatch.setattr(ray, "get", interrupted)
            monkeypatch.setattr(ray, "cancel", lambda ref, force=False: cancelled.append((ref, force)))
            with pytest.raises(KeyboardInterrupt):
                engine.run_pieces(ray.put(None), [(0, 1024), (1024, 1024), (2048, 5)], "s")
        assert len(cancelled) == 3 and all(force for _, force in cancelled)  # Ctrl-C ends running pieces now

    def test_cli_engine_ray_joins_the_running_ray(self, capsys):
        from specproof.harness.cli import main

        code = main(["check", CANONICAL, "--engine", "ray", "--samples", "256", "--quiet", "--no-inject",
                     "--max-detectable-tv", "0.5"])
        out = capsys.readouterr().out
        from specproof.harness.check.stats.statistics import rows_to_see_rate

        rows = 13 * 256 + 2 * rows_to_see_rate(0.5)  # 13 statistical scenarios, and each probe's 7 rows
        assert code == 0 and out.startswith("PASS") and f"{rows} rows" in out


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.usefixtures("ray_module")
def test_cli_starts_its_own_ray_and_the_counts_do_not_depend_on_workers(tmp_path):
    """The command starts a local Ray (1 or 2 CPUs), draws on it and stops it; --workers 1 and 2 give
    the same counts (the rows are a function of the seed and the row grid only)."""
    import json

    evidence = []
    for workers in (1, 2):
        out = subprocess.run([str(Path(sys.executable).with_name("specproof")), "check", CANONICAL,
                              "--engine", "ray", "--workers", str(workers), "--samples", "1500", "--quiet",
                              "--no-inject", "--max-detectable-tv", "0.5", "--json", str(tmp_path / f"{workers}.json")],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.startswith("PASS")
        result = json.loads((tmp_path / f"{workers}.json").read_text())["result"]
        evidence.append([(s["name"], s["rows"], s["detectable_tv"], s["bug_class_evidence"]) for s in result["scenarios"]])
    assert evidence[0] == evidence[1]
