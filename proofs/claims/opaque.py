"""The interface a user rule sees: opaque values that support only Arith operations.

:func:`guard_rule` wraps a :class:`~specproof.proofs.laws.step_rules.StepRule`'s functions so that they receive
:class:`OpaqueArith` and :class:`Value` s instead of a backend's own values (tuples of Fractions, z3
terms, a generic coordinate).  A rule therefore cannot tell the backends apart: ``len``, iteration,
indexing, ``bool()``, Python arithmetic and comparisons, ``hash`` raise :class:`RuleUsageError`
naming the Arith method to use; so does ``isinstance(p, tuple)`` (a branch on the backend's type).

Values carry a kind (number, condition, logarithm) checked by every operation, so returning a
condition as an acceptance, or adding a number to a logarithm, is a usage error in every backend.

Division: user rules may divide only with ``ar.safe_div(a, b, default)`` (``default`` where
``b = 0``); ``ar.div`` is refused, so no proof depends on a solver's value for ``x / 0``.

An error raised inside an Arith operation is remembered: a rule that catches it and carries on
still fails when it returns (so a rule cannot branch on which backend raised).  Any other exception
from the rule's code becomes a :class:`RuleUsageError` with the rule's name and the failing line.

Layer: proofs.claims (level 3, the top of proofs); may import proofs.engine, proofs.laws,
proofs.arith and proofs.errors.
"""

from __future__ import annotations

import dataclasses
import fractions
import sys
import traceback
from fractions import Fraction
from typing import Any, Callable

from specproof.proofs.arith.interface import Arith
from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import StepRule

__all__ = ["RuleUsageError", "Value", "OpaqueArith", "guard_rule"]

NUMBER, CONDITION, LOG = "number", "condition", "logarithm"

_FIX = {  # Python operation -> the Arith method to use instead
    "+": "ar.add(a, b)", "-": "ar.sub(a, b)", "*": "ar.mul(a, b)", "/": "ar.safe_div(a, b, default)",
    "//": "ar.safe_div(a, b, default)", "%": "no modulo exists in Arith", "**": "ar.mul repeatedly",
    "unary -": "ar.sub(ar.zero, a)", "abs()": "ar.maximum(a, ar.sub(ar.zero, a))",
    "<": "ar.lt(a, b)", "<=": "ar.le(a, b)", ">": "ar.gt(a, b)", ">=": "ar.ge(a, b)", "==": "ar.eq(a, b)",
    "!=": "ar.select(ar.eq(a, b), ar.zero, ar.one)", "bool()": "ar.select(cond, a, b)",
    "len()": "vectors have no length in a rule; write it elementwise (ar.total sums over tokens)",
    "iteration": "write it elementwise; ar.total sums over the vocabulary, ar.mass_ahead ranks tokens",
    "indexing": "write it elementwise; ar.mass_ahead(key, weight) compares a token with the others",
    "hash()": "values are not hashable; keep them in variables", "int()/float()": "ar.const(Fraction(...))",
    "and/or/not": "ar.select(c1, c2, cond_false) or ar.select(c, cond_false, cond_true)",
    "min()/max()": "ar.minimum(a, b) / ar.maximum(a, b)",
    "Fraction arithmetic": "ar.mul(ar.const(Fraction(1, 2)), p) (and ar.add, ar.sub, ar.safe_div)",
    "isinstance()/__class__": "nothing: a rule must treat every backend alike (ar.select to branch on values)",
}


class RuleUsageError(SpecproofInputError):
    """A user rule used something outside the Arith interface, or raised."""


