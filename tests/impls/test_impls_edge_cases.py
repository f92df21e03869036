"""Edge cases the runtimes got wrong, and damage too rare to sample, computed exactly."""

import pytest
import torch

from impls_inputs import DTYPES, random_round
from specproof.harness import exact_reference
from specproof.impls import get, implementations, step_ratio, step_residual_clamped
from specproof.impls.kernels.sampling import draw_inverse_cdf, race_winner

# transformers' own function (exact from release 5.25.0) has its own edge cases, in
# test_impls_transformers.py: no q > 0 guard, and an all-zero residual raises instead of falling back
EXACT_ROUND = [r for r in implementations(expected_exact=True)
               if r.contract in ("batched", "uniforms")
               and (r.rule.startswith("canonical") or r.rule == "block")
               and not r.compiled and r.needs_extra is None]


def run(record, draft, target, ids, seed=0, uniforms=None):
    if record.contract == "uniforms":
        if uniforms is None:
            uniforms = torch.rand(ids.shape[0], ids.shape[1] + 1, dtype=draft.dtype,
                                  generator=torch.Generator().manual_seed(seed))
        return record.fn(draft, target, ids, uniforms)
    return record.fn(draft, target, ids, torch.Generator().manual_seed(seed))


def one_draft_round(q, p, bonus, token, rows, dtype):
    draft = torch.tensor(q, dtype=dtype).expand(rows, 1, -1)
    target = torch.tensor([p, bonus], dtype=dtype).expand(rows, -1, -1)
    return draft, target, torch.full((rows, 1), token)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("record", EXACT_ROUND, ids=lambda r: r.name)
def test_all_zero_residual_falls_back_to_target(record, dtype):
    """p <= q everywhere but p(1) < q(1) (an unnormalised p, as float16 softmax rows are): draft 1
    is rejected with probability 1/2 and max(0, p - q) is all zero. The fallback samples p, so token
    3 (p = 0) never appears; vLLM v0's uniform fallback emits it in 1/8 of the rounds."""
    q, p = [0.5, 0.25, 0.25, 0.0], [0.5, 0.125, 0.25, 0.0]
    draft, target, ids = one_draft_round(q, p, p, 1, 4000, dtype)
    emitted = run(record, draft, target, ids)
    corrections = emitted[emitted[:, 1] < 0, 0]
    assert corrections.numel() > 1000
    assert not bool((corrections == 3).any())
    assert set(corrections.tolist()) == {0, 1, 2}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64], ids=str)
def test_vllm_v0_clamp_turns_a_zero_residual_uniform(dtype):
    q, p = [0.5, 0.25, 0.25, 0.0], [0.5, 0.125, 0.25, 0.0]
    draft, target, ids = one_draft_round(q, p, p, 1, 4000, dtype)
    emitted = run(get("residual-clamped-tiny"), draft, target, ids)
    assert 300 < int((emitted[:, 0] == 3).sum()) < 700  # 4000 * 1/2 * 1/4 = 500 expected


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("record", EXACT_ROUND, ids=lambda r: r.name)
def test_draft_with_zero_draft_probability_is_rejected(record, dtype):
    """A drafted id with q(x) = 0 cannot come from q; accepting it would emit a token the law never
    proposed (here x = 2 with p(2) > 0, so p/q = inf would accept it)."""
    q, p = [0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]
    draft, target, ids = one_draft_round(q, p, p, 2, 256, dtype)
    emitted = run(record, draft, target, ids)
    assert bool((emitted[:, 1] == -1).all()), "q(x) = 0 drafts must be rejected"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("record", [r for r in EXACT_ROUND if r.contract == "uniforms"],
                         ids=lambda r: r.name)
def test_zero_target_probability_is_rejected_even_at_u_zero(record, dtype):
    """Strict comparisons: u == 0 must not accept a draft with p(x) = 0. le-ratio (u <= p/q) does."""
    q, p = [0.5, 0.5, 0.0], [0.5, 0.0, 0.5]
    draft, target, ids = one_draft_round(q, p, p, 1, 8, dtype)
    zeros = torch.zeros(8, 2, dtype=dtype)
    assert bool((run(record, draft, target, ids, uniforms=zeros)[:, 0] != 1).all())
    mutant = run(get("le-ratio-uniforms"), draft, target, ids, uniforms=zeros)
    assert bool((mutant[:, 0] == 1).all()), "u <= p/q accepts p(x) = 0 at u == 0"


def test_cpu_uniform_zero_probabilities():
    """Exact consequence of le-ratio's bug: per drafted x with p(x) = 0 it emits x with probability
    q(x) P(u == 0). CPU float32 uniforms are multiples of 2^-24 (checked on 2^20 draws), so
    P(u == 0) = 2^-24 there. float16/bfloat16 uniforms (torch 2.13) are rounded from float and values
    rounding to 1 wrap to 0: P(u == 0) is 2^-12 / 2^-9, checked within 6 standard deviations."""
    generator = torch.Generator().manual_seed(0)
    u32 = torch.rand(1 << 20, generator=generator).double()
    assert bool(((u32 * 2 ** 24).frac() == 0).all()) and bool((u32 < 1).all())
    draws = 1 << 22
    for dtype, exponent in ((torch.float16, 12), (torch.bfloat16, 9)):
        zeros = int((torch.rand(draws, dtype=dtype, generator=generator) == 0).sum())
        expected = draws * 2.0 ** -exponent
        assert abs(zeros - expected) < 6 * expected ** 0.5, (dtype, zeros, expected)


