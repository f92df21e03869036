"""Edge injection into Triton's random primitives under the CPU interpreter (``TRITON_INTERPRET=1``).

:class:`TritonEdgeInjection` is a context manager: inside it, ``tl.rand``, ``tl.rand4x``, ``tl.randn``,
``tl.randn4x``, ``tl.randint``, ``tl.randint4x`` and ``tl.philox`` (the attributes of
``triton.language``, through which kernels call them) return the real generator's values with a known
fraction replaced by one edge of :mod:`specproof.harness.exact.triton_rng_edges` (the same edge model as
``edge_models.EDGE_MODELS["triton"]``), and every call is recorded (:class:`PrimitiveCall`: how many
values came back, how many were replaced, with which edge and its per-draw probability on the real
generator).  Positions are chosen by a ``numpy`` generator seeded from ``(seed, call index)``: the
interpreter runs a grid's programs in order, so the same kernel launch sees the same replacements.

Under the interpreter the primitives' results are ``tl.tensor`` objects whose ``handle.data`` is a numpy
array; the replacement writes a copy of that array.  Kernels compiled for a GPU (``triton.jit`` without
the interpreter) are not reached: :func:`require_interpreter` refuses them with the fix.

:func:`randomness_sources` reads a kernel's source (and the ``@triton.jit`` functions it calls) and
reports the primitives it draws from and the signs of randomness built by hand from integer hashes
(xor-shift mixing, multiplication by large odd constants, ``umulhi``), which no interception can see.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

import numpy as np

from specproof.harness.exact.rng_edges import EdgeValue
from specproof.harness.exact.triton_rng_edges import TRITON_EDGE_LABELS, triton_edge_values
from specproof.errors import SpecproofInputError

__all__ = ["PRIMITIVE_KINDS", "PrimitiveCall", "TritonEdgeInjection", "RandomnessSources", "randomness_sources",
           "require_interpreter", "interpreting"]

PRIMITIVE_KINDS = {"rand": "rand", "rand4x": "rand", "randn": "randn", "randn4x": "randn",
                   "randint": "randint", "randint4x": "randint", "philox": "randint"}
"""Each intercepted ``triton.language`` primitive and the draw kind of its values."""


@dataclass(frozen=True)
class PrimitiveCall:
    """One call of a primitive inside the context: ``values`` returned, ``replaced`` of them set to ``edge``."""

    primitive: str
    index: int
    values: int
    replaced: int
    edge: EdgeValue | None
    positions: tuple[tuple[int, int], ...] = ()
    """``(result, flat index)`` of each replaced value (``result``: which of a tuple's tensors)."""

    def describe(self) -> str:
        if self.edge is None or not self.replaced:
            return f"tl.{self.primitive} call {self.index}: {self.values} values, none replaced"
        return (f"tl.{self.primitive} call {self.index}: {self.replaced}/{self.values} values set to "
                f"{self.edge.describe()}")


def require_interpreter() -> Any:
    """``triton.language`` when Triton runs in interpreter mode; ``SpecproofInputError`` naming the fix otherwise."""
    try:
        import triton.language as tl
    except ImportError:
        raise SpecproofInputError(
            "triton", "triton is not installed",
            "pip install 'specproof[triton]' (Triton's CPU interpreter runs the kernels)") from None
    from triton.runtime.interpreter import InterpretedFunction

    if os.environ.get("TRITON_INTERPRET") != "1" or not isinstance(tl.rand, InterpretedFunction):
        raise SpecproofInputError("TRITON_INTERPRET", "Triton is not in interpreter mode: its kernels would need a "
                                  "GPU and their draws cannot be intercepted",
                                  "set TRITON_INTERPRET=1 in the environment before triton is first imported")
    return tl


def interpreting() -> bool:
    """Whether Triton is loaded and runs its kernels in the CPU interpreter, so that its primitives can be
    intercepted; never imports triton (a check of a verifier that does not use it pays nothing)."""
    tl = sys.modules.get("triton.language")
    if tl is None or os.environ.get("TRITON_INTERPRET") != "1":
        return False
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(getattr(tl, "rand", None), InterpretedFunction)


def _fill_value(edge: EdgeValue, dtype: np.dtype) -> np.ndarray:
    """``edge.value`` in the primitive's numpy dtype (a uint32 word is bit-cast when the dtype is int32)."""
    if np.issubdtype(dtype, np.integer):
        return np.array(int(edge.value), dtype=np.uint64).astype(dtype)
    return np.array(float(edge.value)).astype(dtype)


@dataclass
class TritonEdgeInjection:
    """Replace ``fraction`` of each intercepted primitive's values with the edge ``labels[kind]``.

    ``labels`` maps a draw kind (``"rand"``, ``"randn"``, ``"randint"``) to an edge label of
    :data:`~specproof.harness.exact.triton_rng_edges.TRITON_EDGE_LABELS`; kinds not named are recorded
    but left untouched.  ``calls`` lists every primitive call made inside the context, in order;
    ``kernels`` the Python function of every kernel launched inside it (first launch order), whose
    source :func:`randomness_sources` reads (:meth:`hash_sources`)."""

    labels: Mapping[str, str]
    fraction: Fraction = Fraction(1, 16)
    seed: int = 0
    calls: list[PrimitiveCall] = field(default_factory=list)
    kernels: list[Any] = field(default_factory=list)
    _saved: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for kind, label in self.labels.items():
            if kind not in TRITON_EDGE_LABELS:
                raise SpecproofInputError("labels", f"{kind!r} is not a Triton draw kind",
                                          f"use one of {', '.join(TRITON_EDGE_LABELS)}")
            if label not in TRITON_EDGE_LABELS[kind]:
                raise SpecproofInputError("labels", f"{label!r} is not an edge of Triton {kind} draws",
                                          f"use one of {', '.join(TRITON_EDGE_LABELS[kind])}")
        self.fraction = Fraction(self.fraction)
        if not 0 < self.fraction <= 1:
            raise SpecproofInputError("fraction", f"{self.fraction} is not in (0, 1]", "pass e.g. Fraction(1, 16)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise SpecproofInputError("seed", f"{self.seed!r} is not an integer in [0, 2^63)", "pass e.g. 0")

    def edge(self, kind: str) -> EdgeValue | None:
        """The edge injected into ``kind`` draws (None: not injected)."""
        label = self.labels.get(kind)
        if label is None:
            return None
        return next(e for e in triton_edge_values(kind, "uint32" if kind == "randint" else "float32")
                    if e.label == label)

    def __enter__(self) -> "TritonEdgeInjection":
        tl = require_interpreter()
        from triton.runtime.interpreter import InterpretedFunction

        for name in PRIMITIVE_KINDS:
            self._saved[name] = getattr(tl, name)
            setattr(tl, name, self._intercept(name, self._saved[name]))
        launch = self._saved["run"] = InterpretedFunction.run
        kernels = self.kernels

        def run(interpreted, *args, **kwargs):  # a kernel launch: note its function, then launch it as before
            if interpreted.fn not in kernels:
                kernels.append(interpreted.fn)
            return launch(interpreted, *args, **kwargs)

        InterpretedFunction.run = run
        return self

    def __exit__(self, *exc) -> None:
        import triton.language as tl
        from triton.runtime.interpreter import InterpretedFunction

        InterpretedFunction.run = self._saved.pop("run")
        for name, original in self._saved.items():
            setattr(tl, name, original)
        self._saved.clear()

    def hash_sources(self) -> list["RandomnessSources"]:
        """The launched kernels that show signs of randomness built from integer hashes (:func:`randomness_sources`;
        a kernel whose source cannot be read is skipped)."""
        found = []
        for kernel in self.kernels:
            try:
                sources = randomness_sources(kernel)
            except (OSError, TypeError, SyntaxError, SpecproofInputError):
                continue
            if sources.hash_based:
                found.append(sources)
        return found

    def _intercept(self, name: str, original):
        kind = PRIMITIVE_KINDS[name]

        def primitive(*args, **kwargs):
            result = original(*args, **kwargs)
            tensors = result if isinstance(result, tuple) else (result,)
            index = len(self.calls)
            edge = self.edge(kind)
            chooser = np.random.default_rng([self.seed, index])
            values = 0
            positions: list[tuple[int, int]] = []
            for which, tensor in enumerate(tensors):
                data = np.array(tensor.handle.data, copy=True)
                values += data.size
                if edge is not None:
                    chosen = np.asarray(chooser.random(data.shape) < float(self.fraction))
                    data[chosen] = _fill_value(edge, data.dtype)
                    positions += [(which, int(i)) for i in np.flatnonzero(chosen)]
                tensor.handle.data = data
            self.calls.append(PrimitiveCall(name, index, values, len(positions), edge, tuple(positions)))
            return result

        primitive.__name__ = f"intercepted_{name}"
        return primitive

    @property
    def replaced(self) -> int:
        """Values replaced over all calls."""
        return sum(call.replaced for call in self.calls)

    def summary(self) -> str:
        drawn = sum(call.values for call in self.calls)
        kinds = sorted({PRIMITIVE_KINDS[call.primitive] for call in self.calls})
        return (f"{len(self.calls)} Triton primitive calls ({', '.join(kinds) or 'none'}), {drawn} values, "
                f"{self.replaced} replaced")


# -- static reading of a kernel's randomness ------------------------------------------------------------

@dataclass(frozen=True)
class RandomnessSources:
    """What a kernel draws: ``primitives`` (interceptable ``tl.*`` calls) and ``hash_signs`` (hand-made
    randomness from integer hashes, with the function and line of each sign)."""

    kernel: str
    primitives: tuple[str, ...]
    hash_signs: tuple[str, ...]

    @property
    def hash_based(self) -> bool:
        return bool(self.hash_signs)

    def describe(self) -> str:
        primitives = ", ".join(f"tl.{p}" for p in self.primitives) or "no Triton primitive"
        parts = [f"{self.kernel}: draws from {primitives}"]
        if self.hash_signs:
            parts.append("builds randomness from integer hashes (not intercepted, rare-draw behaviour NOT "
                         "tested there): " + "; ".join(self.hash_signs))
        return "; ".join(parts)


_LARGE_ODD = 1 << 16


def _python_function(kernel):
    fn = getattr(kernel, "fn", kernel)
    return fn if inspect.isfunction(fn) else None


def _signs(fn) -> tuple[set[str], list[str], list[Any]]:
    source = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(source)
    primitives: set[str] = set()
    signs: list[str] = []
    callees: list[Any] = []
    xor_lines, shift_lines = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in PRIMITIVE_KINDS:
                primitives.add(name)
            elif name == "umulhi":
                signs.append(f"{fn.__name__} line {node.lineno}: umulhi")
            elif isinstance(node.func, ast.Name) and node.func.id in fn.__globals__:
                callees.append(fn.__globals__[node.func.id])
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.BitXor):
                xor_lines.add(node.lineno)
            elif isinstance(node.op, (ast.LShift, ast.RShift)):
                shift_lines.add(node.lineno)
            elif isinstance(node.op, ast.Mult):
                for side in (node.left, node.right):
                    if (isinstance(side, ast.Constant) and isinstance(side.value, int)
                            and not isinstance(side.value, bool) and side.value >= _LARGE_ODD and side.value % 2):
                        signs.append(f"{fn.__name__} line {node.lineno}: multiplication by {side.value:#x}")
    if xor_lines and shift_lines:
        signs.append(f"{fn.__name__} lines {min(xor_lines | shift_lines)}-{max(xor_lines | shift_lines)}: "
                     f"xor-shift mixing")
    return primitives, signs, callees


def randomness_sources(kernel: Any) -> RandomnessSources:
    """The randomness of ``kernel`` (a ``@triton.jit`` function, or its Python function) and the jitted
    functions it calls by name, read from their source (module docstring)."""
    root = _python_function(kernel)
    if root is None:
        raise SpecproofInputError("kernel", f"{kernel!r} is not a Triton kernel or Python function",
                                  "pass the @triton.jit function itself")
    seen, pending = set(), [root]
    primitives: set[str] = set()
    signs: list[str] = []
    while pending:
        fn = pending.pop()
        if fn in seen:
            continue
        seen.add(fn)
        found, fn_signs, callees = _signs(fn)
        primitives |= found
        signs += fn_signs
        pending += [f for f in (_python_function(c) for c in callees if hasattr(c, "fn")) if f is not None]
    return RandomnessSources(root.__name__, tuple(sorted(primitives)), tuple(signs))
