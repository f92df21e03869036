"""A traced rule as data: a small typed, hash-consed expression graph over the Arith operations.

A user rule runs once, in a child process, on symbolic inputs (``p``, ``q``, and ``u`` for an
acceptance test); every Arith operation it performs becomes one :class:`Node` of a :class:`Graph`.
Every engine (exact, fast exact, sympy, z3, the generic coordinate, torch, the grid notes, the witness
search, the report) then evaluates the *graph* with its own Arith (:func:`Graph.function`), never
the rule's code: a rule cannot behave differently for different engines because it is not running
when they look.

The meaning of each operation is written once, here (:func:`_apply`), in terms of the primitives of
:class:`~specproof.proofs.arith.interface.Arith`:

* ``total(v)`` is ``sum_x v(x)``; a *scalar* ``s`` is broadcast over the vocabulary first, so
  ``total(s) = n s`` (``total(ar.one) = n``), in every engine (the broadcast is ``0 * p + s``);
* ``safe_div(a, b, d)`` is :meth:`Arith.safe_div` (``d`` where ``b = 0``; no ``x / 0`` evaluated);
* ``mass_ahead(key, weight)`` is :meth:`Arith.mass_ahead` (ties to the lower index);
* ``log(a)`` is :meth:`Arith.log` (``log 0 = -inf``; only ``+`` and comparisons apply to a logarithm).

Constants are exact: a plain ``int`` or ``Fraction`` of any size (a subclass is normalised to the
plain value its numerator and denominator denote).  On the wire (:meth:`Graph.as_data`,
:meth:`Graph.from_data`) a graph is JSON-compatible lists and strings; integers travel as
hexadecimal strings (no decimal conversion, so no int-digit limit), and :meth:`from_data` validates
every field, so the parent process that decides a verdict only ever reads plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from specproof.proofs.arith.interface import Arith

__all__ = ["NUMBER", "CONDITION", "LOG", "OPERATIONS", "Node", "Graph", "GraphBuilder", "GraphError",
           "exact_constant"]

NUMBER, CONDITION, LOG = "number", "condition", "logarithm"
KINDS = (NUMBER, CONDITION, LOG)
INPUTS = ("p", "q", "u")
"""Symbolic inputs: the target and draft laws (vectors) and the uniform ``u`` (a scalar)."""
FUNCTIONS = {"acceptance": ("p", "q"), "residual_weight": ("p", "q"), "acceptance_test": ("u", "p", "q")}
"""A step rule's functions and the inputs each receives, in order (after ``ar``)."""

OPERATIONS: dict[str, int] = {"add": 2, "sub": 2, "mul": 2, "safe_div": 3, "minimum": 2, "maximum": 2,
                              "total": 1, "mass_ahead": 2, "lt": 2, "le": 2, "eq": 2, "select": 3, "log": 1}
"""Every operation a graph may hold, with its arity (``const`` and ``input`` are leaves)."""


class GraphError(ValueError):
    """A graph (or its wire form) that is not well-formed."""


def exact_constant(value: Any) -> int | Fraction:
    """``value`` as a plain ``int`` or ``Fraction`` (subclasses normalised through their stored
    numerator and denominator, not their overridable methods); anything else is a TypeError."""
    if isinstance(value, bool):
        raise TypeError("a bool is not an exact constant")
    if isinstance(value, int):
        return int.__add__(value, 0)  # the plain int with the same payload
    if isinstance(value, Fraction):
        num, den = Fraction.numerator.fget(value), Fraction.denominator.fget(value)  # type: ignore[attr-defined]
        if not (isinstance(num, int) and isinstance(den, int)) or isinstance(num, bool) or isinstance(den, bool):
            raise TypeError("a Fraction whose numerator or denominator is not an int")
        result = Fraction(int.__add__(num, 0), int.__add__(den, 0))
        return result.numerator if result.denominator == 1 else result
    raise TypeError(f"a {type(value).__name__} is not an exact constant (int or Fraction)")


@dataclass(frozen=True)
class Node:
    """One operation: ``op`` on earlier nodes ``args``; ``kind`` (number, condition, logarithm) and
    whether it is a vector over the vocabulary.  Leaves: ``const`` (``value``) and ``input`` (``name``)."""

    op: str
    args: tuple[int, ...]
    kind: str
    vector: bool
    value: int | Fraction | None = None
    name: str = ""

    def key(self) -> tuple:
        return (self.op, self.args, self.name, None if self.value is None else
                (Fraction(self.value).numerator, Fraction(self.value).denominator))


