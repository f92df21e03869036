"""Comparisons that see every change: non-finite and impossible figures, schema-1 files migrated from the
rows they came from, and files of different modes (table-driven; issues 39, 42, 45)."""

import copy
import json
import math
from pathlib import Path

import pytest
from test_compare import KEY, document, marks, row, write

from specproof.harness.cli import main
from specproof.harness.report.compare import compare_documents
from specproof.harness.report.schema import expected_outcome, migrate, validate
from specproof.errors import SpecproofInputError

SAMPLE = Path(__file__).resolve().parents[3] / "reports" / "cpu" / "results.json"
ZOO_KEY = "statistical/resample-from-target/float32/default-suite"


def with_figure(key, name, **fields):
    changed = row(key) if not key.startswith("statistical") else row(key, passed=False, expected_exact=False)
    changed["figures"][name].update(fields)
    return changed


# -- non-finite values: a marked change ---------------------------------------------------------------------

@pytest.mark.parametrize("key, name, value, mark", [
    (KEY, "tv", math.nan, "+"), (KEY, "tv", "nan", "+"), (KEY, "tv", math.inf, "+"), (KEY, "tv", "-inf", "+"),
    (KEY, "tv", None, "x"), (KEY, "max_ulp_error", "nan", "x"), (KEY, "max_ulp_error", math.inf, "x"),
    (ZOO_KEY, "tv", "nan", "x"), (ZOO_KEY, "max_ulp_error", "inf", "x"),
])
def test_a_figure_that_becomes_non_finite_or_missing_is_marked(key, name, value, mark):
    base = row(key) if key == KEY else row(key, passed=False, expected_exact=False)
    assert marks([base], [with_figure(key, name, value=value)]) == {key: mark}
    back = {"+": "-", "x": "x"}[mark]  # and becoming finite again is seen too
    assert marks([with_figure(key, name, value=value)], [base]) == {key: back}


def test_the_same_non_finite_value_in_both_files_is_unchanged():
    nan = with_figure(KEY, "max_ulp_error", value="nan")
    assert marks([nan], [copy.deepcopy(nan)]) == {KEY: " "}


# -- impossible thresholds and exact values: a validation error naming the row and the field -------------------

@pytest.mark.parametrize("fields, fragment", [
    ({"threshold": math.nan}, "threshold nan"), ({"threshold": math.inf}, "threshold inf"),
    ({"threshold": -1e-6}, "threshold -1e-06"),
    ({"exact": "1/0", "value": 1e-8}, "exact value '1/0'"), ({"exact": "1/00"}, "exact value '1/00'"),
    ({"exact": "abc"}, "exact value 'abc'"), ({"exact": 0.5}, "exact value 0.5"),
    ({"exact": "1/3", "value": 0.5}, "value 0.5 that is not the float of its exact value 1/3"),
    ({"exact": "1/3", "value": "nan"}, "that is not the float of its exact value 1/3"),
])
def test_impossible_figures_are_refused_naming_row_and_field(fields, fragment):
    doc = document(with_figure(KEY, "tv", **fields))
    with pytest.raises(SpecproofInputError, match="tv") as error:
        validate(doc, "CURRENT")
    assert KEY in str(error.value) and fragment in str(error.value) and error.value.argument == "CURRENT"


def test_a_consistent_exact_value_is_accepted():
    validate(document(with_figure(KEY, "tv", exact="1/4", value=0.25)))


@pytest.mark.parametrize("text", ['"tv": {"value": NaN', '"exact": "1/0"', '"threshold": NaN'])
def test_the_cli_exits_2_or_marks_what_a_hand_edit_did(tmp_path, capsys, text):
    base = write(tmp_path / "base.json", document(row(KEY, tv=0.25, threshold=1e-6)))
    doc = document(with_figure(KEY, "tv", exact="1/4", value=0.25))
    edited = json.dumps(doc).replace('"tv": {"value": 0.25', text if "value" in text else '"tv": {"value": 0.25')
    edited = edited.replace('"exact": "1/4"', text if "exact" in text else '"exact": "1/4"')
    edited = edited.replace('"threshold": 1e-06', text if "threshold" in text else '"threshold": 1e-06', 1)
    current = tmp_path / "current.json"
    current.write_text(edited)
    code = main(["compare", base, str(current)])
    out = capsys.readouterr()
    assert code == 2 and "CURRENT" in out.err and KEY in out.err and "'tv'" in out.err  # NaN beside 1/4: impossible
    assert "nothing changed" not in out.out


