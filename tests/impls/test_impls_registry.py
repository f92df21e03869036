"""Registry behaviour: records, lookups, refusals, source hashes, and the impls -> harness boundary."""

import subprocess
import sys
import textwrap

import pytest
import torch

import specproof.impls as impls
from specproof.impls import IMPLEMENTATION_CONTRACTS, RULES, Implementation, Registry, get, implementations
from specproof.impls.records import default_registry
from specproof.impls.registry import source_text

ZOO = ("resample-from-target", "top1-acceptance", "greedy-while-sampling", "continue-after-rejection",
       "le-ratio-invcdf", "residual-clamped-tiny", "stale-residual-buffer", "target-only-temperature",
       "min-p-bonus-only", "draft-top-k-in-verifier", "bonus-from-wrong-row", "target-rows-shifted")


def record(name="x", contract="batched", **overrides):
    fields = dict(name=name, fn=impls.canonical_ratio_race, contract=contract, rule="canonical",
                  expected_exact=True, description="test record")
    fields.update(overrides)
    return Implementation(**fields)


def test_records_have_the_required_fields():
    records = implementations()
    assert len({r.name for r in records}) == len(records)
    for r in records:
        assert callable(r.fn) and r.contract in IMPLEMENTATION_CONTRACTS and r.rule in RULES
        assert isinstance(r.expected_exact, bool) and r.description
        assert set(r.dtypes) <= {torch.float16, torch.bfloat16, torch.float32, torch.float64}
        assert set(r.devices) <= {"cpu", "cuda"}
        assert len(r.source_hash) == 64 and int(r.source_hash, 16) >= 0
        if not r.expected_exact:
            assert r.bug and r.mirrors, r.name
        if r.uniforms_core:
            assert get(r.uniforms_core).contract == "uniforms"


def test_registry_covers_the_issue():
    names = {r.name for r in implementations()}
    assert set(ZOO) <= names
    assert all(not get(name).expected_exact for name in ZOO)
    assert {r.rule for r in implementations()} | {r.bug_rule for r in implementations()
                                                   if r.bug_rule} == set(RULES)
    assert {r.contract for r in implementations()} == set(IMPLEMENTATION_CONTRACTS)
    for form in ("ratio", "product", "log"):
        for draw in ("multinomial", "race", "invcdf"):
            assert get(f"canonical-{form}-{draw}").expected_exact
    assert get("transformers-speculative-sampling").needs_extra == "transformers"


def test_rule_names_match_the_proofs_catalogue():
    from specproof.proofs.laws.step_rules import get_step_rule

    multi_position = {"block", "multidraft-rrs"}
    for name in set(RULES) - multi_position:
        assert get_step_rule(name).name == name
    forms = {"ratio": "canonical", "product": "canonical-mul", "log": "canonical-log"}
    for form, rule in forms.items():
        assert get(f"canonical-{form}-race").rule == rule
        assert get_step_rule(rule).acceptance_test.__doc__.split("``")[1].replace(" ", "") in (
            "u<p/q", "u*q<p", "logu+logq<logp")


def test_filters_and_lookup():
    assert all(r.contract == "whitebox" for r in implementations(contract="whitebox"))
    assert {r.name for r in implementations(rule="block")} == {"block", "block-uniforms"}
    zoo = implementations(expected_exact=False)
    assert set(ZOO) <= {r.name for r in zoo}
    assert get("greedy").fn is impls.greedy_verify
    with pytest.raises(KeyError, match="no implementation named 'canonical-ratio-rase'.*"
                                       "'canonical-ratio-race'"):
        get("canonical-ratio-rase")
    with pytest.raises(ValueError, match="contract='streaming' is unknown"):
        implementations(contract="streaming")


def test_registry_refuses_duplicates_and_bad_fields():
    registry = Registry([record("a")])
    with pytest.raises(ValueError, match="name='a' is already registered.*'a-v2'"):
        registry.add(record("a"))
    with pytest.raises(ValueError, match="contract='streaming' for 'b' is unknown; use one of "
                                         "batched, uniforms, whitebox, multidraft"):
        registry.add(record("b", contract="streaming"))
    with pytest.raises(ValueError, match="rule='magic' for 'c' is not in the rule catalogue"):
        registry.add(record("c", rule="magic"))
    with pytest.raises(ValueError, match="bug_rule='magic' for 'c2' is not in the rule catalogue"):
        registry.add(record("c2", expected_exact=False, bug="b", bug_rule="magic"))
    with pytest.raises(ValueError, match="dtypes=.*int64"):
        registry.add(record("d", dtypes=(torch.int64,)))
    with pytest.raises(ValueError, match="devices=.*'tpu'"):
        registry.add(record("e", devices=("tpu",)))
    with pytest.raises(ValueError, match="expected_exact=False but no bug"):
        registry.add(record("f", expected_exact=False))
    with pytest.raises(TypeError, match="takes an Implementation record"):
        registry.add(impls.canonical_ratio_race)
    with pytest.raises(ValueError, match="cannot read the source.*'g'"):
        record("g", fn=torch.add)
    assert len(registry) == 1 and "a" in registry and [r.name for r in registry] == ["a"]


