"""RNG edge injection on CUDA tensors (gpu marker; skipped without a CUDA device by tests/conftest.py):
the edges injected are the CUDA generator's (harness.exact.cuda_rng_edges), not the CPU's."""

import pytest

import specproof.impls as impls
from specproof.harness.exact.edge_models import edge_model
from specproof.harness.check.intercept.injection import inject_check

pytestmark = pytest.mark.gpu


def test_le_ratio_flagged_on_cuda_with_the_cuda_zero_probability():
    result = inject_check(impls.get("le-ratio-invcdf").fn, device="cuda", rows=256)
    assert result.flagged, result.summary()
    zero = edge_model("torch-cuda").edge("uniform", "float32", "zero")
    hits = [f for f in result.findings if f.kind == "uniform" and f.label == "zero"]
    assert hits and all(f.edges[0].probability == zero.probability for f in hits)
    assert all(f.rate_bound is not None and f.rate_bound > 0 for f in hits)


@pytest.mark.parametrize("name", ["canonical-ratio-race", "canonical-log-race"])
def test_exact_forms_not_flagged_on_cuda(name):
    result = inject_check(impls.get(name).fn, device="cuda", rows=256)
    assert not result.flagged, result.summary()
