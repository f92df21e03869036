"""The ``results.json`` schema of ``specproof report``: versions, migration, loading, and row hashes.

Schema 2 (current)::

    {"schema": 2, "kind": "specproof-report",
     "provenance": {git commit and dirty flag, package versions, device and its model, dtypes, seeds, date},
     "config":     {mode, device, dtypes, seeds, samples per scenario, vocabularies, ...},
     "rows":       {KEY: ROW, ...},            # keyed, so two files diff row by row
     "zoo":        [{implementation, bug, caught_by, reason}, ...],
     "skipped":    [{implementation, kind, dtype, reason}, ...],
     "timing":     {phase: seconds}, "summary": {...}}

``KEY`` is ``proof/RULE`` or ``KIND/IMPLEMENTATION/DTYPE/INPUT`` with ``KIND`` one of ``whitebox``,
``grid``, ``statistical``, ``pipeline`` (a whole pipeline, :mod:`.pipelines`), ``check`` (your own
target, ``check/TARGET/DTYPE/CONTRACT@DEVICE``, :mod:`.targets`; added within schema 2: a file without
check rows reads as before).  Every ``ROW`` has
``kind``, ``implementation``, ``rule``, ``dtype``, ``input``,
``expected_exact``, ``passed`` (the check did not flag it), ``as_expected`` (``passed`` for an
implementation expected exact and for a proof with its expected verdict; *flagged* for a zoo member),
``verdict``, ``hashes`` ``{"implementation", "rule", "reference", "input"}`` (sha256 hex or ``null`` when
unknown) and ``figures``: ``{NAME: {"value": float, "exact": "num/den" or null, "threshold": float or
null, "threshold_source": str, "dtype": str or null}}``.  A figure's ``threshold`` is the resolution
``specproof compare`` uses: a growth beyond it is "worse" (see :mod:`.report_compare`).  Exact values
are ``"num/den"`` strings; floats are the correctly rounded values of those rationals, measured in the
row's ``dtype``.

Schema 1 (documented, superseded): the same top level but ``"rows"`` a *list* of rows without
``key``, each with one ``"source_hash"`` (the implementation's) instead of ``hashes``, and without
``as_expected``.  :func:`migrate` turns schema 1 into schema 2: it derives each key from the row's
fields, moves ``source_hash`` to ``hashes["implementation"]``, marks the rule/reference/input hashes
unknown (``null``: comparable, with a note) and computes ``as_expected`` with :func:`expected_outcome`,
the one rule every row is written with (so a migrated row compares equal to the row it came from, a
known sampler defect included).  :func:`load_results` migrates
older files and refuses newer ones (a usage error: exit 2).  The version and the migration registry are
those of the file kind :data:`~specproof.harness.files.kinds.REPORT` (:mod:`specproof.harness.files.envelope`).

Hashes (:func:`definition_hash`) cover a definition and what it calls inside specproof: the source of
each callable, then, recursively (memoised, to depth :data:`HASH_DEPTH`), the source of every
specproof function or class its code names as a global or holds in a closure cell.  So editing
``step_law`` changes the rule hash of every step rule, and editing the exact reference changes the
reference hash of every white-box row.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import re
import types
from pathlib import Path
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from specproof.errors import SpecproofInputError
from specproof.harness.files.envelope import migrate_document, read_json_document
from specproof.harness.files.json_numbers import NUMBER_WORDS
from specproof.harness.files.kinds import REPORT

__all__ = ["SCHEMA", "KIND", "HASH_DEPTH", "row_key", "definition_hash", "rule_hash", "bytes_hash",
           "expected_outcome", "migrate", "migrate_1_to_2", "load_results", "validate"]

SCHEMA = REPORT.schema
KIND = REPORT.name
HASH_DEPTH = 4
ROW_KINDS = ("proof", "whitebox", "grid", "statistical", "pipeline", "check")
HASH_NAMES = ("implementation", "rule", "reference", "input")


def row_key(row: dict[str, Any]) -> str:
    """``proof/RULE`` or ``KIND/IMPLEMENTATION/DTYPE/INPUT``."""
    if row["kind"] == "proof":
        return f"proof/{row['rule']}"
    return f"{row['kind']}/{row['implementation']}/{row['dtype']}/{row['input']}"


# -- hashes ------------------------------------------------------------------------------------------

def _specproof_object(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.startswith("specproof.") and (inspect.isfunction(obj) or inspect.isclass(obj))


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _referenced(obj: Any) -> list[Any]:
    """specproof functions/classes that ``obj`` names as globals or holds in closure cells."""
    found: list[Any] = []
    if inspect.isfunction(obj):
        for name in sorted(_code_names(obj.__code__)):
            value = obj.__globals__.get(name)
            if _specproof_object(value):
                found.append(value)
        for cell in obj.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if _specproof_object(value):
                found.append(value)
            elif isinstance(value, functools.partial) and _specproof_object(value.func):
                found.append(value.func)
    elif inspect.isclass(obj):
        for value in vars(obj).values():
            if inspect.isfunction(value):
                found.extend(_referenced(value))
    return found


@functools.lru_cache(maxsize=None)
def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return f"<no source: {getattr(obj, '__qualname__', repr(type(obj)))}>"


def _closure_values(obj: Any) -> str:
    """Plain values (numbers, strings, Fractions) a closure captured: part of the definition."""
    if not inspect.isfunction(obj):
        return ""
    parts = []
    for cell in obj.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, (int, float, str, bool)) or type(value).__name__ == "Fraction":
            parts.append(repr(value))
    return ";".join(parts)


def definition_hash(*parts: Callable[..., Any] | str) -> str:
    """sha256 over the sources of ``parts`` and of the specproof code they reach (module docstring).

    Strings are hashed as given (names, claims, parameters)."""
    digest = hashlib.sha256()
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        digest.update(_source(obj).encode())
        digest.update(_closure_values(obj).encode())
        if depth < HASH_DEPTH:
            for child in _referenced(obj):
                visit(child, depth + 1)

    for part in parts:
        if isinstance(part, str):
            digest.update(part.encode())
        elif part is not None:
            visit(part, 0)
    return digest.hexdigest()


def rule_hash(rule: str) -> str | None:
    """Hash of the definition the exact reference evaluates for ``rule`` (None: no exact law here).

    Step rules: acceptance, residual weight, acceptance test and :func:`~specproof.proofs.step_law`;
    ``block``: the block round law; other names (multi-draft) have no exact law in the report."""
    from specproof.proofs.laws.block import block_round_law
    from specproof.proofs.laws.step_rules import get_step_rule, step_law

    if rule == "block":
        return definition_hash("block", block_round_law)
    try:
        step = get_step_rule(rule)
    except (ValueError, KeyError, SpecproofInputError):
        return None
    return definition_hash(step.name, step.claim, step.acceptance, step.residual_weight,
                           step.acceptance_test or "", step_law)


def bytes_hash(chunks: Iterable[bytes | str]) -> str:
    """sha256 of the concatenated chunks (inputs: array bytes, names, parameters)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk.encode() if isinstance(chunk, str) else chunk)
    return digest.hexdigest()