def test_le_ratio_damage_is_sampleable_in_bfloat16():
    """In bfloat16 u == 0 is common enough to see: q = (1/2, 1/2, 0, 0), p(1) = 0. The canonical
    verifier never emits token 1; le-ratio emits it at position 0 with probability q(1) 2^-9
    (about 98 of 100,000 rounds)."""
    q, p = [0.5, 0.5, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0]
    rows = 100_000
    draft = torch.tensor(q, dtype=torch.bfloat16).expand(rows, 1, -1)
    target = torch.tensor([p, p], dtype=torch.bfloat16).expand(rows, -1, -1)
    ids = torch.multinomial(torch.tensor(q).expand(rows, -1), 1,
                            generator=torch.Generator().manual_seed(1))
    bad = int((run(get("le-ratio-invcdf"), draft, target, ids) == 1).sum())
    good = int((run(get("canonical-ratio-invcdf"), draft, target, ids) == 1).sum())
    assert good == 0
    assert 38 < bad < 158, bad  # 97.7 +- 6 sigma


def test_race_ignores_zero_weights_even_with_zero_exponentials():
    weights = torch.tensor([[0.0, 0.5, 0.5]], dtype=torch.float16)
    exponentials = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.float16)
    assert (weights / exponentials).argmax(-1).item() == 0, "the naive race lets 0/0 = NaN win"
    assert race_winner(weights, exponentials).item() == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_inverse_cdf_never_lands_on_zero_weight(dtype):
    u_max = torch.tensor(1.0, dtype=dtype) - torch.finfo(dtype).eps / 2  # largest value below 1
    assert u_max < 1
    tail = torch.tensor([[0.5, 0.5, 0.0, 0.0]], dtype=dtype)
    assert draw_inverse_cdf(tail, u_max.reshape(1)).item() == 1
    assert draw_inverse_cdf(tail, torch.ones(1, dtype=dtype)).item() == 1
    gap = torch.tensor([[0.5, 0.0, 0.5]], dtype=dtype)
    assert draw_inverse_cdf(gap, torch.full((1,), 0.5, dtype=dtype)).item() == 2
    lead = torch.tensor([[0.0, 1.0]], dtype=dtype)
    assert draw_inverse_cdf(lead, torch.zeros(1, dtype=dtype)).item() == 1


@pytest.mark.parametrize("name", ["canonical-ratio-race", "canonical-product-invcdf",
                                  "canonical-log-multinomial", "block"])
def test_float16_at_full_vocabulary(name):
    vocab = 131_072
    generator = torch.Generator().manual_seed(0)
    draft = torch.randn(2, 2, vocab, generator=generator).softmax(-1).half()
    target = torch.randn(2, 3, vocab, generator=generator).softmax(-1).half()
    ids = torch.multinomial(draft.float().reshape(-1, vocab), 1, generator=generator).reshape(2, 2)
    emitted = run(get(name), draft, target, ids)
    assert emitted.shape == (2, 3) and bool((emitted < vocab).all())
    final = emitted.gather(1, ((emitted >= 0).sum(-1, keepdim=True) - 1))
    assert bool((final >= 0).all())


def test_whitebox_float64_matches_the_exact_reference():
    generator = torch.Generator().manual_seed(3)
    for _ in range(5):
        p, q = (torch.rand(6, generator=generator, dtype=torch.float64)
                * (torch.rand(6, generator=generator) > 0.3) for _ in range(2))
        p[0] += 0.1
        q[1] += 0.1
        p, q = p / p.sum(), q / q.sum()
        reference = exact_reference(p, q)
        for name in ("whitebox-ratio", "whitebox-product", "whitebox-log"):
            law = get(name).fn(p, q)
            for field in ("accept", "accepted_mass", "residual", "output"):
                exact = torch.tensor([float(x) for x in getattr(reference, field)], dtype=torch.float64)
                assert torch.allclose(getattr(law, field), exact, rtol=0, atol=1e-14), (name, field)
            assert abs(law.rejection.item() - float(reference.rejection)) < 1e-14


def test_whitebox_clamped_residual_drifts_at_full_vocabulary():
    """float16 at V = 131072: tiny = 2^-14 per token adds 8 units of residual weight, so most of the
    rejection mass lands on tokens the target gives probability 0."""
    vocab = 131_072
    p = torch.zeros(vocab, dtype=torch.float16)
    q = torch.zeros(vocab, dtype=torch.float16)
    p[:2] = torch.tensor([0.75, 0.25])
    q[:2] = torch.tensor([0.25, 0.75])
    clamped = step_residual_clamped(p, q)
    correct = step_ratio(p, q)
    assert float(correct.output[2:].float().sum()) == 0.0
    assert float(clamped.output[2:].float().sum()) > 0.4
    equal = step_residual_clamped(p, p)
    assert float(equal.residual[-1]) > 0, "p == q: the clamped residual is uniform"
    assert float(step_ratio(p, p).residual[-1]) == 0, "p == q: the fallback residual is p"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cpu_multinomial_is_the_exponential_race(dtype):
    """Measured fact (torch 2.13, CPU): torch.multinomial(w, 1) draws E ~ Exp(1) in w's dtype from
    the same generator and returns argmax(w / E), so the *-multinomial and *-race variants emit the
    same tokens from the same generator state. Their drift is one measurement, not two."""
    draft, target, ids = random_round(dtype, batch=4000, drafts=3, vocab=50, seed=1)
    for form in ("ratio", "product", "log"):
        multinomial = get(f"canonical-{form}-multinomial").fn(draft, target, ids,
                                                               torch.Generator().manual_seed(3))
        race = get(f"canonical-{form}-race").fn(draft, target, ids, torch.Generator().manual_seed(3))
        assert torch.equal(multinomial, race)
