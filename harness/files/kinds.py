"""Every kind of file specproof writes, with its current schema: the one list (:class:`~.envelope.FileKind`).

A kind's migrations are registered where its format is defined (``REPORT``'s in
:mod:`specproof.harness.report.schema`); a kind without any has had one schema so far.
``PROVE`` files were written without ``kind`` before the envelope; they load as ``prove``.
The two drift kinds are in-memory records (``as_json()`` of a white-box or grid measurement),
enveloped without provenance.
"""

from __future__ import annotations

from specproof.harness.files.envelope import FileKind

__all__ = ["REPORT", "BENCH", "BENCH_REFERENCE", "BENCH_DRIFT", "CHECK", "PROVE", "REFERENCE", "COMPARE", "WHITEBOX_DRIFT",
           "GRID_DRIFT"]

REPORT = FileKind("specproof-report", 2, "specproof report", file_name="a results.json", legacy_names=(None,))
BENCH = FileKind("bench", 1, "specproof bench", file_name="a bench.json")
BENCH_REFERENCE = FileKind("bench-reference", 1, "specproof bench --only reference")
BENCH_DRIFT = FileKind("bench-drift", 1, "specproof bench --only drift")
CHECK = FileKind("check", 1, "specproof check --json")
PROVE = FileKind("prove", 1, "specproof prove --json", legacy_names=(None,))
REFERENCE = FileKind("reference", 1, "specproof reference --json")
COMPARE = FileKind("specproof-compare", 1, "specproof compare --json")
WHITEBOX_DRIFT = FileKind("whitebox-drift", 1, "DriftResult.as_json()")
GRID_DRIFT = FileKind("grid-drift", 1, "GridDrift.as_json()")
