"""Interpretations of the arithmetic interface."""

# Imported on first use (PEP 562): the exact backend needs nothing, the others load torch, sympy or z3.
from __future__ import annotations

from ..lazy_exports import make_lazy

_EXPORTS: dict[str, str] = {  # public name -> the submodule that defines it
    **dict.fromkeys(("ExactArith", "ExactLog", "ExactLogSum", "exact_scalar"), "exact"),
    **dict.fromkeys(("SympyArith", "SympyLog"), "sympy_backend"),
    "TorchArith": "torch_backend",
    **dict.fromkeys(("Z3Arith", "Z3Log", "z3_fraction"), "z3_backend"),
}

make_lazy(__name__, _EXPORTS)

__all__ = ["ExactArith", "ExactLog", "ExactLogSum", "SympyArith", "SympyLog", "TorchArith", "Z3Arith",
           "Z3Log", "exact_scalar", "z3_fraction"]
