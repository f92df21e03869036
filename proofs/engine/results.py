"""What a proof attempt returns: a verdict, its evidence, and how it was obtained.

* :class:`Verdict` - ``PROVED``, ``REFUTED`` (with a :class:`Counterexample`), ``INCONCLUSIVE`` (the
  solver's reason; never counted as proved) or ``VACUOUS`` (the assumptions are unsatisfiable, so
  "proved" would mean nothing; assumptions are checked before any goal).
* :class:`Obligation` - one machine-checked step (a lemma, a case, a direct solver check).
* :class:`Counterexample` - exact rationals a reader (or the harness, as an adversarial scenario) can
  replay: ``p``, ``q``, the rule's ``output`` law, the ``target`` law it should equal, ``tv``, the rule's
  ``params`` and rule-specific ``extra`` data (documented on the class).
* :class:`WorstCase` - the largest TV found over the simplex for a small ``n``, with a certified upper
  bound where the solver gave one.
* :class:`ProofResult` - one catalogue rule's verdict with all of the above, its ``scope`` (``"every n"``,
  ``"n = 2..4 (bounded)"``, the witness's size) and the :class:`Assumption` s it rests on, plus solver
  versions and limits; :meth:`ProofResult.as_json` writes exact values as ``"num/den"`` strings.

``BOUNDED`` means every obligation held, but some only for the sizes in the scope: never PROVED.
:class:`Verdict` lives in :mod:`.vocabulary` (with every other verdict word and its severity).
"""

from __future__ import annotations

import enum
import platform
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from specproof.verdicts import Verdict  # defined in the one verdict vocabulary; re-exported

__all__ = [
    "Verdict",
    "Basis",
    "Obligation",
    "Assumption",
    "Counterexample",
    "WorstCase",
    "ProofResult",
    "DEFAULT_RLIMIT",
    "DEFAULT_TIMEOUT",
    "solver_versions",
    "fraction_string",
    "exact_json",
    "combine",
]

DEFAULT_RLIMIT = 20_000_000
"""z3 resource limit per solver check (deterministic, unlike a wall-clock timeout)."""

DEFAULT_TIMEOUT = 120.0
"""Seconds one rule may take in ``specproof prove`` (a child process, stopped at expiry)."""


class Basis(str, enum.Enum):
    """What an obligation's verdict rests on.

    ``machine``: a solver or exact computation checked it for the stated domain; ``bounded``: checked
    only for the sizes in the obligation's ``detail`` (never evidence for every ``n``); ``assumption``:
    not checked here, taken from the named ``source`` (a paper lemma, a textbook fact)."""

    MACHINE = "machine"
    BOUNDED = "bounded"
    ASSUMPTION = "assumption"


def combine(verdicts: Any) -> Verdict:
    """Verdict of a conjunction of obligations: REFUTED beats VACUOUS beats INCONCLUSIVE beats PROVED.

    A structured prover's summary only; the verdict a user sees comes from
    :func:`specproof.proofs.engine.verdicts.decide` (which also weighs basis and witnesses)."""
    verdicts = list(verdicts)
    for v in (Verdict.REFUTED, Verdict.VACUOUS, Verdict.INCONCLUSIVE):
        if v in verdicts:
            return v
    return Verdict.PROVED


def solver_versions(rlimit: int = DEFAULT_RLIMIT) -> dict[str, Any]:
    """The versions and limits a verdict depends on."""
    import sympy
    import z3

    return {"z3": z3.get_version_string(), "sympy": sympy.__version__, "python": platform.python_version(),
            "z3_rlimit": rlimit}


def fraction_string(x: Fraction | int) -> str:
    """``"num/den"``; integers beyond Python's 4,300-digit string limit (a certified softmax of logits
    spread by thousands) are converted with the limit lifted for this call: their size is bounded by
    the caller (:data:`~specproof.harness.exact.softmax.MAX_LOGIT_SPREAD`)."""
    x = Fraction(x)
    num, den = x.numerator, x.denominator
    if max(abs(num), den).bit_length() < 14000:  # < 4,215 decimal digits
        return f"{num}/{den}"
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # 0: no limit on this Python
    if limit:
        sys.set_int_max_str_digits(0)
    try:
        return f"{num}/{den}"
    finally:
        if limit:
            sys.set_int_max_str_digits(limit)


