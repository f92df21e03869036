"""specproof.proofs: verifier rules written once, and the theorems about them.

* the arithmetic interface (:class:`Arith`) and its backends: exact rationals, torch, sympy, z3;
* rules: :class:`StepRule` records in a registry (:func:`step_rules`), plus laws with other structure
  (block verification, multi-draft, SpecTr, sampler-match, processors);
* verdicts: :class:`Verdict` (PROVED for every size, BOUNDED, REFUTED, INCONCLUSIVE, VACUOUS) decided
  by :func:`decide` from all the evidence; :class:`ProofResult` with its scope, its assumptions and
  exact :class:`Counterexample` records;
* :func:`catalogue`, :func:`prove_rule`, :func:`prove_all`, :func:`theorems`, :func:`prove_theorem`;
  user rules via :func:`load_user_rule` (``path.py:name``), run on opaque values (:class:`RuleUsageError`
  when they step outside the Arith interface).
"""

# Imported on first use (PEP 562): the backends pull in torch, sympy and z3, seconds that a command
# which needs none of them (``--help``, ``reference``) should not pay.
from __future__ import annotations

from specproof.lazy import make_lazy

_EXPORTS: dict[str, str] = {  # public name -> the submodule that defines it
    "Arith": "arith.interface",
    **dict.fromkeys(("ExactArith", "ExactLog", "ExactLogSum"), "arith.exact"),
    "SympyArith": "arith.sympy_backend",
    "TorchArith": "arith.torch_backend",
    "Z3Arith": "arith.z3_backend",
    "SpecproofInputError": "specproof.errors",
    **dict.fromkeys(("MAX_SEQUENCES", "SequenceLaw", "ToyPair", "check_enumeration", "continued_law",
                     "law_tv", "round_law", "target_law"), "laws.sequences"),
    **dict.fromkeys(("CANONICAL", "CANONICAL_LESS_EQUAL", "CANONICAL_LOG", "CANONICAL_MULTIPLICATION",
                     "ENSEMBLE", "GREEDY", "LENIENCE", "RESAMPLE_FROM_TARGET", "TOP_K_ACCEPT", "TYPICAL",
                     "StepLaw", "StepRule", "get_step_rule", "register_step_rule", "step_law",
                     "step_rules"), "laws.step_rules"),
    **dict.fromkeys(("DEFAULT_RLIMIT", "Assumption", "Basis", "Counterexample", "Obligation", "ProofResult",
                     "Verdict", "WorstCase"), "engine.results"),
    "PairLaw": "engine.counterexamples",
    **dict.fromkeys(("Settings", "prove_step_rule"), "claims.pipeline"),
    **dict.fromkeys(("Theorem", "prove_theorem", "theorems"), "claims.theorems"),
    **dict.fromkeys(("CatalogueEntry", "catalogue", "load_user_rule", "prove_all", "prove_entry", "prove_rule",
                     "resolve_rule"), "claims.catalogue"),
    "RuleUsageError": "claims.opaque",
    "decide": "engine.verdicts",
}

make_lazy(__name__, _EXPORTS)

__all__ = [
    "Arith",
    "MAX_SEQUENCES",
    "SequenceLaw",
    "ToyPair",
    "check_enumeration",
    "continued_law",
    "law_tv",
    "round_law",
    "target_law",
    "CANONICAL",
    "CANONICAL_LESS_EQUAL",
    "CANONICAL_LOG",
    "CANONICAL_MULTIPLICATION",
    "ENSEMBLE",
    "GREEDY",
    "LENIENCE",
    "RESAMPLE_FROM_TARGET",
    "TOP_K_ACCEPT",
    "TYPICAL",
    "ExactArith",
    "ExactLog",
    "ExactLogSum",
    "SpecproofInputError",
    "StepLaw",
    "StepRule",
    "SympyArith",
    "TorchArith",
    "Z3Arith",
    "get_step_rule",
    "register_step_rule",
    "step_law",
    "step_rules",
    "DEFAULT_RLIMIT",
    "Assumption",
    "Basis",
    "Counterexample",
    "Obligation",
    "ProofResult",
    "Verdict",
    "WorstCase",
    "PairLaw",
    "Settings",
    "prove_step_rule",
    "Theorem",
    "prove_theorem",
    "theorems",
    "CatalogueEntry",
    "catalogue",
    "load_user_rule",
    "prove_all",
    "prove_entry",
    "prove_rule",
    "RuleUsageError",
    "decide",
    "resolve_rule",
]
