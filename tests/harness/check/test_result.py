"""harness/check/result.py: the diagnosis ranks flagged bug classes by the fit of their exact laws."""

from specproof.harness.check.result import CheckResult, Finding, ScenarioReport, Verdict


def _finding(rule, stat):
    return Finding("s", "bug-class", f"excess set of '{rule}'", 0.2, 0.4, 0.0, stat, 20.0, 100, 0.1, rule, 1)


def _result(findings, misfit, evidence):
    report = ScenarioReport(name="s", vocab=4, k=2, rows=100, events=10, tolerance=0.0, detectable_tv=0.5,
                            stopped_early=True, findings=findings, rejected_events=len(findings),
                            bug_class_evidence=evidence, bug_class_misfit=misfit)
    return CheckResult(Verdict.FAIL, "float32", "cpu", 0, 1e-6, 100, None, [report], 0.0, 0.0)


def test_the_flagged_class_with_the_least_misfit_is_named_whatever_its_evidence():
    result = _result([_finding("a", 40.0), _finding("b", 25.0)], {"a": 900.0, "b": 3.0, "c": 0.5},
                     {"a": 40.0, "b": 25.0, "c": 1.0})
    assert result.diagnosis().rule == "b"
    line = result.diagnosis_line()
    # the unflagged class c fits better still, but only flagged classes are compared
    assert "the exact law of the incorrect rule 'b' predicts the observed excess-set means within noise" in line
    assert "misfit 3 nats" in line


def test_a_rule_whose_law_does_not_fit_within_noise_is_not_named():
    """A flagged excess set says the law differs; the rule is named only when its exact law explains the
    observed means (misfit below the chi-square bound at alpha), else the findings' own kind is."""
    result = _result([_finding("a", 40.0)], {"a": 900.0}, {"a": 40.0})
    assert "'a'" not in result.diagnosis_line()
    assert result.diagnosed().bug_class == "position-law"


def test_without_exact_predictions_the_evidence_ranks_the_classes():
    """Tree mutants carry no predicted means: the class with the most evidence is named, not the
    alphabetically first."""
    result = _result([_finding("a", 22.0), _finding("b", 30.0)], {}, {"a": 22.0, "b": 30.0})
    assert result.diagnosis().rule == "b"
    assert "misfit" not in result.diagnosis_line()
