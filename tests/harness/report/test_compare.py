"""``specproof compare``: marks on synthetic result files, on real runs of the same code and of a degraded
implementation, and the CLI's exit codes."""

import copy
import json

import pytest
import torch

import specproof.impls as impls
from specproof.harness.cli import main
from specproof.harness.files.provenance import write_json
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.run import run_report
from specproof.harness.report.compare import compare_documents

HASHES = {"implementation": "i1", "rule": "r1", "reference": "f1", "input": "n1"}


def row(key, *, passed=True, expected_exact=True, verdict=None, tv=1e-8, threshold=1e-6, hashes=None):
    kind, implementation, dtype, input_name = key.split("/")
    return {"key": key, "kind": kind, "implementation": implementation, "rule": "canonical", "dtype": dtype,
            "input": input_name, "expected_exact": expected_exact, "passed": passed,
            "as_expected": passed if expected_exact else not passed,
            "verdict": verdict or ("within-tolerance" if passed else "beyond-tolerance"),
            "hashes": dict(hashes or HASHES),
            "figures": {"tv": {"value": tv, "exact": None, "threshold": threshold,
                               "threshold_source": "derived TV bound", "dtype": dtype},
                        "max_ulp_error": {"value": 3.0, "exact": None, "threshold": None,
                                          "threshold_source": "informational", "dtype": dtype}},
            "detail": {}}


def document(*rows):
    return {"schema": 2, "kind": "specproof-report", "config": {"mode": "default"},
            "provenance": {"device": "cpu", "device_name": "test CPU", "git": {"commit": "abc", "dirty": False},
                           "versions": {"torch": "2.13"}, "date": "today"},
            "rows": {r["key"]: r for r in rows}, "zoo": [], "skipped": []}


KEY = "whitebox/whitebox-ratio/float32/dirichlet-V64"


def marks(baseline_rows, current_rows):
    result = compare_documents(document(*baseline_rows), document(*current_rows))
    return {r.key: r.mark for r in result.rows}


def test_same_rows_unchanged_and_noise_within_the_threshold_is_not_marked():
    assert marks([row(KEY)], [row(KEY)]) == {KEY: " "}
    # a drift change well inside the derived bound (another summation order) is not "worse"
    assert marks([row(KEY, tv=1e-8)], [row(KEY, tv=9e-7)]) == {KEY: " "}
    # informational figures never mark
    current = row(KEY)
    current["figures"]["max_ulp_error"]["value"] = 3000.0
    assert marks([row(KEY)], [current]) == {KEY: " "}


def test_new_failure_and_fixed():
    assert marks([row(KEY)], [row(KEY, passed=False, tv=1e-3)]) == {KEY: "!"}
    assert marks([row(KEY, passed=False, tv=1e-3)], [row(KEY)]) == {KEY: "*"}
    # verdicts are absolute: a changed implementation hash does not hide a new failure
    changed = dict(HASHES, implementation="i2")
    assert marks([row(KEY)], [row(KEY, passed=False, hashes=changed)]) == {KEY: "!"}


def test_worse_and_better_beyond_the_threshold():
    failing = dict(passed=False, threshold=1e-6)
    assert marks([row(KEY, tv=1e-5, **failing)], [row(KEY, tv=3e-5, **failing)]) == {KEY: "+"}
    assert marks([row(KEY, tv=3e-5, **failing)], [row(KEY, tv=1e-5, **failing)]) == {KEY: "-"}
    # the larger of the two thresholds applies
    assert marks([row(KEY, tv=1e-5, passed=False, threshold=1e-6)],
                 [row(KEY, tv=2e-5, passed=False, threshold=2e-5)]) == {KEY: " "}


def test_not_comparable_when_a_hash_differs_or_a_row_is_missing():
    for name in HASHES:
        changed = dict(HASHES, **{name: "other"})
        result = compare_documents(document(row(KEY)), document(row(KEY, tv=5e-7, hashes=changed)))
        assert result.rows[0].mark == "x" and name in result.rows[0].reason
    other = "whitebox/whitebox-log/float32/dirichlet-V64"
    assert marks([row(KEY)], [row(other)]) == {KEY: "x", other: "x"}
    assert marks([row(KEY)], [row(KEY), row(other, passed=False)]) == {KEY: " ", other: "!"}


def test_zoo_rows_mark_detection_lost_not_bias():
    zoo = "statistical/resample-from-target/float32/default-suite"
    caught = row(zoo, passed=False, expected_exact=False, verdict="fail", tv=0.2, threshold=0.05)
    missed = row(zoo, passed=True, expected_exact=False, verdict="pass", tv=0.0, threshold=0.05)
    assert marks([caught], [missed]) == {zoo: "!"}
    assert marks([missed], [caught]) == {zoo: "*"}
    more_bias = copy.deepcopy(caught)
    more_bias["figures"]["tv"]["value"] = 0.6
    assert marks([caught], [more_bias]) == {zoo: " "}


def test_unknown_hash_of_a_migrated_file_is_comparable():
    unknown = dict(HASHES, rule=None)
    result = compare_documents(document(row(KEY, hashes=unknown)), document(row(KEY)))
    assert result.rows[0].mark == " " and "rule hash unknown" in result.rows[0].reason


# -- the CLI -----------------------------------------------------------------------------------------

def write(path, doc):
    write_json(path, doc)
    return str(path)


