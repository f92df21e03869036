"""Exact rational interpretation of :class:`~specproof.proofs.arith.interface.Arith`.

Scalars are :class:`fractions.Fraction`; vectors are tuples of Fractions; conditions are bools or
tuples of bools.  Floats are refused: exact code takes ints and Fractions only (convert floats with
``specproof.harness.to_exact``, the one exact conversion).  This is the *plain* per-element path.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from specproof.proofs.arith.interface import Arith, CompareByOperator, TupleVectors

__all__ = ["ExactArith", "ExactLog", "ExactLogSum", "exact_scalar"]


def exact_scalar(x: Any) -> Fraction:
    """An int or Fraction as a Fraction; anything else (a float above all) is a programming error."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Fraction(x)
    raise TypeError(
        f"exact arithmetic takes int or Fraction, got {type(x).__name__} {x!r}; "
        "convert floats with specproof.harness.to_exact first"
    )


@dataclass(frozen=True, order=False)
class ExactLog:
    """``log(arg)`` for a rational ``arg >= 0`` kept symbolically: ``log a + log b = log(ab)`` and
    ``log a < log b <=> a < b`` (log is strictly increasing), so log-space rules stay exact."""

    arg: Fraction

    def __post_init__(self) -> None:
        if self.arg < 0:
            raise ValueError(f"log of a negative number {self.arg}")


@dataclass(frozen=True)
class ExactLogSum:
    """``sum_i c_i log a_i`` with rationals ``c_i`` and ``a_i >= 0`` (``log 0 = -inf``): what a rational
    multiple or a total of logarithms gives (``sum_x p(x) log p(x) = -H(p)``).  A term with ``c = 0``
    is dropped (``0 log 0 = 0``, the entropy convention).  Comparisons stay exact: for finite sums,
    with ``D`` a common denominator of the ``c_i``, ``sum c_i log a_i < sum d_j log b_j`` iff
    ``prod a_i^(c_i D) < prod b_j^(d_j D)`` (integer powers of rationals)."""

    terms: tuple[tuple[Fraction, Fraction], ...]

    def __post_init__(self) -> None:
        for c, a in self.terms:
            if a < 0:
                raise ValueError(f"log of a negative number {a}")
            if c == 0:
                raise ValueError("zero coefficients are dropped before an ExactLogSum is built")


def _log_terms(x: Any) -> tuple[tuple[Fraction, Fraction], ...]:
    if isinstance(x, ExactLog):
        return ((Fraction(1), x.arg),)
    return x.terms


def _log_sum(terms: Any) -> ExactLogSum:
    return ExactLogSum(tuple((Fraction(c), Fraction(a)) for c, a in terms if c != 0))


def _infinity(terms: tuple[tuple[Fraction, Fraction], ...]) -> int:
    """-1 for -inf, +1 for +inf, 0 when finite; ``-inf + inf`` is undefined and refused."""
    signs = {(-1 if c > 0 else 1) for c, a in terms if a == 0}
    if len(signs) > 1:
        raise ValueError("log sum with both -inf and +inf terms is undefined")
    return signs.pop() if signs else 0


@functools.lru_cache(maxsize=256)
def _interval_total(terms: tuple[tuple[Fraction, Fraction], ...], bits: int) -> tuple[Any, Any]:
    """Outward-rounded enclosure ``(lo, hi)`` of ``sum c log a`` at ``bits`` of precision (cached: the
    entropy of one law is compared against every token's log-probability)."""
    from mpmath import iv

    saved = iv.prec
    iv.prec = bits
    try:
        acc = iv.mpf(0)
        for c, a in terms:
            acc += (iv.mpf(c.numerator) / c.denominator) * iv.log(iv.mpf(a.numerator) / a.denominator)
        return acc.a, acc.b
    finally:
        iv.prec = saved


def _interval_sign(tx: tuple[tuple[Fraction, Fraction], ...], ty: tuple[tuple[Fraction, Fraction], ...]) -> int:
    """Sign of ``sum c log a - sum d log b`` decided by outward-rounded interval arithmetic, or 0
    when the enclosures still overlap at every precision tried (a possible tie)."""
    for bits in (128, 1024, 8192):
        x_lo, x_hi = _interval_total(tx, bits)
        y_lo, y_hi = _interval_total(ty, bits)
        if x_lo > y_hi:
            return 1
        if x_hi < y_lo:
            return -1
    return 0


