"""One JSON envelope for every file specproof writes: ``kind``, ``schema``, ``provenance``, payload.

On disk an envelope is one flat JSON object (the shape every file had before the envelope existed,
so older readers keep working)::

    {"schema": N, "kind": NAME, "provenance": {...}, FIELD: ..., ...}   # the payload's fields

A :class:`FileKind` names one kind of file and its current ``schema``; it holds the kind's
migrations, ``from_version -> document at from_version + 1``, registered with
:meth:`FileKind.migration`.  Reading (:func:`migrate_document`, :func:`load_document`) brings a
document written by any earlier specproof to the current schema, one step at a time, and refuses a
newer one or another kind (usage errors, exit 2).  Kinds listed in ``FileKind.legacy_names`` were
written under another name, or (``None``) without ``kind`` at all; they load as this kind.
Writing (:func:`write_envelope`, or :func:`write_document` for a document already built) spells
non-finite floats as words (:mod:`.json_numbers`) and writes atomically
(:func:`~specproof.harness.files.provenance.write_json`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from specproof.errors import SpecproofInputError
from specproof.harness.files.json_numbers import json_safe
from specproof.harness.files.provenance import write_json

__all__ = ["FileKind", "Envelope", "KINDS", "ENVELOPE_FIELDS", "write_envelope", "write_document", "migrate_document",
           "read_json_document", "load_document"]

ENVELOPE_FIELDS = ("schema", "kind", "provenance")
Migration = Callable[[dict[str, Any]], dict[str, Any]]
KINDS: dict[str, "FileKind"] = {}  # every kind of file, by name (filled as the kinds are declared)


@dataclass(frozen=True, eq=False)
class FileKind:
    """One kind of file: its ``name`` (the ``kind`` field), current ``schema`` and what writes it."""

    name: str
    schema: int
    written_by: str  # "specproof report" etc.: named in the fix of every usage error
    file_name: str = ""  # what users call it ("results.json"); default: "a NAME file"
    legacy_names: tuple[str | None, ...] = ()
    migrations: dict[int, Migration] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.name in KINDS:
            raise ValueError(f"file kind {self.name!r} is declared twice")
        KINDS[self.name] = self

    def migration(self, from_version: int) -> Callable[[Migration], Migration]:
        """Decorator: register ``fn(document at from_version) -> document at from_version + 1``."""
        if not 1 <= from_version < self.schema:
            raise ValueError(f"{self.name}: a migration from {from_version} must start below schema {self.schema}")

        def register(fn: Migration) -> Migration:
            if from_version in self.migrations:
                raise ValueError(f"{self.name}: two migrations from schema {from_version}")
            self.migrations[from_version] = fn
            return fn
        return register

    @property
    def fix(self) -> str:
        """What a usage error tells the user to pass instead."""
        return f"pass {self.file_name or f'a {self.name} file'} written by {self.written_by}"

    def envelope(self, payload: dict[str, Any], provenance: dict[str, Any] | None = None) -> "Envelope":
        return Envelope(self.name, self.schema, provenance, payload)


@dataclass(frozen=True)
class Envelope:
    """``kind`` and ``schema`` of a document, its ``provenance`` (None: an in-memory record) and payload."""

    kind: str
    schema: int
    provenance: dict[str, Any] | None
    payload: dict[str, Any]

    def __post_init__(self) -> None:
        clash = [f for f in ENVELOPE_FIELDS if f in self.payload]
        if clash:
            raise ValueError(f"payload of a {self.kind!r} file holds envelope field(s) {', '.join(clash)}")

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {"schema": self.schema, "kind": self.kind}
        if self.provenance is not None:
            head["provenance"] = self.provenance
        return head | self.payload

    @classmethod
    def from_json(cls, data: dict[str, Any], kind: FileKind, source: str = "file") -> "Envelope":
        """The envelope of ``data`` brought to ``kind``'s current schema (:func:`migrate_document`)."""
        doc = migrate_document(data, kind, source)
        return cls(kind.name, doc["schema"], doc.get("provenance"),
                   {k: v for k, v in doc.items() if k not in ENVELOPE_FIELDS})


