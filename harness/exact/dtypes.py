"""The one dtype table: names, significand bits, exponent range, uniform grid and torch dtype.

Per dtype ``u = 2^-precision`` (unit roundoff), ``eps = 2u``, smallest subnormal ``2^min_exponent``,
``torch.rand`` ideal grid ``k 2^-uniform_bits``.  Every tolerance and every dtype list in the harness
starts from :data:`DTYPES`; :data:`DTYPE_NAMES` is its key tuple, narrowest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import SpecproofInputError

__all__ = ["DTYPES", "DTYPE_NAMES", "HALF_DTYPES", "DtypeInfo", "TORCH_DTYPES", "dtype_info", "dtype_name",
           "torch_dtype"]


@dataclass(frozen=True)
class DtypeInfo:
    """Facts about one float format.

    ``precision`` counts significand bits including the implicit one, so the unit roundoff is
    ``u = 2^-precision`` (round to nearest); ``min_exponent`` is the exponent of the smallest
    subnormal (its value is ``2^min_exponent``); ``uniform_bits`` is ``d`` of the ideal uniform grid
    ``k * 2^-d`` (CPU ``torch.rand`` in float32/float64 is exactly that grid; in float16/bfloat16,
    torch 2.13 rounds a float32 uniform to the dtype and maps values that round to 1 to 0, so
    ``P(u = 0) ~ 2^-d`` and each acceptance probability still moves by at most ``2^-d``: see
    ``harness.exact.uniform_grids``); ``accumulate`` is the dtype runtimes accumulate sums in.
    """

    name: str
    precision: int
    min_exponent: int
    max_exponent: int
    uniform_bits: int
    accumulate: str

    @property
    def unit_roundoff(self) -> Fraction:
        return Fraction(1, 2**self.precision)

    @property
    def eps(self) -> Fraction:
        """Machine epsilon, the gap from 1 to the next float: ``2^(1-precision)``."""
        return Fraction(2, 2**self.precision)

    @property
    def smallest_subnormal(self) -> Fraction:
        return Fraction(1, 2 ** (-self.min_exponent))

    @property
    def uniform_step(self) -> Fraction:
        """``g = 2^-uniform_bits``: the spacing of the ideal uniform grid."""
        return Fraction(1, 2**self.uniform_bits)

    def gamma(self, n: int) -> Fraction:
        """Higham's ``gamma_n = n u / (1 - n u)``: bound on the relative error of an ``n``-term
        recursive sum; infinite (``None`` is not used) when ``n u >= 1``: returns 1 then, capped."""
        nu = n * self.unit_roundoff
        return Fraction(1) if nu >= Fraction(1, 2) else nu / (1 - nu)


DTYPES: dict[str, DtypeInfo] = {
    info.name: info
    for info in (
        DtypeInfo("float16", 11, -24, 15, 11, "float32"),
        DtypeInfo("bfloat16", 8, -133, 127, 8, "float32"),
        DtypeInfo("float32", 24, -149, 127, 24, "float32"),
        DtypeInfo("float64", 53, -1074, 1023, 53, "float64"),
    )
}
DTYPE_NAMES: tuple[str, ...] = tuple(DTYPES)
HALF_DTYPES: tuple[str, ...] = tuple(n for n, info in DTYPES.items() if info.accumulate != n)

_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16",
            "fp16": "float16", "fp32": "float32", "fp64": "float64", "f2": "float16",
            "f4": "float32", "f8": "float64"}


def dtype_name(dtype: Any) -> str:
    """Canonical name ('float16', 'bfloat16', 'float32', 'float64') of a torch/numpy dtype or name."""
    text = str(dtype).replace("torch.", "")
    text = _ALIASES.get(text, text)
    if text not in DTYPES:
        raise SpecproofInputError(
            "dtype", f"unsupported dtype {dtype!r}", f"use one of {', '.join(DTYPES)}"
        )
    return text


def dtype_info(dtype: Any) -> DtypeInfo:
    return DTYPES[dtype_name(dtype)]


def torch_dtype(dtype: Any) -> Any:
    """The ``torch.dtype`` of a dtype name (torch is imported here, not at module import)."""
    import torch

    return getattr(torch, dtype_name(dtype))


def __getattr__(name: str) -> Any:
    if name == "TORCH_DTYPES":  # name -> torch.dtype, built on first use so that importing stays torch-free
        return {n: torch_dtype(n) for n in DTYPES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
