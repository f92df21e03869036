"""User rules, broken copies of proved rules, and the `specproof prove` command."""

import json
from fractions import Fraction as F

import pytest

import specproof.harness.cli.parser as cli
from specproof.proofs import (SpecproofInputError, StepRule, Verdict, load_user_rule, prove_rule,
                              resolve_rule)
from specproof.proofs.laws.step_rules import canonical_acceptance, canonical_residual_weight, division_test


def _copy(name, **changes):
    fields = dict(name=name, claim="exact", description="broken copy of canonical",
                  acceptance=canonical_acceptance, residual_weight=canonical_residual_weight)
    fields.update(changes)
    return StepRule(**fields)


BROKEN = {
    "half-residual": _copy("half-residual", residual_weight=lambda ar, p, q: ar.relu(ar.sub(p, ar.mul(
        ar.const(F(1, 2)), q)))),
    "double-acceptance": _copy("double-acceptance", acceptance=lambda ar, p, q: ar.minimum(
        ar.one, ar.safe_div(ar.mul(ar.const(2), p), q, ar.zero))),
    "swapped-residual": _copy("swapped-residual", residual_weight=lambda ar, p, q: ar.relu(ar.sub(q, p))),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_copies_of_the_canonical_rule_are_refuted(name):
    result = prove_rule(BROKEN[name])
    assert result.verdict == Verdict.REFUTED and not result.ok
    assert result.counterexample.tv > 0


def test_accepting_unproposed_tokens_is_harmless():
    """q(x) = 0 is never drafted, so A(x) there does not change the law: this copy is still exact."""
    copy = _copy("accept-unproposed", acceptance=lambda ar, p, q: ar.minimum(ar.one, ar.safe_div(p, q, ar.one)),
                 acceptance_test=division_test)
    result = prove_rule(copy)
    assert result.verdict == Verdict.PROVED and result.n == "all"


def test_reject_always_and_resample_p_is_exact():
    rule = StepRule("reject-always", "exact", "never accept, sample p", lambda ar, p, q: ar.zero,
                    lambda ar, p, q: p)
    assert prove_rule(rule).verdict == Verdict.PROVED


USER_FILE = '''
from specproof.proofs import StepRule

def acceptance(ar, p, q):
    return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))

def residual_weight(ar, p, q):
    return ar.relu(ar.sub(p, q))

my_rule = StepRule(name="my-rule", claim="exact", description="canonical, user-written",
                   acceptance=acceptance, residual_weight=residual_weight)
wrong = StepRule(name="wrong", claim="exact", description="residual from p",
                 acceptance=acceptance, residual_weight=lambda ar, p, q: p)
not_a_rule = 3
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "my_rules.py"
    path.write_text(USER_FILE)
    return path


def test_user_rule_file(user_file):
    entry = load_user_rule(f"{user_file}:my_rule")
    assert entry.name == "my-rule" and prove_rule(entry).verdict == Verdict.PROVED
    assert prove_rule(f"{user_file}:wrong").verdict == Verdict.REFUTED
    for spec, message in ((f"{user_file}:missing", "defines no"), (f"{user_file}:not_a_rule", "not a StepRule"),
                          ("nofile.py:x", "existing .py"), ("canonical:x", "unknown rule"),
                          ("no-such-rule", "unknown rule")):
        with pytest.raises(SpecproofInputError, match=message):
            resolve_rule(spec)


def test_broken_user_file_is_a_usage_error(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(SpecproofInputError, match="boom"):
        load_user_rule(f"{path}:x")
    floats = tmp_path / "floats.py"
    floats.write_text("from specproof.proofs import StepRule\n"
                      "bad = StepRule('bad', 'exact', '', lambda ar, p, q: ar.const(0.5), lambda ar, p, q: p)\n")
    with pytest.raises(SpecproofInputError, match="ar.const got a float"):
        load_user_rule(f"{floats}:bad")


@pytest.fixture
def run_cli(monkeypatch):
    if "prove_cli" not in cli.SUBCOMMAND_MODULES:
        monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.SUBCOMMAND_MODULES + ("prove_cli",))
    return cli.main


def test_cli_writes_certificates(run_cli, tmp_path, capsys, user_file):
    out = tmp_path / "sub" / "proofs.json"
    code = run_cli(["prove", "--rule", "canonical", "--rule", "resample-from-target", "--rule",
                    f"{user_file}:my_rule", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "canonical" in text and "PROVED" in text and "TV=1/4" in text and "every verdict as expected" in text
    data = json.loads(out.read_text())
    assert data["schema"] == 1 and "git" in data["provenance"] and data["theorems"] == []
    rules = {r["rule"]: r for r in data["results"]}
    assert set(rules) == {"canonical", "resample-from-target", "my-rule"}
    refuted = rules["resample-from-target"]
    assert refuted["verdict"] == "REFUTED" and refuted["tv"] == "1/4"
    assert refuted["counterexample"]["p"] == ["1/2", "1/2"]
    for key in ("rule", "claim", "verdict", "method", "n", "counterexample", "tv", "seconds", "versions"):
        assert key in rules["canonical"]


def test_cli_exit_one_on_an_unexpected_verdict(run_cli, user_file, capsys):
    assert run_cli(["prove", "--rule", f"{user_file}:wrong", "--no-drift"]) == 1
    assert "EXPECTED PROVED" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["prove"],
    ["prove", "--rule", "no-such-rule"],
    ["prove", "--rule", "missing.py:x"],
    ["prove", "--rule", "canonical", "--rlimit", "0"],
])
def test_cli_usage_errors_exit_two_and_write_nothing(run_cli, tmp_path, argv, capsys):
    out = tmp_path / "proofs.json"
    assert run_cli(argv + ["--json", str(out)]) == 2
    assert not out.exists()
    assert "error" in capsys.readouterr().err


def test_cli_json_path_that_is_a_directory(run_cli, tmp_path):
    assert run_cli(["prove", "--rule", "canonical", "--json", str(tmp_path)]) == 2


@pytest.mark.slow
def test_cli_all(run_cli, tmp_path, capsys):
    out = tmp_path / "all.json"
    code = run_cli(["prove", "--all", "--accept-bounded", "--json", str(out)])
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:4] == ["rule", "claim", "verdict", "scope"]
    data = json.loads(out.read_text())
    assert len(data["results"]) >= 26 and len(data["theorems"]) == 7
    assert code == (1 if data["summary"]["unexpected"] else 0)
    for r in data["results"] + data["theorems"]:
        assert r["scope"] and isinstance(r["assumptions"], list)
        assert r["verdict"] in ("PROVED", "BOUNDED") if r["claim"] != "not-exact" else r["verdict"] == "REFUTED"
    assert {r["rule"]: r["verdict"] for r in data["results"]}["canonical"] == "PROVED"


BOUNDED_FILE = '''
from specproof.proofs import StepRule

def acceptance(ar, p, q):
    return ar.minimum(ar.one, ar.safe_div(p, q, ar.zero))

def scaled(ar, p, q):  # exact after normalisation, but q A + w = p fails: no every-n proof
    return ar.mul(ar.const(2), ar.relu(ar.sub(p, q)))

def hang(ar, p, q):
    while True:
        ar.add(p, q)

calls = [0]

def hang_later(ar, p, q):  # returns on its first call, would hang on any later one
    calls[0] += 1
    if calls[0] > 1:
        hang(ar, p, q)
    return acceptance(ar, p, q)

bounded = StepRule(name="scaled", claim="exact", description="", acceptance=acceptance, residual_weight=scaled)
hangs = StepRule(name="hangs", claim="exact", description="", acceptance=acceptance, residual_weight=scaled,
                 acceptance_test=lambda ar, u, p, q: hang(ar, p, q))
hangs_later = StepRule(name="hangs-later", claim="exact", description="", acceptance=hang_later,
                       residual_weight=lambda ar, p, q: ar.relu(ar.sub(p, q)))
clash = StepRule(name="canonical", claim="exact", description="", acceptance=acceptance, residual_weight=scaled)
'''


@pytest.fixture
def bounded_file(tmp_path):
    path = tmp_path / "bounded_rules.py"
    path.write_text(BOUNDED_FILE)
    return path


def test_bounded_is_shown_and_never_counted_as_proved(run_cli, bounded_file, capsys, tmp_path):
    out = tmp_path / "b.json"
    assert run_cli(["prove", "--rule", f"{bounded_file}:bounded", "--no-drift", "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "BOUNDED" in text and "n = 2..4 (bounded)" in text and "EXPECTED PROVED" in text
    assert "PROVED " not in text.replace("EXPECTED PROVED", "")
    result = json.loads(out.read_text())["results"][0]
    assert result["verdict"] == "BOUNDED" and result["scope"] == "n = 2..4 (bounded)" and not result["ok"]
    assert run_cli(["prove", "--rule", f"{bounded_file}:bounded", "--no-drift", "--accept-bounded"]) == 0
    assert "ok (bounded)" in capsys.readouterr().out


def test_a_hanging_rule_is_stopped_at_the_time_budget(run_cli, bounded_file, capsys):
    assert run_cli(["prove", "--rule", f"{bounded_file}:hangs", "--timeout", "2"]) == 2  # hangs when traced
    err = capsys.readouterr().err
    assert "did not finish within 2 s" in err and "Traceback" not in err


def test_a_rule_runs_once_so_it_cannot_hang_later(run_cli, bounded_file, capsys):
    """It is traced once (returning); the engines evaluate the trace, so the later hang never happens."""
    assert run_cli(["prove", "--rule", f"{bounded_file}:hangs_later", "--timeout", "60", "--no-drift"]) == 0
    assert "PROVED" in capsys.readouterr().out


def test_the_time_budget_gives_inconclusive(run_cli, capsys):
    assert run_cli(["prove", "--rule", "canonical", "--timeout", "0.01"]) == 1
    assert "INCONCLUSIVE" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_cli_timeout_must_be_finite_and_positive(run_cli, value, capsys):
    assert run_cli(["prove", "--rule", "canonical", "--timeout", value]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_user_rule_named_like_a_catalogue_rule_is_refused(run_cli, bounded_file, capsys):
    assert run_cli(["prove", "--rule", f"{bounded_file}:clash"]) == 2
    err = capsys.readouterr().err
    assert "a catalogue rule's name" in err and "Traceback" not in err


def test_unknown_rule_in_the_api_is_an_input_error():
    from specproof.proofs import get_step_rule
    with pytest.raises(SpecproofInputError):
        get_step_rule("no-such-rule")
    with pytest.raises(SpecproofInputError):
        prove_rule("no-such-rule")


def test_cli_header_and_scope_column(run_cli, capsys):
    assert run_cli(["prove", "--rule", "canonical"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["rule", "claim", "verdict", "scope", "status"]
    assert "PROVED       every n" in lines[1]


def test_a_user_catalogue_entry_cannot_bring_its_own_proof():
    from specproof.proofs import CatalogueEntry, ProofResult
    liar = CatalogueEntry("liar", "exact", "", "", lambda s: ProofResult("liar", "exact", Verdict.PROVED, "m", "all",
                                                                        0.0, {}))
    with pytest.raises(SpecproofInputError, match="cannot check"):
        prove_rule(liar)
    look_alike = CatalogueEntry("greedy", "not-exact", "", "", liar.prove)  # a catalogue name: its own prover runs
    assert prove_rule(look_alike).verdict == Verdict.REFUTED