def _result(op: str, args: list[Node]) -> tuple[str, bool]:
    """The kind and shape of ``op`` applied to ``args`` (a TypeError names what is wrong)."""
    kinds = [a.kind for a in args]
    vector = any(a.vector for a in args)
    if op in ("sub", "mul", "safe_div", "minimum", "maximum", "total", "mass_ahead", "log"):
        if any(k != NUMBER for k in kinds):
            raise TypeError(f"ar.{op} expects numbers, got a {' and a '.join(kinds)}")
        if op == "total":
            return NUMBER, False
        if op == "mass_ahead":
            return NUMBER, True
        return (LOG if op == "log" else NUMBER), vector
    if op == "add":
        if kinds[0] != kinds[1] or kinds[0] == CONDITION:
            raise TypeError(f"ar.add expects two numbers or two logarithms, got a {kinds[0]} and a {kinds[1]}")
        return kinds[0], vector
    if op in ("lt", "le", "eq"):
        if kinds[0] != kinds[1] or kinds[0] == CONDITION:
            raise TypeError(f"ar.{op} compares two numbers or two logarithms, got a {kinds[0]} and a {kinds[1]}")
        return CONDITION, vector
    if op == "select":
        if kinds[0] != CONDITION:
            raise TypeError(f"ar.select expects a condition first, got a {kinds[0]}")
        if kinds[1] != kinds[2]:
            raise TypeError(f"ar.select between a {kinds[1]} and a {kinds[2]}")
        return kinds[1], vector
    raise TypeError(f"unknown operation {op!r}")


