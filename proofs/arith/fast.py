"""Vectorised exact arithmetic: the fast path of the exact reference.

The same :class:`~specproof.proofs.arith.interface.Arith` interface as the plain Fraction backend, but a vector
is stored as big integers over shared denominators in numpy object arrays, so each operation is one
vectorised pass instead of one ``Fraction`` per element:

* :class:`DVec` - ``num[i] / den`` with one common positive ``den`` (float inputs arrive like this:
  every float is ``m * 2^e``);
* :class:`QVec` - ``num[i] / den[i]`` elementwise, what a vector/vector division produces.

Scalars are :class:`~fractions.Fraction`.  Results are exact but unreduced.  Exact shortcuts keep
it fast: products ``num * factor`` and elementwise results are memoised (``p*Q`` serves the division
and the subtraction; ``max(0, p - q)`` is computed once for the residual and the TV), and
``q * (n / d)`` cancels when ``d == q * s`` on the support (known when ``d`` is that very memoised
product, as ``p/q`` leaves it; else checked exactly, elementwise; otherwise the general product is
used); ``select`` returns an operand itself where the condition picks it everywhere, and adding
or subtracting a scalar zero returns the vector itself.  Any case without a shortcut falls back to a
correct general formula.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from specproof.proofs.arith.interface import Arith, CompareByOperator
from specproof.proofs.arith.exact import exact_scalar

__all__ = ["DVec", "QVec", "FastExactArith"]


class DVec:
    """``num[i] / den``: Python ints in an object array over one positive int."""

    __slots__ = ("num", "den")

    def __init__(self, num: np.ndarray, den: int):
        if den <= 0:
            raise ValueError("DVec denominator must be positive")
        self.num = num
        self.den = den

    def __len__(self) -> int:
        return int(self.num.shape[0])

    def fraction(self, i: int) -> Fraction:
        return Fraction(int(self.num[i]), self.den)


class QVec:
    """``num[i] / den[i]`` with every ``den[i] > 0``."""

    __slots__ = ("num", "den")

    def __init__(self, num: np.ndarray, den: np.ndarray):
        self.num = num
        self.den = den

    def __len__(self) -> int:
        return int(self.num.shape[0])

    def fraction(self, i: int) -> Fraction:
        return Fraction(int(self.num[i]), int(self.den[i]))


def _lcm(a: int, b: int) -> int:
    return a // math.gcd(a, b) * b


class FastExactArith(CompareByOperator, Arith):
    """Exact, vectorised; one instance per computation (it memoises products of its operands)."""

    name = "fast-exact"

    def __init__(self) -> None:
        self._memo: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._results: dict[tuple[str, Any, Any], tuple[Any, Any, Any]] = {}

    # -- helpers ------------------------------------------------------------------------------
    def const(self, value: int | Fraction) -> Fraction:
        return exact_scalar(value)

    def _scaled(self, num: np.ndarray, factor: int) -> np.ndarray:
        """``num * factor``, memoised (the source array is kept alive with the entry)."""
        if factor == 1:
            return num
        key = (id(num), factor)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is num:
            return hit[1]
        out = num * factor
        self._memo[key] = (num, out)
        return out

    def _align(self, a: Any, b: Any) -> tuple[Any, Any, Any]:
        """Numerators of ``a`` and ``b`` over one denominator, and that denominator.

        A numerator is an array, or a Python int for a scalar (broadcasts).  The denominator is an
        int (DVec/scalars) or an array (when a QVec is involved)."""
        if isinstance(a, QVec) or isinstance(b, QVec):
            return self._align_q(a, b)
        a_den = a.den if isinstance(a, DVec) else a.denominator
        b_den = b.den if isinstance(b, DVec) else b.denominator
        den = a_den if a_den == b_den else _lcm(a_den, b_den)
        return self._num_over(a, den // a_den), self._num_over(b, den // b_den), den

    def _num_over(self, x: Any, factor: int) -> Any:
        if isinstance(x, DVec):
            return self._scaled(x.num, factor)
        return x.numerator * factor

    def _align_q(self, a: Any, b: Any) -> tuple[Any, Any, Any]:
        # a zero vector is 0 over any denominator: no cross multiplication (safe_div's fallback)
        if isinstance(a, DVec) and isinstance(b, QVec) and not a.num.any():
            return a.num, b.num, b.den
        if isinstance(b, DVec) and isinstance(a, QVec) and not b.num.any():
            return a.num, b.num, a.den
        qa, qb = self._as_q(a), self._as_q(b)
        if qa[1] is qb[1]:
            return qa[0], qb[0], qa[1]
        if isinstance(qa[1], int) and isinstance(qb[1], int):  # scalar vs scalar cannot reach here
            raise AssertionError("unreachable")
        if isinstance(qb[1], int):  # b is a scalar: over a's denominators
            n, d = qb
            return self._times(qa[0], d), self._times(qa[1], n), self._times(qa[1], d) if d != 1 else qa[1]
        if isinstance(qa[1], int):
            n, d = qa
            return self._times(qb[1], n), self._times(qb[0], d), self._times(qb[1], d) if d != 1 else qb[1]
        if qa[1].shape == qb[1].shape and bool(np.all(qa[1] == qb[1])):
            return qa[0], qb[0], qa[1]
        return qa[0] * qb[1], qb[0] * qa[1], qa[1] * qb[1]

    @staticmethod
    def _times(arr: Any, k: int) -> Any:
        if k == 1:
            return arr
        if k == 0 and isinstance(arr, np.ndarray):
            return np.zeros(arr.shape[0], dtype=object)
        return arr * k

    @staticmethod
    def _as_q(x: Any) -> tuple[Any, Any]:
        """(numerators, denominators) with scalars as (int, int) and DVec as (array, full array)."""
        if isinstance(x, QVec):
            return x.num, x.den
        if isinstance(x, DVec):
            return x.num, np.full(x.num.shape[0], x.den, dtype=object)
        return x.numerator, x.denominator

    @staticmethod
    def _lift(x: Any) -> Any:
        if isinstance(x, (DVec, QVec, np.ndarray)):
            return x
        return exact_scalar(x)

    @staticmethod
    def _wrap(num: Any, den: Any) -> Any:
        if isinstance(den, np.ndarray):
            if not isinstance(num, np.ndarray):
                num = np.full(den.shape[0], num, dtype=object)
            return QVec(num, den)
        if isinstance(num, np.ndarray):
            return DVec(num, den)
        return Fraction(num, den)

    def _binary(self, op: str, f: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return f(a, b)
        if op in ("add", "sub") and isinstance(b, Fraction) and b == 0:
            return a  # x + 0 = x - 0 = x: no array pass (safe_div's fallback adds a zero default)
        if op == "add" and isinstance(a, Fraction) and a == 0:
            return b
        key = (op, _identity(a), _identity(b))
        hit = self._results.get(key)
        if hit is not None:
            return hit[2]
        an, bn, den = self._align(a, b)
        out = self._wrap(f(an, bn), den)
        self._results[key] = (a, b, out)  # operands kept alive so their ids stay unique
        return out

    # -- primitives ---------------------------------------------------------------------------
    def add(self, a: Any, b: Any) -> Any:
        return self._binary("add", lambda x, y: x + y, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._binary("sub", lambda x, y: x - y, a, b)

    def minimum(self, a: Any, b: Any) -> Any:
        return self._binary("min", lambda x, y: np.minimum(x, y) if _any_array(x, y) else min(x, y), a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self._binary("max", lambda x, y: np.maximum(x, y) if _any_array(x, y) else max(x, y), a, b)

    def mul(self, a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a * b
        if isinstance(b, DVec) and isinstance(a, QVec):
            a, b = b, a
        if isinstance(a, DVec) and isinstance(b, QVec):
            cancelled = self._cancel(a, b)
            if cancelled is not None:
                return cancelled
        if isinstance(a, Fraction):
            a, b = b, a
        if isinstance(b, Fraction):
            if isinstance(a, DVec):
                # cancel gcd(b.num, a.den) first: often the whole numerator, leaving no array op
                g = math.gcd(b.numerator, a.den)
                return DVec(self._times(a.num, b.numerator // g), a.den // g * b.denominator)
            return QVec(self._times(a.num, b.numerator), self._times(a.den, b.denominator))
        an, ad = self._as_q(a)
        bn, bd = self._as_q(b)
        return QVec(an * bn, ad * bd)

    def _cancel(self, q: DVec, ratio: QVec) -> DVec | None:
        """``q * (n/d)`` as ``n / (q.den * s)`` when ``d == q.num * s`` wherever ``q.num != 0`` and
        ``n == 0`` wherever ``q.num == 0`` (then the product is exactly that); else None."""
        support = np.flatnonzero(q.num != 0)
        if support.size == 0:
            return None
        first = int(support[0])
        s, rem = divmod(int(ratio.den[first]), int(q.num[first]))
        if rem != 0 or s <= 0:
            return None
        off = q.num == 0
        if bool(np.any(ratio.num[off] != 0)):
            return None
        scaled = self._scaled(q.num, s)
        # ``ratio = p/q`` made its denominators as this very memoised product: equal, nothing to compare
        if ratio.den is not scaled and not bool(np.all(ratio.den[~off] == scaled[~off])):
            return None
        return DVec(ratio.num, q.den * s)

    def div(self, a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        if isinstance(b, Fraction):
            if b == 0:
                raise ZeroDivisionError("division by zero")
            if isinstance(a, Fraction):
                return a / b
            if isinstance(a, DVec):
                # (num/den) / (bn/bd); bd divides den for a total of this very vector: no array op
                scale, rem = divmod(a.den, b.denominator)
                if rem == 0:
                    num = a.num if b.numerator > 0 else -a.num
                    return DVec(num, scale * abs(b.numerator))
                return DVec(self._times(a.num, b.denominator) * (1 if b.numerator > 0 else -1),
                            a.den * abs(b.numerator))
            return self.mul(a, Fraction(b.denominator, b.numerator))
        an, ad = self._as_q(a)
        bn, bd = self._as_q(b)
        if isinstance(a, DVec) and isinstance(b, DVec):
            num = self._scaled(a.num, b.den)
            den = self._scaled(b.num, a.den)  # memoised: ``q * (p/q)`` finds it (:meth:`_cancel`)
        else:
            num, den = an * bd, bn * ad
        if not isinstance(den, np.ndarray):
            den = np.full(len(b), den, dtype=object)
        if not isinstance(num, np.ndarray):
            num = np.full(den.shape[0], num, dtype=object)
        if bool(np.any(den == 0)):
            raise ZeroDivisionError("division by zero")
        negative = den < 0
        if bool(np.any(negative)):
            num = np.where(negative, -num, num)
            den = np.where(negative, -den, den)
        return QVec(num, den)

    def total(self, v: Any) -> Fraction:
        v = self._lift(v)
        if isinstance(v, Fraction):
            return v
        if isinstance(v, DVec):
            return Fraction(int(v.num.sum()) if len(v) else 0, v.den)
        dens = v.den
        if bool(np.all(dens == dens[0])):
            return Fraction(int(v.num.sum()), int(dens[0]))
        return sum((Fraction(int(n), int(d)) for n, d in zip(v.num.tolist(), dens.tolist())), Fraction(0))

    def _compare(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return bool(op(a, b))
        an, bn, _ = self._align(a, b)  # denominators are positive, so comparing numerators suffices
        out = op(an, bn)
        return np.asarray(out, dtype=bool) if isinstance(out, np.ndarray) else bool(out)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        a, b = self._lift(a), self._lift(b)
        if isinstance(cond, (bool, np.bool_)):
            return a if cond else b
        # one side everywhere: that vector itself (its identity keeps the memoised products reachable)
        if isinstance(b, (DVec, QVec)) and not cond.any():
            return b
        if isinstance(a, (DVec, QVec)) and cond.all():
            return a
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            a = DVec(np.full(cond.shape[0], a.numerator, dtype=object), a.denominator)
        if isinstance(a, QVec) or isinstance(b, QVec):
            # keep the vector's own denominators where the scalar side is chosen, when possible
            an, bn, den = self._align(a, b)
            if not isinstance(an, np.ndarray):
                an = np.full(cond.shape[0], an, dtype=object)
            if not isinstance(bn, np.ndarray):
                bn = np.full(cond.shape[0], bn, dtype=object)
            return QVec(np.where(cond, an, bn), den)
        an, bn, den = self._align(a, b)
        return DVec(np.where(cond, an, bn), den)

    def mass_ahead(self, key: Any, weight: Any) -> Any:
        """Exact :meth:`Arith.mass_ahead`: one exact sort (ties to the lower index), then an
        exclusive prefix sum of ``weight`` in that order: ``O(V log V)``."""
        key, weight = self._lift(key), self._lift(weight)
        if isinstance(key, DVec):
            sort_key = key.num.tolist()  # common positive denominator: numerators order the values
        elif isinstance(key, QVec):
            sort_key = [Fraction(int(n), int(d)) for n, d in zip(key.num.tolist(), key.den.tolist())]
        else:
            raise TypeError("mass_ahead needs a vector key")
        n = len(sort_key)
        order = np.array(sorted(range(n), key=lambda i: (-sort_key[i], i)), dtype=np.int64)
        if isinstance(weight, Fraction):
            rank = np.empty(n, dtype=object)
            rank[order] = np.arange(n, dtype=object)
            return DVec(rank * weight.numerator, weight.denominator)
        if not isinstance(weight, DVec):
            weight = DVec(*self._common(weight))
        ordered = weight.num[order]
        ahead = np.empty(n, dtype=object)
        ahead[order] = np.concatenate([np.zeros(1, dtype=object), np.cumsum(ordered)[:-1]]) if n else ordered
        return DVec(ahead, weight.den)

    @staticmethod
    def _common(v: "QVec") -> tuple[np.ndarray, int]:
        """A QVec over its least common denominator (exact)."""
        den = 1
        for d in v.den.tolist():
            den = den // math.gcd(den, int(d)) * int(d)
        return np.array([int(n) * (den // int(d)) for n, d in zip(v.num.tolist(), v.den.tolist())],
                        dtype=object), den

    def log(self, a: Any) -> Any:
        raise TypeError(
            "the fast exact backend evaluates laws, not log-space predicates; "
            "use specproof.proofs.ExactArith for acceptance_test"
        )


def _identity(x: Any) -> Any:
    """Memo key of an operand: scalars by value, vectors by object identity."""
    return x if isinstance(x, Fraction) else id(x)


def _any_array(x: Any, y: Any) -> bool:
    return isinstance(x, np.ndarray) or isinstance(y, np.ndarray)
