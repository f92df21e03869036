"""Edge values of torch's CPU random draws, per dtype, with their exact per-draw probabilities.

Only values the real generator produces are listed (torch 2.13 CPU, checked in the tests against
seeded draws).  Two draw kinds:

* ``"uniform"`` (``torch.rand``, ``rand_like``, ``Tensor.uniform_()`` on ``[0, 1)``): the grid of
  :func:`specproof.harness.drift.grid.uniform_grid` (model ``"torch-cpu"``).  Edges: ``0``, the smallest
  positive grid value and the largest grid value below 1, each with its grid weight ``W / N``.
  float32 ``k 2^-24`` and float64 ``k 2^-53``: each edge has probability ``2^-24`` / ``2^-53``.
  float16 / bfloat16: a float32 uniform ``k 2^-24`` rounded to the dtype; float32 values that round
  to 1 wrap to 0, so the edge ``0`` has probability ``2^-24 + 2^-12`` (float16) and ``2^-24 + 2^-9``
  (bfloat16); the float32 values that would round to 1 are therefore never seen as 1 in the dtype.
  A verifier that draws float32 and casts to a half type itself meets float32's largest value
  ``1 - 2^-24``, which rounds to 1: that is the float32 edge, injected into the float32 draw.
* ``"exponential"`` (``Tensor.exponential_()``, rate 1): ``E = dtype(-log1p(-u))`` with
  ``u = k 2^-53``, ``k`` uniform on ``[0, 2^53)`` (one float64 uniform per entry; float64 output uses
  the scalar libm ``log1p``, the others ``torch.log1p`` on float64 then one rounding to the dtype).
  Never negative, never infinite (at most ``53 ln 2 ~ 36.74``).  Edges: ``0`` (``k = 0`` only in
  float32/float64/bfloat16, probability ``2^-53``; in float16 every ``E < 2^-25`` rounds to 0, about
  ``2^-25``), the smallest positive value and the largest value, with their exact ``k``-counts found by
  bisection (``E`` is non-decreasing in ``k``).  ``torch.multinomial(w, 1)`` on CPU is
  ``argmax(w / E)`` with such an ``E`` in ``w``'s dtype (its ``E = 0`` at ``w = 0`` makes ``0/0 = NaN``
  win: torch's own defect, measured by :mod:`specproof.impls.sampler_probe`).

CUDA's generator (Philox via curand, different grids) is modelled in :mod:`.cuda_rng_edges` and Triton's
in :mod:`.triton_rng_edges`; :mod:`.edge_models` holds the three as records of one ``EdgeModel``.
:func:`edge_values` here refuses non-CPU devices.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import torch

from specproof.errors import SpecproofInputError

from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.uniform_grids import uniform_grid
from specproof.harness.exact.reference import fraction_string
from specproof.harness.exact.dtypes import TORCH_DTYPES

__all__ = ["EdgeValue", "DRAW_KINDS", "EDGE_LABELS", "edge_values", "exponential_value"]

DRAW_KINDS = ("uniform", "exponential")
EDGE_LABELS = {"uniform": ("zero", "smallest-positive", "largest-below-1"),
               "exponential": ("zero", "smallest-positive", "largest")}
_EXP_BITS = 53


@dataclass(frozen=True)
class EdgeValue:
    """One value the real generator produces for ``kind`` in ``dtype``, and ``P(draw == value)``."""

    kind: str
    dtype: str
    label: str
    value: Fraction
    probability: Fraction
    source: str

    def describe(self) -> str:
        return (f"{self.kind} {self.dtype} {self.label} = {float(self.value)!r} "
                f"(per-draw probability {fraction_string(self.probability)} ~ {float(self.probability):.3g}; "
                f"{self.source})")

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "dtype": self.dtype, "label": self.label,
                "value": fraction_string(self.value), "probability": fraction_string(self.probability),
                "source": self.source}


def exponential_value(k: int, dtype: str) -> Fraction:
    """``dtype(-log1p(-k 2^-53))``: torch's CPU ``exponential_()`` output for the double uniform ``k``."""
    u = float(k) * 2.0**-_EXP_BITS  # exact: k < 2^53
    if dtype == "float64":
        return Fraction(-math.log1p(-u)) + 0  # + 0: -0.0 -> 0
    e = -torch.log1p(torch.tensor([-u], dtype=torch.float64))
    return Fraction(float(e.to(TORCH_DTYPES[dtype]).item())) + 0


