"""Declarative records of the implementations under test, and the registry that holds them.

One :class:`Implementation` per verifier: the harness, the tests and the reports iterate over the
same list (:func:`specproof.impls.implementations`). Contracts:

- ``"batched"``: ``fn(draft_probs [B,K,V], target_probs [B,K+1,V], draft_token_ids [B,K], generator)
  -> emitted [B,K+1]`` int64 (accepted drafts, the correction or bonus token, then ``-1``);
- ``"uniforms"``: the same with ``uniforms [B,K+1]`` (dtype under test) instead of the generator:
  column ``i < K`` is draft ``i``'s acceptance uniform, column ``K`` the final draw's uniform;
- ``"whitebox"``: ``fn(p, q) -> WhiteboxStepLaw`` for ``p, q`` of shape ``[V]`` or ``[B,V]``;
- ``"multidraft"``: ``fn(draft_probs [B,V], target_probs [B,V], draft_token_ids [B,n], generator)
  -> emitted [B]`` int64 (one position, ``n`` i.i.d. siblings; see :mod:`.multidraft`).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import torch

from specproof.impls.contract import SUPPORTED_DTYPES
from specproof.proofs.laws.implemented import IMPLEMENTED_RULES

__all__ = ["Implementation", "Registry", "IMPLEMENTATION_CONTRACTS", "RULES", "DEVICES", "source_text"]

IMPLEMENTATION_CONTRACTS = ("batched", "uniforms", "whitebox", "multidraft")
"""The calling conventions a record may declare as its ``contract`` (module docstring). Not the check's
contract records (``specproof.CONTRACTS``: batched, tree, generate), of which only ``"batched"`` is one
of these; the report and the drift grid measure the others."""
RULES = IMPLEMENTED_RULES
"""The rules a record may name: the proofs' list (:data:`specproof.proofs.laws.implemented.IMPLEMENTED_RULES`)."""
DEVICES = ("cpu", "cuda")


def source_text(fn: Callable) -> str:
    """Source of ``fn`` for hashing: unwraps ``functools.partial`` (adding its bound arguments) and
    objects that keep the wrapped function in ``.fn`` (:class:`.compiled.LazyCompiled`)."""
    if isinstance(fn, functools.partial):
        return source_text(fn.func) + f"\n# partial args={fn.args!r} keywords={fn.keywords!r}"
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and hasattr(fn, "fn"):
        return source_text(fn.fn) + f"\n# wrapped by {type(fn).__name__}"
    return inspect.getsource(fn)


@dataclass(frozen=True)
class Implementation:
    """One implementation under test.

    ``rule``: the catalogue rule it claims to implement (mutants claim the rule they break); for the
    canonical family the name also fixes the acceptance test (``canonical`` ``u < p/q``,
    ``canonical-mul`` ``u*q < p``, ``canonical-log`` log space), as the proofs' step rules do.
    ``expected_exact``: whether its emitted law is expected to equal the exact law of ``rule``
    (e.g. ``round_law(pair, rule)``) up to float rounding; False marks a known defect (``bug``),
    including one that lives only on the finite uniform grid (``u == 0``).
    ``bug_rule``: for a mutant, the catalogue rule whose exact law it follows instead, when the
    catalogue has one.
    ``sources``: extra callables whose source enters ``source_hash`` (the building blocks ``fn``
    delegates to), so a change in any of them changes the hash.
    ``uniforms_core``: for a batched wrapper, the name of the uniform-injection record it calls.
    ``needs_extra``: the pip extra an adapter needs (``None`` for pure-torch implementations).
    ``known_defects``: ``((device, dtype name, reason), ...)`` where a record that is
    ``expected_exact`` is nevertheless not exact because of a defect outside it (e.g. torch's own
    sampler); :meth:`expected_exact_on` and :meth:`defect_on` give the label that is true per dtype.
    ``source_hash``: sha256 of the source of ``fn`` followed by that of each of ``sources``.
    """

    name: str
    fn: Callable
    contract: str
    rule: str
    expected_exact: bool
    description: str
    dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES
    devices: tuple[str, ...] = DEVICES
    bug: str | None = None
    mirrors: str | None = None
    bug_rule: str | None = None
    compiled: bool = False
    uniforms_core: str | None = None
    needs_extra: str | None = None
    known_defects: tuple[tuple[str, str, str], ...] = ()
    sources: tuple[Callable, ...] = field(default=(), repr=False)
    source_hash: str = field(init=False, default="")

    def __post_init__(self):
        try:
            digest = _hash_sources((self.fn, *self.sources))
        except (TypeError, OSError) as error:
            raise ValueError(f"cannot read the source of fn/sources for {self.name!r} ({error}); "
                             f"source_hash needs Python source. Fix: register a Python function "
                             f"defined in a file.") from None
        object.__setattr__(self, "source_hash", digest)

    def defect_on(self, dtype: torch.dtype | str, device: str = "cpu") -> str | None:
        """The known defect that makes this record inexact in ``dtype`` on ``device``, if any."""
        name = str(dtype).replace("torch.", "")
        kind = str(device).split(":")[0]
        return next((reason for dev, dt, reason in self.known_defects if dev == kind and dt == name), None)

    def expected_exact_on(self, dtype: torch.dtype | str, device: str = "cpu") -> bool:
        """``expected_exact``, unless a known defect applies in ``dtype`` on ``device``."""
        return self.expected_exact and self.defect_on(dtype, device) is None


