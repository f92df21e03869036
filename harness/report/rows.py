"""Typed records of ``results.json``: a report :class:`Row`, its :class:`Figure` s and :class:`Hashes`.

The document stays JSON (what is written, validated and migrated, :mod:`.schema`); these frozen records
are how the report reads and builds it: ``Row.from_json(row)`` for a row of a loaded document,
``row.to_json()`` for the dict written.  ``to_json(from_json(x)) == x`` for every row specproof writes
(a test checks every row of the committed ``reports/cpu/results.json``).  A figure's ``value`` is a
float (non-finite ones written as words, :mod:`specproof.harness.files.json_numbers`); its ``exact`` the
``"num/den"`` string of the rational it rounds, if known; ``threshold`` the resolution compare uses
(None: informational).  ``detail`` is per kind and stays a free-form dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterator, Mapping

from specproof.harness.files.json_numbers import number_word, read_number
from specproof.harness.report.schema import HASH_NAMES, row_key

__all__ = ["Figure", "Hashes", "Row", "rows_of"]


@dataclass(frozen=True)
class Figure:
    """One figure of a row: measured ``value`` (float or None), its ``exact`` rational, compare's ``threshold``."""

    value: float | None
    exact: str | None = None
    threshold: float | None = None
    threshold_source: str = ""
    dtype: str | None = None

    @classmethod
    def of(cls, value: float | Fraction | None, threshold: float | None, source: str, dtype: str | None,
           exact: Fraction | None = None) -> "Figure":
        """A compared (``threshold`` set) or informational (``threshold`` None) figure; a Fraction
        ``value`` is its own ``exact``."""
        if isinstance(value, Fraction):
            exact, value = value, float(value)
        return cls(None if value is None else float(value),
                   None if exact is None else f"{exact.numerator}/{exact.denominator}",
                   None if threshold is None else float(threshold), source, dtype)

    @property
    def compared(self) -> bool:
        return self.threshold is not None

    def to_json(self) -> dict[str, Any]:
        return {"value": None if self.value is None else number_word(self.value), "exact": self.exact,
                "threshold": self.threshold, "threshold_source": self.threshold_source, "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Figure":
        return cls(read_number(data.get("value")), data.get("exact"), data.get("threshold"),
                   data.get("threshold_source", ""), data.get("dtype"))


@dataclass(frozen=True)
class Hashes:
    """sha256 hex of what a row's verdict rests on (None: unknown, e.g. a migrated schema-1 row)."""

    implementation: str | None = None
    rule: str | None = None
    reference: str | None = None
    input: str | None = None

    def get(self, name: str) -> str | None:
        """The hash called ``name`` (one of :data:`~.schema.HASH_NAMES`)."""
        if name not in HASH_NAMES:
            raise KeyError(name)
        return getattr(self, name)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in HASH_NAMES}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Hashes":
        return cls(**{name: data.get(name) for name in HASH_NAMES})


_PROOF_ONLY = ("claim", "expected", "ok")  # written for proof rows only


@dataclass(frozen=True)
class Row:
    """One row of the report (module docstring of :mod:`.schema` for the fields' meaning)."""

    kind: str
    implementation: str | None
    rule: str | None
    dtype: str | None
    input: str
    expected_exact: bool
    passed: bool
    as_expected: bool
    verdict: str
    hashes: Hashes
    figures: Mapping[str, Figure] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)
    contract: str | None = None
    seconds: float | None = None
    claim: str | None = None  # proof rows: the rule's claim, expected verdict, and whether it was got
    expected: str | None = None
    ok: bool | None = None

    @property
    def key(self) -> str:
        return row_key({"kind": self.kind, "rule": self.rule, "implementation": self.implementation,
                        "dtype": self.dtype, "input": self.input})

    def figure_value(self, name: str) -> float | None:
        """The value of figure ``name`` (None when the row has no such figure or no value)."""
        fig = self.figures.get(name)
        return None if fig is None else fig.value

    def to_json(self, with_key: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "implementation": self.implementation, "contract": self.contract, "rule": self.rule,
            "dtype": self.dtype, "input": self.input, "expected_exact": self.expected_exact, "passed": self.passed,
            "as_expected": self.as_expected, "verdict": self.verdict, "hashes": self.hashes.to_json(),
            "figures": {name: fig.to_json() for name, fig in self.figures.items()}, "detail": dict(self.detail),
            "seconds": self.seconds}
        out.update({name: getattr(self, name) for name in _PROOF_ONLY if getattr(self, name) is not None})
        if with_key:
            out["key"] = self.key
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Row":
        """The record of a row dict; fields that :func:`~.schema.validate` does not require may be absent."""
        return cls(data["kind"], data.get("implementation"), data.get("rule"), data.get("dtype"), data.get("input", ""),
                   data["expected_exact"], data["passed"], data["as_expected"], data["verdict"],
                   Hashes.from_json(data.get("hashes") or {}),
                   {name: Figure.from_json(fig) for name, fig in data.get("figures", {}).items()},
                   data.get("detail", {}), data.get("contract"), data.get("seconds"),
                   *(data.get(name) for name in _PROOF_ONLY))


def rows_of(document: Mapping[str, Any]) -> Iterator[Row]:
    """The rows of a (validated) results document as records, in the document's order."""
    for row in document["rows"].values():
        yield Row.from_json(row)
