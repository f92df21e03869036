"""Every catalogue rule gets its expected verdict; counterexamples and worst cases are pinned."""

from fractions import Fraction as F

import pytest

from specproof.proofs import Settings, Verdict, prove_all
from specproof.proofs import catalogue

EXPECTED = {
    "canonical": Verdict.PROVED, "canonical-mul": Verdict.PROVED, "canonical-log": Verdict.PROVED,
    "canonical-le": Verdict.PROVED, "typical": Verdict.REFUTED, "lenience": Verdict.REFUTED,
    "ensemble": Verdict.REFUTED, "resample-from-target": Verdict.REFUTED, "top-k-accept": Verdict.REFUTED,
    "greedy": Verdict.REFUTED, "sampler-match": Verdict.PROVED, "block": Verdict.PROVED,
    "block-early-break": Verdict.REFUTED, "rrs-with-replacement": Verdict.PROVED,
    "rrs-without-replacement": Verdict.PROVED, "spectr-kseq": Verdict.PROVED, "draft-from-r": Verdict.REFUTED,
    # top-k / top-p map laws to laws for every n under one order-theory assumption (the argmax is kept)
    **{f"processor-both-sides:{p}": Verdict.PROVED for p in ("temperature-half", "top-k-2", "top-p-half")},
    **{f"processor-{s}:{p}": Verdict.REFUTED for s in ("target-only", "draft-only")
       for p in ("temperature-half", "top-k-2", "top-p-half")},
}

# (p, q, output, TV) of each refuted step rule; the first three are algorithms.md's check vectors
PINNED = {
    "resample-from-target": ((F(1, 2), F(1, 2)), (1, 0), (F(3, 4), F(1, 4)), F(1, 4)),
    "top-k-accept": ((F(1, 2), F(3, 10), F(1, 5)), (F(1, 5), F(3, 10), F(1, 2)), (F(3, 5), F(6, 25), F(4, 25)),
                     F(1, 10)),
    "greedy": ((F(2, 3), F(1, 3)), (F(1, 2), F(1, 2)), (1, 0), F(1, 3)),
    "typical": ((F(1, 2), F(1, 2)), (0, 1), (0, 1), F(1, 2)),
    "lenience": ((F(1, 2), F(1, 2)), (0, 1), (0, 1), F(1, 2)),
    "ensemble": ((0, 1), (1, 0), (F(1, 2), F(1, 2)), F(1, 2)),
    "draft-from-r": ((F(1, 2), F(1, 2)), (0, 1), (1, 0), F(1, 2)),  # drafts from r = (1, 0)
}


@pytest.fixture(scope="module")
def results():
    return {r.rule: r for r in prove_all(Settings())}


def test_catalogue_names_and_claims():
    entries = catalogue()
    assert [e.name for e in entries] == list(EXPECTED)
    for entry in entries:
        assert entry.claim == ("not-exact" if EXPECTED[entry.name] == Verdict.REFUTED else "exact")


def test_every_rule_gets_its_expected_verdict(results):
    for name, verdict in EXPECTED.items():
        result = results[name]
        assert result.verdict == verdict, (name, result.reason)
        assert result.ok == (verdict != Verdict.BOUNDED)  # BOUNDED is never what an exact claim expects
        if verdict == Verdict.BOUNDED:
            assert result.scope == "n <= 4 (bounded)"
        if verdict == Verdict.REFUTED:
            assert result.scope == f"n = {len(result.counterexample.p)} (exact witness)"


def test_scope_and_assumptions_are_in_the_json(results):
    for name in ("canonical", "canonical-mul", "canonical-log", "canonical-le"):
        data = results[name].as_json()
        assert (data["verdict"], data["scope"], data["assumptions"]) == ("PROVED", "every n", [])
    for result in results.values():
        data = result.as_json()
        assert data["scope"] and all(set(a) == {"statement", "source"} for a in data["assumptions"])
        if result.verdict == Verdict.PROVED and result.assumptions:
            assert "assumption" in data["scope"]


def test_refuted_rules_carry_exact_counterexamples(results):
    for name, result in results.items():
        if result.verdict != Verdict.REFUTED:
            assert result.counterexample is None
            continue
        found = result.counterexample
        assert found.tv > 0 and result.tv == found.tv
        assert all(isinstance(x, F) for x in found.p + found.q)
        assert sum(found.p) == 1 and sum(found.q) == 1
        assert result.worst_case and all(w.lower <= w.upper for w in result.worst_case)
        assert result.worst_case[0].lower >= 0


def test_pinned_counterexamples(results):
    for name, (p, q, output, tv) in PINNED.items():
        found = results[name].counterexample
        assert (found.p, found.q, found.output, found.tv) == (p, q, output, tv), name


def test_draft_from_r_counterexample_carries_r(results):
    assert results["draft-from-r"].counterexample.extra == {"r": (1, 0)}


def test_block_early_break_check_vector(results):
    found = results["block-early-break"].counterexample
    assert found.p == (F(1, 3), F(2, 3)) and found.q == (F(2, 3), F(1, 3))
    assert found.tv == F(1, 3) and found.params == {"k": 2}
    assert found.extra["tables"]["k"] == 2 and found.extra["tables"]["draft"][()] == (F(2, 3), F(1, 3))


def test_processor_counterexamples_name_the_processor(results):
    found = results["processor-target-only:top-k-2"].counterexample
    assert found.params == {"processor": "top-k-2", "placement": "target-only"}
    assert len(found.p) == 3  # top-k-2 is the identity on two tokens


def test_worst_case_is_certified_where_z3_can(results):
    for name, value in (("resample-from-target", F(1, 4)), ("ensemble", F(1, 2)), ("lenience", F(1, 2)),
                        ("greedy", F(1, 2)), ("top-k-accept", F(1, 2))):
        worst = results[name].worst_case[0]
        assert worst.n == 2 and worst.certified and worst.lower == worst.upper == value, name
    typical = results["typical"].worst_case[0]
    assert not typical.certified and typical.upper == 1 and "not z3-interpretable" in typical.method


def test_exact_rules_are_proved_for_every_size(results):
    for name in ("canonical", "canonical-mul", "canonical-log", "canonical-le", "sampler-match"):
        assert results[name].n == "all"
    assert results["block"].n.startswith("all V, K")
    assert results["rrs-without-replacement"].n.startswith("all n, k")


def test_acceptance_tests_have_measure_lemma_and_grid_notes(results):
    for name in ("canonical", "canonical-mul", "canonical-log", "canonical-le"):
        assert any(o.name.startswith("measure") and o.verdict == Verdict.PROVED
                   for o in results[name].obligations)
    assert "2^-8: 1/256" in results["canonical-le"].notes[0]   # u == 0 accepts p(x) = 0
    assert "2^-8: 0;" in results["canonical"].notes[0]
    assert "2^-8: 43/128" in results["canonical-log"].notes[1]  # ceil(256/3)/256 != 1/3


def test_json_shape(results):
    data = results["resample-from-target"].as_json()
    for key in ("rule", "claim", "verdict", "method", "n", "counterexample", "tv", "seconds", "versions"):
        assert key in data
    assert data["claim"] == "not-exact" and data["tv"] == "1/4"
    assert data["counterexample"]["q"] == ["1/1", "0/1"]
    assert results["canonical"].as_json()["counterexample"] is None
