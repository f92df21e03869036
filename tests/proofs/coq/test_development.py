"""The development proves its theorems with no Admitted, admit or Axiom, and the verdicts cite it."""

from __future__ import annotations

import re

import pytest

from specproof.proofs import prove_rule
from specproof.proofs.claims import kernel_checked
from specproof.proofs.claims.kernel_checked import COQ_DIR, KERNEL_THEOREMS, KernelStatus, kernel_status
from specproof.proofs.claims.theorems import prove_theorem

FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Hypothesis\s+\w+\s*:\s*False)\b")


def _without_comments(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def test_no_admitted_or_axiom_in_the_sources():
    sources = sorted(COQ_DIR.glob("*.v"))
    assert sources, "no Coq sources"
    for source in sources:
        code = _without_comments(source.read_text())
        assert not FORBIDDEN.search(code), f"{source.name}: {FORBIDDEN.search(code).group(0)}"


def test_forbidden_words_are_caught():
    assert FORBIDDEN.search(_without_comments("Lemma a : True.\nProof. admit. Admitted."))
    assert FORBIDDEN.search("Axiom choice : False.")
    assert not FORBIDDEN.search(_without_comments("(* no Admitted here *) Lemma a : True. Proof. by []. Qed."))


def test_every_cited_theorem_is_closed(coq_development):
    kernel_status.cache_clear()
    status = kernel_status()
    assert status.built, status.reason
    assert status.version.startswith("Coq 8.")
    assert set(KERNEL_THEOREMS.values()) <= status.closed


CITED = [("T5", lambda: prove_theorem("T5"), "Specproof.Round.T5_round_exact"),
         ("rrs-without-replacement", lambda: prove_rule("rrs-without-replacement"),
          "Specproof.Recursive.rrs_without_replacement_exact"),
         ("block", lambda: prove_rule("block"), "Specproof.Block.block_exact")]


@pytest.mark.parametrize("claim, prove, theorem", CITED, ids=[c[0] for c in CITED])
def test_cites_the_kernel_and_states_no_assumption(coq_development, claim, prove, theorem):
    kernel_status.cache_clear()
    result = prove()
    assert result.verdict.name == "PROVED"
    assert not result.assumptions
    assert "kernel-checked (Coq 8.16" in result.method and theorem in result.method
    assert "assuming" not in result.n


@pytest.mark.parametrize("claim, prove, theorem", [CITED[0], CITED[2]], ids=["T5", "block"])
def test_without_coq_keeps_its_assumption_and_says_so(monkeypatch, claim, prove, theorem):
    absent = KernelStatus(False, "coqc is not installed", "", frozenset())
    monkeypatch.setattr(kernel_checked, "kernel_status", lambda: absent)
    result = prove()
    assert result.verdict.name == "PROVED"
    assert len(result.assumptions) == 1 and "not kernel-checked (coqc is not installed)" in result.assumptions[0].source
    assert "kernel-checked (Coq" not in result.method
    assert any("not kernel-checked (coqc is not installed)" in note for note in result.notes)
