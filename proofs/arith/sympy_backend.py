"""sympy interpretation of :class:`~specproof.proofs.arith.interface.Arith`: a rule as symbolic expressions.

Scalars are sympy expressions, vectors tuples of them, conditions sympy relationals or booleans.
``minimum``, ``maximum`` and ``select`` become two-branch :class:`sympy.Piecewise` terms, so a proof
can split on each branch (:func:`specproof.proofs.engine.solvers.prove_by_cases`) and check the rational-function identity
that remains in every case.  Numeric operands evaluate exactly (sympy rationals and algebraic numbers
such as a SpecTr ``rho`` with a square root), which makes this backend an exact evaluator beyond Q.

Logarithms are kept as their argument (:class:`SympyLog`) with the algebra rules may use on them:
``log a + log b = log(ab)`` and ``log a < log b <=> a < b`` (``log 0 = -inf``; sympy's own
``log(0)`` is complex infinity, which would not order).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import sympy

from specproof.proofs.arith.interface import Arith, TupleVectors

__all__ = ["SympyArith", "SympyLog"]


@dataclass(frozen=True)
class SympyLog:
    """``log(arg)`` for a non-negative sympy expression ``arg``."""

    arg: Any


class SympyArith(TupleVectors, Arith):
    """Symbolic real arithmetic with sympy."""

    name = "sympy"

    def const(self, value: int | Fraction) -> sympy.Expr:
        value = Fraction(value)
        return sympy.Rational(value.numerator, value.denominator)

    def _lift(self, x: Any) -> Any:
        if isinstance(x, (tuple, SympyLog, sympy.Basic)):
            return x
        if isinstance(x, list):
            return tuple(self._lift(e) for e in x)
        if isinstance(x, bool):
            return sympy.true if x else sympy.false
        if isinstance(x, (int, Fraction)):
            return self.const(x)
        raise TypeError(f"SympyArith takes sympy expressions, ints or Fractions, got {type(x).__name__}")

    @staticmethod
    def _numbers(op: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def g(x: Any, y: Any) -> Any:
            if isinstance(x, SympyLog) or isinstance(y, SympyLog):
                raise TypeError(f"{op} on a logarithm is not defined (only log + log and comparisons)")
            return f(x, y)
        return g

    @staticmethod
    def _branch(cond: Any, a: Any, b: Any) -> Any:
        if cond is sympy.true:
            return a
        if cond is sympy.false:
            return b
        return sympy.Piecewise((a, cond), (b, True))

    def add(self, a: Any, b: Any) -> Any:
        def f(x: Any, y: Any) -> Any:
            if isinstance(x, SympyLog) and isinstance(y, SympyLog):
                return SympyLog(x.arg * y.arg)
            return self._numbers("add", lambda s, t: s + t)(x, y)
        return self._map(f, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._map(self._numbers("sub", lambda x, y: x - y), a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._map(self._numbers("mul", lambda x, y: x * y), a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self._map(self._numbers("div", lambda x, y: x / y), a, b)

    def minimum(self, a: Any, b: Any) -> Any:
        return self._map(self._numbers("minimum", lambda x, y: self._branch(sympy.Le(x, y), x, y)), a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self._map(self._numbers("maximum", lambda x, y: self._branch(sympy.Ge(x, y), x, y)), a, b)

    def total(self, v: Any) -> Any:
        v = self._lift(v)
        if not isinstance(v, tuple):
            return v
        if any(isinstance(x, SympyLog) for x in v):
            raise TypeError("a total of logarithms is not defined in the sympy backend")
        return sympy.Add(*v)

    def _compare(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        def cmp(x: Any, y: Any) -> Any:
            if isinstance(x, SympyLog) != isinstance(y, SympyLog):
                raise TypeError("compare a logarithm with a logarithm (apply log to both sides)")
            if isinstance(x, SympyLog):
                return op(x.arg, y.arg)
            return op(x, y)

        return self._map(cmp, a, b)

    def lt(self, a: Any, b: Any) -> Any:
        return self._compare(sympy.Lt, a, b)

    def le(self, a: Any, b: Any) -> Any:
        return self._compare(sympy.Le, a, b)

    def eq(self, a: Any, b: Any) -> Any:
        return self._compare(sympy.Eq, a, b)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        cond, a, b = self._lift(cond), self._lift(a), self._lift(b)

        def pick(c: Any, x: Any, y: Any) -> Any:
            if isinstance(x, SympyLog) and isinstance(y, SympyLog):
                return SympyLog(self._branch(c, x.arg, y.arg))
            if isinstance(x, SympyLog) or isinstance(y, SympyLog):
                raise TypeError("select between a logarithm and a number")
            return self._branch(c, x, y)

        vec = [x for x in (cond, a, b) if isinstance(x, tuple)]
        if not vec:
            return pick(cond, a, b)
        n = len(vec[0])
        c_t, a_t, b_t = ((x if isinstance(x, tuple) else (x,) * n) for x in (cond, a, b))
        return tuple(pick(c, x, y) for c, x, y in zip(c_t, a_t, b_t))

    def log(self, a: Any) -> Any:
        a = self._lift(a)
        if isinstance(a, tuple):
            return tuple(SympyLog(x) for x in a)
        return SympyLog(a)
