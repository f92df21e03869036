"""Sampling processors: each processor's rule, the pipeline, dtype handling and errors."""

from fractions import Fraction

import pytest
import torch

from impls_inputs import DTYPES
from impls_lawcheck import conformance, emitted_counts
from specproof.proofs.laws.sequences import ToyPair, round_law
from specproof.impls import (
    MinP, Processors, RepetitionPenalty, Temperature, TopK, TopP, VocabMask, get,
)

LOGITS = torch.log(torch.tensor([[0.5, 0.25, 0.125, 0.0625, 0.0625]], dtype=torch.float64))


def kept(logits):
    return (logits > float("-inf")).squeeze(0).tolist()


def test_temperature():
    probs = Processors([Temperature(0.5)]).probs(LOGITS)
    expected = torch.tensor([[0.25, 0.0625, 1 / 64, 1 / 256, 1 / 256]], dtype=torch.float64)
    assert torch.allclose(probs, expected / expected.sum(), atol=1e-15)


def test_top_k_keeps_ties_at_the_boundary():
    assert kept(TopK(2)(LOGITS)) == [True, True, False, False, False]
    assert kept(TopK(4)(LOGITS)) == [True, True, True, True, True]  # 0.0625 tie kept
    assert kept(TopK(99)(LOGITS)) == [True] * 5


def test_top_p_keeps_the_smallest_nucleus():
    assert kept(TopP(0.5)(LOGITS)) == [True, False, False, False, False]
    assert kept(TopP(0.6)(LOGITS)) == [True, True, False, False, False]
    assert kept(TopP(0.76)(LOGITS)) == [True, True, True, False, False]
    assert kept(TopP(1.0)(LOGITS)) == [True] * 5


def test_min_p_threshold_is_relative_to_the_top_token():
    assert kept(MinP(0.25)(LOGITS)) == [True, True, True, False, False]
    assert kept(MinP(0.0)(LOGITS)) == [True] * 5


def test_repetition_penalty_with_padding_and_duplicates():
    logits = torch.tensor([[2.0, -2.0, 1.0, 3.0]])
    context = torch.tensor([[0, 1, 1, -1]])
    out = RepetitionPenalty(2.0)(logits, context)
    assert out.tolist() == [[1.0, -4.0, 1.0, 3.0]]
    with pytest.raises(ValueError, match="RepetitionPenalty needs context_ids"):
        Processors([RepetitionPenalty(2.0)]).logits(logits)
    with pytest.raises(ValueError, match="context_ids must have leading shape"):
        RepetitionPenalty(2.0)(logits, torch.tensor([0, 1]))


def test_vocab_mask():
    mask = torch.tensor([True, False, True, False, False])
    assert kept(VocabMask(mask)(LOGITS)) == [True, False, True, False, False]
    with pytest.raises(ValueError, match="VocabMask removes every token"):
        VocabMask(torch.zeros(5, dtype=torch.bool))(LOGITS)


def test_pipeline_order_and_probs():
    pipeline = Processors([TopK(3), Temperature(2.0)])
    probs = pipeline.probs(LOGITS)
    weights = torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64).sqrt()
    assert torch.allclose(probs[0, :3], weights / weights.sum(), atol=1e-15)
    assert probs[0, 3:].tolist() == [0.0, 0.0]
    assert "TopK(k=3)" in repr(pipeline)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_and_shape_preserved(dtype):
    logits = torch.randn(2, 3, 11, generator=torch.Generator().manual_seed(0)).to(dtype)
    context = torch.randint(0, 11, (2, 3, 4), generator=torch.Generator().manual_seed(1))
    pipeline = Processors([RepetitionPenalty(1.3), Temperature(0.7), TopK(6), TopP(0.9), MinP(0.05)])
    probs = pipeline.probs(logits, context)
    assert probs.dtype == dtype and probs.shape == logits.shape
    assert bool((probs >= 0).all()) and bool((probs > 0).any(-1).all())
    processed = pipeline.process_probs(probs, context)
    assert processed.dtype == dtype and processed.shape == logits.shape


def test_process_probs_round_trip_keeps_zeros():
    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2]], dtype=torch.float32)
    out = Processors([]).process_probs(probs)
    assert out[0, 1].item() == 0.0
    assert torch.allclose(out, probs, atol=1e-7)


@pytest.mark.parametrize("bad,match", [
    (lambda: Temperature(0.0), "t must be > 0.*greedy"),
    (lambda: TopK(0), "k must be an int >= 1"),
    (lambda: TopP(1.5), r"top_p must lie in \(0, 1\]"),
    (lambda: MinP(-0.1), r"min_p must lie in \[0, 1\]"),
    (lambda: RepetitionPenalty(0.0), "penalty must be > 0"),
])
def test_bad_processor_parameters(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()
    with pytest.raises(TypeError, match="Processors\\(\\[...\\]\\) takes callables"):
        Processors([0.5])


def test_same_pipeline_on_both_sides_is_exact_for_the_processed_target():
    """TopK(2) on p = (1/2, 1/4, 1/8, 1/8) and q = (1/8, 1/2, 1/4, 1/8) gives (2/3, 1/3, 0, 0) and
    (0, 2/3, 1/3, 0). Drafts sampled from the processed q and verified against the processed p
    conform to the exact law of the processed pair (N = 40,000, alpha = 1e-3, detectable TV < 0.03)."""
    p = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 8))
    q = (Fraction(1, 8), Fraction(1, 2), Fraction(1, 4), Fraction(1, 8))
    pipeline = Processors([TopK(2)])
    p_processed, q_processed = (
        pipeline.probs(torch.log(torch.tensor([float(x) for x in law], dtype=torch.float64)))
        for law in (p, q))
    assert torch.allclose(p_processed, torch.tensor([2 / 3, 1 / 3, 0, 0], dtype=torch.float64))
    assert torch.allclose(q_processed, torch.tensor([0, 2 / 3, 1 / 3, 0], dtype=torch.float64))
    rounds = 40_000
    ids = torch.multinomial(q_processed.expand(rounds, -1), 2, replacement=True,
                            generator=torch.Generator().manual_seed(0))
    emitted = get("canonical-ratio-race").fn(q_processed.expand(rounds, 2, -1),
                                             p_processed.expand(rounds, 3, -1), ids,
                                             torch.Generator().manual_seed(1))
    exact_pair = ToyPair.context_free((Fraction(2, 3), Fraction(1, 3), 0, 0),
                                      (0, Fraction(2, 3), Fraction(1, 3), 0), 2)
    outcome = conformance(emitted_counts(emitted), round_law(exact_pair))
    assert outcome.detectable_tv < 0.03 and outcome.conforms, outcome
