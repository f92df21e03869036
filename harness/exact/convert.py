"""The one exact conversion from floats (and exact inputs) to rationals, and the dtype table.

Every float is a dyadic rational ``m * 2^e``: :func:`to_exact` returns it exactly as a
:class:`~fractions.Fraction` (never through float arithmetic), and :func:`dyadic_array` returns a whole
array as integers over one common power of two for the vectorised fast path.  Exact inputs (int,
Fraction, sympy Rational) pass through unchanged.  NaN and infinities are refused.  The other way,
:func:`round_to_dtype` rounds a law to a dtype as a runtime receives it (one correct rounding of each
exact value, torch's conversion for floats).

``DTYPES`` and the dtype names live in :mod:`.dtypes` (re-exported here for old imports).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.exact.dtypes import DTYPES, DtypeInfo, dtype_info, dtype_name, torch_dtype

__all__ = [
    "DTYPES",
    "array_values",
    "DtypeInfo",
    "dtype_info",
    "dtype_name",
    "dyadic_array",
    "is_exact_input",
    "round_to_dtype",
    "to_exact",
]


def _torch():
    import torch

    return torch


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")  # no tensor exists before torch is imported: don't import it to ask
    return torch is not None and isinstance(x, torch.Tensor)


def is_exact_input(x: Any) -> bool:
    """True for ints, Fractions, sympy Rationals and sequences of them (no float anywhere)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, Fraction)):
        return True
    if type(x).__module__.startswith("sympy"):
        return bool(getattr(x, "is_Rational", False))
    if isinstance(x, (list, tuple)):
        return all(is_exact_input(v) for v in x)
    return False


def _scalar_to_fraction(x: Any, argument: str) -> Fraction:
    if isinstance(x, bool):
        raise SpecproofInputError(argument, "a bool is not a number", "pass ints, Fractions or floats")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if type(x).__module__.startswith("sympy"):
        if getattr(x, "is_Rational", False):
            return Fraction(int(x.p), int(x.q))
        raise SpecproofInputError(argument, f"sympy value {x} is not a rational",
                                  "pass sympy.Rational values or evaluate to a float first")
    if isinstance(x, (float, np.floating)):
        value = float(x)  # numpy float16/32/64 -> Python float is exact (wider format)
        if math.isnan(value) or math.isinf(value):
            raise SpecproofInputError(argument, f"contains {value} (NaN or infinity)", "pass finite values only")
        return Fraction(value)  # Fraction(float) is exact: float.as_integer_ratio
    if isinstance(x, np.integer):
        return Fraction(int(x))
    raise SpecproofInputError(argument, f"unsupported value of type {type(x).__name__}",
                              "pass ints, Fractions, sympy Rationals, floats, numpy arrays or torch tensors")


def readable_tensor(x: Any, argument: str) -> Any:
    """``x`` (a tensor) if its values can be read: a meta tensor holds none, a sparse one is refused by
    layout (the caller densifies what it means)."""
    torch = _torch()
    if x.device.type == "meta":
        raise SpecproofInputError(argument, "is a tensor on the meta device, which holds no values",
                                  "pass a tensor on the CPU or a GPU (x.to('cpu') after filling it)")
    if x.layout != torch.strided:
        raise SpecproofInputError(argument, f"is a {x.layout} tensor", "pass a dense tensor (x.to_dense())")
    return x


def array_values(x: Any, argument: str) -> tuple[np.ndarray, str]:
    """A numpy array / tensor as exact numpy data and its source dtype name: floats widened exactly to
    float64 (any float format fits), integers as an object array of Python ints ('exact': an int64
    above 2^53 has no float64 form).  Complex, bool and other dtypes are refused."""
    if _is_tensor(x):
        torch = _torch()
        readable_tensor(x, argument)
        if x.dtype.is_complex:
            raise SpecproofInputError(argument, f"is a complex tensor ({x.dtype})",
                                      "pass real probabilities (e.g. x.real, after checking x.imag is 0)")
        if x.dtype == torch.bool:
            raise SpecproofInputError(argument, "is a bool tensor", "pass probabilities, logits or integer counts")
        if not x.dtype.is_floating_point:
            return np.array(x.detach().cpu().tolist(), dtype=object), "exact"
        name = dtype_name(x.dtype)
        return x.detach().to(device="cpu", dtype=torch.float64).numpy(), name
    arr = np.asarray(x)
    if arr.dtype.kind in "iu":
        return arr.astype(object), "exact"  # numpy ints -> Python ints, exactly
    if arr.dtype.kind == "c":
        raise SpecproofInputError(argument, f"is a complex array ({arr.dtype})",
                                  "pass real probabilities (e.g. x.real, after checking x.imag is 0)")
    if arr.dtype.kind != "f":
        raise SpecproofInputError(argument, f"unsupported array dtype {arr.dtype}",
                                  "pass float16/float32/float64 or integer arrays")
    return arr.astype(np.float64), dtype_name(arr.dtype.name)


