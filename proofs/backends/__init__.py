"""Interpretations of the arithmetic interface."""

from .exact import ExactArith, ExactLog, ExactLogSum, exact_scalar
from .sympy_backend import SympyArith, SympyLog
from .torch_backend import TorchArith
from .z3_backend import Z3Arith, Z3Log, z3_fraction

__all__ = ["ExactArith", "ExactLog", "ExactLogSum", "SympyArith", "SympyLog", "TorchArith", "Z3Arith",
           "Z3Log", "exact_scalar", "z3_fraction"]
