"""The one verdict vocabulary: every verdict word specproof writes, and how serious each one is.

Families (the enum values are the JSON ``verdict`` strings, unchanged):

* :class:`Verdict` (proofs) - ``PROVED``, ``BOUNDED`` (every obligation held, some only for the sizes in
  the scope), ``REFUTED``, ``INCONCLUSIVE``, ``VACUOUS``;
* :class:`CheckVerdict` (statistical check) - ``pass``, ``fail``, ``underpowered``, ``inconclusive`` (a
  sharded check lost rows: nothing concluded);
* :class:`GridVerdict` (exact RNG-grid law) - ``exact``, ``within-grid-tolerance``, ``algorithmic-bias``,
  ``impossible-mass``, ``unanalysable``;
* :class:`DriftVerdict` (white-box drift) - ``within-tolerance``, ``beyond-tolerance``;
* :class:`TaskVerdict` (a report task) - ``error``: the task raised, so nothing was measured.

:class:`Severity` says what a reader should make of a verdict: ``ok`` (the claim holds as stated),
``flagged`` (a defect, or a result that establishes nothing: REFUTED, fail, INCONCLUSIVE, VACUOUS,
unanalysable, ...), ``warning`` (holds, but weaker than asked: BOUNDED, underpowered) and ``not-run``.
Every member has ``.severity``; :func:`severity` maps a verdict or its string (``None`` for a word
that is not a verdict).
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Severity", "Verdict", "CheckVerdict", "GridVerdict", "DriftVerdict", "TaskVerdict",
           "VERDICT_FAMILIES", "SEVERITY", "severity"]


class Severity(str, enum.Enum):
    OK = "ok"
    FLAGGED = "flagged"
    WARNING = "warning"
    NOT_RUN = "not-run"


class _Word(str, enum.Enum):
    @property
    def severity(self) -> Severity:
        return SEVERITY[self.value]


class Verdict(_Word):
    """A proof attempt's verdict (``proofs.engine.results`` re-exports it)."""

    PROVED = "PROVED"
    BOUNDED = "BOUNDED"
    REFUTED = "REFUTED"
    INCONCLUSIVE = "INCONCLUSIVE"
    VACUOUS = "VACUOUS"


class CheckVerdict(_Word):
    """Outcome of a statistical check; the value is what the JSON stores (``harness.check.result.Verdict``)."""

    PASS = "pass"
    FAIL = "fail"
    UNDERPOWERED = "underpowered"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


class GridVerdict(_Word):
    """The exact grid law against the rule's law (``harness.drift.grid``)."""

    EXACT = "exact"
    WITHIN = "within-grid-tolerance"
    BIAS = "algorithmic-bias"
    IMPOSSIBLE = "impossible-mass"
    UNANALYSABLE = "unanalysable"


class DriftVerdict(_Word):
    """White-box drift against its derived bounds (``harness.drift.whitebox``)."""

    WITHIN = "within-tolerance"
    BEYOND = "beyond-tolerance"


class TaskVerdict(_Word):
    """A report task that raised before measuring anything."""

    ERROR = "error"


VERDICT_FAMILIES: dict[str, type[_Word]] = {"proof": Verdict, "check": CheckVerdict, "grid": GridVerdict,
                                            "whitebox": DriftVerdict, "task": TaskVerdict}

_OK, _FLAG, _WARN, _SKIP = Severity.OK, Severity.FLAGGED, Severity.WARNING, Severity.NOT_RUN
SEVERITY: dict[str, Severity] = {
    "PROVED": _OK, "BOUNDED": _WARN, "REFUTED": _FLAG, "INCONCLUSIVE": _FLAG, "VACUOUS": _FLAG,
    "pass": _OK, "underpowered": _WARN, "fail": _FLAG, "inconclusive": _FLAG,
    "exact": _OK, "within-grid-tolerance": _OK, "algorithmic-bias": _FLAG, "impossible-mass": _FLAG,
    "unanalysable": _FLAG,
    "within-tolerance": _OK, "beyond-tolerance": _FLAG,
    "error": _SKIP,
}
"""Verdict string -> severity, for every member of every family (a test checks both ways)."""


def severity(verdict: Any) -> Severity | None:
    """The severity of a verdict member or string; ``None`` when the word is not a verdict."""
    return SEVERITY.get(verdict.value if isinstance(verdict, enum.Enum) else str(verdict))
