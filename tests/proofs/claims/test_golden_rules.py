"""Golden rules through the public --rule interface: known-good and known-bad rules with their
expected verdict, scope and exact TV (CrossHair style), and misuses that must be usage errors.

The rule files live in tests/proofs/golden/.  No wrong rule may come out PROVED or BOUNDED."""

from fractions import Fraction as F
from pathlib import Path

import pytest

from specproof.proofs import Settings, SpecproofInputError, Verdict, load_user_rule, prove_rule

GOLDEN = Path(__file__).parent / "golden"
SETTINGS = Settings(drift=False)

RIGHT = [  # (variable, verdict, scope)
    ("canonical", Verdict.PROVED, "every n"),
    ("mul_test", Verdict.PROVED, "every n"),
    ("log_test", Verdict.PROVED, "every n"),
    ("le_test", Verdict.PROVED, "every n"),
    ("u_below_a", Verdict.PROVED, "every n"),
    ("negated_test", Verdict.PROVED, "every n"),
    ("accept_unproposed", Verdict.PROVED, "every n"),
    ("reject_always", Verdict.PROVED, "every n"),
    ("over_max", Verdict.PROVED, "every n"),  # p / max(p, q) with safe_div: exact
    ("min_form", Verdict.PROVED, "every n"),
    ("clamped", Verdict.PROVED, "every n"),
    ("constant_return", Verdict.PROVED, "every n"),
    # exact, but no every-n proof is available: honestly BOUNDED
    ("scaled_residual", Verdict.BOUNDED, "n = 2..4 (bounded)"),  # q A + w = p fails; normalising fixes it
    ("rank_noise", Verdict.BOUNDED, "n = 2..4 (bounded)"),  # ordering: no generic coordinate
    ("half", Verdict.BOUNDED, "n = 2..4 (bounded)"),
]
SLOW_RIGHT = [("prenormalised", Verdict.BOUNDED, "n = 2..3 (bounded)")]  # z3 stops at n = 4

WRONG = [  # (variable, scope, TV, p, q)
    ("swapped_test", "n = 2", "1/2", ("1/2", "1/2"), ("1", "0")),  # the u*p < q
    ("u_below_p", "n = 2", "1/9", ("1/3", "2/3"), ("2/3", "1/3")),
    # not sampling rules (A > 1, w < 0): a witness where the output law differs is preferred to the
    # well-formedness witness (whose clamped TV can be 0); the well-formedness goal stays REFUTED
    ("acceptance_over_one", "n = 3", "1/6", ("0", "1/3", "2/3"), ("2/3", "0", "1/3")),
    ("negative_residual", "n = 2", "1/2", ("0", "1"), ("1", "0")),
    ("raw_p_from_v5", "n = 5", "3/25", ("1/5",) * 5, ("2/5", "1/5", "1/5", "1/10", "1/10")),
    ("rank_four_raw_p", "n = 5", "1/30", ("1/5",) * 5, ("2/5", "1/5", "1/5", "1/10", "1/10")),
    ("accept_zero_p", "n = 2", "1", ("0", "1"), ("1", "0")),
    ("residual_zero_p", "n = 2", "1/11", ("0", "1"), ("1", "0")),
    ("over_one_zero_p", "n = 2", "1", ("0", "1"), ("1/2", "1/2")),
    ("weakened_test", "n = 2", "1/10", ("1/2", "1/2"), ("1", "0")),
    ("halved_test", "n = 2", "1/4", ("1/2", "1/2"), ("1", "0")),
    ("u_below_q", "n = 2", "1/2", ("1/2", "1/2"), ("1", "0")),
    ("swapped_log_test", "n = 2", "1/2", ("1/2", "1/2"), ("1", "0")),
    ("squared_p_test", "n = 2", "1/4", ("1/2", "1/2"), ("1", "0")),
    ("squared_u_test", "n = 2", "1/4", ("1/4", "3/4"), ("1", "0")),  # P(u^2 < A) = sqrt(A): rational points only
    ("shifted_acceptance", "n = 2", "1/2", ("0", "1"), ("1", "0")),
    ("negative_acceptance", "n = 2", "1/10", ("1/2", "1/2"), ("0", "1")),
    ("steep_residual", "n = 2", "1/2", ("0", "1"), ("1/2", "1/2")),
    ("raw_p", "n = 2", "1/4", ("1/2", "1/2"), ("0", "1")),
    ("half_residual", "n = 2", "1/9", ("1/3", "2/3"), ("0", "1")),
    ("double_acceptance", "n = 2", "1/2", ("1/2", "1/2"), ("0", "1")),
    ("swapped_residual", "n = 2", "1", ("0", "1"), ("1", "0")),
    ("swapped_acceptance", "n = 2", "1/2", ("1/2", "1/2"), ("0", "1")),
    ("squared_acceptance", "n = 2", "1/4", ("1/2", "1/2"), ("0", "1")),
    ("step_acceptance", "n = 2", "1/2", ("1/2", "1/2"), ("0", "1")),
    ("smoothed_residual", "n = 2", "1/102", ("0", "1"), ("1", "0")),
    ("lenient", "n = 2", "1/2", ("1/2", "1/2"), ("0", "1")),
    ("accept_with_p", "n = 2", "1/9", ("1/3", "2/3"), ("2/3", "1/3")),
    ("resample_draft", "n = 2", "1", ("0", "1"), ("1", "0")),
    ("test_matches_wrong_a", "n = 2", "1/2", ("1/2", "1/2"), ("0", "1")),
    ("backend_sniffing", "n = 2", "1/4", ("1/2", "1/2"), ("0", "1")),
]
NOT_A_SAMPLING_RULE = {"acceptance_over_one", "negative_residual", "over_one_zero_p", "shifted_acceptance",
                       "negative_acceptance", "steep_residual"}
