"""The arithmetic interface every rule is written against (:mod:`.interface`), and its interpretations:
exact rationals (:mod:`.exact`), the vectorised common-denominator exact path (:mod:`.fast`), sympy,
z3 and torch (``*_backend``).
"""

from __future__ import annotations

from specproof.lazy import make_lazy

_EXPORTS: dict[str, str] = {  # public name -> the submodule that defines it
    **dict.fromkeys(("Arith", "CompareByOperator", "TupleVectors"), "interface"),
    **dict.fromkeys(("ExactArith", "ExactLog", "ExactLogSum", "exact_scalar"), "exact"),
    **dict.fromkeys(("SympyArith", "SympyLog"), "sympy_backend"),
    "TorchArith": "torch_backend",
    **dict.fromkeys(("Z3Arith", "Z3Log", "z3_fraction"), "z3_backend"),
}

make_lazy(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
