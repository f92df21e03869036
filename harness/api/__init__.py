"""specproof: prove speculative-sampling verifier rules exact, compute exact references, and check real
kernels against them.

The public API (everything else is internal and may change before 1.0)::

    import specproof

    result = specproof.check(my_verify)                      # batched contract (default)
    result = specproof.check(my_tree_verify, "tree")         # or "generate" for a whole pipeline
    specproof.assert_lossless(my_verify, samples=20_000)     # AssertionError unless PASS
    proof = specproof.prove_rule("canonical")                # or a user rule "path.py:name"
    ref = specproof.exact_reference(p, q)                    # one verification step, exactly

Results: :class:`CheckResult` (``verdict`` a :class:`CheckVerdict`, ``exit_code``, ``summary()``,
``as_json()``), :class:`Finding`, :class:`ProofResult` (``verdict``: PROVED, BOUNDED, REFUTED, ...).  Errors:
:class:`SpecproofInputError` (``argument``, ``problem``, ``fix``) for bad input, with
:class:`VerifierError` and :class:`ContractViolation` when the target raises, hangs or breaks its
output contract.  The names load on first use, so ``import specproof`` imports neither torch, sympy
nor z3.

This file is the root package ``specproof`` (``pyproject.toml`` maps it from ``harness/api/``); beside
the shared infrastructure every layer may import (``errors``, ``verdicts``, ``loading``, ``lazy``), its
subpackages are ``specproof.proofs``, ``specproof.harness`` and ``specproof.impls``.
"""

from __future__ import annotations

from specproof.lazy import make_lazy

_EXPORTS: dict[str, str] = {  # public name -> the module that defines it
    "check": "specproof.harness.check.driver",
    "CheckOptions": "specproof.harness.check.options",
    "assert_lossless": "specproof.harness.check.testing.asserts",
    **dict.fromkeys(("CheckResult", "Finding"), "specproof.harness.check.result"),
    **dict.fromkeys(("ContractViolation", "VerifierError"), "specproof.harness.check.calls"),
    "CheckVerdict": "specproof.verdicts",
    "CONTRACTS": "specproof.harness.check.contracts",
    "prove_rule": "specproof.proofs.claims.catalogue",
    "ProofResult": "specproof.proofs.engine.results",
    "exact_reference": "specproof.harness.exact.reference",
    "SpecproofInputError": "specproof.errors",
}

make_lazy(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