def _log_compare(x: Any, y: Any) -> int:
    """Sign of ``x - y`` for two exact logarithms or log sums (``-inf == -inf``).

    Certified interval arithmetic decides almost every comparison; only a possible tie falls back to
    the exact test ``prod a_i^(c_i D)`` vs ``prod b_j^(d_j D)``, whose powers can be huge."""
    tx, ty = _log_terms(x), _log_terms(y)
    ix, iy = _infinity(tx), _infinity(ty)
    if ix or iy:
        return (ix > iy) - (ix < iy)
    sign = _interval_sign(tx, ty)
    if sign:
        return sign
    den = 1
    for c, _ in tx + ty:
        den = den * c.denominator // math.gcd(den, c.denominator)

    def power(terms: tuple[tuple[Fraction, Fraction], ...]) -> Fraction:
        out = Fraction(1)
        for c, a in terms:
            out *= a ** int(c * den)
        return out

    left, right = power(tx), power(ty)
    return (left > right) - (left < right)


class ExactArith(TupleVectors, CompareByOperator, Arith):
    """Exact rationals, element by element."""

    name = "exact"

    def const(self, value: int | Fraction) -> Fraction:
        return exact_scalar(value)

    @staticmethod
    def _lift(x: Any) -> Any:
        if isinstance(x, (tuple, ExactLog, ExactLogSum, bool)):
            return x
        if isinstance(x, list):
            return tuple(x)
        return exact_scalar(x)

    @staticmethod
    def _add(x: Any, y: Any) -> Any:
        if isinstance(x, ExactLog) and isinstance(y, ExactLog):
            return ExactLog(x.arg * y.arg)
        x_log, y_log = isinstance(x, (ExactLog, ExactLogSum)), isinstance(y, (ExactLog, ExactLogSum))
        if x_log and y_log:
            return _log_sum(_log_terms(x) + _log_terms(y))
        if x_log or y_log:
            raise TypeError("only log + log is defined on exact logarithms")
        return x + y

    @staticmethod
    def _mul(x: Any, y: Any) -> Any:
        x_log, y_log = isinstance(x, (ExactLog, ExactLogSum)), isinstance(y, (ExactLog, ExactLogSum))
        if x_log and y_log:
            raise TypeError("log * log is not defined on exact logarithms")
        if x_log or y_log:
            factor, log = (y, x) if x_log else (x, y)
            return _log_sum((c * factor, a) for c, a in _log_terms(log))
        return x * y

    def add(self, a: Any, b: Any) -> Any:
        return self._map(self._add, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._map(lambda x, y: x - y, a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._map(self._mul, a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self._map(lambda x, y: x / y, a, b)

    def minimum(self, a: Any, b: Any) -> Any:
        return self._map(min, a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self._map(max, a, b)

    def total(self, v: Any) -> Fraction:
        v = self._lift(v)
        if not isinstance(v, tuple):
            return v
        if any(isinstance(x, (ExactLog, ExactLogSum)) for x in v):
            if not v or not all(isinstance(x, (ExactLog, ExactLogSum)) for x in v):
                raise TypeError("a total mixes logarithms and numbers")
            return _log_sum(t for x in v for t in _log_terms(x))
        return sum(v, Fraction(0))

    @staticmethod
    def _key(x: Any) -> Any:
        return x.arg if isinstance(x, ExactLog) else x

    def _compare(self, op: Callable[[Any, Any], bool], a: Any, b: Any) -> Any:
        def cmp(x: Any, y: Any) -> bool:
            x_log, y_log = isinstance(x, (ExactLog, ExactLogSum)), isinstance(y, (ExactLog, ExactLogSum))
            if x_log != y_log:
                raise TypeError("compare a logarithm with a logarithm (apply log to both sides)")
            if isinstance(x, ExactLogSum) or isinstance(y, ExactLogSum):
                return op(_log_compare(x, y), 0)
            return op(self._key(x), self._key(y))

        return self._map(cmp, a, b)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        if isinstance(cond, bool):
            return self._lift(a) if cond else self._lift(b)
        a, b = self._lift(a), self._lift(b)
        n = len(cond)
        a_t = a if isinstance(a, tuple) else (a,) * n
        b_t = b if isinstance(b, tuple) else (b,) * n
        return tuple(x if c else y for c, x, y in zip(cond, a_t, b_t))

    def log(self, a: Any) -> Any:
        a = self._lift(a)
        if isinstance(a, tuple):
            return tuple(ExactLog(x) for x in a)
        return ExactLog(a)
