"""specproof.proofs: verifier rules written once, and the theorems about them."""

from .arith import Arith
from .backends import ExactArith, ExactLog, TorchArith
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
    CANONICAL_LOG,
    CANONICAL_MULTIPLICATION,
    StepLaw,
    StepRule,
    get_step_rule,
    register_step_rule,
    step_law,
    step_rules,
)

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
    "CANONICAL_LOG",
    "CANONICAL_MULTIPLICATION",
    "ExactArith",
    "ExactLog",
    "SpecproofInputError",
    "StepLaw",
    "StepRule",
    "TorchArith",
    "get_step_rule",
    "register_step_rule",
    "step_law",
    "step_rules",
]
