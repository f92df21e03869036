"""The tiny transformers models of the generate contract, their exact reference law and the logit bound."""

import itertools
from fractions import Fraction

import pytest
import torch

pytest.importorskip("transformers")

from specproof.harness.check.contracts.generate.families import pipeline_law  # noqa: E402
from specproof.harness.check.contracts.generate.transformers.suite import (MIN_TEMPERATURE, TransformersPair,  # noqa: E402
                                                           check_margins, transformers_suite)
from specproof.harness.check.contracts.generate.transformers.bound import (logit_error_bound,  # noqa: E402
                                                                 measured_cache_difference)
from specproof.harness.exact.sampling import Sampling  # noqa: E402
from specproof.errors import SpecproofInputError  # noqa: E402


@pytest.fixture(scope="module")
def built():
    pair = TransformersPair()
    target, draft = pair.build("float32", "cpu", 2)
    return pair, target, draft


def test_models_build_deterministically_without_touching_the_global_rng(built):
    pair, target, draft = built
    state = torch.random.get_rng_state()
    again_target, again_draft = TransformersPair().build("float32", "cpu", 2)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (name, a), (_, b) in zip(target.named_parameters(), again_target.named_parameters()):
        assert torch.equal(a, b), name
    for (_, a), (_, b) in zip(draft.named_parameters(), again_draft.named_parameters()):
        assert torch.equal(a, b)
    assert not torch.equal(target.lm_head.weight, draft.lm_head.weight)  # different weights


def test_models_have_the_contract_shapes(built):
    pair, target, draft = built
    ids = torch.tensor([list(pair.prompt) + [4, 9]] * 3)
    for model in (target, draft):
        out = model(ids)
        assert out.logits.shape == (3, ids.shape[1], pair.vocab) and out.logits.dtype == torch.float32
        assert model.vocab_size == pair.vocab and model.max_length >= len(pair.prompt) + 2 + 1
        assert model.config.eos_token_id is not None and model.config.pad_token_id is not None


@torch.no_grad()
def _float_law(target, prompt, new_tokens, sampling):
    """Independent enumeration in float64 from the model's own float32 logits (one forward per prefix)."""
    def next_law(prefix):
        logits = target(torch.tensor([list(prompt) + list(prefix)]), use_cache=False).logits[0, -1].double()
        logits = logits / sampling.temperature
        if sampling.top_k is not None:
            logits = logits.masked_fill(logits < logits.topk(sampling.top_k).values[-1], float("-inf"))
        return logits.softmax(-1).tolist()

    laws = {p: next_law(p) for j in range(new_tokens) for p in itertools.product(range(target.vocab_size), repeat=j)}
    law = {}
    for s in itertools.product(range(target.vocab_size), repeat=new_tokens):
        prob = 1.0
        for j in range(new_tokens):
            prob *= laws[s[:j]][s[j]]
        law[s] = prob
    return law


@pytest.mark.parametrize("sampling", [Sampling(1.0), Sampling(0.7, top_k=3)])
def test_reference_law_matches_enumeration(built, sampling):
    pair, target, _ = built
    bound = TransformersPair(sampling=sampling)
    target, _ = bound.build("float32", "cpu", 2)
    law = pipeline_law(bound, target, sampling, 2, "float32").law()
    assert sum(law.values()) == 1
    expected = _float_law(target, bound.prompt, 2, sampling)
    assert max(abs(float(law[s]) - expected[s]) for s in law) < 1e-12
    if sampling.top_k is not None:
        assert all((law[s] == 0) == (expected[s] == 0) for s in law)


def test_logit_bound_covers_the_measured_cached_difference(built):
    pair, target, _ = built
    g = torch.Generator().manual_seed(3)
    seqs = torch.cat([torch.tensor([pair.prompt] * 8), torch.randint(0, pair.vocab, (8, 12), generator=g)], 1)
    delta, top = logit_error_bound(target, seqs, "float32")
    measured = max(measured_cache_difference(target, seqs, len(pair.prompt), chunk) for chunk in (1, 3))
    assert 0 < measured <= delta < 0.01  # the documented size: about 1e-3 on a logit
    assert 0 < top < 10
    assert logit_error_bound(target, seqs, "float64")[0] < delta * 2**-28  # scales with u


def test_extra_tolerance_is_2N_delta_T(built):
    pair = TransformersPair(sampling=Sampling(0.7))
    target, _ = pair.build("float32", "cpu", 2)
    pipeline_law(pair, target, pair.sampling, 2, "float32")
    delta, top = pair.logit_bound(), Fraction(pair._max_logit)
    shift = (delta + 2 * Fraction(1, 2**24) * top) / Fraction(0.7)
    assert pair.extra_tolerance("float32", 2) == 4 * shift
    assert pair.extra_tolerance("float32", 2, Sampling(1.0)) < 4 * shift
    unbound = TransformersPair()
    unbound.build("float32", "cpu", 2)
    with pytest.raises(RuntimeError):
        unbound.extra_tolerance("float32", 2)


def test_margins_refuse_decisions_within_the_logit_bound():
    logits = torch.tensor([3.0, 2.0, 1.0005, 1.0, -1.0])
    check_margins(logits, Sampling(1.0, top_k=2), Fraction(1, 1000), "float32")  # gap 0.9995 > 2 delta
    with pytest.raises(SpecproofInputError, match="top_k=3"):
        check_margins(logits, Sampling(1.0, top_k=3), Fraction(1, 1000), "float32")
    with pytest.raises(SpecproofInputError, match="min_p"):
        check_margins(logits, Sampling(1.0, min_p=float(torch.tensor(2.0 - 3.0).exp())), Fraction(1, 1000),
                      "float32")
    pair = TransformersPair()
    pair._delta = 1e-3
    with pytest.raises(SpecproofInputError, match="--temperature"):
        pair.check_margins(logits, Sampling(MIN_TEMPERATURE / 2), "float32")


def test_suite_binds_each_pair_to_its_sampling():
    suite = transformers_suite()
    assert [s.new_tokens for s in suite] == [4, 3, 3]
    assert all(s.pair.sampling == s.sampling for s in suite)
    one = transformers_suite(Sampling(0.9, top_k=2), 2)
    assert len(one) == 1 and one[0].pair.sampling == Sampling(0.9, top_k=2) and one[0].new_tokens == 2
