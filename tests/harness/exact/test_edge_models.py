"""The one edge-model abstraction: CPU, CUDA and Triton generators are records of EdgeModel."""

import pytest

from specproof.errors import SpecproofInputError
from specproof.harness.exact.edge_models import EDGE_MODELS, edge_model, edge_model_for_device
from specproof.harness.exact.rng_edges import edge_values


def test_each_record_lists_its_labelled_edges():
    for model in EDGE_MODELS.values():
        for kind in model.kinds:
            dtype = "uint32" if kind == "randint" else "float32"
            edges = model.edge_values(kind, dtype)
            assert [e.label for e in edges] == list(model.labels[kind])
            assert all(0 < e.probability < 1 for e in edges)


def test_cpu_record_is_rng_edges_and_devices_map():
    assert edge_model_for_device("cpu").edge_values("uniform", "float32") == edge_values("uniform", "float32")
    assert edge_model_for_device("cuda:0").generator == "torch-cuda"
    assert edge_model("torch-cuda").edge("exponential", "float32", "largest").value > 22
    # CUDA's exponential has no zero edge (the clamp), the CPU's has
    assert "zero" not in edge_model("torch-cuda").labels["exponential"]
    assert "zero" in edge_model("torch-cpu").labels["exponential"]


def test_refusals_name_the_argument():
    with pytest.raises(SpecproofInputError, match="device"):
        edge_model_for_device("meta")
    with pytest.raises(SpecproofInputError, match="generator"):
        edge_model("xorwow")
    with pytest.raises(SpecproofInputError, match="label"):
        edge_model("torch-cuda").edge("exponential", "float32", "zero")
    with pytest.raises(SpecproofInputError, match="kind"):
        edge_model("triton").edge_values("uniform", "float32")
