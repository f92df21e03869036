"""z3 interpretation of :class:`~specproof.proofs.arith.interface.Arith`: a rule as real-arithmetic formulas.

Scalars are z3 real terms, vectors are tuples of terms, conditions are z3 booleans; ``minimum``,
``maximum`` and ``select`` become ``If`` terms, so a rule evaluated here is the very definition the
exact backend evaluates, now as a formula over symbolic ``p`` and ``q``.

Every :class:`Z3Arith` carries its own :class:`z3.Context` (no module-global solver state): two provers
never share terms or solvers.

Logarithms: z3 has no ``log``; a logarithm is kept as its argument (:class:`Z3Log`) with exactly the
algebra a rule may use on it (the :class:`~specproof.proofs.arith.interface.Arith` contract): ``log a + log b =
log(ab)`` and ``log a < log b <=> a < b`` for ``a, b >= 0`` with ``log 0 = -inf``.  Both are theorems
of real analysis (``log`` is strictly increasing and multiplicative on ``[0, inf)``, extended by
``-inf``), so a proof about :class:`Z3Log` terms is a proof about the real logarithm - where every
argument is ``>= 0``: :attr:`Z3Arith.log_arguments` records them for that obligation.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator

import z3

from specproof.proofs.arith.interface import Arith, CompareByOperator, TupleVectors

__all__ = ["Z3Arith", "Z3Log", "z3_fraction"]


@dataclass(frozen=True)
class Z3Log:
    """``log(arg)`` for a non-negative z3 term ``arg`` (the caller's assumptions make it so)."""

    arg: Any


@contextlib.contextmanager
def unlimited_digits() -> Iterator[None]:
    """Lift Python's int-digit limit while an exact numeral crosses z3's decimal-string interface (z3
    reads and writes numerals as decimal text; a constant over 4,300 digits is still exact)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def z3_fraction(value: Any) -> Fraction:
    """A z3 rational numeral (or a real algebraic number, rounded to 40 decimals) as a Fraction."""
    with unlimited_digits():
        if z3.is_rational_value(value):
            return Fraction(value.numerator_as_long(), value.denominator_as_long())
        if z3.is_algebraic_value(value):
            approx = value.approx(40)
            return Fraction(approx.numerator_as_long(), approx.denominator_as_long())
    raise TypeError(f"not a z3 real numeral: {value!r}")


class Z3Arith(TupleVectors, CompareByOperator, Arith):
    """Real arithmetic as z3 terms in one private :class:`z3.Context`."""

    name = "z3"

    def __init__(self, ctx: z3.Context | None = None):
        self.ctx = ctx if ctx is not None else z3.Context()
        self._fresh = 0
        self.log_arguments: list[Any] = []
        """Every term a logarithm was taken of: the algebra above holds only where each is >= 0,
        which a caller proves as its own obligation."""

    # -- variables ----------------------------------------------------------------------------
    def real(self, name: str) -> z3.ArithRef:
        return z3.Real(name, self.ctx)

    def vector(self, name: str, n: int) -> tuple[z3.ArithRef, ...]:
        """``(name_0, ..., name_{n-1})`` as fresh real variables."""
        return tuple(z3.Real(f"{name}_{i}", self.ctx) for i in range(n))

    def fresh(self, prefix: str) -> z3.ArithRef:
        self._fresh += 1
        return z3.Real(f"{prefix}!{self._fresh}", self.ctx)

    def true(self) -> z3.BoolRef:
        return z3.BoolVal(True, self.ctx)

    def all_of(self, conditions: Any) -> z3.BoolRef:
        conditions = list(conditions)
        return z3.And(conditions) if conditions else self.true()

    def any_of(self, conditions: Any) -> z3.BoolRef:
        conditions = list(conditions)
        return z3.Or(conditions) if conditions else z3.BoolVal(False, self.ctx)

    def simplex(self, v: tuple[Any, ...]) -> z3.BoolRef:
        """``v >= 0`` and ``sum v == 1``."""
        return self.all_of([x >= 0 for x in v] + [z3.Sum(list(v)) == 1])

    # -- primitives ---------------------------------------------------------------------------
    def const(self, value: int | Fraction) -> z3.ArithRef:
        value = Fraction(value)
        with unlimited_digits():
            return z3.RealVal(f"{value.numerator}/{value.denominator}", self.ctx)

    def _lift(self, x: Any) -> Any:
        if isinstance(x, (tuple, Z3Log)) or z3.is_expr(x):
            return x
        if isinstance(x, list):
            return tuple(self._lift(e) for e in x)
        if isinstance(x, bool):
            return z3.BoolVal(x, self.ctx)
        if isinstance(x, (int, Fraction)):
            return self.const(x)
        raise TypeError(f"Z3Arith takes z3 terms, ints or Fractions, got {type(x).__name__}")

    @staticmethod
    def _add(x: Any, y: Any) -> Any:
        if isinstance(x, Z3Log) and isinstance(y, Z3Log):
            return Z3Log(x.arg * y.arg)
        if isinstance(x, Z3Log) or isinstance(y, Z3Log):
            raise TypeError("only log + log is defined on logarithms in the z3 backend")
        return x + y

    @staticmethod
    def _scalar_only(op: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def g(x: Any, y: Any) -> Any:
            if isinstance(x, Z3Log) or isinstance(y, Z3Log):
                raise TypeError(f"{op} on a logarithm is not interpretable in the z3 backend "
                                "(only log + log and comparisons are)")
            return f(x, y)
        return g

    def add(self, a: Any, b: Any) -> Any:
        return self._map(self._add, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._map(self._scalar_only("sub", lambda x, y: x - y), a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._map(self._scalar_only("mul", lambda x, y: x * y), a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self._map(self._scalar_only("div", lambda x, y: x / y), a, b)

    def minimum(self, a: Any, b: Any) -> Any:
        return self._map(self._scalar_only("minimum", lambda x, y: z3.If(x <= y, x, y)), a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self._map(self._scalar_only("maximum", lambda x, y: z3.If(x >= y, x, y)), a, b)

    def total(self, v: Any) -> Any:
        v = self._lift(v)
        if not isinstance(v, tuple):
            return v
        if any(isinstance(x, Z3Log) for x in v):
            raise TypeError("a total of logarithms is not interpretable in the z3 backend")
        return z3.Sum(list(v)) if v else self.const(0)

    def _compare(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        def cmp(x: Any, y: Any) -> Any:
            if isinstance(x, Z3Log) != isinstance(y, Z3Log):
                raise TypeError("compare a logarithm with a logarithm (apply log to both sides)")
            if isinstance(x, Z3Log):
                return op(x.arg, y.arg)
            return op(x, y)

        return self._map(cmp, a, b)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        cond, a, b = self._lift(cond), self._lift(a), self._lift(b)

        def pick(c: Any, x: Any, y: Any) -> Any:
            if z3.is_true(c):
                return x
            if z3.is_false(c):
                return y
            if isinstance(x, Z3Log) and isinstance(y, Z3Log):
                return Z3Log(z3.If(c, x.arg, y.arg))
            if isinstance(x, Z3Log) or isinstance(y, Z3Log):
                raise TypeError("select between a logarithm and a number")
            return z3.If(c, x, y)

        if isinstance(cond, tuple):
            n = len(cond)
            a_t = a if isinstance(a, tuple) else (a,) * n
            b_t = b if isinstance(b, tuple) else (b,) * n
            return tuple(pick(c, x, y) for c, x, y in zip(cond, a_t, b_t))
        if isinstance(a, tuple) or isinstance(b, tuple):
            n = len(a) if isinstance(a, tuple) else len(b)
            a_t = a if isinstance(a, tuple) else (a,) * n
            b_t = b if isinstance(b, tuple) else (b,) * n
            return tuple(pick(cond, x, y) for x, y in zip(a_t, b_t))
        return pick(cond, a, b)

    def log(self, a: Any) -> Any:
        a = self._lift(a)
        self.log_arguments += list(a) if isinstance(a, tuple) else [a]
        if isinstance(a, tuple):
            return tuple(Z3Log(x) for x in a)
        return Z3Log(a)
