"""The interface a user rule sees, and the tracer that runs it once: opaque values recording a graph.

:func:`trace_rule` calls each function of a :class:`~specproof.proofs.laws.step_rules.StepRule` exactly
once, with an :class:`OpaqueArith` and symbolic :class:`Value` s (``p``, ``q``, ``u``); every Arith
operation it performs is recorded as a node of a :class:`~specproof.proofs.arith.graph.Graph`.  The
engines then evaluate that graph, never the rule (:func:`traced_rule`).  A value is an empty handle:
it holds no backend value (there is none while tracing) and no slot or attribute a rule can read;
what it stands for is kept by the tracer, keyed by the handle's identity.  ``len``, iteration,
indexing, ``bool()``, Python arithmetic and comparisons, ``hash``, calling raise
:class:`RuleUsageError` naming the Arith method to use; so does ``isinstance(p, tuple)``.

Values carry a kind (number, condition, logarithm) checked by every operation, so returning a
condition as an acceptance, or adding a number to a logarithm, is a usage error.

Division: user rules may divide only with ``ar.safe_div(a, b, default)`` (``default`` where
``b = 0``); ``ar.div`` is refused, so no proof depends on a solver's value for ``x / 0``.

A usage error raised inside an Arith operation is remembered: a rule that catches it and carries on
still fails when it returns.  Any other exception from the rule's code becomes a
:class:`RuleUsageError` with the rule's name and the failing line.
"""

from __future__ import annotations

import dataclasses
import fractions
import sys
import traceback
from fractions import Fraction
from typing import Any, Callable

from specproof.proofs.arith.graph import CONDITION, FUNCTIONS, LOG, NUMBER, Graph, GraphBuilder, exact_constant
from specproof.proofs.arith.interface import Arith
from specproof.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import StepRule

__all__ = ["RuleUsageError", "Value", "OpaqueArith", "trace_rule", "traced_rule", "own_frame_lookup"]

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
    "a call": "ar.one and ar.zero are properties: write ar.one, not ar.one(); ar.const(k) for other constants",
}



class RuleUsageError(SpecproofInputError):
    """A user rule used something outside the Arith interface, or raised."""


_OWN_LOOKUPS = [0]
"""How many of specproof's own frame look-ups are under way (the child's audit hook allows those)."""


class own_frame_lookup:  # noqa: N801 - used as a context manager
    """Marks specproof's own frame inspection (naming Fraction arithmetic, locating an error's line)."""

    def __enter__(self) -> None:
        _OWN_LOOKUPS[0] += 1

    def __exit__(self, *exc: Any) -> None:
        _OWN_LOOKUPS[0] -= 1

    @staticmethod
    def active() -> bool:
        return _OWN_LOOKUPS[0] > 0


class _Session:
    """One call of one rule function: its first usage error, and what each handle stands for."""

    def __init__(self, rule: str, builder: GraphBuilder) -> None:
        self.rule = rule
        self.builder = builder
        self.error: BaseException | None = None

    def fail(self, err: BaseException) -> BaseException:
        if self.error is None:
            self.error = err
        return err

    def usage(self, operation: str, fix: str | None = None) -> RuleUsageError:
        return RuleUsageError(f"rule {self.rule!r}", f"{operation} on a rule value is not supported",
                              f"instead: {fix or _FIX[operation]}")  # type: ignore[return-value]


_HANDLES: dict[int, tuple["Value", int, str, _Session]] = {}
"""``id(handle) -> (handle, node, kind, session)`` for the handles of the trace under way."""


def _meaning(x: Any) -> tuple[int, str, _Session] | None:
    found = _HANDLES.get(id(x))
    return None if found is None or found[0] is not x else found[1:]


class Value:
    """An opaque handle for a traced value; it has no state of its own (see the module docstring)."""

    __slots__ = ()

    def _refuse(self, operation: str) -> Any:
        found = _meaning(self)
        if found is None:
            raise RuleUsageError("rule", f"{operation} on a value of a finished trace", "only values of this call")
        raise found[2].fail(found[2].usage(operation))

    def __repr__(self) -> str:
        found = _meaning(self)
        return f"<rule {found[1] if found else 'value'}>"

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # isinstance(v, tuple) looks this up: the branch itself is refused
        with own_frame_lookup():
            caller = sys._getframe(1).f_code.co_filename
        return self._refuse("Fraction arithmetic" if caller == fractions.__file__ else "isinstance()/__class__")

    def __setattr__(self, name: str, value: Any) -> None:
        self._refuse("attribute assignment")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("a call")

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


