"""Typed report records: every row of the committed results.json round-trips through Row, figures and hashes
read as fields, and Figure.of writes what the report always wrote."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from specproof.harness.report.rows import Figure, Hashes, Row, rows_of

COMMITTED = Path(__file__).parents[3] / "reports" / "cpu" / "results.json"


@pytest.fixture(scope="module")
def committed():
    return json.loads(COMMITTED.read_text())


def test_every_committed_row_round_trips(committed):
    assert len(committed["rows"]) > 100
    for key, row in committed["rows"].items():
        record = Row.from_json(row)
        assert record.to_json() == row, key
        assert record.key == key


def test_fields_are_read_as_fields(committed):
    rows = list(rows_of(committed))
    assert [r.key for r in rows] == list(committed["rows"])
    whitebox = next(r for r in rows if r.kind == "whitebox")
    raw = committed["rows"][whitebox.key]
    assert whitebox.hashes.get("implementation") == raw["hashes"]["implementation"]
    assert whitebox.figure_value("tv") == raw["figures"]["tv"]["value"] and whitebox.figures["tv"].compared
    assert whitebox.figure_value("no-such-figure") is None
    proof = next(r for r in rows if r.kind == "proof")
    assert proof.claim and proof.expected and proof.ok is not None and proof.implementation is None
    with pytest.raises(KeyError):
        Hashes().get("colour")


def test_figure_of_writes_what_the_report_wrote():
    assert Figure.of(Fraction(1, 3), 0.5, "bound", "float32").to_json() == {
        "value": 1 / 3, "exact": "1/3", "threshold": 0.5, "threshold_source": "bound", "dtype": "float32"}
    assert Figure.of(math.inf, None, "informational", None).to_json()["value"] == "inf"
    assert Figure.of(None, None, "informational", None).to_json()["value"] is None
    assert Figure.of(0.25, 1, "x", None, exact=Fraction(1, 4)).to_json()["exact"] == "1/4"
    assert math.isnan(Figure.from_json({"value": "nan"}).value)
    assert Figure.from_json({"value": "inf", "threshold": 1.0}).value == math.inf


def test_a_field_the_record_does_not_know_fails_the_round_trip(committed):
    row = dict(next(iter(committed["rows"].values())), new_field=1)
    assert Row.from_json(row).to_json() != row
