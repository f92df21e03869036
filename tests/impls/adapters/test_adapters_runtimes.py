"""The real runtimes through their adapters, where the package is importable and CUDA is present.

Marked ``gpu`` (skipped without CUDA, tests/conftest.py) and skipped with "package not installed" where
``vllm`` / ``flashinfer`` / ``sgl_kernel`` is missing: CI has neither. The scenario whose target sums
below 1 is left out of the batched runs: there an all-zero residual meets each runtime's own fallback
(vLLM v1's argmax of zeros, FlashInfer's id ``V - 1``), which the layout tests cover separately.
"""

import pytest

from specproof.harness import default_suite
from specproof.harness.check.driver import check
from specproof.impls.adapters import get_adapter

pytestmark = pytest.mark.gpu
MAX_TV = 0.2


def normalised_suite():
    return [s for s in default_suite() if "unnormalised" not in s.tags]


def run_batched(adapter, fn):
    result = check(get_adapter(adapter).wrap(fn), device="cuda", samples=20_000, seed=1,
                            max_detectable_tv=MAX_TV, scenarios=normalised_suite())
    assert result.passed, result.summary()


def test_real_vllm_v1_rejection_sample():
    module = pytest.importorskip("vllm.v1.sample.rejection_sampler", reason="package not installed")
    run_batched("vllm-v1", module.rejection_sample)


def test_real_vllm_v0_rejection_sampler():
    module = pytest.importorskip("vllm.model_executor.layers.rejection_sampler",
                                 reason="package not installed (or a vLLM without the v0 engine)")
    import torch

    sampler = module.RejectionSampler()
    sampler.init_gpu_tensors(device=torch.device("cuda"))
    run_batched("vllm-v0", sampler)


def test_real_flashinfer_chain_speculative_sampling():
    module = pytest.importorskip("flashinfer.sampling", reason="package not installed")
    run_batched("flashinfer", module.chain_speculative_sampling)


def test_real_sgl_kernel_tree_walk_on_top_k_trees():
    module = pytest.importorskip("sgl_kernel", reason="package not installed")
    from specproof.harness.check.driver import check
    from specproof.harness.check.contracts.tree.scenarios import default_tree_suite

    topk = [s for s in default_tree_suite() if s.name == "tree-topk-deep"]
    result = check(get_adapter("sglang-tree").wrap(module.tree_speculative_sampling_target_only), "tree",
                        device="cuda", samples=20_000, seed=1, scenarios=topk, max_detectable_tv=MAX_TV)
    assert result.passed, result.summary()
