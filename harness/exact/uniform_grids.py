"""The finite grids ``torch.rand`` draws uniforms from, per dtype: :func:`uniform_grid`.

Grids (:func:`uniform_grid`).  ``u = phi(k)`` for ``k`` uniform on ``[0, N)``:

* ``"torch-cpu"`` (default; the installed torch 2.13, checked in the tests against ``torch.rand``):
  float32 ``k 2^-24``, float64 ``k 2^-53``; float16 and bfloat16 round the float32 uniform
  ``k 2^-24`` to the dtype (ties to even) and map values that round to 1 to 0, so
  ``P(u = 0) = 2^-24 + 2^-12`` (float16) and ``2^-24 + 2^-9`` (bfloat16);
* ``"ideal"``: ``k 2^-d`` with ``d = DTYPES[dtype].uniform_bits`` (8, 11, 24, 53), equal weights.

The grid's resolution is its discrepancy ``delta = sup_t (F(t) - t) - inf_t (F(t) - t)`` with
``F(t) = P(u < t)``; ``delta = 2^-d`` for ``k 2^-d``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specproof.errors import SpecproofInputError

from specproof.harness.exact.dtypes import DTYPES, TORCH_DTYPES, dtype_name
from specproof.harness.exact.reference import fraction_string
from specproof.harness.exact.tolerances import round_tolerance

__all__ = ["GRID_MODELS", "UniformGrid", "uniform_grid", "grid_round_tolerance"]

GRID_MODELS = ("torch-cpu", "ideal")


@dataclass(frozen=True, eq=False)
class UniformGrid:
    """Distinct uniform values ``u_0 < ... < u_{M-1}`` with integer weights summing to ``N``.

    Arithmetic grids (``step_bits`` set) have ``u_j = j 2^-bits`` and unit weights; tabulated grids keep
    the values (exact in float64) and the cumulative weights ``W(j) = sum_{i<j} w_i``."""

    dtype: str
    model: str
    total: int
    size: int
    discrepancy: Fraction
    step_bits: int | None = None
    table_values: torch.Tensor | None = field(default=None, repr=False)
    table_cumulative: np.ndarray | None = field(default=None, repr=False)

    def values(self, index: torch.Tensor) -> torch.Tensor:
        """Grid values (float64, exact) at int64 indices."""
        if self.step_bits is not None:
            return index.to(torch.float64) * 2.0**-self.step_bits  # exact: index < 2^53
        return self.table_values[index]

    def mass_below(self, index: int) -> int:
        """``W(index)``: the number of ``k`` whose uniform has grid index below ``index``."""
        if self.step_bits is not None:
            return int(index)
        return int(self.table_cumulative[int(index)])

    def zero_mass(self) -> Fraction:
        """``P(u == 0)``."""
        return Fraction(self.mass_below(1), self.total)

    def as_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "model": self.model, "total": self.total, "size": self.size,
                "discrepancy": fraction_string(self.discrepancy),
                "zero_mass": fraction_string(self.zero_mass())}


@functools.lru_cache(maxsize=None)
def _rounded_float32_grid(name: str) -> UniformGrid:
    """float32 ``k 2^-24`` rounded to a half type, 1 wrapped to 0 (torch 2.13 CPU ``torch.rand``)."""
    n = 1 << 24
    rounded = (torch.arange(n, dtype=torch.float32) * 2.0**-24).to(TORCH_DTYPES[name]).to(torch.float32)
    below_one = rounded[rounded < 1]  # rounding is monotone: a prefix of the k
    wrapped = n - below_one.shape[0]
    starts = torch.cat([torch.zeros(1, dtype=torch.int64),
                        torch.nonzero(below_one[1:] != below_one[:-1]).squeeze(1) + 1])
    counts = torch.diff(starts, append=torch.tensor([below_one.shape[0]])).numpy().astype(np.int64)
    counts[0] += wrapped  # values that round to 1 become 0
    values = below_one[starts].to(torch.float64)
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    units = (values * float(n)).numpy().astype(np.int64)  # every value is a multiple of 2^-24
    if not np.array_equal(units.astype(np.float64), values.numpy() * float(n)):
        raise AssertionError("grid values are not multiples of 2^-24")
    sup = int(np.max(cumulative[1:] - units))  # t just above u_{j-1}: F(t) - t -> W(j) - u_{j-1}
    inf = min(0, int(np.min(cumulative[1:-1] - units[1:]))) if units.shape[0] > 1 else 0
    return UniformGrid(name, "torch-cpu", n, int(units.shape[0]), Fraction(sup - inf, n),
                       table_values=values, table_cumulative=cumulative)


def uniform_grid(dtype: Any, model: str = "torch-cpu") -> UniformGrid:
    """The grid of ``torch.rand`` uniforms in ``dtype`` under ``model`` (module docstring)."""
    name = dtype_name(dtype)
    if model not in GRID_MODELS:
        raise SpecproofInputError("grid", f"unknown grid model {model!r}", f"use one of {', '.join(GRID_MODELS)}")
    bits = {"float32": 24, "float64": 53}.get(name) if model == "torch-cpu" else DTYPES[name].uniform_bits
    if bits is None:
        return _rounded_float32_grid(name)
    return UniformGrid(name, model, 1 << bits, 1 << bits, Fraction(1, 1 << bits), step_bits=bits)


def grid_round_tolerance(grid: UniformGrid, vocab: int, k: int) -> Fraction:
    """:func:`~.tolerances.round_tolerance` with the grid's discrepancy ``delta`` as its step ``g``."""
    return round_tolerance(grid.dtype, vocab, k, grid_step=grid.discrepancy)
