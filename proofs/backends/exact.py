"""Exact rational interpretation of :class:`~specproof.proofs.arith.Arith`.

Scalars are :class:`fractions.Fraction`; vectors are tuples of Fractions; conditions are bools or
tuples of bools.  Floats are refused: exact code takes ints and Fractions only (convert floats with
``specproof.harness.to_exact``, the one exact conversion).  This is the *plain* per-element path.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ..arith import Arith

__all__ = ["ExactArith", "ExactLog", "exact_scalar"]


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


class ExactArith(Arith):
    """Exact rationals, element by element."""

    name = "exact"

    def const(self, value: int | Fraction) -> Fraction:
        return exact_scalar(value)

    @staticmethod
    def _lift(x: Any) -> Any:
        if isinstance(x, (tuple, ExactLog, bool)):
            return x
        if isinstance(x, list):
            return tuple(x)
        return exact_scalar(x)

    def _map(self, f: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        a_vec, b_vec = isinstance(a, tuple), isinstance(b, tuple)
        if a_vec and b_vec:
            if len(a) != len(b):
                raise ValueError(f"vector lengths differ: {len(a)} vs {len(b)}")
            return tuple(f(x, y) for x, y in zip(a, b))
        if a_vec:
            return tuple(f(x, b) for x in a)
        if b_vec:
            return tuple(f(a, y) for y in b)
        return f(a, b)

    @staticmethod
    def _add(x: Any, y: Any) -> Any:
        if isinstance(x, ExactLog) and isinstance(y, ExactLog):
            return ExactLog(x.arg * y.arg)
        if isinstance(x, ExactLog) or isinstance(y, ExactLog):
            raise TypeError("only log + log is defined on exact logarithms")
        return x + y

    def add(self, a: Any, b: Any) -> Any:
        return self._map(self._add, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._map(lambda x, y: x - y, a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._map(lambda x, y: x * y, a, b)

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
        return sum(v, Fraction(0))

    @staticmethod
    def _key(x: Any) -> Any:
        return x.arg if isinstance(x, ExactLog) else x

    def _compare(self, op: Callable[[Any, Any], bool], a: Any, b: Any) -> Any:
        def cmp(x: Any, y: Any) -> bool:
            if isinstance(x, ExactLog) != isinstance(y, ExactLog):
                raise TypeError("compare a logarithm with a logarithm (apply log to both sides)")
            return op(self._key(x), self._key(y))

        return self._map(cmp, a, b)

    def lt(self, a: Any, b: Any) -> Any:
        return self._compare(lambda x, y: x < y, a, b)

    def le(self, a: Any, b: Any) -> Any:
        return self._compare(lambda x, y: x <= y, a, b)

    def eq(self, a: Any, b: Any) -> Any:
        return self._compare(lambda x, y: x == y, a, b)

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