def to_exact(x: Any, argument: str = "value") -> Any:
    """Exact rational(s) for ``x``: a Fraction for a scalar, nested tuples of Fractions for arrays.

    Accepts Python/numpy floats, numpy arrays and torch tensors of float16/bfloat16/float32/float64,
    ints (any size, integer arrays included), Fractions and sympy Rationals.  Raises
    :class:`SpecproofInputError` (naming ``argument``) on NaN, infinities, complex and unsupported types.
    """
    if _is_tensor(x) or isinstance(x, np.ndarray):
        arr, name = array_values(x, argument)
        if name != "exact" and not np.all(np.isfinite(arr)):
            raise SpecproofInputError(argument, "contains NaN or infinity", "pass finite values only")
        return _nested(arr.tolist(), argument)
    if isinstance(x, (list, tuple)):
        return tuple(to_exact(v, argument) for v in x)
    return _scalar_to_fraction(x, argument)


def _nested(values: Any, argument: str) -> Any:
    if isinstance(values, list):
        return tuple(_nested(v, argument) for v in values)
    return _scalar_to_fraction(values, argument)


def dyadic_array(x: Any, argument: str = "value") -> tuple[np.ndarray, int, str]:
    """A 1-D float array as ``(nums, exponent, dtype)`` with ``x[i] == nums[i] * 2**exponent`` exactly.

    ``nums`` is a numpy object array of Python ints (arbitrary size) sharing one power of two, the
    smallest one the data needs.  Integer arrays come back with exponent 0.
    """
    arr, name = array_values(x, argument)
    if arr.ndim != 1:
        raise SpecproofInputError(argument, f"expected a 1-D vector, got shape {arr.shape}",
                                  "pass one law over the vocabulary")
    if name == "exact":
        return np.array([int(v) for v in arr.tolist()], dtype=object), 0, name
    if not np.all(np.isfinite(arr)):
        raise SpecproofInputError(argument, "contains NaN or infinity", "pass finite values only")
    bits = DTYPES[name].precision
    mantissa, exponent = np.frexp(arr)
    ints = (mantissa * float(2**bits)).astype(np.int64)  # exact: at most `bits` significant bits
    exponent = exponent.astype(np.int64) - bits
    nonzero = ints != 0
    # strip trailing zero bits so the common power of two is as large as the data allows
    low_bit = np.where(nonzero, ints & -ints, 1)
    trailing = np.log2(low_bit.astype(np.float64)).astype(np.int64)  # exact for powers of two
    ints = ints >> trailing
    exponent = exponent + trailing
    if not nonzero.any():
        return np.zeros(arr.shape[0], dtype=object), 0, name
    low = int(exponent[nonzero].min())
    shift = np.where(nonzero, exponent - low, 0)
    nums = ints.astype(object) << shift.astype(object)
    return nums, low, name


# -- rounding to a dtype -------------------------------------------------------------------------

def _round_fraction(x: Fraction, info: DtypeInfo, argument: str) -> Fraction:
    """``x`` rounded to the nearest value of the dtype (ties to even), exactly."""
    if x == 0:
        return x
    n, d = x.numerator, x.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1  # now 2^e <= x < 2^(e+1)
    quantum = Fraction(2) ** max(e - info.precision + 1, info.min_exponent)
    value = round(x / quantum) * quantum  # Fraction.__round__ rounds half to even
    if value >= Fraction(2) ** (info.max_exponent + 1):
        raise SpecproofInputError(argument, f"value {float(x):.3g} overflows {info.name}",
                                  "pass probabilities")
    return value


def round_to_dtype(x: Any, dtype: Any, argument: str = "value") -> Any:
    """A 1-D law as a CPU tensor of ``dtype``, rounded as a runtime receives it.

    Exact values (ints, Fractions, sympy Rationals): one correct rounding each.  Float lists, numpy
    arrays and tensors: torch's conversion ``.to(dtype)`` (the identity when already in the dtype).
    """
    torch = _torch()
    from specproof.harness.exact.reference import ExactVector  # local: the reference builds on this module

    name = dtype_name(dtype)
    info = DTYPES[name]
    if isinstance(x, ExactVector):
        x = list(x)
    if isinstance(x, (list, tuple)) and is_exact_input(x):
        values = [_round_fraction(v, info, argument) for v in to_exact(list(x), argument)]
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64)  # exact: v fits float64
    elif isinstance(x, torch.Tensor):
        tensor = readable_tensor(x, argument).detach().cpu()
    elif isinstance(x, (np.ndarray, list, tuple)):
        try:
            tensor = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError):
            raise SpecproofInputError(argument, "is not a vector of numbers",
                                      "pass ints, Fractions, floats, a numpy array or a tensor") from None
    else:
        raise SpecproofInputError(argument, f"unsupported input of type {type(x).__name__}",
                                  "pass a list, a numpy array or a torch tensor")
    if tensor.dim() != 1 or tensor.shape[0] < 1:
        raise SpecproofInputError(argument, f"expected a non-empty 1-D law, got shape {tuple(tensor.shape)}",
                                  "pass one law over the vocabulary")
    if tensor.dtype.is_complex or tensor.dtype == torch.bool:
        raise SpecproofInputError(argument, f"is a {tensor.dtype} tensor", "pass real probabilities")
    if not tensor.dtype.is_floating_point:
        tensor = tensor.to(torch.float64)
    if not bool(torch.isfinite(tensor).all()) or bool((tensor < 0).any()):
        raise SpecproofInputError(argument, "has negative, NaN or infinite entries",
                                  "pass non-negative finite probabilities")
    rounded = tensor.to(torch_dtype(name))
    if not bool((rounded > 0).any()):
        raise SpecproofInputError(argument, f"underflows to all zeros in {name}",
                                  "pass a law with mass representable in the dtype")
    return rounded
