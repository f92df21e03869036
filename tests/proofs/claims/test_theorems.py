"""T1-T7: every obligation is proved and carries its basis; T3 covers its edge cases."""

import pytest

from specproof.proofs.claims.kernel_checked import KERNEL_THEOREMS, kernel_status
from specproof.proofs import Verdict, prove_theorem
from specproof.proofs import theorems
from specproof.proofs.engine.results import Basis, Obligation, ProofResult
from specproof.proofs.engine.verdicts import settle


@pytest.fixture(scope="module")
def results():
    return {t.name: prove_theorem(t) for t in theorems()}


def test_every_theorem_is_proved(results):
    assert [t.name for t in theorems()] == ["T1", "T2", "T3", "T4", "T5", "T6", "T7"]
    for name, result in results.items():
        assert result.verdict == Verdict.PROVED, (name, result.reason)
        assert result.ok and result.claim == "theorem"
        assert all(o.verdict == Verdict.PROVED for o in result.obligations)
        assert result.versions["z3"] and result.versions["z3_rlimit"] > 0


def test_t3_is_composed_of_checked_steps_with_its_edge_cases(results):
    names = [o.name for o in results["T3"].obligations]
    for step in ("F1 (z3)", "F1 (sympy)", "T2 (sum step) (linearity)", "T2 (sum step) (monotonicity)",
                 "T3 (composition)", "E1 (p == q)", "E2 (q(x) = 0)", "E3 (p(x) = 0)", "direct n=2", "direct n=3",
                 "direct n=4"):
        assert step in names
    assert results["T3"].n.startswith("all")
    by_name = {o.name: o for o in results["T3"].obligations}
    assert by_name["direct n=3"].basis == Basis.BOUNDED
    assert by_name["T2 (sum step) (linearity)"].basis == Basis.MACHINE
    assert "induction on n" in by_name["T2 (sum step) (linearity)"].method


def test_no_theorem_has_a_hand_written_machine_step(results):
    """Every obligation is a solver/enumeration check or an assumption naming its source."""
    for name, result in results.items():
        for o in result.obligations:
            assert o.method not in ("linearity of finite sums", "linearity and monotonicity of finite sums"), o.name
            if o.basis == Basis.ASSUMPTION:
                assert o.source and o.method == "stated, not checked", (name, o.name)
                assert any(o.source in note for note in result.notes), (name, o.name)


def test_theorems_resting_on_assumptions_name_them(results):
    assumed = {name for name, r in results.items() if any(o.basis == Basis.ASSUMPTION for o in r.obligations)}
    kernel = {name for name in ("T5", "T6") if KERNEL_THEOREMS[name] in kernel_status().closed}  # Coq built
    assert assumed == {"T5", "T6"} - kernel
    assert all("assuming" in results[name].n for name in assumed)


def _ob(verdict, basis=Basis.MACHINE):
    return Obligation("o", "", verdict, "m", basis=basis, source="s" if basis == Basis.ASSUMPTION else "")


@pytest.mark.parametrize("verdicts", [(a, b) for a in Verdict if a != Verdict.BOUNDED
                                      for b in Verdict if b != Verdict.BOUNDED])
@pytest.mark.parametrize("every_n", [True, False])
def test_a_theorem_is_never_proved_without_an_every_size_chain(verdicts, every_n):
    """prove_theorem's path: the theorem's claim (every n or not) and its obligations, decided by settle."""
    obligations = (_ob(verdicts[0], Basis.BOUNDED), _ob(verdicts[1], Basis.ASSUMPTION))
    claim = Verdict.PROVED if every_n else Verdict.BOUNDED
    result = settle(ProofResult("T", "theorem", claim, "m", "all", 0.0, {}, obligations=obligations))
    if Verdict.REFUTED in verdicts:  # a theorem's refuted step has no exact witness of the theorem
        assert result.verdict == Verdict.INCONCLUSIVE
    elif verdicts == (Verdict.PROVED, Verdict.PROVED):
        # PROVED only when the theorem claims an every-size chain (here: the assumption, listed)
        assert result.verdict == (Verdict.PROVED if every_n else Verdict.BOUNDED)
        assert [(a.statement, a.source) for a in result.assumptions] == [("o", "s")]
    else:
        assert result.verdict not in (Verdict.PROVED, Verdict.BOUNDED)


def test_report_and_prove_get_the_same_settled_theorem():
    """prove_theorem itself returns the decided result (scope and assumptions set), as specproof prove shows."""
    result = prove_theorem("T1")
    assert result.verdict == Verdict.PROVED and result.scope
    assert settle(result) == result


def test_t3_is_proved_for_every_n():
    assert prove_theorem("T3").verdict == Verdict.PROVED


def test_t6_refutes_greedy_as_a_sampling_rule(results):
    found = results["T6"].counterexample
    assert found is not None and found.tv > 0
    assert found.output == (1, 0)


def test_t5_checks_every_exact_step_rule_exhaustively(results):
    exhaustive = [o for o in results["T5"].obligations if o.name.startswith("T5 exhaustive")]
    assert {o.name for o in exhaustive} >= {"T5 exhaustive (canonical)", "T5 exhaustive (canonical-log)"}


def test_unknown_theorem_name():
    with pytest.raises(ValueError, match="unknown"):
        prove_theorem("T9")
