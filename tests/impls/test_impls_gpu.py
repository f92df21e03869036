"""CUDA checks: the same code follows its inputs onto the GPU. Skipped where no CUDA device exists
(tests/conftest.py skips the gpu marker); every other test in this suite runs on CPU."""

import pytest
import torch

from impls_inputs import DTYPES, random_round
from specproof.impls import get, implementations

pytestmark = pytest.mark.gpu

ROUND_RECORDS = [r for r in implementations() if r.contract in ("batched", "uniforms")
                 and "cuda" in r.devices and not r.compiled]


def cuda_generator(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("record", ROUND_RECORDS, ids=lambda r: r.name)
def test_round_contract_on_cuda(record, dtype):
    draft, target, ids = random_round(dtype, batch=64, drafts=3, vocab=7, seed=0, device="cuda")
    if record.contract == "uniforms":
        uniforms = torch.rand(64, 4, dtype=dtype, device="cuda", generator=cuda_generator(1))
        first = record.fn(draft, target, ids, uniforms)
        second = record.fn(draft, target, ids, uniforms)
    else:
        first = record.fn(draft, target, ids, cuda_generator(1))
        second = record.fn(draft, target, ids, cuda_generator(1))
    assert first.device.type == "cuda" and first.dtype == torch.int64 and first.shape == (64, 4)
    assert torch.equal(first, second)
    assert draft.device.type == "cuda" and draft.dtype == dtype


def test_uniform_core_agrees_across_devices():
    """The uniform-injection core is a deterministic function of its inputs: CPU and CUDA agree given
    the same uniforms. float64 at V = 7: a disagreement would need a cumsum rounding difference
    (an ulp, about 1e-16) to straddle a uniform, so none is expected in 256 rows."""
    draft, target, ids = random_round(torch.float64, batch=256, drafts=3, vocab=7, seed=2)
    uniforms = torch.rand(256, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    core = get("canonical-product-uniforms").fn
    on_cpu = core(draft, target, ids, uniforms)
    on_cuda = core(draft.cuda(), target.cuda(), ids.cuda(), uniforms.cuda())
    assert torch.equal(on_cpu, on_cuda.cpu())


def test_cpu_generator_with_cuda_probabilities_is_refused():
    draft, target, ids = random_round(torch.float32, batch=4, drafts=2, vocab=5, device="cuda")
    with pytest.raises(ValueError, match="generator lives on cpu.*torch.Generator\\(device='cuda"):
        get("canonical-ratio-race").fn(draft, target, ids, torch.Generator())


def test_compiled_core_runs_on_cuda():
    """Inductor emits Triton on CUDA; only the layout and determinism are asserted here (bit
    agreement with eager is a measurement for the harness, not a contract)."""
    draft, target, ids = random_round(torch.float32, batch=512, drafts=3, vocab=7, device="cuda")
    uniforms = torch.rand(512, 4, device="cuda", generator=cuda_generator(0))
    compiled = get("canonical-ratio-uniforms-compiled").fn
    first = compiled(draft, target, ids, uniforms)
    assert first.device.type == "cuda" and first.shape == (512, 4)
    assert torch.equal(first, compiled(draft, target, ids, uniforms))