def exact_json(value: Any) -> Any:
    """Fractions (and ints that stand for exact numbers) as ``"num/den"``; containers recursively.

    Dict keys that are tuples (sequence prefixes) become ``"0,1"`` strings (``""`` for the empty one)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (Fraction, int)):
        return fraction_string(value)
    if isinstance(value, Mapping):
        return {(",".join(map(str, k)) if isinstance(k, tuple) else str(k)): exact_json(v)
                for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [exact_json(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"cannot write {type(value).__name__} as exact JSON")


@dataclass(frozen=True)
class Obligation:
    """One checked step: ``statement`` under its ``method``; ``detail`` says what the checker reported."""

    name: str
    statement: str
    verdict: Verdict
    method: str
    seconds: float = 0.0
    detail: str = ""
    basis: Basis = Basis.MACHINE
    source: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "statement": self.statement, "verdict": self.verdict.value,
                "method": self.method, "seconds": round(self.seconds, 4), "detail": self.detail,
                "basis": self.basis.value, "source": self.source}


@dataclass(frozen=True)
class Assumption:
    """A statement a verdict rests on without a machine check here, and where it comes from."""

    statement: str
    source: str

    def as_json(self) -> dict[str, str]:
        return {"statement": self.statement, "source": self.source}


@dataclass(frozen=True)
class Counterexample:
    """Exact witness that a rule does not reproduce its target law.

    ``p``, ``q``: target and draft laws (tuples of Fractions, one entry per token).
    ``output``: the rule's exact output law at ``(p, q)``; for multi-token rules, the law of the first
    ``K+1`` tokens after continuation, as ``{token tuple: probability}``.
    ``target``: the law the rule should produce (``p``, or the processed ``p`` for processors; for
    multi-token rules the target's law over ``K+1`` tokens).  ``tv``: exact ``TV(output, target)``.
    ``params``: the rule's parameters (``k``, ``eps``, ``l``, ...), exact.
    ``extra``: rule-specific data needed to replay it: ``"r"`` (the law drafts were really sampled from),
    ``"processor"``, ``"tables"`` ``{"vocab", "k", "target": {prefix: row}, "draft": {prefix: row}}``
    for multi-token rules (then ``p``/``q`` are the rows at the empty prefix)."""

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    output: Any
    target: Any
    tv: Fraction
    params: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"p": exact_json(self.p), "q": exact_json(self.q), "output": exact_json(self.output),
                "target": exact_json(self.target), "tv": fraction_string(self.tv),
                "params": _param_json(self.params), "extra": _param_json(self.extra)}


def _param_json(value: Any) -> Any:
    """Like :func:`exact_json`, but plain ints (counts such as ``k`` or ``vocab``) stay ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return {(",".join(map(str, k)) if isinstance(k, tuple) else str(k)): _param_json(v)
                for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_param_json(v) for v in value]
    return exact_json(value)


@dataclass(frozen=True)
class WorstCase:
    """Largest TV to the target over the simplex at vocabulary size ``n``.

    ``lower`` is attained exactly at ``witness``; ``upper`` (or None) is a bound no point exceeds, as
    certified by ``method``; ``certified`` says whether ``upper`` is solver-certified (z3 ``unsat`` of
    ``TV > upper``) rather than trivial (``TV <= 1``)."""

    n: int
    lower: Fraction
    upper: Fraction
    certified: bool
    method: str
    witness: Counterexample

    def as_json(self) -> dict[str, Any]:
        return {"n": self.n, "lower": fraction_string(self.lower), "upper": fraction_string(self.upper),
                "certified": self.certified, "method": self.method, "witness": self.witness.as_json()}


@dataclass(frozen=True)
class ProofResult:
    """One rule's (or theorem's) verdict.  ``ok`` is true when the verdict is the one its claim
    predicts (``exact`` and ``theorem`` -> PROVED, ``not-exact`` -> REFUTED)."""

    rule: str
    claim: str
    verdict: Verdict
    method: str
    n: str
    seconds: float
    versions: Mapping[str, Any]
    counterexample: Counterexample | None = None
    worst_case: tuple[WorstCase, ...] = ()
    reason: str = ""
    obligations: tuple[Obligation, ...] = ()
    notes: tuple[str, ...] = ()
    scope: str = ""
    assumptions: tuple[Assumption, ...] = ()

    @property
    def expected(self) -> Verdict:
        return Verdict.REFUTED if self.claim == "not-exact" else Verdict.PROVED

    @property
    def ok(self) -> bool:
        return self.verdict == self.expected

    @property
    def tv(self) -> Fraction | None:
        return self.counterexample.tv if self.counterexample is not None else None

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "claim": self.claim,
            "verdict": self.verdict.value,
            "expected": self.expected.value,
            "ok": self.ok,
            "method": self.method,
            "n": self.n,
            "counterexample": self.counterexample.as_json() if self.counterexample else None,
            "tv": fraction_string(self.tv) if self.tv is not None else None,
            "worst_case": [w.as_json() for w in self.worst_case],
            "seconds": round(self.seconds, 4),
            "versions": dict(self.versions),
            "reason": self.reason,
            "obligations": [o.as_json() for o in self.obligations],
            "notes": list(self.notes),
            "scope": self.scope or self.n,
            "assumptions": [a.as_json() for a in self.assumptions],
        }