class GraphBuilder:
    """Hash-consed construction: the same operation on the same nodes is one node."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._index: dict[tuple, int] = {}

    def _add(self, node: Node) -> int:
        key = node.key()
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.nodes)
            self.nodes.append(node)
        return found

    def input(self, name: str) -> int:
        if name not in INPUTS:
            raise GraphError(f"unknown input {name!r}")
        return self._add(Node("input", (), NUMBER, name != "u", name=name))

    def const(self, value: Any) -> int:
        return self._add(Node("const", (), NUMBER, False, value=exact_constant(value)))

    def apply(self, op: str, args: Iterable[int]) -> int:
        args = tuple(args)
        if OPERATIONS.get(op) != len(args) or not all(isinstance(a, int) and 0 <= a < len(self.nodes) for a in args):
            raise GraphError(f"{op} on {args} is not an operation on earlier nodes")
        kind, vector = _result(op, [self.nodes[a] for a in args])
        return self._add(Node(op, args, kind, vector))

    def graph(self, roots: Mapping[str, int]) -> "Graph":
        return Graph(tuple(self.nodes), dict(roots))


def _hex(value: int) -> str:
    return hex(value)  # power-of-two base: no int-digit limit


def _unhex(text: Any) -> int:
    if not isinstance(text, str) or not text.lstrip("-").startswith("0x"):
        raise GraphError(f"{text!r} is not a hexadecimal integer")
    try:
        return int(text, 16)
    except ValueError:
        raise GraphError(f"{text!r} is not a hexadecimal integer") from None


@dataclass(frozen=True)
class Graph:
    """A traced rule: its nodes (each refers only to earlier ones) and one root per function."""

    nodes: tuple[Node, ...]
    roots: dict[str, int]

    # -- the wire form --------------------------------------------------------------------------
    def as_data(self) -> dict[str, Any]:
        rows = []
        for n in self.nodes:
            if n.op == "const":
                f = Fraction(n.value)  # type: ignore[arg-type]
                rows.append(["const", _hex(f.numerator), _hex(f.denominator)])
            elif n.op == "input":
                rows.append(["input", n.name])
            else:
                rows.append([n.op, *n.args])
        return {"nodes": rows, "roots": dict(self.roots)}

    @classmethod
    def from_data(cls, data: Any) -> "Graph":
        """Rebuild and re-check a graph from :meth:`as_data` (kinds and shapes recomputed here)."""
        if not isinstance(data, dict) or set(data) != {"nodes", "roots"} or not isinstance(data["nodes"], list) \
                or not isinstance(data["roots"], dict):
            raise GraphError("a graph is {'nodes': [...], 'roots': {...}}")
        builder = GraphBuilder()
        for i, row in enumerate(data["nodes"]):
            if not isinstance(row, list) or not row or not isinstance(row[0], str):
                raise GraphError(f"node {i} is not [op, ...]")
            op, rest = row[0], row[1:]
            if op == "const" and len(rest) == 2:
                num, den = _unhex(rest[0]), _unhex(rest[1])
                if den <= 0:
                    raise GraphError(f"node {i}: denominator {den} is not positive")
                at = builder.const(Fraction(num, den))
            elif op == "input" and len(rest) == 1 and isinstance(rest[0], str):
                at = builder.input(rest[0])
            elif op in OPERATIONS and all(type(a) is int for a in rest):
                try:
                    at = builder.apply(op, rest)
                except TypeError as err:
                    raise GraphError(f"node {i}: {err}") from None
            else:
                raise GraphError(f"node {i} ({row[:4]!r}) is not a known operation")
            if at != i:
                raise GraphError(f"node {i} repeats node {at} (a traced graph is hash-consed)")
        roots = data["roots"]
        for name, at in roots.items():
            if name not in FUNCTIONS or type(at) is not int or not 0 <= at < len(builder.nodes):
                raise GraphError(f"root {name!r} -> {at!r} is not a function and a node")
            used = {builder.nodes[j].name for j in _reachable(builder.nodes, at) if builder.nodes[j].op == "input"}
            if not used <= set(FUNCTIONS[name]):
                raise GraphError(f"{name} reads inputs {sorted(used)}, not only {FUNCTIONS[name]}")
        return builder.graph(roots)

    # -- reading it -----------------------------------------------------------------------------
    def function(self, name: str) -> Callable[..., Any] | None:
        """The root ``name`` as a rule function ``f(ar, *inputs)`` that evaluates the graph in ``ar``."""
        if name not in self.roots:
            return None
        root, names = self.roots[name], FUNCTIONS[name]
        order = sorted(_reachable(self.nodes, root))

        def evaluate(ar: Arith, *args: Any) -> Any:
            if len(args) != len(names):
                raise TypeError(f"{name} takes {len(names)} inputs, got {len(args)}")
            inputs = dict(zip(names, args))
            values: dict[int, Any] = {}
            for i in order:
                values[i] = _apply(ar, self.nodes, i, values, inputs)
            return values[root]

        evaluate.__name__ = evaluate.__qualname__ = f"traced {name}"
        return evaluate

    def show(self) -> str:
        """One line per node reachable from a root: ``%i = op(args)  : kind[, vector]``; then the roots."""
        live = sorted(set().union(*(_reachable(self.nodes, r) for r in self.roots.values())))
        lines = []
        for i in live:
            n = self.nodes[i]
            body = (f"const {_shown(n.value)}" if n.op == "const" else f"input {n.name}" if n.op == "input"
                    else f"{n.op}({', '.join(f'%{a}' for a in n.args)})")
            lines.append(f"%{i} = {body}  : {n.kind}{' vector' if n.vector else ''}")
        lines += [f"{name} = %{at}" for name, at in self.roots.items()]
        return "\n".join(lines)


def _shown(value: Any) -> str:
    """A constant as text; one over 60 digits (or past the int-digit limit) by its size."""
    f = Fraction(value)
    if max(f.numerator.bit_length(), f.denominator.bit_length()) <= 196:
        return str(value)
    return (f"<exact {'-' if f < 0 else ''}{f.numerator.bit_length()}-bit / {f.denominator.bit_length()}-bit "
            f"rational, hex {hex(f.numerator)[:18]}...>")


def _reachable(nodes: tuple[Node, ...] | list[Node], root: int) -> set[int]:
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(nodes[i].args)
    return seen


def _apply(ar: Arith, nodes: tuple[Node, ...], i: int, values: dict[int, Any], inputs: dict[str, Any]) -> Any:
    """The one meaning of node ``i`` in ``ar`` (see the module docstring)."""
    n = nodes[i]
    if n.op == "const":
        return ar.const(n.value)  # type: ignore[arg-type]
    if n.op == "input":
        if n.name not in inputs:
            raise TypeError(f"input {n.name!r} is not available here")
        return inputs[n.name]
    args = [values[a] for a in n.args]
    if n.op == "total" and not nodes[n.args[0]].vector:  # total(s) = n s: broadcast over the vocabulary
        if "p" not in inputs:
            raise TypeError("total of a scalar needs the vocabulary (input p)")
        return ar.total(ar.add(ar.mul(inputs["p"], ar.zero), args[0]))
    return getattr(ar, n.op)(*args)

