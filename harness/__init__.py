"""specproof.harness: exact references, drift measurement, checks, CLI."""

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.sequences import ToyPair, continued_law, law_tv, round_law, target_law

from .convert import DTYPES, DtypeInfo, dtype_info, dyadic_array, to_exact
from .reference import ExactReference, ExactVector, Normalisation, exact_reference, sum_bound
from .softmax import SoftmaxReference, exact_softmax

__all__ = [
    "DTYPES",
    "DtypeInfo",
    "ExactReference",
    "ExactVector",
    "Normalisation",
    "SoftmaxReference",
    "SpecproofInputError",
    "ToyPair",
    "continued_law",
    "dtype_info",
    "dyadic_array",
    "exact_reference",
    "exact_softmax",
    "law_tv",
    "round_law",
    "sum_bound",
    "target_law",
    "to_exact",
]
