"""``import specproof``: the small public API, lazy (no torch, sympy or z3 until a name is used)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_import_specproof_loads_no_heavy_module_and_lists_the_public_names():
    code = ("import sys, specproof; print(sorted(specproof.__all__)); "
            "print([m for m in ('torch', 'sympy', 'z3') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert eval(out[1]) == []
    assert set(eval(out[0])) == {"check", "assert_lossless", "CheckOptions", "CheckResult", "Finding", "CheckVerdict",
                                 "CONTRACTS", "ContractViolation", "VerifierError", "prove_rule", "ProofResult",
                                 "exact_reference", "SpecproofInputError"}


def test_the_public_names_are_the_ones_the_internals_define():
    import specproof
    from specproof.harness.check.driver import check
    from specproof.errors import SpecproofInputError

    assert specproof.check is check and specproof.SpecproofInputError is SpecproofInputError
    assert set(specproof.CONTRACTS) == {"batched", "tree", "generate"}
    with pytest.raises(AttributeError):
        specproof.check_verifier  # noqa: B018  (no former names)


def test_check_and_assert_lossless_run_every_contract_through_one_entry():
    import specproof
    from specproof.harness.check.contracts.generate.scenarios import pipeline_suite
    from specproof.harness.check.contracts.tree.scenarios import default_tree_suite
    from specproof.impls import canonical_ratio_race
    from specproof.impls.pipelines.canonical import canonical_generate
    from specproof.impls.verifiers.tree_rrs import tree_rrs

    cases = [(canonical_ratio_race, "batched", None), (tree_rrs, "tree", default_tree_suite()[:1]),
             (canonical_generate, "generate", pipeline_suite()[:1])]
    for target, contract, scenarios in cases:
        result = specproof.check(target, contract, samples=128, inject=False, progress=False, scenarios=scenarios,
                                 max_detectable_tv=1.0)
        assert result.contract == contract and result.verdict is specproof.CheckVerdict.PASS, result.summary()
    with pytest.raises(AssertionError, match="UNDERPOWERED"):
        specproof.assert_lossless(canonical_ratio_race, samples=128, inject=False, progress=False)


def test_a_name_exported_by_two_facades_means_one_thing():
    """``specproof``, ``specproof.proofs``, ``.harness`` and ``.impls`` may share a name only for the same
    object (``CONTRACTS`` once named the check's records in one and the implementations' calling
    conventions in another)."""
    import importlib
    from itertools import combinations

    facades = {name: importlib.import_module(name)
               for name in ("specproof", "specproof.proofs", "specproof.harness", "specproof.impls")}
    clashes = [(a, b, n) for (a, ma), (b, mb) in combinations(facades.items(), 2)
               for n in set(ma.__all__) & set(mb.__all__) if getattr(ma, n) is not getattr(mb, n)]
    assert not clashes, clashes
