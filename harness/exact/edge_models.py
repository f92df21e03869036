"""One record per random generator whose edge draws are modelled: :class:`EdgeModel`, :func:`edge_model`.

Each generator's edges are :class:`~.rng_edges.EdgeValue` records (a value the real generator produces
and its exact per-draw probability); an :class:`EdgeModel` names the generator, its draw kinds with
their edge labels, and the function that lists the edges.  Records:

* ``"torch-cpu"``: :mod:`.rng_edges` (``torch.rand`` / ``uniform_`` / ``exponential_`` / ``multinomial``
  on CPU);
* ``"torch-cuda"``: :mod:`.cuda_rng_edges` (the same calls on CUDA: Philox via curand);
* ``"triton"``: :mod:`.triton_rng_edges` (``tl.rand`` / ``tl.randn`` / ``tl.randint`` /
  ``tl.randint4x`` / ``tl.philox``, on a GPU or under ``TRITON_INTERPRET=1``).

:func:`edge_model_for_device` maps a torch device to its record (``cpu`` -> ``torch-cpu``,
``cuda`` -> ``torch-cuda``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import torch

from specproof.harness.exact.cuda_rng_edges import CUDA_EDGE_LABELS, cuda_edge_values
from specproof.harness.exact.rng_edges import EDGE_LABELS, EdgeValue, edge_values
from specproof.harness.exact.triton_rng_edges import TRITON_EDGE_LABELS, triton_edge_values
from specproof.errors import SpecproofInputError

__all__ = ["EdgeModel", "EDGE_MODELS", "edge_model", "edge_model_for_device"]


@dataclass(frozen=True)
class EdgeModel:
    """A generator's edge model: ``labels[kind]`` are the edge labels of its ``kind`` draws, in the order
    ``edges(kind, dtype)`` lists them; ``source`` names where the model is derived from."""

    generator: str
    labels: Mapping[str, tuple[str, ...]]
    edges: Callable[[str, object], tuple[EdgeValue, ...]]
    source: str

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.labels)

    def edge_values(self, kind: str, dtype: object) -> tuple[EdgeValue, ...]:
        """The edges of ``kind`` draws in ``dtype``; an unknown kind is refused, naming the known ones."""
        if kind not in self.labels:
            raise SpecproofInputError("kind", f"{self.generator} has no {kind!r} draws",
                                      f"use one of {', '.join(self.labels)}")
        return self.edges(kind, dtype)

    def edge(self, kind: str, dtype: object, label: str) -> EdgeValue:
        """The one edge labelled ``label``."""
        for candidate in self.edge_values(kind, dtype):
            if candidate.label == label:
                return candidate
        raise SpecproofInputError("label", f"{self.generator} {kind} draws have no {label!r} edge",
                                  f"use one of {', '.join(self.labels[kind])}")


EDGE_MODELS: dict[str, EdgeModel] = {
    "torch-cpu": EdgeModel("torch-cpu", EDGE_LABELS, edge_values, "torch 2.13 CPU generator (harness.exact.rng_edges)"),
    "torch-cuda": EdgeModel("torch-cuda", CUDA_EDGE_LABELS, cuda_edge_values,
                            "PyTorch CUDA sources, Philox via curand (harness.exact.cuda_rng_edges)"),
    "triton": EdgeModel("triton", TRITON_EDGE_LABELS, triton_edge_values,
                        "triton.language.random (harness.exact.triton_rng_edges)"),
}


def edge_model(generator: str) -> EdgeModel:
    """The record of ``generator`` (a key of :data:`EDGE_MODELS`)."""
    if generator not in EDGE_MODELS:
        raise SpecproofInputError("generator", f"no edge model for {generator!r}",
                                  f"use one of {', '.join(EDGE_MODELS)}")
    return EDGE_MODELS[generator]


def edge_model_for_device(device: object) -> EdgeModel:
    """The record of torch's generator on ``device``: ``torch-cpu`` or ``torch-cuda``; other devices refused."""
    kind = torch.device(device).type
    if kind not in ("cpu", "cuda"):
        raise SpecproofInputError("device", f"{device!r}: no edge model for torch's {kind} generator",
                                  "run the injection on cpu or cuda")
    return EDGE_MODELS[f"torch-{kind}"]