"""Rules whose well-formedness goal is REFUTED (their witness is an output-law one: a larger TV)."""
TEST_LAW = {"swapped_test", "u_below_p", "weakened_test", "halved_test", "u_below_q", "swapped_log_test",
            "squared_p_test", "squared_u_test"}

MISUSE = [  # (variable, what the message must name)
    ("tuple_trick", "isinstance"), ("divides", "ar.safe_div"), ("condition", "returned a condition"),
    ("plain_fraction", r"Fraction arithmetic.*ar.mul"), ("raises_from_v4", r"len\(\)"),
    ("returns_list", "returned a list"), ("python_min", "ar.lt"), ("exits", "SystemExit"),
    ("dies", "ended its process"), ("bool_branch", r"bool\(\).*ar.select"), ("caught", "caught inside the rule"),
    ("float_constant", "ar.const got a float"), ("iterates", "iteration"),
    ("test_returns_number", "acceptance_test returned a number"), ("backend_attribute", "ar.ctx is not part"),
    ("negative_log", "log of a negative number"), ("clash", "a catalogue rule's name"),
]


ATTACKS = [  # (variable, how it ends: a verdict with its TV, or the usage error's message)
    ("sniffs_errors", "REFUTED 1/9"),  # its test really is u < p
    ("reaches_value", "no attribute '_value'"),
    ("reaches_backend", "ar._inner is not part of the Arith interface"),
    ("constant_subclass", "REFUTED 1/6"),  # proved as the 1/2 it stores, whatever its methods say
    ("inspects_stack", r"inspects the interpreter \(sys._getframe at attack_rules.py"),
]


def _prove(file, name):
    return prove_rule(load_user_rule(f"{GOLDEN / file}:{name}"), SETTINGS)


@pytest.mark.parametrize("name, verdict, scope", RIGHT + [pytest.param(*r, marks=pytest.mark.slow) for r in SLOW_RIGHT])
def test_right_rules(name, verdict, scope):
    result = _prove("right_rules.py", name)
    assert (result.verdict, result.scope, result.counterexample) == (verdict, scope, None), result.reason
    assert result.as_json()["scope"] == scope and result.as_json()["assumptions"] == []