class _Session:
    """The first error an Arith operation raised during one call of a rule function."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.error: BaseException | None = None

    def fail(self, err: BaseException) -> BaseException:
        if self.error is None:
            self.error = err
        return err

    def usage(self, operation: str, fix: str | None = None) -> RuleUsageError:
        return RuleUsageError(f"rule {self.rule!r}", f"{operation} on a rule value is not supported",
                              f"instead: {fix or _FIX[operation]}")  # type: ignore[return-value]


class Value:
    """An opaque backend value with its kind; only :class:`OpaqueArith` looks inside."""

    __slots__ = ("_value", "_kind", "_session")

    def __init__(self, value: Any, kind: str, session: _Session) -> None:
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_session", session)

    def _refuse(self, operation: str) -> Any:
        raise self._session.fail(self._session.usage(operation))

    def __repr__(self) -> str:
        return f"<rule {self._kind}>"

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # isinstance(v, tuple) looks this up: the branch itself is refused
        caller = sys._getframe(1).f_code.co_filename
        operation = "Fraction arithmetic" if caller == fractions.__file__ else "isinstance()/__class__"
        raise self._session.fail(self._session.usage(operation))

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._session.fail(self._session.usage("attribute assignment", "new variables"))

    def __bool__(self) -> bool:
        return self._refuse("bool()")

    def __len__(self) -> int:
        return self._refuse("len()")

    def __iter__(self) -> Any:
        return self._refuse("iteration")

    def __getitem__(self, key: Any) -> Any:
        return self._refuse("indexing")

    def __contains__(self, key: Any) -> bool:
        return self._refuse("iteration")

    def __hash__(self) -> int:
        return self._refuse("hash()")

    def __index__(self) -> int:
        return self._refuse("int()/float()")

    __int__ = __float__ = __complex__ = __round__ = __trunc__ = __floor__ = __ceil__ = __index__


def _refusing(operation: str) -> Callable[..., Any]:
    def method(self: Value, *args: Any) -> Any:
        return self._refuse(operation)
    method.__name__ = f"refuse {operation}"
    return method


for _op, _names in {"+": ("add", "radd"), "-": ("sub", "rsub"), "*": ("mul", "rmul"),
                    "/": ("truediv", "rtruediv"), "//": ("floordiv", "rfloordiv"), "%": ("mod", "rmod"),
                    "**": ("pow", "rpow"), "unary -": ("neg", "pos"), "abs()": ("abs",), "<": ("lt",),
                    "<=": ("le",), ">": ("gt",), ">=": ("ge",), "==": ("eq",), "!=": ("ne",),
                    "and/or/not": ("and", "rand", "or", "ror", "xor", "rxor", "invert")}.items():
    for _name in _names:
        setattr(Value, f"__{_name}__", _refusing(_op))


class OpaqueArith(Arith):
    """Arith over :class:`Value` s, delegating every operation to a backend and checking kinds."""

    name = "rule"

    def __init__(self, inner: Arith, session: _Session) -> None:
        self._inner = inner
        self._session = session

    def __getattr__(self, name: str) -> Any:
        raise self._session.fail(RuleUsageError(
            f"rule {self._session.rule!r}", f"ar.{name} is not part of the Arith interface",
            "use const, add, sub, mul, safe_div, minimum, maximum, relu, clamp, total, lt, le, gt, ge, eq, "
            "select, log, mass_ahead, normalise, zero, one"))

    def wrap(self, value: Any, kind: str = NUMBER) -> Value:
        return Value(value, kind, self._session)

    def _raw(self, x: Any, kinds: tuple[str, ...], operation: str) -> tuple[Any, str]:
        if type(x) is Value:
            if x._session is not self._session:
                raise self._session.fail(self._session.usage(f"{operation} with a value from another call",
                                                             "only values of this call"))
            if x._kind not in kinds:
                raise self._session.fail(RuleUsageError(
                    f"rule {self._session.rule!r}", f"ar.{operation} got a {x._kind}, expects a {' or a '.join(kinds)}",
                    "turn a condition into a number with ar.select(cond, ar.one, ar.zero); only + and "
                    "comparisons apply to logarithms"))
            return x._value, x._kind
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool) and NUMBER in kinds:
            return self._inner.const(x), NUMBER
        raise self._session.fail(RuleUsageError(
            f"rule {self._session.rule!r}", f"ar.{operation} got a {type(x).__name__}",
            "pass values built with Arith operations, or exact constants (int or Fraction, not float)"))

    def _call(self, operation: str, kind: str | None, args: tuple[Any, ...], kinds: tuple[str, ...]) -> Value:
        raw = [self._raw(a, kinds, operation) for a in args]
        found = {k for _, k in raw}
        if len(found) > 1:
            raise self._session.fail(RuleUsageError(
                f"rule {self._session.rule!r}", f"ar.{operation} mixes a {' and a '.join(sorted(found))}",
                "apply ar.log to both sides of a comparison; use ar.select for conditions"))
        try:
            value = getattr(self._inner, operation)(*(v for v, _ in raw))
        except Exception as err:  # the backend's error (e.g. not interpretable): remembered, re-raised
            raise self._session.fail(err)
        return self.wrap(value, kind or (raw[0][1] if raw else NUMBER))

    # -- primitives and derived operations, delegated (zero, one, gt, ge come from Arith) ----------
    def const(self, value: Any) -> Value:
        if type(value) is Value or isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise self._session.fail(RuleUsageError(
                f"rule {self._session.rule!r}", f"ar.const got a {type(value).__name__}",
                "pass an int or a Fraction (exact), e.g. ar.const(Fraction(1, 2))"))
        return self.wrap(self._inner.const(value))

    def add(self, a: Any, b: Any) -> Value:
        return self._call("add", None, (a, b), (NUMBER, LOG))

    def sub(self, a: Any, b: Any) -> Value:
        return self._call("sub", NUMBER, (a, b), (NUMBER,))

    def mul(self, a: Any, b: Any) -> Value:
        return self._call("mul", NUMBER, (a, b), (NUMBER,))

    def div(self, a: Any, b: Any) -> Value:
        raise self._session.fail(RuleUsageError(
            f"rule {self._session.rule!r}", "ar.div is not available to user rules (x / 0 has no value)",
            "use ar.safe_div(a, b, default): default where b = 0"))

    def safe_div(self, a: Any, b: Any, default: Any) -> Value:
        return self._call("safe_div", NUMBER, (a, b, default), (NUMBER,))

    def minimum(self, a: Any, b: Any) -> Value:
        return self._call("minimum", NUMBER, (a, b), (NUMBER,))

    def maximum(self, a: Any, b: Any) -> Value:
        return self._call("maximum", NUMBER, (a, b), (NUMBER,))

    def relu(self, a: Any) -> Value:
        return self._call("relu", NUMBER, (a,), (NUMBER,))

    def clamp(self, a: Any, lo: Any, hi: Any) -> Value:
        return self._call("clamp", NUMBER, (a, lo, hi), (NUMBER,))

    def normalise(self, v: Any) -> Value:
        return self._call("normalise", NUMBER, (v,), (NUMBER,))

    def total(self, v: Any) -> Value:
        return self._call("total", NUMBER, (v,), (NUMBER,))

    def mass_ahead(self, key: Any, weight: Any) -> Value:
        return self._call("mass_ahead", NUMBER, (key, weight), (NUMBER,))

    def lt(self, a: Any, b: Any) -> Value:
        return self._call("lt", CONDITION, (a, b), (NUMBER, LOG))

    def le(self, a: Any, b: Any) -> Value:
        return self._call("le", CONDITION, (a, b), (NUMBER, LOG))

    def eq(self, a: Any, b: Any) -> Value:
        return self._call("eq", CONDITION, (a, b), (NUMBER, LOG))

    def select(self, cond: Any, a: Any, b: Any) -> Value:
        c, _ = self._raw(cond, (CONDITION,), "select")
        (x, kx), (y, ky) = self._raw(a, (NUMBER, LOG, CONDITION), "select"), \
            self._raw(b, (NUMBER, LOG, CONDITION), "select")
        if kx != ky:
            raise self._session.fail(RuleUsageError(
                f"rule {self._session.rule!r}", f"ar.select between a {kx} and a {ky}",
                "give both branches the same kind"))
        try:
            return self.wrap(self._inner.select(c, x, y), kx)
        except Exception as err:
            raise self._session.fail(err)

    def log(self, a: Any) -> Value:
        return self._call("log", LOG, (a,), (NUMBER,))


def _location(err: BaseException, files: set[str]) -> str:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename in files]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name} ({(f.line or '').strip()})"


def _guard(rule: str, part: str, fn: Callable[..., Any], result_kind: str) -> Callable[..., Any]:
    files = {getattr(getattr(fn, "__code__", None), "co_filename", "")}

    def guarded(ar: Arith, *args: Any) -> Any:
        session = _Session(rule)
        opaque = OpaqueArith(ar, session)
        try:
            out = fn(opaque, *(opaque.wrap(a) for a in args))
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as err:  # the user's code: anything it raises is a usage error
            if err is session.error and not isinstance(err, RuleUsageError):
                raise  # the backend's own error (e.g. not interpretable here): the engine decides
            if isinstance(err, RuleUsageError):
                raise RuleUsageError(err.argument, f"{part}: {err.problem}{_location(err, files)}",
                                     err.fix) from None
            raise RuleUsageError(f"rule {rule!r}", f"{part} raised {type(err).__name__}: {err}"
                                 f"{_location(err, files)}",
                                 "write the rule with Arith operations only; it must not raise") from None
        if session.error is not None:
            err = session.error
            if isinstance(err, RuleUsageError):
                raise RuleUsageError(err.argument, f"{part}: {err.problem} (the error was caught inside the rule)",
                                     err.fix) from None
            raise err
        is_value = type(out) is Value
        if not is_value and isinstance(out, (int, Fraction)) and not isinstance(out, bool) and result_kind == NUMBER:
            return ar.const(out)
        if not is_value or out._session is not session or out._kind != result_kind:
            got = f"a {out._kind}" if is_value else f"a {type(out).__name__}"
            fix = {NUMBER: "return a number built with Arith operations (a condition becomes a number with "
                           "ar.select(cond, ar.one, ar.zero))",
                   CONDITION: "return a condition (ar.lt, ar.le, ar.eq, ar.select of conditions)"}[result_kind]
            raise RuleUsageError(f"rule {rule!r}", f"{part} returned {got}, not a {result_kind}", fix)
        return out._value

    return guarded


def guard_rule(rule: StepRule) -> StepRule:
    """The same rule, its functions running on opaque values (see the module docstring)."""
    test = rule.acceptance_test
    return dataclasses.replace(
        rule,
        acceptance=_guard(rule.name, "acceptance", rule.acceptance, NUMBER),
        residual_weight=_guard(rule.name, "residual_weight", rule.residual_weight, NUMBER),
        acceptance_test=None if test is None else _guard(rule.name, "acceptance_test", test, CONDITION))
