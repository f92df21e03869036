"""The verdict function, exhaustively: every combination of evidence kinds over small claims."""

import itertools
from fractions import Fraction as F

import pytest

from specproof.proofs.engine.results import Basis, Counterexample, Obligation, ProofResult, Verdict
from specproof.proofs.engine.verdicts import Goal, decide, settle

# one obligation per (verdict, basis): every kind of evidence an engine can hand over
KINDS = [(v, b) for v in Verdict for b in Basis]
WITNESS = Counterexample(p=(F(1, 2), F(1, 2)), q=(F(1), F(0)), output=(F(3, 4), F(1, 4)),
                         target=(F(1, 2), F(1, 2)), tv=F(1, 4))


def _ob(i, kind):
    verdict, basis = kind
    return Obligation(f"o{i}", f"statement {i}", verdict, "test", basis=basis,
                      source=f"paper {i}" if basis == Basis.ASSUMPTION else "")


def _claims():
    """No goal; one goal of up to two obligations; two goals of up to one each - each with at most
    one cross-check, with and without a witness."""
    small = [()] + [(k,) for k in KINDS]
    claims = [()] + [(s,) for s in small + list(itertools.product(KINDS, repeat=2))]
    claims += list(itertools.product(small, repeat=2))
    for shapes in claims:
        for check in [None, *KINDS]:
            for witness in (None, WITNESS):
                yield shapes, check, witness


def _expected(shapes, check, witness):
    """The specification, written independently of decide's code."""
    goal_kinds = [k for shape in shapes for k in shape]
    all_kinds = goal_kinds + ([check] if check else [])
    verdicts = [v for v, _ in all_kinds]
    if witness is not None:
        return Verdict.REFUTED
    if Verdict.REFUTED in verdicts:
        return Verdict.INCONCLUSIVE
    if Verdict.VACUOUS in verdicts:
        return Verdict.VACUOUS
    if not shapes or any(not shape for shape in shapes) or any(v != Verdict.PROVED for v in verdicts):
        return Verdict.INCONCLUSIVE
    if any(b == Basis.BOUNDED for _, b in goal_kinds):
        return Verdict.BOUNDED
    return Verdict.PROVED


def test_every_combination_of_evidence():
    count = 0
    for shapes, check, witness in _claims():
        i = itertools.count()
        goals = [Goal(f"g{j}", tuple(_ob(next(i), k) for k in shape), sizes="2..4") for j, shape in enumerate(shapes)]
        checks = [_ob(next(i), check)] if check else []
        decision = decide(goals, witness=witness, checks=checks)
        expected = _expected(shapes, check, witness)
        assert decision.verdict == expected, (shapes, check, witness, decision)
        every = [o for g in goals for o in g.obligations] + checks
        if expected == Verdict.PROVED:
            assert decision.scope.startswith("every n") and decision.reason == ""
        if expected == Verdict.BOUNDED:
            assert decision.scope == "n = 2..4 (bounded)" and "every" not in decision.scope
        if expected in (Verdict.PROVED, Verdict.BOUNDED):
            listed = {(a.statement, a.source) for a in decision.assumptions}
            assert listed == {(o.statement, o.source) for o in every if o.basis == Basis.ASSUMPTION}
            assert ("assumption" in decision.scope) == bool(listed) or expected == Verdict.BOUNDED
        else:
            assert decision.assumptions == () and decision.reason
        if expected == Verdict.REFUTED:
            assert decision.scope == "n = 2 (exact witness)"
        count += 1
    assert count == (1 + 16 + 225 + 16 * 16) * 16 * 2


@pytest.mark.parametrize("sizes, scope", [(("2..4", "2..3"), "n = 2..3 (bounded)"), (("2..4", "2"), "n = 2 (bounded)"),
                                          (("n <= 4 (grid)",), "n <= 4 (grid) (bounded)")])
def test_bounded_scope_is_what_every_goal_covers(sizes, scope):
    goals = [Goal(f"g{i}", (_ob(i, (Verdict.PROVED, Basis.BOUNDED)),), sizes=s) for i, s in enumerate(sizes)]
    assert decide(goals).scope == scope


def _result(verdict, n, obligations, counterexample=None):
    return ProofResult("r", "exact", verdict, "test", n, 0.0, {}, counterexample=counterexample,
                       obligations=tuple(obligations))


def test_settle_rederives_structured_verdicts():
    machine = _ob(0, (Verdict.PROVED, Basis.MACHINE))
    bounded = _ob(1, (Verdict.PROVED, Basis.BOUNDED))
    assumed = _ob(2, (Verdict.PROVED, Basis.ASSUMPTION))
    # a prover's own claim of every size keeps bounded obligations as cross-checks
    assert settle(_result(Verdict.PROVED, "all", [machine, bounded])).verdict == Verdict.PROVED
    # ... but never when the bounded ones are all there is, or the prover did not claim every size
    assert settle(_result(Verdict.PROVED, "all", [bounded])).verdict == Verdict.BOUNDED
    assert settle(_result(Verdict.PROVED, "n <= 4", [machine, bounded])).verdict == Verdict.BOUNDED
    with_assumption = settle(_result(Verdict.PROVED, "all", [machine, assumed]))
    assert with_assumption.verdict == Verdict.PROVED and with_assumption.assumptions[0].source == "paper 2"
    assert "under 1 assumption" in with_assumption.scope
    assert with_assumption.as_json()["assumptions"] == [{"statement": "statement 2", "source": "paper 2"}]
    # a PROVED with a refuted obligation and no witness, or with no evidence at all, is not PROVED
    refuted = _ob(3, (Verdict.REFUTED, Basis.MACHINE))
    assert settle(_result(Verdict.PROVED, "all", [machine, refuted])).verdict == Verdict.INCONCLUSIVE
    assert settle(_result(Verdict.PROVED, "all", [])).verdict == Verdict.INCONCLUSIVE
    assert settle(_result(Verdict.REFUTED, "2", [refuted], WITNESS)).verdict == Verdict.REFUTED


def test_a_theorems_counterexample_is_part_of_its_statement():
    machine = _ob(0, (Verdict.PROVED, Basis.MACHINE))
    theorem = ProofResult("T", "theorem", Verdict.PROVED, "test", "all", 0.0, {}, counterexample=WITNESS,
                          obligations=(machine,))
    assert settle(theorem).verdict == Verdict.PROVED
    assert settle(_result(Verdict.PROVED, "all", [machine], WITNESS)).verdict == Verdict.REFUTED