def test_cli_exit_codes_and_json(tmp_path, capsys):
    base = write(tmp_path / "base.json", document(row(KEY)))
    same = write(tmp_path / "same.json", document(row(KEY)))
    worse = write(tmp_path / "worse.json", document(row(KEY, passed=False, tv=1e-3)))
    assert main(["compare", base, same]) == 0
    assert "no regression" in capsys.readouterr().out
    out = tmp_path / "cmp.json"
    assert main(["compare", base, worse, "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "!  within-tolerance" in text and "REGRESSION" in text
    data = json.loads(out.read_text())
    assert data["regressed"] and data["counts"]["!"] == 1 and data["rows"][0]["mark"] == "!"
    assert main(["compare", worse, base]) == 0  # fixed
    assert "*" in capsys.readouterr().out


def test_cli_migrates_a_schema_1_baseline(tmp_path, capsys):
    old = {"schema": 1, "kind": "specproof-report", "provenance": {"device": "cpu"}, "config": {"mode": "default"},
           "rows": [{k: v for k, v in row(KEY).items() if k not in ("key", "hashes", "as_expected")}
                    | {"source_hash": HASHES["implementation"]}]}
    base = write(tmp_path / "old.json", old)
    cur = write(tmp_path / "cur.json", document(row(KEY)))
    assert main(["compare", base, cur]) == 0
    assert "migrated from an older schema" in capsys.readouterr().out
    assert main(["compare", base, write(tmp_path / "bad.json", document(row(KEY, passed=False)))]) == 1


def test_cli_fail_on_choice(tmp_path):
    failing = dict(passed=False, threshold=1e-6)
    base = write(tmp_path / "base.json", document(row(KEY, tv=1e-5, **failing)))
    cur = write(tmp_path / "cur.json", document(row(KEY, tv=1e-4, **failing)))
    assert main(["compare", base, cur]) == 1  # default --fail-on worse counts "+"
    assert main(["compare", base, cur, "--fail-on", "new-failure"]) == 0


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    base = write(tmp_path / "base.json", document(row(KEY)))
    newer = write(tmp_path / "newer.json", {**document(row(KEY)), "schema": 99})
    (tmp_path / "garbage.json").write_text("[1, 2")
    for argv, fragment in (([base, str(tmp_path / "missing.json")], "does not exist"),
                           ([base, newer], "newer than"),
                           ([str(tmp_path / "garbage.json"), base], "is not JSON"),
                           ([base, base, "--json", str(tmp_path)], "is a folder")):
        assert main(["compare", *argv]) == 2
        assert fragment in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["compare", base])
    assert info.value.code == 2


# -- real runs: the same code twice, then a degraded implementation -------------------------------

DEGRADE = {"bits": 24}


def rounded_step(p, q):
    """The ratio-form white-box step with its output fields rounded to DEGRADE["bits"] significand bits:
    the same source under a different setting, as a new torch or device would run the same code."""
    law = impls.step_ratio(p, q)
    bits = DEGRADE["bits"]

    def chop(t):
        mantissa, exponent = torch.frexp(t.double())
        return torch.ldexp(torch.round(mantissa * 2.0**bits) / 2.0**bits, exponent).to(t.dtype)

    return impls.WhiteboxStepLaw(law.target, chop(law.accept), chop(law.accepted_mass), law.rejection,
                         chop(law.residual), chop(law.output))


RECORD = impls.Implementation(name="rounded-step", fn=rounded_step, contract="whitebox", rule="canonical",
                              expected_exact=True, description="ratio step, output rounded to a set precision")
CONFIG = ReportConfig.for_mode("quick", dtypes=("float32",), whitebox_vocabs=(64,), closeness=(0.5,),
                               sweep_vocab=64, proofs=False, jobs=1, pipelines=())


def run_with(bits, tmp_path, name):
    DEGRADE["bits"] = bits
    try:
        doc = run_report(CONFIG, records=[RECORD], progress=False)
    finally:
        DEGRADE["bits"] = 24
    return write(tmp_path / f"{name}.json", doc)


def test_real_runs_same_code_no_regression_degraded_regression(tmp_path, capsys):
    first, second = run_with(24, tmp_path, "first"), run_with(24, tmp_path, "second")
    assert main(["compare", first, second]) == 0
    assert "nothing changed" in capsys.readouterr().out
    degraded = run_with(10, tmp_path, "degraded")
    assert main(["compare", first, degraded]) == 1
    text = capsys.readouterr().out
    assert "!  within-tolerance" in text and "beyond-tolerance" in text
    # already beyond tolerance at 12 bits; at 6 bits the TV grows by more than its derived bound: "+"
    mild, severe = run_with(12, tmp_path, "mild"), run_with(6, tmp_path, "severe")
    assert main(["compare", mild, severe, "--json", str(tmp_path / "c.json")]) == 1
    data = json.loads((tmp_path / "c.json").read_text())
    assert "+" in {r["mark"] for r in data["rows"]}
    assert main(["compare", mild, severe, "--fail-on", "new-failure"]) == 0


def test_rows_differing_beyond_timing_ignores_timing_only():
    from specproof.harness.report.compare import rows_differing_beyond_timing, without_timing

    row = {"key": "k", "seconds": 1.0, "detail": {"verifier_seconds": 2.0, "rows": 10, "runs": [{"wall": 3}]}}
    assert without_timing(row) == {"key": "k", "detail": {"rows": 10, "runs": [{}]}}
    slower = {"key": "k", "seconds": 9.0, "detail": {"verifier_seconds": 7.0, "rows": 10, "runs": [{"wall": 1}]}}
    other = {"key": "k", "seconds": 1.0, "detail": {"verifier_seconds": 2.0, "rows": 11, "runs": [{"wall": 3}]}}
    assert rows_differing_beyond_timing({"rows": {"k": row}}, {"rows": {"k": slower}}) == []
    assert rows_differing_beyond_timing({"rows": {"k": row}}, {"rows": {"k": other}}) == ["k"]
    assert rows_differing_beyond_timing({"rows": {"k": row}}, {"rows": {"k": row, "j": row}}) == ["j"]