def write_envelope(path: str | os.PathLike[str], kind: FileKind, payload: dict[str, Any],
                   provenance: dict[str, Any]) -> Path:
    """Write ``payload`` as a ``kind`` file with ``provenance``, atomically, non-finite floats as words."""
    return write_json(path, json_safe(kind.envelope(payload, provenance).to_json()))


def write_document(path: str | os.PathLike[str], kind: FileKind, document: dict[str, Any]) -> Path:
    """Write a document built as ``kind.envelope(...).to_json()`` (checked: its ``kind``, ``schema`` and
    ``provenance``), atomically, non-finite floats as words."""
    if document.get("kind") != kind.name or document.get("schema") != kind.schema \
            or not isinstance(document.get("provenance"), dict):
        raise ValueError(f"not a current {kind.name!r} envelope: kind={document.get('kind')!r}, "
                         f"schema={document.get('schema')!r}, provenance present: {'provenance' in document}")
    return write_json(path, json_safe(document))


def migrate_document(data: Any, kind: FileKind, source: str = "file") -> dict[str, Any]:
    """``data`` (a parsed file of ``kind``, any schema up to the current one) at the current schema.

    The result carries ``kind`` = ``kind.name`` (files written without ``kind``, or under a legacy
    name, get it) and ``migrated_from`` = the schema it was written with when a migration ran."""
    fix = kind.fix
    if not isinstance(data, dict):
        raise SpecproofInputError(source, f"is not a JSON object (a {type(data).__name__})", fix)
    version = data.get("schema")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SpecproofInputError(source, f"has no integer schema version (schema={version!r})", fix)
    if version > kind.schema:
        raise SpecproofInputError(source, f"has schema {version}, newer than this specproof's {kind.schema}",
                                  "upgrade specproof to read it")
    written_kind = data.get("kind")
    if written_kind != kind.name and written_kind not in kind.legacy_names:
        raise SpecproofInputError(source, f"is a {written_kind!r} file, not a {kind.name!r}", fix)
    doc = dict(data)
    while doc["schema"] < kind.schema:
        step = kind.migrations.get(doc["schema"])
        if step is None:
            raise SpecproofInputError(source, f"has schema {doc['schema']}, which this specproof cannot migrate",
                                      f"regenerate it with {kind.written_by}")
        doc = step(doc)
    if written_kind != kind.name:
        doc = {"schema": doc["schema"], "kind": kind.name} | {k: v for k, v in doc.items() if k != "kind"}
    return doc


def read_json_document(path: str | os.PathLike[str], argument: str, fix: str) -> Any:
    """Parse the JSON file at ``path``; every failure is a usage error naming ``argument`` (``fix``: what to pass)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise SpecproofInputError(argument, f"{str(path)!r} is not UTF-8 text (byte {err.start})", fix) from None
    except FileNotFoundError:
        raise SpecproofInputError(argument, f"{str(path)!r} does not exist", fix) from None
    except IsADirectoryError:
        raise SpecproofInputError(argument, f"{str(path)!r} is a folder", fix) from None
    except OSError as err:
        raise SpecproofInputError(argument, f"cannot read {str(path)!r} ({err.strerror})",
                                  "check the path and its permissions") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecproofInputError(argument, f"{str(path)!r} is not JSON ({err.msg} at line {err.lineno})",
                                  fix) from None
    except RecursionError:
        raise SpecproofInputError(argument, f"{str(path)!r} nests too deeply to be a specproof file", fix) from None


def load_document(path: str | os.PathLike[str], kind: FileKind, argument: str = "file") -> dict[str, Any]:
    """Read a ``kind`` file written by this or any earlier specproof, migrated to the current schema."""
    data = read_json_document(path, argument, kind.fix)
    return migrate_document(data, kind, argument)
