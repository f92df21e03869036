"""Edge values of Triton's random primitives, derived from ``triton/language/random.py`` (triton 3.x).

The same records as :mod:`.rng_edges` (:class:`~.rng_edges.EdgeValue`).  Triton's generator is
Philox-4x32 (``philox_impl``, 10 rounds by default) keyed by ``seed`` and counted by ``offset``; the model
takes its 32-bit words as uniform on ``[0, 2^32)`` and follows them through the float mappings:

* ``"randint"`` (``tl.randint``, ``tl.randint4x``, ``tl.philox``): uint32 words, each value with
  probability ``2^-32``.  Edges: ``0``, ``2^31 - 1`` (largest int32), ``2^31`` (int32 -2^31) and
  ``2^32 - 1`` (int32 -1): the words a kernel's own integer-to-float mapping sends to its extremes.
* ``"rand"`` (``tl.rand``, ``tl.rand4x``): ``uint_to_uniform_float``: the word bitcast to int32,
  ``x = ~x`` when negative (so the 2^32 words fold onto ``[0, 2^31)``, two words per value), then
  ``x * scale`` in float32 with ``scale = float32(4.6566127342e-10) = (1 - 2^-24) 2^-31``.  Output float32
  in ``[0, 1)``: **0 is reachable** (words 0 and ``2^32 - 1``, probability ``2^-31``), the smallest
  positive value is ``scale`` (``2^-31``) and the largest is ``1 - 2^-24`` (the folded values whose
  product rounds there).  ``tl.rand`` returns float32 only; a kernel casting it to a half type meets the
  float32 edges rounded (``1 - 2^-24`` rounds to 1 in float16 and bfloat16).
* ``"randn"`` (``tl.randn``, ``tl.randn4x``): ``pair_uniform_to_normal``: Box-Muller of two ``rand``
  values with ``u1 = max(1e-7, u1)``, ``n = sqrt(-2 log u1) cos(2 pi u2)`` in float32.  Edges: the
  largest value (``u1 <= 1e-7``, ``u2 = 0``) and the smallest (``u1 <= 1e-7`` and ``u2`` nearest 1/2),
  computed with correctly rounded float32 ``log``/``sqrt``/``cos`` (the interpreter's numpy; a GPU's
  libdevice is within an ulp).
"""

from __future__ import annotations

import bisect
import functools
from fractions import Fraction

import numpy as np

from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.rng_edges import EdgeValue
from specproof.errors import SpecproofInputError

__all__ = ["TRITON_EDGE_LABELS", "TRITON_UNIFORM_SCALE", "triton_uniform_value", "triton_normal_value",
           "triton_edge_values"]

TRITON_EDGE_LABELS = {"rand": ("zero", "smallest-positive", "largest-below-1"),
                      "randn": ("largest", "smallest"),
                      "randint": ("zero", "int32-max", "int32-min", "all-ones")}
"""Edge labels per Triton draw kind."""

TRITON_UNIFORM_SCALE = np.float32(4.6566127342e-10)
"""``uint_to_uniform_float``'s 32-bit scale, as float32: ``(1 - 2^-24) 2^-31``."""

_WORDS = 1 << 32
_FOLDED = 1 << 31
_BOX_MULLER_FLOOR = np.float32(1.0e-7)
_SOURCE = "triton/language/random.py"


def _fold(word: int) -> int:
    """The int32 bitcast of ``word`` with ``~x`` applied to negatives: a value in ``[0, 2^31)``."""
    return word if word < _FOLDED else _WORDS - 1 - word


def triton_uniform_value(word: int) -> Fraction:
    """``uint_to_uniform_float(word)`` for a uint32 ``word`` (float32, in ``[0, 1)``)."""
    if not 0 <= word < _WORDS:
        raise SpecproofInputError("word", f"{word} is not a uint32", "pass an integer in [0, 2^32)")
    return _folded_value(_fold(word))


def _folded_value(x: int) -> Fraction:
    xf = np.array([x], dtype=np.int32).astype(np.float32)  # int -> float32, to nearest
    return Fraction(float((xf * TRITON_UNIFORM_SCALE)[0]))


def triton_normal_value(u1: Fraction, u2: Fraction) -> Fraction:
    """``pair_uniform_to_normal(u1, u2)[0]`` in float32 (numpy's float32 ``log``, ``sqrt``, ``cos``)."""
    a = np.maximum(_BOX_MULLER_FLOOR, np.float32(float(u1)))
    theta = np.float32(6.283185307179586) * np.float32(float(u2))
    r = np.sqrt(np.float32(-2.0) * np.log(a))
    return Fraction(float(r * np.cos(theta)))


def _first(n: int, predicate) -> int:
    """Smallest ``k`` in ``[0, n)`` with ``predicate(k)`` (monotone), ``n`` if none."""
    return bisect.bisect_left(range(n), True, key=predicate)


