"""Sampling processors of a pipeline, built from a ``sampling`` record (``temperature``, ``top_k``,
``top_p``, ``min_p``; ``None`` when off), in the order temperature, top-k, top-p, min-p unless the
record's ``order`` says otherwise.

The harness's published definition (``specproof.harness.apply_sampling``) is this pipeline; the exact
reference computes the same masks on exact rationals.
"""

from __future__ import annotations

from typing import Any

import torch

from specproof.impls.processors import MinP, Processors, Temperature, TopK, TopP

__all__ = ["sampling_processors", "processed_probs", "ORDER"]

ORDER = ("temperature", "top_k", "top_p", "min_p")  # unless the sampling record declares its own order


def sampling_processors(sampling: Any, *, skip: tuple[str, ...] = ()) -> Processors:
    """The processors of ``sampling``; ``skip`` leaves out some of ``"top_k"``, ``"top_p"``, ``"min_p"``
    (for the mutants that apply a processor on one side only)."""
    build = {"temperature": lambda: Temperature(float(sampling.temperature)),
             "top_k": lambda: TopK(int(sampling.top_k)), "top_p": lambda: TopP(float(sampling.top_p)),
             "min_p": lambda: MinP(float(sampling.min_p))}
    steps = [build[name]() for name in getattr(sampling, "order", ORDER)
             if name not in skip and (name == "temperature" or getattr(sampling, name) is not None)]
    return Processors(steps)


def processed_probs(logits: torch.Tensor, sampling: Any, *, skip: tuple[str, ...] = ()) -> torch.Tensor:
    """``softmax`` of the processed logits, in the logits' dtype."""
    return sampling_processors(sampling, skip=skip).probs(logits)
