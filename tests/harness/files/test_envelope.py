"""The one JSON envelope: files written before it load (and migrate), new files keep their bytes, every kind
is declared once, migrations run in order and newer/other files are refused."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from specproof.harness.bench.render import render_markdown as render_bench
from specproof.harness.files.envelope import (KINDS, Envelope, FileKind, load_document, migrate_document,
                                              write_document, write_envelope)
from specproof.harness.files.kinds import (BENCH, BENCH_REFERENCE, CHECK, COMPARE, GRID_DRIFT, PROVE, REFERENCE,
                                           REPORT, WHITEBOX_DRIFT)
from specproof.harness.report.compare import compare_documents
from specproof.harness.report.schema import load_results
from specproof.errors import SpecproofInputError

BEFORE = Path(__file__).parents[2] / "support" / "fixtures" / "before_envelope"
"""reports/cpu/results.json and reports/bench/*.json as committed before the envelope (commit 3371270)."""

PROV = {"git": {"commit": "abc", "dirty": False}, "versions": {}, "device": "cpu"}


def _before(name: str, tmp_path: Path) -> tuple[Path, dict]:
    text = gzip.decompress((BEFORE / f"{name}.gz").read_bytes()).decode()
    path = tmp_path / name.split("_", 1)[1]
    path.write_text(text)
    return path, json.loads(text)


def test_results_json_written_before_the_envelope_loads_unchanged(tmp_path):
    path, original = _before("cpu_results.json", tmp_path)
    assert original["schema"] == 2 and original["kind"] == "specproof-report"
    document = load_results(path)
    assert document == original
    assert not compare_documents(document, load_results(tmp_path)).regressed("worse")  # folder form; compare reads it


@pytest.mark.parametrize("name, kind", [("bench_bench.json", BENCH), ("bench_reference.json", BENCH_REFERENCE)])
def test_bench_files_written_before_the_envelope_load_unchanged(tmp_path, name, kind):
    path, original = _before(name, tmp_path)
    assert load_document(path, kind) == original
    envelope = Envelope.from_json(original, kind)
    assert envelope.provenance == original["provenance"] and envelope.to_json() == original
    if kind is BENCH:
        assert render_bench(load_document(path, kind)).startswith("## Benchmarks\n\nMode `full`")


def test_written_files_keep_the_bytes_of_the_hand_built_envelopes(tmp_path):
    """check, reference, compare, bench-reference: the same bytes as the dicts the commands built before."""
    for kind, payload in [(CHECK, {"target": "t.py:f", "result": {"verdict": "pass"}}),
                          (REFERENCE, {"reference": {"tv": "1/2"}, "softmax": {"p": []}}),
                          (COMPARE, {"baseline": {}, "current": {}, "fail_on": "any", "regressed": False, "rows": []}),
                          (BENCH_REFERENCE, {"result": {"rows": []}})]:
        old = {"schema": 1, "kind": kind.name, "provenance": PROV, **payload}
        path = write_envelope(tmp_path / f"{kind.name}.json", kind, payload, PROV)
        assert path.read_text() == json.dumps(old, indent=2, sort_keys=True) + "\n"
        assert load_document(path, kind) == old


def test_prove_files_without_kind_load_as_prove(tmp_path):
    old = {"schema": 1, "provenance": PROV, "results": [], "theorems": [], "summary": {"rules": 0}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    loaded = load_document(tmp_path / "old.json", PROVE)
    assert loaded == {**old, "kind": "prove"}
    new = write_envelope(tmp_path / "new.json", PROVE, {k: old[k] for k in ("results", "theorems", "summary")}, PROV)
    assert json.loads(new.read_text()) == loaded


def test_every_kind_is_declared_once():
    assert {k.name for k in (REPORT, BENCH, BENCH_REFERENCE, CHECK, PROVE, REFERENCE, COMPARE, WHITEBOX_DRIFT,
                             GRID_DRIFT)} <= set(KINDS)
    with pytest.raises(ValueError, match="declared twice"):
        FileKind("check", 1, "x")
    assert REPORT.migrations  # schema 1 -> 2, registered by report.schema


_SCRATCH = FileKind("test-envelope-scratch", 3, "this test")


@_SCRATCH.migration(1)
def _one_to_two(doc):
    return {k: v for k, v in doc.items() if k != "a"} | {"schema": 2, "b": doc["a"]}


@_SCRATCH.migration(2)
def _two_to_three(doc):
    return {**doc, "schema": 3, "c": doc["b"] * 2}


def test_migrations_run_in_order():
    assert migrate_document({"schema": 1, "kind": _SCRATCH.name, "a": 2}, _SCRATCH) == \
        {"schema": 3, "kind": _SCRATCH.name, "b": 2, "c": 4}
    with pytest.raises(ValueError, match="two migrations"):
        _SCRATCH.migration(1)(_one_to_two)


@pytest.mark.parametrize("data, problem", [
    ({"schema": 2, "kind": "check"}, "newer than"),
    ({"schema": 1, "kind": "bench"}, "not a 'check'"),
    ({"schema": "1", "kind": "check"}, "no integer schema"),
    ({"schema": True, "kind": "check"}, "no integer schema"),
    ([1], "not a JSON object"),
])
def test_other_files_are_refused(data, problem):
    with pytest.raises(SpecproofInputError, match=problem):
        migrate_document(data, CHECK, "--json")


def test_non_finite_numbers_are_words_and_envelope_fields_stay_out_of_payloads(tmp_path):
    path = write_envelope(tmp_path / "c.json", CHECK, {"result": {"statistic": math.inf, "kl": (math.nan,)}}, PROV)
    assert json.loads(path.read_text())["result"] == {"statistic": "inf", "kl": ["nan"]}
    with pytest.raises(ValueError, match="envelope field"):
        write_envelope(tmp_path / "d.json", CHECK, {"schema": 3}, PROV)
    with pytest.raises(ValueError, match="not a current"):
        write_document(tmp_path / "e.json", BENCH, {"schema": 1, "kind": "check", "provenance": PROV})
    assert not (tmp_path / "e.json").exists()


def test_load_errors_name_the_argument(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SpecproofInputError, match="is not JSON") as err:
        load_document(tmp_path / "bad.json", BENCH, "--baseline")
    assert err.value.argument == "--baseline"
    with pytest.raises(SpecproofInputError, match="does not exist"):
        load_document(tmp_path / "missing.json", BENCH)
