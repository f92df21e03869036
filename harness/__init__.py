"""specproof.harness: exact references, drift measurement, statistical checks, CLI."""

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.sequences import ToyPair, continued_law, law_tv, round_law, target_law

from .asserts import assert_lossless
from .check import CheckResult, ContractViolation, Finding, ScenarioReport, VerifierError, check_verifier
from .convert import DTYPES, DtypeInfo, dtype_info, dyadic_array, to_exact
from .drift import DriftResult, ErrorModel, FieldDrift, LawDrift, measure_whitebox, round_to_dtype
from .grid import (GridDrift, GridVerdict, UniformGrid, grid_round_tolerance, ideal_round_law, measure_grid,
                   uniform_grid)
from .reference import ExactReference, ExactVector, Normalisation, exact_reference, sum_bound
from .scenarios import Scenario, default_suite, scenario_strategy
from .softmax import SoftmaxReference, exact_softmax
from .statistics import critical_value, detectable_shift, samples_for_shift
from .tolerances import round_tolerance, step_tolerance

__all__ = [
    "CheckResult", "ContractViolation", "DTYPES", "DriftResult", "DtypeInfo", "ErrorModel",
    "ExactReference", "ExactVector", "FieldDrift", "Finding", "GridDrift", "GridVerdict", "LawDrift",
    "Normalisation", "Scenario", "ScenarioReport", "SoftmaxReference", "SpecproofInputError", "ToyPair",
    "UniformGrid", "VerifierError", "assert_lossless", "check_verifier", "continued_law",
    "critical_value", "default_suite", "detectable_shift", "dtype_info", "dyadic_array",
    "exact_reference", "exact_softmax", "grid_round_tolerance", "ideal_round_law", "law_tv",
    "measure_grid", "measure_whitebox", "round_law", "round_to_dtype", "round_tolerance",
    "samples_for_shift", "scenario_strategy", "step_tolerance", "sum_bound", "target_law", "to_exact",
    "uniform_grid",
]