_FIX["attribute assignment"] = "new variables"


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

_ARITH_NAMES = ("const, add, sub, mul, safe_div, minimum, maximum, relu, clamp, total, lt, le, gt, ge, eq, "
                "select, log, mass_ahead, normalise, zero, one")


class OpaqueArith(Arith):
    """The Arith a rule receives while it is traced: each operation checks kinds and records a node."""

    name = "rule"
    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise self._session().fail(RuleUsageError(
            f"rule {self._session().rule!r}", f"ar.{name} is not part of the Arith interface",
            f"use {_ARITH_NAMES}"))

    def _session(self) -> _Session:
        return _ARITHS[id(self)][1]

    def _handle(self, node: int, kind: str) -> Value:
        value = Value()
        _HANDLES[id(value)] = (value, node, kind, self._session())
        return value

    def _node(self, x: Any, kinds: tuple[str, ...], operation: str) -> tuple[int, str]:
        session = self._session()
        found = _meaning(x)
        if found is not None:
            node, kind, owner = found
            if owner is not session:
                raise session.fail(session.usage(f"{operation} with a value from another call",
                                                 "only values of this call"))
            if kind not in kinds:
                raise session.fail(RuleUsageError(
                    f"rule {session.rule!r}", f"ar.{operation} got a {kind}, expects a {' or a '.join(kinds)}",
                    "turn a condition into a number with ar.select(cond, ar.one, ar.zero); only + and "
                    "comparisons apply to logarithms"))
            return node, kind
        if type(x) is Value:
            raise session.fail(session.usage(f"{operation} with a value from another call", "only values of this call"))
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool) and NUMBER in kinds:
            return session.builder.const(exact_constant(x)), NUMBER
        raise session.fail(RuleUsageError(
            f"rule {session.rule!r}", f"ar.{operation} got a {type(x).__name__}",
            "pass values built with Arith operations, or exact constants (int or Fraction, not float)"))

    def _call(self, operation: str, args: tuple[Any, ...], kinds: tuple[str, ...]) -> Value:
        session = self._session()
        nodes = [self._node(a, kinds, operation) for a in args]
        found = {k for _, k in nodes}
        if len(found) > 1:
            raise session.fail(RuleUsageError(
                f"rule {session.rule!r}", f"ar.{operation} mixes a {' and a '.join(sorted(found))}",
                "apply ar.log to both sides of a comparison; use ar.select for conditions"))
        node = session.builder.apply(operation, [n for n, _ in nodes])
        return self._handle(node, session.builder.nodes[node].kind)

    # -- the recorded operations (zero, one, gt, ge, relu, clamp, normalise come from Arith) -------
    def const(self, value: Any) -> Value:
        session = self._session()
        try:
            node = session.builder.const(value)
        except TypeError:
            raise session.fail(RuleUsageError(
                f"rule {session.rule!r}", f"ar.const got a {type(value).__name__}",
                "pass an int or a Fraction (exact), e.g. ar.const(Fraction(1, 2))")) from None
        return self._handle(node, NUMBER)

    def add(self, a: Any, b: Any) -> Value:
        return self._call("add", (a, b), (NUMBER, LOG))

    def sub(self, a: Any, b: Any) -> Value:
        return self._call("sub", (a, b), (NUMBER,))

    def mul(self, a: Any, b: Any) -> Value:
        return self._call("mul", (a, b), (NUMBER,))

    def div(self, a: Any, b: Any) -> Value:
        session = self._session()
        raise session.fail(RuleUsageError(
            f"rule {session.rule!r}", "ar.div is not available to user rules (x / 0 has no value)",
            "use ar.safe_div(a, b, default): default where b = 0"))

    def safe_div(self, a: Any, b: Any, default: Any) -> Value:
        return self._call("safe_div", (a, b, default), (NUMBER,))

    def minimum(self, a: Any, b: Any) -> Value:
        return self._call("minimum", (a, b), (NUMBER,))

    def maximum(self, a: Any, b: Any) -> Value:
        return self._call("maximum", (a, b), (NUMBER,))

    def total(self, v: Any) -> Value:
        return self._call("total", (v,), (NUMBER,))

    def mass_ahead(self, key: Any, weight: Any) -> Value:
        return self._call("mass_ahead", (key, weight), (NUMBER,))

    def lt(self, a: Any, b: Any) -> Value:
        return self._call("lt", (a, b), (NUMBER, LOG))

    def le(self, a: Any, b: Any) -> Value:
        return self._call("le", (a, b), (NUMBER, LOG))

    def eq(self, a: Any, b: Any) -> Value:
        return self._call("eq", (a, b), (NUMBER, LOG))

    def select(self, cond: Any, a: Any, b: Any) -> Value:
        session = self._session()
        c, _ = self._node(cond, (CONDITION,), "select")
        (x, kx), (y, ky) = self._node(a, (NUMBER, LOG, CONDITION), "select"), \
            self._node(b, (NUMBER, LOG, CONDITION), "select")
        if kx != ky:
            raise session.fail(RuleUsageError(f"rule {session.rule!r}", f"ar.select between a {kx} and a {ky}",
                                              "give both branches the same kind"))
        node = session.builder.apply("select", (c, x, y))
        return self._handle(node, kx)

    def log(self, a: Any) -> Value:
        return self._call("log", (a,), (NUMBER,))


