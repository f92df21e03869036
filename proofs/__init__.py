"""specproof.proofs: verifier rules written once, and the theorems about them.

* the arithmetic interface (:class:`Arith`) and its backends: exact rationals, torch, sympy, z3;
* rules: :class:`StepRule` records in a registry (:func:`step_rules`), plus laws with other structure
  (block verification, multi-draft, SpecTr, sampler-match, processors);
* verdicts: :class:`Verdict`, :class:`ProofResult` with exact :class:`Counterexample` records;
* :func:`catalogue`, :func:`prove_rule`, :func:`prove_all`, :func:`theorems`, :func:`prove_theorem`;
  user rules via :func:`load_user_rule` (``path.py:name``).
"""

from .arith import Arith
from .backends import ExactArith, ExactLog, ExactLogSum, SympyArith, TorchArith, Z3Arith
from .errors import SpecproofInputError
from .sequences import (
    MAX_SEQUENCES,
    SequenceLaw,
    ToyPair,
    check_enumeration,
    continued_law,
    law_tv,
    round_law,
    target_law,
)
from .rules import (
    CANONICAL,
    CANONICAL_LESS_EQUAL,
    CANONICAL_LOG,
    CANONICAL_MULTIPLICATION,
    ENSEMBLE,
    GREEDY,
    LENIENCE,
    RESAMPLE_FROM_TARGET,
    TOP_K_ACCEPT,
    TYPICAL,
    StepLaw,
    StepRule,
    get_step_rule,
    register_step_rule,
    step_law,
    step_rules,
)
from .outcomes import DEFAULT_RLIMIT, Counterexample, Obligation, ProofResult, Verdict, WorstCase
from .search import PairLaw
from .provers import Settings, prove_step_rule
from .theorems import Theorem, prove_theorem, theorems
from .catalogue import CatalogueEntry, catalogue, load_user_rule, prove_all, prove_rule, resolve_rule

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
    "prove_rule",
    "resolve_rule",
]