def _hash_sources(parts: Iterable[Callable]) -> str:
    """sha256 over the source text of each part, in order."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(source_text(part).encode())
    return digest.hexdigest()


def _check_record(record: Implementation) -> None:
    if not isinstance(record.name, str) or not record.name:
        raise ValueError(f"name={record.name!r}: give each implementation a non-empty string name.")
    if record.contract not in IMPLEMENTATION_CONTRACTS:
        raise ValueError(f"contract={record.contract!r} for {record.name!r} is unknown; use one of "
                         f"{', '.join(IMPLEMENTATION_CONTRACTS)}.")
    if record.rule not in RULES:
        raise ValueError(f"rule={record.rule!r} for {record.name!r} is not in the rule catalogue; "
                         f"use one of {', '.join(RULES)}.")
    if record.bug_rule is not None and record.bug_rule not in RULES:
        raise ValueError(f"bug_rule={record.bug_rule!r} for {record.name!r} is not in the rule "
                         f"catalogue; use one of {', '.join(RULES)} or None.")
    if not callable(record.fn):
        raise ValueError(f"fn for {record.name!r} must be callable; got {type(record.fn).__name__}.")
    unknown = [d for d in record.dtypes if d not in SUPPORTED_DTYPES]
    if unknown or not record.dtypes:
        raise ValueError(f"dtypes={record.dtypes!r} for {record.name!r}: use a non-empty subset of "
                         f"{SUPPORTED_DTYPES}.")
    if not record.devices or any(d not in DEVICES for d in record.devices):
        raise ValueError(f"devices={record.devices!r} for {record.name!r}: use a non-empty subset "
                         f"of {DEVICES}.")
    if not isinstance(record.expected_exact, bool):
        raise ValueError(f"expected_exact={record.expected_exact!r} for {record.name!r} must be a bool.")
    names = [str(d).replace("torch.", "") for d in SUPPORTED_DTYPES]
    for entry in record.known_defects:
        if not (isinstance(entry, tuple) and len(entry) == 3 and entry[0] in DEVICES and entry[1] in names
                and isinstance(entry[2], str) and entry[2]):
            raise ValueError(f"known_defects entry {entry!r} for {record.name!r}: use (device, dtype name, "
                             f"reason) with device in {DEVICES} and dtype in {names}.")
    if not record.expected_exact and not record.bug:
        raise ValueError(f"{record.name!r} has expected_exact=False but no bug=...; say what makes "
                         f"it inexact.")


class Registry:
    """Ordered, name-unique collection of :class:`Implementation` records."""

    def __init__(self, records: Iterable[Implementation] = ()):
        self._records: dict[str, Implementation] = {}
        for record in records:
            self.add(record)

    def add(self, record: Implementation) -> Implementation:
        """Register ``record``; ``ValueError`` on a duplicate name or an invalid field."""
        if not isinstance(record, Implementation):
            raise TypeError(f"Registry.add takes an Implementation record; got "
                            f"{type(record).__name__}. Fix: wrap the function in Implementation(...).")
        _check_record(record)
        if record.name in self._records:
            raise ValueError(f"name={record.name!r} is already registered; names must be unique. "
                             f"Fix: pick a new name, e.g. {record.name + '-v2'!r}.")
        self._records[record.name] = record
        return record

    def get(self, name: str) -> Implementation:
        """The record called ``name``; ``KeyError`` listing close matches otherwise."""
        try:
            return self._records[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self._records), n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise KeyError(f"no implementation named {name!r}.{hint}") from None

    def select(self, *, contract: str | None = None, rule: str | None = None,
               expected_exact: bool | None = None, dtype: torch.dtype | str | None = None,
               device: str = "cpu") -> tuple[Implementation, ...]:
        """Records matching every given filter, in registration order; with ``dtype``,
        ``expected_exact`` is the per-dtype label (:meth:`Implementation.expected_exact_on`)."""
        if contract is not None and contract not in IMPLEMENTATION_CONTRACTS:
            raise ValueError(f"contract={contract!r} is unknown; use one of {', '.join(IMPLEMENTATION_CONTRACTS)}.")

        def exact(r: Implementation) -> bool:
            return r.expected_exact if dtype is None else r.expected_exact_on(dtype, device)

        return tuple(r for r in self._records.values()
                     if (contract is None or r.contract == contract)
                     and (rule is None or r.rule == rule)
                     and (expected_exact is None or exact(r) == expected_exact))

    def __iter__(self) -> Iterator[Implementation]:
        return iter(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, name: object) -> bool:
        return name in self._records