def _rand_edges() -> tuple[EdgeValue, ...]:
    source = f"{_SOURCE} uint_to_uniform_float (fold x < 0 to ~x, x * float32(4.6566127342e-10))"
    smallest = _folded_value(1)
    after_smallest = _first(_FOLDED, lambda x: _folded_value(x) > smallest)
    top = _folded_value(_FOLDED - 1)
    first_top = _first(_FOLDED, lambda x: _folded_value(x) >= top)
    if top >= 1:
        raise AssertionError("Triton's uniform reaches 1: the scale no longer matches the source")
    two = Fraction(2, _WORDS)  # two words per folded value
    return (EdgeValue("rand", "float32", "zero", Fraction(0), two, f"{source}: words 0 and 2^32 - 1"),
            EdgeValue("rand", "float32", "smallest-positive", smallest, (after_smallest - 1) * two, source),
            EdgeValue("rand", "float32", "largest-below-1", top, (_FOLDED - first_top) * two, source))


def _box_muller_radius(u1: Fraction) -> np.float32:
    return np.sqrt(np.float32(-2.0) * np.log(np.maximum(_BOX_MULLER_FLOOR, np.float32(float(u1)))))


def _randn_edges() -> tuple[EdgeValue, ...]:
    """``n = fl(r c)`` with ``r = fl(sqrt(-2 log u1)) <= r_max`` and ``|c| <= 1``: rounding is monotone, so
    ``n = +-fl(r_max)`` needs ``r = r_max`` exactly (set ``A`` of ``u1``) and a ``u2`` with ``fl(r_max c) = n``
    (set ``B``); ``P = P(A) P(B)``, both counted by bisection (``r`` falls in ``u1``; ``c`` falls on
    ``[0, 1/2]`` and rises on ``[1/2, 1)``)."""
    source = f"{_SOURCE} pair_uniform_to_normal (u1 = max(1e-7, u1), sqrt(-2 log u1) cos(2 pi u2))"
    r_max = _box_muller_radius(Fraction(0))
    in_a = _first(_FOLDED, lambda x: _box_muller_radius(_folded_value(x)) < r_max)
    p_a = Fraction(2 * in_a, _WORDS)
    floor = Fraction(float(_BOX_MULLER_FLOOR))
    n = lambda x: triton_normal_value(floor, _folded_value(x))  # noqa: E731
    half = _first(_FOLDED, lambda x: _folded_value(x) >= Fraction(1, 2))
    largest = n(0)
    b_largest = _first(half, lambda x: n(x) < largest)  # falling on [0, 1/2) ...
    b_largest += _FOLDED - half - _first(_FOLDED - half, lambda x: n(half + x) >= largest)  # ... rising to 1
    smallest = min(n(half - 1), n(half))
    falling_from = _first(half, lambda x: n(x) <= smallest)
    rising_to = half + _first(_FOLDED - half, lambda x: n(half + x) > smallest)
    b_smallest = rising_to - falling_from
    return (EdgeValue("randn", "float32", "largest", largest, p_a * Fraction(2 * b_largest, _WORDS),
                      f"{source}: r at its largest (u1 <= ~1e-7), cos(2 pi u2) ~ 1 (u2 near 0 or 1)"),
            EdgeValue("randn", "float32", "smallest", smallest, p_a * Fraction(2 * b_smallest, _WORDS),
                      f"{source}: r at its largest (u1 <= ~1e-7), cos(2 pi u2) ~ -1"))


def _randint_edges() -> tuple[EdgeValue, ...]:
    source = f"{_SOURCE} philox_impl (uint32 words)"
    p = Fraction(1, _WORDS)
    return tuple(EdgeValue("randint", "uint32", label, Fraction(word), p, source) for label, word in
                 zip(TRITON_EDGE_LABELS["randint"], (0, _FOLDED - 1, _FOLDED, _WORDS - 1)))


@functools.lru_cache(maxsize=None)
def _edges(kind: str) -> tuple[EdgeValue, ...]:
    return {"rand": _rand_edges, "randn": _randn_edges, "randint": _randint_edges}[kind]()


def triton_edge_values(kind: str, dtype: object = "float32") -> tuple[EdgeValue, ...]:
    """The edges of Triton ``kind`` draws (``rand``/``randn``: float32; ``randint``: uint32)."""
    if kind not in TRITON_EDGE_LABELS:
        raise SpecproofInputError("kind", f"unknown Triton draw kind {kind!r}",
                                  f"use one of {', '.join(TRITON_EDGE_LABELS)}")
    expected = "uint32" if kind == "randint" else "float32"
    name = dtype if dtype in ("uint32", "int32") else dtype_name(dtype)
    if name not in (expected, "int32" if kind == "randint" else expected):
        raise SpecproofInputError("dtype", f"Triton's {kind} returns {expected}, not {name}",
                                  f"ask for {expected} (a kernel casting it meets the {expected} edges rounded)")
    return _edges(kind)