_ARITHS: dict[int, tuple[OpaqueArith, _Session]] = {}
"""``id(ar) -> (ar, session)`` for the calls being traced."""


def _location(err: BaseException, files: set[str]) -> str:
    with own_frame_lookup():
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename in files]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name} ({(f.line or '').strip()})"


_RESULT_KIND = {"acceptance": NUMBER, "residual_weight": NUMBER, "acceptance_test": CONDITION}


def _trace_one(rule: str, part: str, fn: Callable[..., Any], builder: GraphBuilder) -> int:
    """Call ``fn`` once on symbolic inputs; the node it returns."""
    files = {getattr(getattr(fn, "__code__", None), "co_filename", "")}
    result_kind = _RESULT_KIND[part]
    session = _Session(rule, builder)
    ar = OpaqueArith()
    _ARITHS[id(ar)] = (ar, session)
    inputs = []
    for name in FUNCTIONS[part]:
        handle = Value()
        _HANDLES[id(handle)] = (handle, builder.input(name), NUMBER, session)
        inputs.append(handle)
    try:
        out = fn(ar, *inputs)
    except BaseException as err:  # the user's code: anything it raises is a usage error
        if isinstance(err, RuleUsageError):
            raise RuleUsageError(err.argument, f"{part}: {err.problem}{_location(err, files)}", err.fix) from None
        raise RuleUsageError(f"rule {rule!r}", f"{part} raised {type(err).__name__}: {err}{_location(err, files)}",
                             "write the rule with Arith operations only; it must not raise or exit") from None
    finally:
        del _ARITHS[id(ar)]
    if session.error is not None:
        err = session.error
        assert isinstance(err, RuleUsageError)
        raise RuleUsageError(err.argument, f"{part}: {err.problem} (the error was caught inside the rule)",
                             err.fix) from None
    found = _meaning(out)
    if found is None and isinstance(out, (int, Fraction)) and not isinstance(out, bool) and result_kind == NUMBER:
        return builder.const(exact_constant(out))
    if found is None or found[2] is not session or found[1] != result_kind:
        got = (f"a {type(out).__name__}" if found is None else
               f"a {found[1]} computed in another call" if found[2] is not session else f"a {found[1]}")
        fix = {NUMBER: "return a number built with Arith operations (a condition becomes a number with "
                       "ar.select(cond, ar.one, ar.zero))",
               CONDITION: "return a condition (ar.lt, ar.le, ar.eq, ar.select of conditions)"}[result_kind]
        raise RuleUsageError(f"rule {rule!r}", f"{part} returned {got}, not a {result_kind} value", fix)
    return found[0]


def trace_rule(rule: StepRule) -> Graph:
    """Each of ``rule``'s functions called exactly once, traced into one hash-consed graph."""
    builder = GraphBuilder()
    roots: dict[str, int] = {}
    try:
        for part in FUNCTIONS:
            fn = getattr(rule, part)
            if fn is None and part == "acceptance_test":
                continue
            if not callable(fn):
                raise RuleUsageError(f"rule {rule.name!r}", f"{part} is a {type(fn).__name__}, not a function",
                                     f"pass {part}=a function of (ar, {', '.join(FUNCTIONS[part])})")
            roots[part] = _trace_one(rule.name, part, fn, builder)
    finally:
        _HANDLES.clear()
    return builder.graph(roots)


def traced_rule(rule: StepRule, graph: Graph) -> StepRule:
    """``rule`` with its functions replaced by the graph's: every engine evaluates the graph."""
    return dataclasses.replace(rule, acceptance=graph.function("acceptance"),
                               residual_weight=graph.function("residual_weight"),
                               acceptance_test=graph.function("acceptance_test"))
