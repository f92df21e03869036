"""specproof.harness: exact references, drift measurement, statistical checks, CLI.

The harness's own names (the public API is the root package, ``import specproof``); each defined in one
place, none re-exported from ``specproof.proofs``.
Public names load their submodule on first use (:mod:`specproof.lazy`), so the command
line starts without torch, sympy or z3 unless the command needs them.
"""

from __future__ import annotations

from specproof.lazy import make_lazy

_EXPORTS: dict[str, str] = {  # public name -> the module that defines it
    "assert_lossless": "check.testing.asserts",
    **dict.fromkeys(("CheckResult", "Finding", "ScenarioReport"), "check.result"),
    **dict.fromkeys(("ContractViolation", "VerifierError"), "check.calls"),
    **dict.fromkeys(("DTYPES", "DtypeInfo", "dtype_info"), "exact.dtypes"),
    **dict.fromkeys(("dyadic_array", "to_exact"), "exact.convert"),
    **dict.fromkeys(("DriftResult", "ErrorModel", "FieldDrift", "LawDrift", "measure_whitebox",
                     "round_to_dtype"), "drift.whitebox"),
    **dict.fromkeys(("GridDrift", "GridVerdict", "UniformGrid", "grid_round_tolerance", "ideal_round_law",
                     "measure_grid", "uniform_grid"), "drift.grid"),
    **dict.fromkeys(("ExactReference", "ExactVector", "Normalisation", "exact_reference", "sum_bound"),
                    "exact.reference"),
    **dict.fromkeys(("Scenario", "default_suite", "scenario_strategy"), "check.contracts.batched.scenarios"),
    **dict.fromkeys(("SoftmaxReference", "exact_softmax"), "exact.softmax"),
    **dict.fromkeys(("Sampling", "apply_sampling"), "exact.sampling"),
    **dict.fromkeys(("detectable_shift", "samples_for_shift"), "check.stats.statistics"),
    **dict.fromkeys(("check_tolerance", "round_tolerance", "step_tolerance"), "exact.tolerances"),
}

make_lazy(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