# -- versions ----------------------------------------------------------------------------------------

def expected_outcome(row: Mapping[str, Any]) -> bool:
    """A row's ``as_expected`` from its fields: a proof's ``ok`` (its expected verdict was reached); a row
    under a known defect outside the implementation's code (``detail["known_defect"]``, e.g. torch's
    float16 sampler) is as expected whatever it shows; otherwise ``passed`` for an implementation expected
    exact and *flagged* for a known-bad one."""
    if row["kind"] == "proof":
        return bool(row.get("ok", row["passed"]))
    if (row.get("detail") or {}).get("known_defect"):
        return True
    return bool(row["passed"]) if row["expected_exact"] else not row["passed"]


@REPORT.migration(1)
def migrate_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 (rows as a list, one ``source_hash`` per row) to schema 2 (module docstring)."""
    rows: dict[str, Any] = {}
    old_rows = data.get("rows", [])
    if not isinstance(old_rows, list) or not all(isinstance(r, dict) for r in old_rows):
        raise SpecproofInputError("results", "schema-1 file has rows that are not a list of objects",
                                  "regenerate it with specproof report")
    for old in old_rows:
        lacking = [f for f in ("kind", "rule", "passed", "expected_exact", *(() if old.get("kind") == "proof" else
                                                                           ("implementation", "dtype", "input")))
                   if f not in old]
        if lacking:
            raise SpecproofInputError("results", f"schema-1 row lacks {', '.join(lacking)}",
                                      "regenerate it with specproof report")
        row = dict(old)
        source_hash = row.pop("source_hash", None)
        row["hashes"] = {"implementation": source_hash, "rule": None, "reference": None, "input": None}
        row.setdefault("figures", {})
        row.setdefault("detail", {})
        row["as_expected"] = expected_outcome(row)
        key = row_key(row)
        if key in rows:
            raise SpecproofInputError("results", f"schema-1 file has two rows with key {key!r}",
                                      "regenerate it with specproof report")
        row["key"] = key
        rows[key] = row
    out = {k: v for k, v in data.items() if k != "rows"}
    out.update({"schema": 2, "rows": rows, "migrated_from": data.get("migrated_from", 1)})
    out.setdefault("zoo", [])
    out.setdefault("skipped", [])
    return out


def migrate(data: dict[str, Any], source: str = "results") -> dict[str, Any]:
    """Bring a results document to :data:`SCHEMA` and validate it; refuse documents from a newer specproof."""
    data = migrate_document(data, REPORT, source)
    validate(data, source)
    return data


_ROW_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,), "implementation": (str, type(None)), "rule": (str, type(None)), "dtype": (str, type(None)),
    "input": (str,), "expected_exact": (bool,), "passed": (bool,), "as_expected": (bool,), "verdict": (str,),
    "hashes": (dict,), "figures": (dict,)}
_FIGURE_WORDS = tuple(NUMBER_WORDS)


def _type_names(types_: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else {"str": "a string", "bool": "true/false",
                                                         "dict": "an object"}[t.__name__] for t in types_)


def _number_or_none(value: Any, words: bool) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) or (words and value in _FIGURE_WORDS)


def _figure_problem(fig: Mapping[str, Any]) -> str | None:
    """What is wrong with a figure's threshold or exact value (None: nothing).  A threshold is a finite
    resolution, at least 0; an exact value is a ``"num/den"`` rational with a non-zero denominator whose
    float is the figure's value.  A non-finite *value* without an exact one is a measurement (compare marks
    it); a non-finite threshold or an impossible exact value never is."""
    threshold, exact = fig.get("threshold"), fig.get("exact")
    if threshold is not None and not (math.isfinite(threshold) and threshold >= 0):
        return f"with threshold {threshold!r}, expected a finite number at least 0"
    if exact is None:
        return None
    parts = re.fullmatch(r"(-?\d+)/(\d+)", exact) if isinstance(exact, str) else None
    if parts is None or int(parts[2]) == 0:
        return f"with exact value {exact!r}, expected \"num/den\" with a non-zero denominator"
    value = fig.get("value")
    value = value if value is None or isinstance(value, (int, float)) else NUMBER_WORDS[value]
    try:
        rounded = float(Fraction(int(parts[1]), int(parts[2])))
    except OverflowError:
        rounded = math.copysign(math.inf, int(parts[1]))
    if value is None or rounded != value:
        return f"with value {value!r} that is not the float of its exact value {exact}"
    return None


def validate(data: dict[str, Any], source: str = "results") -> None:
    """Full structural check of a schema-2 document: every field that :mod:`.report_compare` and
    :mod:`.report_render` read, with its type (raises a usage error naming the row and field)."""
    def bad(problem: str) -> SpecproofInputError:
        return SpecproofInputError(source, problem, "regenerate it with specproof report")

    for field in ("provenance", "config", "rows"):
        if field not in data:
            raise bad(f"lacks {field!r}")
        if not isinstance(data[field], dict):
            raise bad(f"has {field!r} that is not an object (keyed by row key for 'rows')")
    for field in ("git", "versions"):
        if not isinstance(data["provenance"].get(field, {}), dict):
            raise bad(f"has provenance {field!r} that is not an object")
    for field in ("zoo", "skipped", "incomplete"):
        if not isinstance(data.get(field, []), list) or not all(isinstance(x, dict) for x in data.get(field, [])):
            raise bad(f"has {field!r} that is not a list of objects")
    for key, row in data["rows"].items():
        if not isinstance(row, dict):
            raise bad(f"row {key!r} is not an object")
        missing = [f for f in _ROW_TYPES if f not in row]
        if missing:
            raise bad(f"row {key!r} lacks {', '.join(missing)}")
        for field, types_ in _ROW_TYPES.items():
            if not isinstance(row[field], types_):
                raise bad(f"row {key!r} has {field} {row[field]!r}, expected {_type_names(types_)}")
        if row["kind"] not in ROW_KINDS:
            raise bad(f"row {key!r} has unknown kind {row['kind']!r}")
        if row_key(row) != key:
            raise bad(f"row {key!r} does not match its fields ({row_key(row)!r})")
        for name in HASH_NAMES:
            if not isinstance(row["hashes"].get(name), (str, type(None))):
                raise bad(f"row {key!r} has hashes.{name} {row['hashes'].get(name)!r}, expected a string or null")
        for name, fig in row["figures"].items():
            if not isinstance(fig, dict):
                raise bad(f"row {key!r} has figure {name!r} that is not an object")
            if not _number_or_none(fig.get("value"), True) or not _number_or_none(fig.get("threshold"), False):
                raise bad(f"row {key!r} has figure {name!r} with a value or threshold that is not a number")
            problem = _figure_problem(fig)
            if problem:
                raise bad(f"row {key!r} has figure {name!r} {problem}")
        if not isinstance(row.get("detail", {}), dict):
            raise bad(f"row {key!r} has detail that is not an object")
        if row["as_expected"] != expected_outcome(row):
            raise bad(f"row {key!r} has as_expected {row['as_expected']} but its kind, expected_exact, passed and "
                      f"known defect give {expected_outcome(row)}")


def load_results(path: str | Path, argument: str = "results") -> dict[str, Any]:
    """Read, migrate and validate a results.json (usage errors name ``argument``)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    return migrate(read_json_document(path, argument, REPORT.fix), argument)
