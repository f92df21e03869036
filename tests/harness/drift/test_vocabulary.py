"""The one verdict vocabulary: old enum names re-exported, JSON values unchanged, a severity for each."""

from __future__ import annotations

import json

from specproof import verdicts as vocab
from specproof.verdicts import SEVERITY, Severity, severity


def test_old_names_are_the_vocabulary():
    from specproof.harness.check.result import Verdict as check_verdict
    from specproof.harness.drift.grid import GridVerdict
    from specproof.proofs import Verdict as proof_verdict
    from specproof.proofs.engine.results import Verdict as results_verdict

    assert proof_verdict is results_verdict is vocab.Verdict
    assert check_verdict is vocab.CheckVerdict and GridVerdict is vocab.GridVerdict


def test_values_unchanged():
    assert [v.value for v in vocab.Verdict] == ["PROVED", "BOUNDED", "REFUTED", "INCONCLUSIVE", "VACUOUS"]
    assert [v.value for v in vocab.CheckVerdict] == ["pass", "fail", "underpowered", "inconclusive"]
    assert [v.value for v in vocab.GridVerdict] == ["exact", "within-grid-tolerance", "algorithmic-bias",
                                                    "impossible-mass", "unanalysable"]
    assert [v.value for v in vocab.DriftVerdict] == ["within-tolerance", "beyond-tolerance"]
    assert str(vocab.CheckVerdict.PASS) == "pass" and json.dumps(vocab.Verdict.PROVED) == '"PROVED"'


def test_every_member_has_one_severity_and_nothing_else_does():
    members = [m for family in vocab.VERDICT_FAMILIES.values() for m in family]
    assert sorted(m.value for m in members) == sorted(SEVERITY)  # values unique across families
    for m in members:
        assert m.severity is severity(m) is severity(m.value) is SEVERITY[m.value]
    assert severity("yes") is None
    assert severity(vocab.Verdict.PROVED) is Severity.OK and vocab.Verdict.BOUNDED.severity is Severity.WARNING
    assert vocab.CheckVerdict.UNDERPOWERED.severity is Severity.WARNING
    assert {vocab.Verdict.REFUTED.severity, vocab.CheckVerdict.FAIL.severity, vocab.GridVerdict.BIAS.severity,
            vocab.DriftVerdict.BEYOND.severity} == {Severity.FLAGGED}
    assert vocab.TaskVerdict.ERROR.severity is Severity.NOT_RUN
