"""Exact reference outputs of a single-step verifier rule: :func:`exact_reference`.

Normalisation policy.  Float inputs rarely sum to exactly 1.  Each input is renormalised exactly
(``p / sum p`` in rationals) and the deviation ``sum p - 1`` is recorded.  The input is refused when
``|sum p - 1|`` exceeds the bound a correct float computation can produce: one rounding of every
entry to the input dtype (relative error ``u``) plus a recursive sum of ``V`` terms in the dtype the
runtime accumulates in (Higham's ``gamma_{V-1}``, float32 for half types)::

    |sum p - 1| <= u_dtype + gamma_{V-1}(u_accumulate)

Exact inputs (ints, Fractions, sympy Rationals) must sum to exactly 1.  ``weights=True`` accepts any
non-negative vector with a positive sum (counts, unnormalised weights) and normalises it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator, Sequence

import numpy as np

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.engine.results import fraction_string  # one definition; re-exported here
from specproof.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import CANONICAL, StepRule, get_step_rule, step_law

from specproof.harness.exact.convert import array_values, dyadic_array, is_exact_input, to_exact
from specproof.harness.exact.dtypes import DTYPES, dtype_info
from specproof.proofs.arith.fast import DVec, FastExactArith, QVec

__all__ = ["ExactVector", "ExactReference", "Normalisation", "exact_reference", "sum_bound", "takes_logs"]

FAST_PATH_MIN_VOCAB = 512


class ExactVector(Sequence[Fraction]):
    """A read-only vector of exact rationals; ``v[i]`` is a :class:`~fractions.Fraction`.

    Stored either as Fractions (plain path) or unreduced big-integer arrays (fast path)."""

    __slots__ = ("_store",)

    def __init__(self, store: Any):
        self._store = store

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index {index} out of range for a vector of length {len(self)}")
        if isinstance(self._store, (DVec, QVec)):
            return self._store.fraction(i)
        return self._store[i]

    def __iter__(self) -> Iterator[Fraction]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        head = ", ".join(str(x) for x in self[:4])
        return f"ExactVector([{head}{', ...' if len(self) > 4 else ''}], len={len(self)})"

    @property
    def store(self) -> Any:
        """The storage: a :class:`DVec`/:class:`QVec` of big integers (fast path) or a tuple of
        Fractions (plain path), for vectorised exact consumers such as the drift measurement."""
        return self._store

    def fractions(self) -> list[Fraction]:
        return list(self)

    def strings(self) -> list[str]:
        """Each entry as ``"num/den"`` (reduced), the JSON form of exact values."""
        return [fraction_string(x) for x in self]

    def to_float64(self) -> np.ndarray:
        """Correctly rounded float64 values (``float(Fraction)`` rounds correctly)."""
        return np.array([float(x) for x in self], dtype=np.float64)

    def equals(self, other: "ExactVector") -> bool:
        """Exact elementwise equality."""
        if len(self) != len(other):
            return False
        a, b = self._store, other._store
        if isinstance(a, DVec) and isinstance(b, DVec):
            ar = FastExactArith()
            return bool(np.all(ar.eq(a, b)))
        return all(x == y for x, y in zip(self, other))


@dataclass(frozen=True)
class Normalisation:
    """How one input was normalised: its exact sum, deviation from 1 and the bound it met."""

    argument: str
    dtype: str
    total: Fraction
    deviation: Fraction
    bound: Fraction | None  # None: weights=True, any positive sum accepted

    def as_json(self) -> dict[str, Any]:
        return {
            "argument": self.argument,
            "dtype": self.dtype,
            "sum": fraction_string(self.total),
            "deviation": fraction_string(self.deviation),
            "deviation_float": float(self.deviation),
            "bound": None if self.bound is None else fraction_string(self.bound),
        }


@dataclass(frozen=True)
class ExactReference:
    """Exact quantities of one verification step (all rationals; vectors are :class:`ExactVector`).

    ``target`` p normalised; ``accept`` A(x); ``accepted_mass`` q(x) A(x); ``residual`` the
    correction law; ``rejection`` 1 - sum q A; ``output`` accepted_mass + rejection * residual."""

    rule: str
    target: ExactVector
    draft: ExactVector
    accept: ExactVector
    accepted_mass: ExactVector
    residual: ExactVector
    rejection: Fraction
    output: ExactVector
    acceptance_rate: Fraction
    residual_mass: Fraction
    tv_target_draft: Fraction
    output_equals_target: bool
    method: str
    normalisation: tuple[Normalisation, Normalisation]

    @property
    def vocab(self) -> int:
        return len(self.target)

    def acceptance_of(self, token: int) -> Fraction:
        """A(token) for a drafted token; refuses tokens the draft can never propose."""
        if not 0 <= token < self.vocab:
            raise SpecproofInputError("token", f"{token} is outside the vocabulary [0, {self.vocab})",
                                      "pick a token id in range")
        if self.draft[token] == 0:
            raise SpecproofInputError("token", f"draft token {token} has q = 0 and is never proposed",
                                      "pick a token in the draft law's support")
        return self.accept[token]

    def tv_output_target(self) -> Fraction:
        """Exact total variation between the implied output law and the target."""
        if self.output_equals_target:
            return Fraction(0)
        return sum((abs(a - b) for a, b in zip(self.output, self.target)), Fraction(0)) / 2

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "vocab": self.vocab,
            "method": self.method,
            "rejection": fraction_string(self.rejection),
            "acceptance_rate": fraction_string(self.acceptance_rate),
            "residual_mass": fraction_string(self.residual_mass),
            "tv_target_draft": fraction_string(self.tv_target_draft),
            "output_equals_target": self.output_equals_target,
            "tv_output_target": fraction_string(self.tv_output_target()),
            "normalisation": [n.as_json() for n in self.normalisation],
            "target": self.target.strings(),
            "draft": self.draft.strings(),
            "accept": self.accept.strings(),
            "accepted_mass": self.accepted_mass.strings(),
            "residual": self.residual.strings(),
            "output": self.output.strings(),
        }


def takes_logs(rule: StepRule) -> bool:
    """True when the rule takes logarithms of the data (probed once on a two-token law)."""
    class Probe(ExactArith):
        used = False

        def log(self, a: Any) -> Any:
            Probe.used = True
            return super().log(a)

    half, point = (Fraction(1, 2), Fraction(1, 2)), (Fraction(1), Fraction(0))
    probe = Probe()
    rule.acceptance(probe, half, point)
    rule.residual_weight(probe, half, point)
    return Probe.used


def sum_bound(dtype: str, vocab: int) -> Fraction:
    """``u_dtype + gamma_{V-1}(u_accumulate)``: how far a correct float law's sum may be from 1."""
    info = dtype_info(dtype)
    return info.unit_roundoff + DTYPES[info.accumulate].gamma(max(vocab - 1, 0))