def _first_k(dtype: str, predicate) -> int:
    """Smallest ``k`` in ``[0, 2^53]`` with ``predicate(E(k))`` (monotone in ``k``; ``2^53``: none)."""
    lo, hi = -1, 1 << _EXP_BITS  # predicate false at lo (virtually), true at hi (virtually)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if predicate(exponential_value(mid, dtype)):
            hi = mid
        else:
            lo = mid
    return hi


def _uniform_edges(dtype: str) -> tuple[EdgeValue, ...]:
    grid = uniform_grid(dtype, "torch-cpu")
    n = grid.total

    def value(j: int) -> Fraction:
        return Fraction(float(grid.values(torch.tensor([j], dtype=torch.int64))[0].item()))

    def mass(j: int) -> Fraction:
        return Fraction(grid.mass_below(j + 1) - grid.mass_below(j), n)

    if grid.step_bits is not None:
        how = f"k 2^-{grid.step_bits}, k uniform on [0, 2^{grid.step_bits})"
        zero_source = f"k = 0 ({how})"
    else:
        wrapped = grid.zero_mass() - Fraction(1, 1 << 24)
        zero_source = (f"float32 u = 0 (2^-24), or a float32 u that rounds to 1 in {dtype} and wraps to 0 "
                       f"(mass {fraction_string(wrapped)})")
        how = f"float32 k 2^-24 rounded to {dtype}"
    top = grid.size - 1
    return (EdgeValue("uniform", dtype, "zero", Fraction(0), grid.zero_mass(), zero_source),
            EdgeValue("uniform", dtype, "smallest-positive", value(1), mass(1), how),
            EdgeValue("uniform", dtype, "largest-below-1", value(top), mass(top), how))


def _exponential_edges(dtype: str) -> tuple[EdgeValue, ...]:
    n = 1 << _EXP_BITS
    how = "-log1p(-k 2^-53) rounded to the dtype, k uniform on [0, 2^53)"
    first_positive = _first_k(dtype, lambda e: e > 0)
    smallest = exponential_value(first_positive, dtype)
    after_smallest = _first_k(dtype, lambda e: e > smallest)
    largest = exponential_value(n - 1, dtype)
    first_largest = _first_k(dtype, lambda e: e >= largest)
    return (EdgeValue("exponential", dtype, "zero", Fraction(0), Fraction(first_positive, n),
                      f"k < {first_positive} ({how})"),
            EdgeValue("exponential", dtype, "smallest-positive", smallest,
                      Fraction(after_smallest - first_positive, n), how),
            EdgeValue("exponential", dtype, "largest", largest, Fraction(n - first_largest, n), how))


@functools.lru_cache(maxsize=None)
def _edges(kind: str, dtype: str) -> tuple[EdgeValue, ...]:
    return _uniform_edges(dtype) if kind == "uniform" else _exponential_edges(dtype)


def edge_values(kind: str, dtype: object, device: str = "cpu") -> tuple[EdgeValue, ...]:
    """The edges of ``kind`` draws in ``dtype`` on ``device`` (module docstring); CPU only."""
    if kind not in DRAW_KINDS:
        raise SpecproofInputError("kind", f"unknown draw kind {kind!r}", f"use one of {', '.join(DRAW_KINDS)}")
    if torch.device(device).type != "cpu":
        raise SpecproofInputError("device", f"{device!r}: the edge-value model covers torch's CPU generator only",
                                  "run the injection check with device='cpu'")
    return _edges(kind, dtype_name(dtype))