@pytest.mark.parametrize("name, size, tv, p, q", WRONG)
def test_wrong_rules_are_refuted_with_an_exact_witness(name, size, tv, p, q):
    result = _prove("wrong_rules.py", name)
    assert result.verdict == Verdict.REFUTED and not result.ok
    assert result.scope == f"{size} (exact witness)"
    witness = result.counterexample
    assert (witness.tv, witness.p, witness.q) == (F(tv), tuple(map(F, p)), tuple(map(F, q)))
    assert "not_a_sampling_rule" not in witness.extra  # a law witness is preferred
    well_formed = [o for o in result.obligations if o.name == "W (exact witness)"]
    assert bool(well_formed and well_formed[0].verdict == Verdict.REFUTED) == (name in NOT_A_SAMPLING_RULE)
    assert ("acceptance_test_law" in witness.extra) == (name in TEST_LAW)
    assert result.as_json()["tv"] == f"{F(tv).numerator}/{F(tv).denominator}"


@pytest.mark.parametrize("name, outcome", ATTACKS)
def test_attacks_on_the_prover_are_refuted_or_refused(name, outcome):
    """One golden case per attack class of issue 40; none is PROVED."""
    if outcome.startswith("REFUTED"):
        result = _prove("attack_rules.py", name)
        assert (result.verdict, str(result.counterexample.tv)) == (Verdict.REFUTED, outcome.split()[1])
    else:
        with pytest.raises(SpecproofInputError, match=outcome):
            _prove("attack_rules.py", name)


def test_import_time_code_cannot_patch_the_prover(capsys):
    import specproof.harness.cli.parser as cli
    from specproof.proofs.claims import pipeline
    decide = pipeline.decide
    assert cli.main(["prove", "--rule", f"{GOLDEN / 'attack_import_time.py'}:patched"]) == 2
    err = capsys.readouterr().err
    assert "imports specproof.proofs.claims.pipeline, an internal module" in err and "Traceback" not in err
    assert pipeline.decide is decide


def test_golden_tables_cover_the_files():
    """Every rule in the golden files is in a table (so none escapes the no-PROVED check)."""
    for file, table in (("right_rules.py", RIGHT + SLOW_RIGHT), ("wrong_rules.py", WRONG),
                        ("misuse_rules.py", MISUSE), ("attack_rules.py", ATTACKS)):
        text = (GOLDEN / file).read_text()
        defined = {line.split(" = ")[0] for line in text.splitlines()
                   if " = _rule(" in line and not line.startswith((" ", "#"))}
        assert text.count("_rule(\"") == len(defined), file
        assert defined == {row[0] for row in table}, file
    assert len(WRONG) >= 26 and len(RIGHT) >= 10


@pytest.mark.parametrize("name, message", MISUSE)
def test_misuse_is_a_usage_error_naming_the_fix(name, message):
    with pytest.raises(SpecproofInputError, match=message):
        prove_rule(load_user_rule(f"{GOLDEN / 'misuse_rules.py'}:{name}"), Settings(drift=False, timeout=60))


def test_through_the_cli_wrong_rules_exit_one_with_witnesses_in_the_json(tmp_path, capsys):
    import json

    import specproof.harness.cli.parser as cli
    out = tmp_path / "golden.json"
    rules = [f"{GOLDEN / 'wrong_rules.py'}:{name}" for name in ("swapped_test", "acceptance_over_one")]
    argv = ["prove", "--no-drift", "--json", str(out)] + [a for r in rules for a in ("--rule", r)]
    assert cli.main(argv) == 1
    text = capsys.readouterr().out
    assert text.count("REFUTED") == 3 and "PROVED " not in text.replace("EXPECTED PROVED", "")
    results = {r["rule"]: r for r in json.loads(out.read_text())["results"]}
    swapped, over = results["w-swapped-test"], results["w-acceptance-over-one"]
    assert swapped["tv"] == "1/2" and swapped["counterexample"]["extra"]["acceptance_test_law"] == ["1/1", "0/1"]
    assert over["scope"] == "n = 3 (exact witness)" and over["tv"] == "1/6"
    assert any("not a probability" in o["detail"] for o in over["obligations"] if o["verdict"] == "REFUTED")
    assert "    witness: p = (1/2, 1/2), q = (1, 0), produced law = (" in text and "), TV = 1/2\n" in text