def test_source_hash_tracks_source_and_is_stable():
    assert get("canonical-ratio-race").source_hash == default_registry().get(
        "canonical-ratio-race").source_hash
    hashes = {r.source_hash for r in implementations()}
    assert len(hashes) == len(implementations()), "each implementation hashes differently"
    assert "partial args=" in source_text(impls.mutants.target_only_temperature)
    assert "Temperature(t=0.7)" in source_text(impls.mutants.target_only_temperature)
    with_helper = record("h", sources=(impls.draw_inverse_cdf,)).source_hash
    assert with_helper != record("h").source_hash


def test_impls_never_imports_the_harness():
    code = textwrap.dedent("""
        import sys, specproof.impls
        specproof.impls.implementations()
        leaked = [m for m in sys.modules if m.startswith("specproof.harness")]
        assert not leaked, leaked
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_api_is_exported():
    for name in impls.__all__:
        assert hasattr(impls, name), name


def test_labels_follow_what_is_true_per_dtype():
    """torch.multinomial in float16 on CPU picks zero-weight tokens: the *-multinomial records are
    expected exact except there (impls/sampler_probe.py measures the rate)."""
    for form in ("ratio", "product", "log"):
        mult, race = get(f"canonical-{form}-multinomial"), get(f"canonical-{form}-race")
        assert mult.expected_exact and "zero-weight tokens" in mult.defect_on(torch.float16, "cpu")
        assert not mult.expected_exact_on("float16") and not mult.expected_exact_on(torch.float16, "cpu")
        assert mult.expected_exact_on("float16", "cuda") and mult.expected_exact_on("bfloat16")
        assert race.expected_exact_on("float16") and race.defect_on("float16") is None
    registry = default_registry()
    float16_exact = registry.select(contract="batched", expected_exact=True, dtype=torch.float16)
    assert "canonical-ratio-multinomial" not in {r.name for r in float16_exact}
    assert "canonical-ratio-multinomial" in {r.name for r in registry.select(expected_exact=True)}


@pytest.mark.parametrize("entry", [("tpu", "float16", "x"), ("cpu", "int8", "x"), ("cpu", "float16", ""),
                                   ("cpu", "float16")])
def test_known_defect_entries_are_validated(entry):
    with pytest.raises(ValueError, match="known_defects"):
        Registry([record(known_defects=(entry,))])


@pytest.mark.slow
def test_the_float16_multinomial_defect_is_still_there():
    """If torch fixes its sampler this fails: then drop the known_defects entries (impls/records.py)."""
    from specproof.impls.sampler_probe import zero_weight_picks

    assert sum(zero_weight_picks(torch.float16, 400_000)) > 0
    assert zero_weight_picks(torch.float32, 100_000) == (0, 0)


def test_rule_names_are_the_proofs_rule_names():
    """impls names rules by the proofs' one list; each step rule and the block rule exist in the proofs."""
    from specproof.proofs.laws.implemented import FORM_OF_RULE, IMPLEMENTED_RULES, IMPLEMENTED_STEP_RULES
    from specproof.proofs.laws.step_rules import step_rules

    assert impls.RULES == IMPLEMENTED_RULES
    assert set(IMPLEMENTED_STEP_RULES) <= {r.name for r in step_rules()}
    assert {r.rule for r in implementations()} <= set(IMPLEMENTED_RULES)
    assert {r.rule for r in implementations(contract="uniforms") if r.rule in FORM_OF_RULE} == set(FORM_OF_RULE)


def test_the_whitebox_step_law_has_its_own_name():
    """``StepLaw`` names the proofs' exact law; the float white-box record is WhiteboxStepLaw (no former name)."""
    from specproof.proofs import StepLaw as ExactStepLaw

    assert not hasattr(impls, "StepLaw")
    assert impls.WhiteboxStepLaw is not ExactStepLaw
    assert isinstance(impls.step_ratio(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0])), impls.WhiteboxStepLaw)
