"""``specproof check``: exit codes 0 / 1 / 2, JSON output, the pytest plugin's fixtures."""

import json
from pathlib import Path

import pytest

from specproof.harness.cli import main

TARGETS = Path(__file__).with_name("cli_targets.py")

pytest_plugins = ["pytester"]


def test_exact_target_by_file_passes(tmp_path, capsys):
    out = tmp_path / "check.json"
    code = main(["check", f"{TARGETS}:exact", "--samples", "2000", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["schema"] == 1 and data["result"]["verdict"] == "pass"
    assert data["provenance"]["dtypes"] == ["float32"]


def test_module_target_and_lossy_target_exit_1(capsys):
    code = main(["check", "specproof.impls.mutants:resample_from_target", "--samples", "2000", "--quiet"])
    assert code == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.slow
def test_default_settings_exact_target_passes_in_float64():
    assert main(["check", "specproof.impls:canonical_product_invcdf", "--dtype", "float64", "--quiet"]) == 0


def test_transformers_adapter_passes_in_float32():
    pytest.importorskip("transformers")  # the [transformers] extra is installed by .ci/run
    assert main(["check", "specproof.impls:transformers_speculative_sampling", "--samples", "1500",
                 "--quiet"]) == 0


@pytest.mark.parametrize("target, fragment", [
    ("nonsense", "is not MODULE:NAME"),
    ("no.such.module:verify", "cannot import module"),
    (f"{TARGETS}:missing", "defines no 'missing'"),
    (f"{TARGETS.with_name('absent.py')}:exact", "not an existing .py file"),
    (f"{TARGETS}:NOT_CALLABLE", "not a function"),
    (f"{TARGETS}:two_arguments", "cannot take the batched"),
    (f"{TARGETS}:raises", "kernel exploded"),
    (f"{TARGETS}:wrong_shape", "shape"),
    (f"{TARGETS}:holes", "holes"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, capsys, target, fragment):
    out = tmp_path / "never.json"
    assert main(["check", target, "--samples", "200", "--json", str(out), "--quiet"]) == 2
    assert fragment in capsys.readouterr().err
    assert not out.exists()


def test_hanging_target_exit_2(capsys):
    assert main(["check", f"{TARGETS}:hangs", "--samples", "200", "--timeout", "0.5", "--quiet"]) == 2
    assert "did not return within" in capsys.readouterr().err


def test_bad_flags_exit_2(capsys):
    assert main(["check", f"{TARGETS}:exact", "--samples", "5"]) == 2
    assert main(["check", f"{TARGETS}:exact", "--dtype", "int4"]) == 2


def test_pytest_plugin_fixtures(pytester):
    pytester.makepyfile(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("targets", r"{TARGETS}")
        targets = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(targets)

        def test_exact(specproof_assert_lossless):
            specproof_assert_lossless(targets.exact)

        def test_lossy(specproof_assert_lossless):
            specproof_assert_lossless(targets.lossy, fail_fast=True)

        def test_result(specproof_check):
            assert specproof_check(targets.exact).samples == 1500
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--specproof-samples", "1500", "--specproof-seed", "3")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*Mismatched events:*"])
