"""The arithmetic interface that every verifier rule is written against.

A rule is written once as a function of an :class:`Arith` and its operands; each backend interprets
it: exact rationals (:mod:`.exact`), the vectorised common-denominator fast path
(``specproof.proofs.arith.fast``), torch tensors in a chosen dtype (:mod:`.torch_backend`),
sympy and z3 (the proofs).  Values are backend-specific: a backend decides how a scalar, a vector
over the vocabulary and a condition look.  Binary operations broadcast a scalar against a vector.

Only the primitives are abstract; the derived operations below are written once, here, in terms of
the primitives, so every backend agrees on what ``relu`` or ``safe_div`` mean.
"""

from __future__ import annotations

import abc
import operator
from fractions import Fraction
from typing import Any, Callable

__all__ = ["Arith", "TupleVectors", "CompareByOperator"]


class Arith(abc.ABC):
    """Primitive operations a rule may use; subclasses interpret them."""

    name: str = "abstract"

    # -- primitives ---------------------------------------------------------------------------
    @abc.abstractmethod
    def const(self, value: int | Fraction) -> Any:
        """A scalar constant given as an exact int or Fraction."""

    @abc.abstractmethod
    def add(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def sub(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def mul(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def div(self, a: Any, b: Any) -> Any:
        """``a / b``; the caller guarantees ``b != 0`` (use :meth:`safe_div` otherwise)."""

    @abc.abstractmethod
    def minimum(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def maximum(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def total(self, v: Any) -> Any:
        """``sum_x v(x)`` over the vocabulary axis, a scalar.  A backend needs ``v`` to be a vector (it
        does not know ``n`` for a scalar); a traced rule's ``total(s)`` of a scalar means ``n s``, which
        the graph evaluates as the total of ``0 * p + s`` (:mod:`.graph`)."""

    @abc.abstractmethod
    def lt(self, a: Any, b: Any) -> Any:
        """Condition ``a < b``."""

    @abc.abstractmethod
    def le(self, a: Any, b: Any) -> Any:
        """Condition ``a <= b``."""

    @abc.abstractmethod
    def eq(self, a: Any, b: Any) -> Any:
        """Condition ``a == b``."""

    @abc.abstractmethod
    def select(self, cond: Any, a: Any, b: Any) -> Any:
        """``a`` where ``cond`` holds, else ``b`` (elementwise)."""

    @abc.abstractmethod
    def log(self, a: Any) -> Any:
        """Natural logarithm, with ``log 0 = -inf``; only ``+`` and comparisons apply to the result."""

    # -- derived, written once ----------------------------------------------------------------
    @property
    def zero(self) -> Any:
        return self.const(0)

    @property
    def one(self) -> Any:
        return self.const(1)

    def gt(self, a: Any, b: Any) -> Any:
        return self.lt(b, a)

    def ge(self, a: Any, b: Any) -> Any:
        return self.le(b, a)

    def relu(self, a: Any) -> Any:
        """``max(0, a)``."""
        return self.maximum(a, self.zero)

    def clamp(self, a: Any, lo: Any, hi: Any) -> Any:
        """``min(hi, max(lo, a))``."""
        return self.minimum(self.maximum(a, lo), hi)

    def safe_div(self, a: Any, b: Any, default: Any) -> Any:
        """``a / b`` where ``b != 0``, else ``default`` (no division by zero is evaluated).

        The result has the shape of ``a / b`` even when ``b`` is a scalar zero: ``default`` is
        broadcast as ``0 * a + default``."""
        b_is_zero = self.eq(b, self.zero)
        fallback = self.add(self.mul(a, self.zero), default)
        return self.select(b_is_zero, fallback, self.div(a, self.select(b_is_zero, self.one, b)))

    def normalise(self, v: Any) -> Any:
        """``v / sum v``; the zero vector stays zero (a law that is never reached)."""
        return self.safe_div(v, self.total(v), self.zero)

    # -- ordering over the vocabulary ---------------------------------------------------------
    def mass_ahead(self, key: Any, weight: Any) -> Any:
        """For each token ``x``: ``sum_y weight(y) [y ranks ahead of x]``, where ``y`` ranks ahead of
        ``x`` when ``key(y) > key(x)``, or ``key(y) == key(x)`` and ``y < x`` (ties go to the lower
        index, a strict total order).  ``mass_ahead(p, 1)`` is the rank (0 for the argmax),
        ``mass_ahead(p, p)`` the mass strictly ahead (top-p).  ``weight`` may be a scalar.

        Written here with scalar primitives for backends whose vectors are tuples (exact, sympy,
        z3: ``O(n^2)`` terms); array backends override it with a vectorised version."""
        if not isinstance(key, tuple):
            raise TypeError(f"{type(self).__name__}.mass_ahead needs tuple vectors or an override; "
                            f"got {type(key).__name__}")
        n = len(key)
        weights = weight if isinstance(weight, tuple) else (weight,) * n
        out = []
        for x in range(n):
            acc = self.zero
            for y in range(n):
                if y == x:
                    continue
                ahead = self.le(key[x], key[y]) if y < x else self.lt(key[x], key[y])
                acc = self.add(acc, self.select(ahead, weights[y], self.zero))
            out.append(acc)
        return tuple(out)


class CompareByOperator:
    """``lt``/``le``/``eq`` for backends that implement one ``_compare(op, a, b)`` applying a Python
    comparison operator elementwise to their own values."""

    def _compare(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:  # pragma: no cover
        raise TypeError(f"{type(self).__name__} must implement _compare")

    def lt(self, a: Any, b: Any) -> Any:
        return self._compare(operator.lt, a, b)

    def le(self, a: Any, b: Any) -> Any:
        return self._compare(operator.le, a, b)

    def eq(self, a: Any, b: Any) -> Any:
        return self._compare(operator.eq, a, b)


class TupleVectors:
    """Elementwise application for backends whose vectors are tuples (exact, sympy, z3): a binary
    ``f`` broadcasts a scalar against a vector; two vectors must have one length."""

    def _lift(self, x: Any) -> Any:  # pragma: no cover - every user overrides it
        return x

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