# -- schema 1: migrated rows compare equal to the rows they came from ----------------------------------------------

def as_schema_1(document_2):
    """The documented schema 1 of a schema-2 document: rows a list, one source_hash, no key, no as_expected."""
    rows = []
    for r in document_2["rows"].values():
        old = {k: v for k, v in r.items() if k not in ("key", "as_expected", "hashes")}
        old["source_hash"] = r["hashes"]["implementation"]
        rows.append(old)
    return {**document_2, "schema": 1, "rows": rows}


def test_the_committed_sample_migrated_from_schema_1_compares_equal_to_itself(tmp_path, capsys):
    sample = json.loads(SAMPLE.read_text())
    migrated = migrate(as_schema_1(sample))
    for key, original in sample["rows"].items():
        expected = {**original, "hashes": {**dict.fromkeys(original["hashes"]),
                                           "implementation": original["hashes"]["implementation"]}}
        assert migrated["rows"][key] == expected, key
    assert {r.mark for r in compare_documents(sample, migrated).rows} == {" "}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(as_schema_1(sample)))
    assert main(["compare", str(old), str(SAMPLE)]) == 0
    assert "nothing changed" in capsys.readouterr().out


@pytest.mark.parametrize("fields, as_expected", [
    ({"kind": "statistical", "expected_exact": True, "passed": True}, True),
    ({"kind": "statistical", "expected_exact": True, "passed": False}, False),
    ({"kind": "statistical", "expected_exact": False, "passed": False}, True),
    ({"kind": "statistical", "expected_exact": False, "passed": True}, False),
    ({"kind": "statistical", "expected_exact": False, "passed": True, "detail": {"known_defect": "d"}}, True),
    ({"kind": "statistical", "expected_exact": False, "passed": False, "detail": {"known_defect": "d"}}, True),
    ({"kind": "proof", "expected_exact": False, "passed": False, "ok": True}, True),
    ({"kind": "proof", "expected_exact": True, "passed": False, "ok": False}, False),
])
def test_expected_outcome_is_the_one_rule(fields, as_expected):
    assert expected_outcome(fields) is as_expected


def test_a_flipped_as_expected_is_refused():
    flipped = row(KEY)
    flipped["as_expected"] = False
    with pytest.raises(SpecproofInputError, match="as_expected False but"):
        validate(document(flipped))


# -- modes: stated, never a regression on an unchanged verdict ---------------------------------------------------

def mode(doc, name, samples):
    doc["config"] = {"mode": name, "samples": samples}
    return doc


@pytest.mark.parametrize("baseline, current, same_mode_mark", [
    (row(KEY, tv=1e-8), row(KEY, tv=1e-3), "+"),  # figure beyond its threshold, verdict unchanged
    (row(ZOO_KEY, passed=False, expected_exact=False), row(ZOO_KEY, passed=True, expected_exact=False,
                                                           verdict="underpowered"), "!"),  # detection lost
])
def test_a_mode_mismatch_is_stated_and_unchanged_verdicts_are_not_regressions(baseline, current, same_mode_mark):
    same = compare_documents(mode(document(baseline), "default", 16000), mode(document(current), "default", 16000))
    assert [r.mark for r in same.rows] == [same_mode_mark]
    mixed = compare_documents(mode(document(baseline), "default", 16000), mode(document(current), "quick", 1000))
    assert [r.mark for r in mixed.rows] == ["x"] and "differ" in mixed.rows[0].reason
    assert any("mode differs: default (baseline) vs quick (current)" in n for n in mixed.notes)
    assert not mixed.regressed("worse")


def test_across_modes_an_exact_implementation_that_fails_is_still_a_new_failure():
    mixed = compare_documents(mode(document(row(KEY)), "default", 16000),
                              mode(document(row(KEY, passed=False)), "quick", 1000))
    assert [r.mark for r in mixed.rows] == ["!"] and mixed.regressed("new-failure")


def test_a_new_zoo_row_not_caught_is_not_a_regression_across_modes():
    new = row(ZOO_KEY, passed=True, expected_exact=False)
    mixed = compare_documents(mode(document(), "default", 16000), mode(document(new), "quick", 1000))
    assert [r.mark for r in mixed.rows] == ["x"]
    same = compare_documents(mode(document(), "default", 16000), mode(document(new), "default", 16000))
    assert [r.mark for r in same.rows] == ["!"]
