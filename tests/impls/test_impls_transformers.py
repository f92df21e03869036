"""The Hugging Face transformers adapter, on CPU."""

import sys

import pytest
import torch

from impls_inputs import random_round
from impls_lawcheck import conformance, emitted_counts, sample_round_inputs
from specproof.proofs.laws.sequences import ToyPair, round_law
from specproof.impls import get, transformers_speculative_sampling
from specproof.impls.adapters import transformers_release
from specproof.impls.adapters.transformers_release import accepts_ratio_ties, ratio_ties_in
from specproof.impls.adapters.transformers_adapter import load_transformers_verifier, probs_to_logits


def test_adapter_is_deterministic_and_leaves_the_global_rng_alone():
    draft, target, ids = random_round(torch.float32, batch=32, drafts=3, vocab=7, seed=0)
    state = torch.random.get_rng_state()
    first = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(4))
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(123)  # a different global state must not change the output
    second = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(4))
    assert torch.equal(first, second)


def test_adapter_handles_a_single_draft():
    """transformers squeezes p_i/q_i to a 0-d tensor when K = 1; the adapter must still work."""
    draft, target, ids = random_round(torch.float64, batch=16, drafts=1, vocab=5, seed=1)
    emitted = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(0))
    assert emitted.shape == (16, 2)


def test_adapter_conforms_to_the_exact_law():
    """N = 4,000 rounds (the adapter loops over rows), alpha = 1e-3: detectable TV about 0.07."""
    pair = ToyPair.random(4, 2, seed=11)
    draft, target, ids = sample_round_inputs(pair, 4000, torch.float64, torch.Generator().manual_seed(0))
    emitted = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(1))
    outcome = conformance(emitted_counts(emitted), round_law(pair))
    assert outcome.detectable_tv < 0.08 and outcome.conforms, outcome


def test_a_zero_uniform_accepts_a_zero_probability_draft_exactly_in_the_releases_that_test_r_le_p_over_q(
        monkeypatch):
    """transformers before 5.25.0 tests r <= p/q: forcing r = 0 (probability 2^-24 per test in float32
    on CPU) accepts a draft whose target probability is 0.  5.25.0 tests r < p/q and rejects it, as
    the canonical core with u = 0 does.  The registry's label follows the installed release."""
    q, p = [0.5, 0.5, 0.0], [0.5, 0.0, 0.5]
    draft = torch.tensor([[q]])
    target = torch.tensor([[p, p]])
    ids = torch.tensor([[1]])
    monkeypatch.setattr(torch, "rand_like", torch.zeros_like)
    emitted = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(0))
    ties = accepts_ratio_ties()
    assert (emitted[0, 0].item() == 1) == ties, f"r <= p/q expected: {ties}"
    assert get("transformers-speculative-sampling").expected_exact == (not ties)
    canonical = get("canonical-ratio-uniforms").fn(draft, target, ids, torch.zeros(1, 2))
    assert canonical[0, 0].item() != 1


@pytest.mark.parametrize("version, ties", [("5.24.0", True), ("5.25.0", False), ("5.25.0.dev0", False),
                                            ("4.57.1", True), ("6.0.0", False)])
def test_the_release_boundary_is_5_25(version, ties):
    assert ratio_ties_in(version) == ties


def test_the_installed_release_is_read_from_the_package_metadata(monkeypatch):
    def not_installed(_name):
        raise transformers_release.metadata.PackageNotFoundError(_name)

    try:
        for version, ties in [(lambda _name: "5.24.0", True), (lambda _name: "5.25.0", False), (not_installed, True)]:
            monkeypatch.setattr(transformers_release.metadata, "version", version)
            accepts_ratio_ties.cache_clear()
            assert accepts_ratio_ties() == ties
    finally:
        monkeypatch.undo()
        accepts_ratio_ties.cache_clear()


def near_equal_pair():
    """float32 laws whose softmax(log .) images satisfy p' <= q' everywhere and p'(1) < q'(1): found
    by a deterministic search (p is q with p(1) one ulp lower)."""
    generator = torch.Generator().manual_seed(0)
    while True:
        q = torch.rand(3, generator=generator)
        q = q / q.sum()
        p = q.clone()
        p[1] = torch.nextafter(p[1], torch.tensor(0.0))
        p_seen, q_seen = (probs_to_logits(x.reshape(1, 1, 3)).softmax(-1).flatten() for x in (p, q))
        if bool((p_seen <= q_seen).all()) and bool(p_seen[1] < q_seen[1]):
            return p, q


def test_adapter_surfaces_transformers_failure_on_an_all_zero_residual(monkeypatch):
    """Reachable only through rounding: draft 1 has p'/q' just below 1 and clamp(p' - q', 0) is all
    zero. With r forced to 1 transformers rejects, divides by a zero sum and multinomial raises."""
    p, q = near_equal_pair()
    monkeypatch.setattr(torch, "rand_like", torch.ones_like)
    draft, target, ids = q.reshape(1, 1, 3), torch.stack([p, p]).unsqueeze(0), torch.tensor([[1]])
    with pytest.raises(RuntimeError, match="failed on batch row 0.*all-zero residual"):
        transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(0))
    canonical = get("canonical-ratio-uniforms").fn(draft, target, ids, torch.ones(1, 2))
    assert canonical[0, 1].item() == -1 and 0 <= canonical[0, 0].item() < 3, "falls back to p"


def test_a_draft_the_draft_law_cannot_propose_is_accepted_when_the_target_allows_it():
    """No ``q > 0`` guard (5.24.0 and 5.25.0): a drafted id with q(x) = 0 and p(x) > 0 has p/q = inf and is
    accepted (the canonical cores reject it).  A sampled draft never has q(x) = 0, so the law on real
    drafts is unchanged; the edge-case suite's rejection test therefore leaves this record out."""
    q, p = [0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]
    draft = torch.tensor([[q]], dtype=torch.float64).expand(64, 1, 4)
    target = torch.tensor([[p, p]], dtype=torch.float64).expand(64, 2, 4)
    ids = torch.full((64, 1), 2)
    emitted = transformers_speculative_sampling(draft, target, ids, torch.Generator().manual_seed(0))
    assert bool((emitted[:, 0] == 2).all()) and bool((emitted[:, 1] >= 0).all())
    canonical = get("canonical-ratio-uniforms").fn(draft, target, ids, torch.rand(64, 2, dtype=torch.float64))
    assert bool((canonical[:, 1] == -1).all())


def test_probabilities_become_logits_faithfully():
    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2]], dtype=torch.float16)
    logits = probs_to_logits(probs)
    assert logits.dtype == torch.float16 and logits[0, 1].item() == float("-inf")
    back = logits.softmax(-1)
    assert back[0, 1].item() == 0.0
    assert torch.allclose(back.float(), probs.float(), atol=2 ** -10)


def test_missing_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers.generation.utils", None)
    with pytest.raises(ImportError, match=r"pip install specproof\[transformers\]"):
        load_transformers_verifier()
    draft, target, ids = random_round(torch.float32, batch=2, drafts=1, vocab=3)
    with pytest.raises(ImportError, match=r"specproof\[transformers\]"):
        transformers_speculative_sampling(draft, target, ids, torch.Generator())