def _input_kind(x: Any, argument: str) -> str:
    """'exact', 'array' (numpy/torch) or 'floats' (a Python list/tuple of floats)."""
    if isinstance(x, ExactVector) or is_exact_input(x):
        return "exact"
    if isinstance(x, np.ndarray) or type(x).__module__.startswith("torch"):
        return "array"
    if isinstance(x, (list, tuple)):
        return "floats"
    raise SpecproofInputError(argument, f"unsupported input of type {type(x).__name__}",
                              "pass a list, a numpy array or a torch tensor")


def _as_vector(x: Any, argument: str, fast: bool) -> tuple[Any, str]:
    """The input as a backend vector (DVec for the fast path, tuple of Fractions otherwise)."""
    if isinstance(x, ExactVector):
        store = x._store
        if fast and isinstance(store, DVec):
            return store, "exact"
        x = list(x)
    kind = _input_kind(x, argument)
    if kind == "array" and getattr(x, "ndim", 1) != 1:
        raise SpecproofInputError(argument, f"expected a 1-D vector, got shape {tuple(x.shape)}",
                                  "pass one law over the vocabulary")
    if kind == "array" and fast:
        nums, exponent, dtype = dyadic_array(x, argument)
        if exponent >= 0:
            return DVec(nums * (1 << exponent), 1), dtype
        return DVec(nums, 1 << -exponent), dtype
    if kind == "array":
        _, dtype = array_values(x, argument)
        values = to_exact(x, argument)
    else:
        values = to_exact(list(x), argument)
        dtype = "exact" if kind == "exact" else "float64"
    if any(isinstance(v, tuple) for v in values):
        raise SpecproofInputError(argument, "expected a 1-D vector, got nested sequences",
                                  "pass one law over the vocabulary")
    if fast:
        den = 1
        for v in values:
            den = den // math.gcd(den, v.denominator) * v.denominator
        nums = np.array([v.numerator * (den // v.denominator) for v in values], dtype=object)
        return DVec(nums, den), dtype
    return tuple(values), dtype


def _check_law(ar: Any, vec: Any, argument: str, dtype: str, weights: bool) -> tuple[Any, Normalisation]:
    n = len(vec)
    if n == 0:
        raise SpecproofInputError(argument, "is empty", "pass at least one probability")
    negative = ar.lt(vec, ar.zero)
    if bool(np.any(negative)) if isinstance(negative, np.ndarray) else any(negative):
        raise SpecproofInputError(argument, "has negative entries", "pass non-negative probabilities")
    total = ar.total(vec)
    if total == 0:
        raise SpecproofInputError(argument, "sums to zero (all entries are 0)",
                                  "pass a law with positive mass")
    deviation = total - 1
    bound = None
    if not weights:
        bound = Fraction(0) if dtype == "exact" else sum_bound(dtype, n)
        if abs(deviation) > bound:
            raise SpecproofInputError(
                argument,
                f"sums to {float(total):.10g}, off from 1 by {float(abs(deviation)):.3g} > the "
                f"{dtype} bound {float(bound):.3g}",
                "pass a normalised law, or weights=True (CLI --weights) to normalise any positive vector",
            )
    return ar.div(vec, total), Normalisation(argument, dtype, total, deviation, bound)


def exact_reference(p: Any, q: Any, *, rule: str | StepRule = CANONICAL, weights: bool = False,
                    method: str = "auto") -> ExactReference:
    """The exact law of one verification step of ``rule`` for target ``p`` and draft ``q``.

    ``p``, ``q``: 1-D laws over one vocabulary as lists (ints, Fractions, sympy Rationals or floats),
    numpy arrays or torch tensors of any float dtype.  ``method``: ``"fast"`` (vectorised big
    integers), ``"plain"`` (one Fraction per element) or ``"auto"`` (fast for arrays and for
    vocabularies of at least 512).  Both interpret the same rule and agree exactly.
    Raises :class:`~specproof.proofs.SpecproofInputError` on bad input.
    """
    rule = get_step_rule(rule)
    if method not in ("auto", "fast", "plain"):
        raise SpecproofInputError("method", f"unknown method {method!r}", "use 'auto', 'fast' or 'plain'")
    sizes = []
    for name, x in (("p", p), ("q", q)):
        try:
            sizes.append(len(x))
        except TypeError:
            raise SpecproofInputError(name, f"{type(x).__name__} is not a vector",
                                      "pass a list, numpy array or torch tensor") from None
    if sizes[0] != sizes[1]:
        raise SpecproofInputError("q", f"length {sizes[1]} differs from p's length {sizes[0]}",
                                  "pass p and q over the same vocabulary")
    if method == "auto":
        fast = sizes[0] >= FAST_PATH_MIN_VOCAB or any(_input_kind(x, n) == "array" for n, x in (("p", p), ("q", q)))
    else:
        fast = method == "fast"
    if fast and method == "auto" and takes_logs(rule):
        fast = False  # logs of the data (typical acceptance) have no vectorised exact form
    ar = FastExactArith() if fast else ExactArith()
    p_vec, p_dtype = _as_vector(p, "p", fast)
    q_vec, q_dtype = _as_vector(q, "q", fast)
    target, p_norm = _check_law(ar, p_vec, "p", p_dtype, weights)
    draft, q_norm = _check_law(ar, q_vec, "q", q_dtype, weights)
    try:
        law = step_law(ar, rule, target, draft)
    except TypeError as err:
        if fast:
            raise SpecproofInputError("method", f"rule {rule.name!r} cannot run on the fast path ({err})",
                                      "use method='plain'") from None
        raise
    tv = ar.total(ar.relu(ar.sub(target, draft)))
    target_v, output_v = ExactVector(target), ExactVector(law.output)
    return ExactReference(
        rule=rule.name,
        target=target_v,
        draft=ExactVector(draft),
        accept=ExactVector(law.accept),
        accepted_mass=ExactVector(law.accepted_mass),
        residual=ExactVector(law.residual),
        rejection=law.rejection,
        output=output_v,
        acceptance_rate=law.acceptance_rate,
        residual_mass=law.residual_mass,
        tv_target_draft=tv,
        output_equals_target=output_v.equals(target_v),
        method="fast" if fast else "plain",
        normalisation=(p_norm, q_norm),
    )
