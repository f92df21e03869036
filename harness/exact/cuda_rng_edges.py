"""Edge values of torch's CUDA random draws, per dtype, derived from PyTorch's CUDA sources.

The same records as :mod:`.rng_edges` (:class:`~.rng_edges.EdgeValue`), for ``device="cuda"``.
Every CUDA draw starts from Philox-4x32-10 through curand (``curandStatePhilox4_32_10_t``); the model
takes Philox's 32-bit outputs as uniform on ``[0, 2^32)`` (its marginal law) and follows the integers
through the float mappings, so each per-draw probability is an exact count over ``2^32`` (or ``2^53``).

Mappings (reimplemented here, checked on chosen integers in ``tests/harness/exact/test_cuda_rng_edges.py``):

* curand ``_curand_uniform(x)`` (``curand_uniform.h``, used by ``curand_uniform4``): float32
  ``float(x) * 2^-32 + 2^-32/2`` for a uint32 ``x``.  ``float(x)`` rounds ``x`` to 24 bits (to nearest,
  ties to even); the product is exact; the sum rounds once (an FMA gives the same value because the
  product is exact).  Range ``(0, 1]``: ``x = 0`` gives ``2^-33``; the 128 ``x >= 2^32 - 128`` give 1.
* curand ``_curand_uniform_double_hq(x, y)`` (``curand_uniform.h``, used by ``curand_uniform2_double``):
  ``z = x ^ (y << 21)`` (53 bits, uniform on ``[0, 2^53)``), ``z 2^-53 + 2^-54`` in float64.  Below 1/2
  the value ``(2z+1) 2^-54`` is exact; above, it is a tie rounded to even, so ``[1/2, 1)`` holds only
  multiples of ``2^-52`` and ``z = 2^53 - 1`` gives 1.
* ``uniform_kernel`` (``aten/src/ATen/native/cuda/DistributionTemplates.h``; ``torch.rand``,
  ``rand_like``, ``Tensor.uniform_()``): ``uniform_and_transform`` draws float64 from
  ``curand_uniform2_double`` and every other dtype from ``curand_uniform4`` (float32); the lambda computes
  ``value = static_cast<scalar_t>(rand * range + from)`` in ``opmath_t`` (float for the half types) and
  returns ``from`` when ``value == to``: with ``[0, 1)`` every value that is 1 *in the dtype* becomes 0.
  Edges ``0`` (float32 ``2^-25``; float64 ``2^-53``; float16 adds the ``x`` whose ``rand`` rounds to 0 in
  float16), the smallest positive value (float32 ``2^-33``, float64 ``2^-54``: far below the CPU's
  ``2^-24`` / ``2^-53``) and the largest value below 1.
* ``exponential_kernel`` (same file) with ``transformation::exponential<accscalar_t>``
  (``aten/src/ATen/core/TransformationHelper.h``; ``Tensor.exponential_()``): in the accumulate type
  ``T`` (float for float16/bfloat16/float32, double for float64), ``log = -eps_T/2`` when
  ``rand >= 1 - eps_T/2`` and ``log(rand)`` otherwise, ``E = scalar_t(-1/lambda * log)``.  The clamp makes
  ``E >= eps_T/2 > 0``: **CUDA's exponential never returns 0** (unlike the CPU's ``-log1p(-u)``, pytorch
  issue #22557), so its edges are the smallest value ``eps_T/2`` and the largest ``-log(smallest rand)``
  (float32 ``33 ln 2``, float64 ``54 ln 2``).  The largest value assumes ``log`` correctly rounded in
  ``T`` (CUDA's ``logf``/``log`` are within 1 ulp; the ``gpu`` tests confirm it on a device).
* ``multinomial`` (``aten/src/ATen/native/Distributions.cpp``, ``multinomial_out``): with one sample (or
  without replacement) it is ``argmax(w / E)`` with ``E = exponential_()`` in ``w``'s dtype, so its
  draws are ``"exponential"`` draws; with no ``E = 0`` on CUDA, ``0/0 = NaN`` cannot win there.
"""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import numpy as np
import torch

