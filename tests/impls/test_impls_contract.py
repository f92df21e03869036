"""Contract checks for every registered implementation, on CPU, in every dtype it declares.

Compiled records are covered in test_impls_compiled.py (compiling per dtype costs seconds).
"""

import pytest
import torch

from impls_inputs import random_round
from specproof.impls import get, implementations

EAGER = [r for r in implementations() if not r.compiled]
BATCHED = [r for r in EAGER if r.contract == "batched"]
UNIFORMS = [r for r in EAGER if r.contract == "uniforms"]
WRAPPERS = [r for r in EAGER if r.contract == "batched" and r.uniforms_core]


def cases(records):
    return [pytest.param(r, dt, id=f"{r.name}-{str(dt)[6:]}") for r in records for dt in r.dtypes]


def gen(seed):
    return torch.Generator().manual_seed(seed)


def check_layout(emitted, draft, target, ids, record):
    """Shape, dtype, device, -1 padding, accepted prefix = drafts, final token in range."""
    batch, drafts, vocab = draft.shape
    assert emitted.shape == (batch, drafts + 1)
    assert emitted.dtype == torch.int64 and emitted.device == draft.device
    valid = emitted >= 0
    length = valid.sum(-1)
    assert bool((length >= 1).all())
    position = torch.arange(drafts + 1)
    assert torch.equal(valid, position < length.unsqueeze(-1)), "-1 must only pad the tail"
    assert bool((emitted < vocab).all())
    accepted = position[:drafts] < (length - 1).unsqueeze(-1)
    assert torch.equal(torch.where(accepted, emitted[:, :drafts], ids), ids), \
        "emitted tokens before the last must be the drafts"
    if record.expected_exact and record.rule.startswith("canonical"):
        n = length - 1
        final = emitted.gather(1, n.unsqueeze(-1)).squeeze(-1)
        rows = torch.arange(batch)
        p_final = target[rows, n, final]
        assert bool((p_final > 0).all()), "an exact verifier never emits a token with p = 0"
        correction = n < drafts
        q_row = draft[rows, n.clamp(max=drafts - 1)]
        p_row = target[rows, n]
        has_residual = (p_row > q_row).any(-1)
        q_final = draft[rows, n.clamp(max=drafts - 1), final]
        ok = ~correction | ~has_residual | (p_final > q_final)
        assert bool(ok.all()), "a correction token must come from max(0, p - q)"


@pytest.mark.parametrize("record,dtype", cases(BATCHED))
def test_batched_contract(record, dtype):
    draft, target, ids = random_round(dtype, batch=64, drafts=3, vocab=7, seed=1)
    copies = [x.clone() for x in (draft, target, ids)]
    emitted = record.fn(draft, target, ids, gen(5))
    check_layout(emitted, draft, target, ids, record)
    assert all(torch.equal(a, b) for a, b in zip(copies, (draft, target, ids))), "inputs mutated"
    assert draft.dtype == dtype
    assert torch.equal(emitted, record.fn(draft, target, ids, gen(5))), "not deterministic"


@pytest.mark.parametrize("record", [r for r in BATCHED if r.rule != "greedy"], ids=lambda r: r.name)
def test_batched_consumes_generator(record):
    draft, target, ids = random_round(torch.float32, batch=256, drafts=3, vocab=7, seed=2)
    first, second = (record.fn(draft, target, ids, gen(seed)) for seed in (1, 2))
    assert not torch.equal(first, second)


@pytest.mark.parametrize("record,dtype", cases(UNIFORMS))
def test_uniforms_contract(record, dtype):
    draft, target, ids = random_round(dtype, batch=64, drafts=3, vocab=7, seed=3)
    uniforms = torch.rand(64, 4, dtype=dtype, generator=gen(0))
    copies = [x.clone() for x in (draft, target, ids, uniforms)]
    emitted = record.fn(draft, target, ids, uniforms)
    check_layout(emitted, draft, target, ids, record)
    assert all(torch.equal(a, b) for a, b in zip(copies, (draft, target, ids, uniforms)))
    assert torch.equal(emitted, record.fn(draft, target, ids, uniforms))


@pytest.mark.parametrize("record,dtype", cases(WRAPPERS))
def test_batched_wrapper_is_thin(record, dtype):
    """A wrapper's output equals its core fed torch.rand((B, K+1)) from the same generator state."""
    draft, target, ids = random_round(dtype, batch=64, drafts=2, vocab=5, seed=4)
    uniforms = torch.rand((64, 3), dtype=dtype, generator=gen(9))
    core = get(record.uniforms_core)
    assert core.contract == "uniforms"
    assert torch.equal(record.fn(draft, target, ids, gen(9)), core.fn(draft, target, ids, uniforms))


def test_greedy_accepts_no_generator():
    draft, target, ids = random_round(torch.float32, seed=5)
    assert torch.equal(get("greedy").fn(draft, target, ids, None),
                       get("greedy").fn(draft, target, ids, gen(0)))


@pytest.mark.parametrize("record,dtype", cases([r for r in EAGER if r.contract == "whitebox"]))
@pytest.mark.parametrize("batched", [False, True])
def test_whitebox_contract(record, dtype, batched):
    draft, target, _ = random_round(dtype, batch=8, drafts=1, vocab=9, seed=6)
    p, q = (target[:, 0], draft[:, 0]) if batched else (target[0, 0], draft[0, 0])
    copies = (p.clone(), q.clone())
    law = record.fn(p, q)
    for field in ("target", "accept", "accepted_mass", "residual", "output"):
        value = getattr(law, field)
        assert value.shape == p.shape and value.dtype == dtype, field
    assert law.rejection.shape == p.shape[:-1] and law.rejection.dtype == dtype
    assert torch.equal(copies[0], p) and torch.equal(copies[1], q)
    assert torch.allclose(law.output.double().sum(-1), torch.ones(()).double(), atol=0.05)
    assert all(torch.equal(a, b) for a, b in zip(law, record.fn(p, q))), "not deterministic"


@pytest.mark.parametrize("record,dtype", cases([r for r in EAGER if r.contract == "multidraft"]))
def test_multidraft_contract(record, dtype):
    draft, target, _ = random_round(dtype, batch=128, drafts=1, vocab=6, seed=7)
    q, p = draft[:, 0], target[:, 0]
    siblings = torch.multinomial(q.double(), 3, replacement=True, generator=gen(1))
    copies = (q.clone(), p.clone(), siblings.clone())
    out = record.fn(q, p, siblings, gen(2))
    assert out.shape == (128,) and out.dtype == torch.int64
    assert bool(((out >= 0) & (out < 6)).all())
    assert bool((p.gather(1, out.unsqueeze(-1)) > 0).all()), "never emits a token with p = 0"
    assert all(torch.equal(a, b) for a, b in zip(copies, (q, p, siblings)))
    assert torch.equal(out, record.fn(q, p, siblings, gen(2)))