from specproof.harness.exact.dtypes import TORCH_DTYPES, dtype_name
from specproof.harness.exact.rng_edges import EdgeValue
from specproof.errors import SpecproofInputError

__all__ = ["CUDA_EDGE_LABELS", "curand_uniform_float", "curand_uniform_double", "cuda_uniform_value",
           "cuda_exponential_value", "cuda_draw_count", "cuda_edge_values"]

CUDA_EDGE_LABELS = {"uniform": ("zero", "smallest-positive", "largest-below-1"),
                    "exponential": ("smallest-positive", "largest")}
"""Edge labels per draw kind on CUDA: no ``"zero"`` exponential (the clamp excludes it)."""

_FLOAT_BITS = 32   # one uint32 per float draw
_DOUBLE_BITS = 53  # z = x ^ (y << 21) per double draw
_SOURCE = "aten/src/ATen/native/cuda/DistributionTemplates.h"


def curand_uniform_float(x: int) -> Fraction:
    """curand's ``_curand_uniform(x)``: float32 ``float(x) 2^-32 + 2^-33`` for a uint32 ``x``, in ``(0, 1]``."""
    if not 0 <= x < 1 << _FLOAT_BITS:
        raise SpecproofInputError("x", f"{x} is not a uint32", "pass an integer in [0, 2^32)")
    xf = np.array([x], dtype=np.uint32).astype(np.float32)  # round to nearest, ties to even
    return Fraction(float((xf * np.float32(2.0**-32) + np.float32(2.0**-33))[0]))


def curand_uniform_double(x: int, y: int) -> Fraction:
    """curand's ``_curand_uniform_double_hq(x, y)``: float64 ``z 2^-53 + 2^-54``, ``z = x ^ (y << 21)``."""
    for name, word in (("x", x), ("y", y)):
        if not 0 <= word < 1 << _FLOAT_BITS:
            raise SpecproofInputError(name, f"{word} is not a uint32", "pass an integer in [0, 2^32)")
    return _double_from_z(x ^ (y << 21))


def _double_from_z(z: int) -> Fraction:
    return Fraction(float(z) * 2.0**-53 + 2.0**-54)  # float(z) exact (z < 2^53); one rounding in the sum


def _round_to(value: Fraction, dtype: str) -> Fraction:
    """``value`` (a float64 number) rounded to ``dtype``, to nearest, ties to even."""
    return Fraction(float(torch.tensor([float(value)], dtype=torch.float64).to(TORCH_DTYPES[dtype]).item()))


def _rand(k: int, dtype: str) -> Fraction:
    """The curand uniform of draw index ``k`` (``k`` = the uint32 ``x``, or ``z`` for float64)."""
    return _double_from_z(k) if dtype == "float64" else curand_uniform_float(k)


def _bits(dtype: str) -> int:
    return _DOUBLE_BITS if dtype == "float64" else _FLOAT_BITS


def _uniform_before_reversal(k: int, dtype: str) -> Fraction:
    """``static_cast<scalar_t>(rand)`` (range 1, from 0): non-decreasing in ``k``, 1 reachable."""
    rand = _rand(k, dtype)
    return rand if dtype in ("float32", "float64") else _round_to(rand, dtype)


def cuda_uniform_value(k: int, dtype: object) -> Fraction:
    """``torch.rand`` on CUDA in ``dtype`` for draw index ``k`` (``uniform_kernel``: 1 becomes 0)."""
    name = dtype_name(dtype)
    value = _uniform_before_reversal(k, name)
    return Fraction(0) if value == 1 else value


def cuda_exponential_value(k: int, dtype: object) -> Fraction:
    """``exponential_()`` (rate 1) on CUDA in ``dtype`` for draw index ``k`` (``transformation::exponential``)."""
    name = dtype_name(dtype)
    rand = _rand(k, name)
    half_eps = Fraction(1, 1 << 53) if name == "float64" else Fraction(1, 1 << 24)  # eps/2 of accscalar_t
    if rand >= 1 - half_eps:
        negative_log = half_eps
    else:
        negative_log = Fraction(-math.log(float(rand)))  # correctly rounded in float64
        if name != "float64":
            negative_log = _round_to(negative_log, "float32")  # logf in float
    return negative_log if name in ("float32", "float64") else _round_to(negative_log, name)


def cuda_draw_count(dtype: object) -> int:
    """``N``: the number of equally likely draw indices ``k`` (``2^32`` per float draw, ``2^53`` for float64)."""
    return 1 << _bits(dtype_name(dtype))


def _first(n: int, predicate) -> int:
    """Smallest ``k`` in ``[0, n)`` with ``predicate(k)`` (monotone: False then True), ``n`` if none."""
    return bisect.bisect_left(range(n), True, key=predicate)


def _uniform_edges(dtype: str) -> tuple[EdgeValue, ...]:
    n = cuda_draw_count(dtype)
    pre = functools.partial(_uniform_before_reversal, dtype=dtype)
    first_positive = _first(n, lambda k: pre(k) > 0)
    first_one = _first(n, lambda k: pre(k) >= 1)
    smallest = pre(first_positive)
    after_smallest = _first(n, lambda k: pre(k) > smallest)
    top = pre(first_one - 1)
    first_top = _first(n, lambda k: pre(k) >= top)
    mapping = ("curand_uniform2_double (z 2^-53 + 2^-54)" if dtype == "float64"
               else "curand_uniform4 (float(x) 2^-32 + 2^-33)" + ("" if dtype == "float32" else f" rounded to {dtype}"))
    source = f"{_SOURCE} uniform_kernel, {mapping}"
    zero_how = f"{n - first_one} of 2^{_bits(dtype)} draws equal 1 and are reversed to 0"
    if first_positive:
        zero_how += f", {first_positive} round to 0"
    return (EdgeValue("uniform", dtype, "zero", Fraction(0), Fraction(first_positive + n - first_one, n),
                      f"{source}: {zero_how}"),
            EdgeValue("uniform", dtype, "smallest-positive", smallest,
                      Fraction(after_smallest - first_positive, n), source),
            EdgeValue("uniform", dtype, "largest-below-1", top, Fraction(first_one - first_top, n), source))


def _exponential_edges(dtype: str) -> tuple[EdgeValue, ...]:
    n = cuda_draw_count(dtype)
    e = functools.partial(cuda_exponential_value, dtype=dtype)  # non-increasing in k
    largest, smallest = e(0), e(n - 1)
    below_largest = _first(n, lambda k: e(k) < largest)
    first_smallest = _first(n, lambda k: e(k) <= smallest)
    source = (f"{_SOURCE} exponential_kernel with aten/src/ATen/core/TransformationHelper.h "
              f"transformation::exponential (log clamped to -eps/2 near 1)")
    return (EdgeValue("exponential", dtype, "smallest-positive", smallest, Fraction(n - first_smallest, n), source),
            EdgeValue("exponential", dtype, "largest", largest, Fraction(below_largest, n), source))


@functools.lru_cache(maxsize=None)
def _edges(kind: str, dtype: str) -> tuple[EdgeValue, ...]:
    return _uniform_edges(dtype) if kind == "uniform" else _exponential_edges(dtype)


def cuda_edge_values(kind: str, dtype: object) -> tuple[EdgeValue, ...]:
    """The edges of ``kind`` draws in ``dtype`` on CUDA (module docstring), labelled as :data:`CUDA_EDGE_LABELS`."""
    if kind not in CUDA_EDGE_LABELS:
        raise SpecproofInputError("kind", f"unknown draw kind {kind!r}",
                                  f"use one of {', '.join(CUDA_EDGE_LABELS)}")
    return _edges(kind, dtype_name(dtype))
