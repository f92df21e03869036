"""Sampling processors: logits ``[..., V]`` in, processed logits out, in the logits' dtype.

A :class:`Processors` pipeline applies the same processors, in order, to whichever side it is given,
so the draft and target laws can be built identically (notes/algorithms.md section 7: the rule is
exact w.r.t. the processed target only if both sides and the bonus row see the same processing):

    pipeline = Processors([RepetitionPenalty(1.2), Temperature(0.7), TopK(50), TopP(0.9)])
    q = pipeline.probs(draft_logits, context_ids)
    p = pipeline.probs(target_logits, context_ids)

Removed tokens get logit ``-inf`` (probability exactly 0). :meth:`Processors.process_probs` applies
the pipeline to probabilities through ``log p`` (``p = 0 -> -inf``), for verifiers that only receive
probabilities; ``softmax(log p)`` returns ``p / sum p`` up to one rounding per entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

__all__ = ["Temperature", "TopK", "TopP", "MinP", "RepetitionPenalty", "VocabMask", "Processors"]


def _removed(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))


@dataclass(frozen=True)
class Temperature:
    """``logits / t`` for ``t > 0`` (``t -> 0`` is greedy: use :mod:`.greedy` instead)."""

    t: float

    def __post_init__(self):
        if not self.t > 0:
            raise ValueError(f"Temperature(t={self.t!r}): t must be > 0. Fix: for t = 0 use greedy "
                             f"verification (specproof.impls.greedy_verify).")

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        return logits / self.t


@dataclass(frozen=True)
class TopK:
    """Keep tokens whose logit is at least the ``k``-th largest (ties at the boundary are kept)."""

    k: int

    def __post_init__(self):
        if not (isinstance(self.k, int) and self.k >= 1):
            raise ValueError(f"TopK(k={self.k!r}): k must be an int >= 1.")

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        k = min(self.k, logits.shape[-1])
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return _removed(logits, logits >= kth)


@dataclass(frozen=True)
class TopP:
    """Nucleus: keep the fewest highest-probability tokens whose mass reaches ``top_p``.

    Sorted descending (stable, so ties keep the lower index first); a token is kept iff the mass of
    the tokens before it is below ``top_p``, so the top token is always kept.
    """

    top_p: float

    def __post_init__(self):
        if not 0 < self.top_p <= 1:
            raise ValueError(f"TopP(top_p={self.top_p!r}): top_p must lie in (0, 1].")

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        probs = logits.softmax(dim=-1)
        sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        keep_sorted = mass_before < self.top_p
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        return _removed(logits, keep)


@dataclass(frozen=True)
class MinP:
    """Keep tokens with ``p(x) >= min_p * max_y p(y)``."""

    min_p: float

    def __post_init__(self):
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"MinP(min_p={self.min_p!r}): min_p must lie in [0, 1].")

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        probs = logits.softmax(dim=-1)
        threshold = self.min_p * probs.amax(dim=-1, keepdim=True)
        return _removed(logits, probs >= threshold)


@dataclass(frozen=True)
class RepetitionPenalty:
    """CTRL/transformers penalty on tokens in the context: ``l / r`` if ``l > 0`` else ``l * r``.

    Needs ``context_ids [..., n]`` int64 (leading dims matching the logits'; ``-1`` entries are
    padding). Each speculative position has its own context (earlier drafts included).
    """

    penalty: float

    def __post_init__(self):
        if not self.penalty > 0:
            raise ValueError(f"RepetitionPenalty(penalty={self.penalty!r}): penalty must be > 0.")

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        if context_ids is None:
            raise ValueError("RepetitionPenalty needs context_ids [..., n] (the tokens generated so "
                             "far). Fix: call Processors.logits(logits, context_ids).")
        if context_ids.shape[:-1] != logits.shape[:-1]:
            raise ValueError(f"context_ids must have leading shape {list(logits.shape[:-1])} to "
                             f"match the logits; got {list(context_ids.shape)}.")
        valid = context_ids >= 0
        counts = torch.zeros(logits.shape, dtype=torch.int64, device=logits.device)
        seen = counts.scatter_add(-1, context_ids.clamp(min=0), valid.to(torch.int64)) > 0
        penalised = torch.where(logits > 0, logits / self.penalty, logits * self.penalty)
        return torch.where(seen, penalised, logits)


@dataclass(frozen=True, eq=False)
class VocabMask:
    """Keep only the tokens where ``allowed`` (bool ``[V]`` or broadcastable ``[..., V]``) is True."""

    allowed: torch.Tensor

    def __call__(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        allowed = self.allowed.to(logits.device)
        if not bool(allowed.any(dim=-1).all()):
            raise ValueError("VocabMask removes every token of some row; a law needs at least one "
                             "allowed token. Fix: allow at least one token per row.")
        return _removed(logits, allowed)


class Processors:
    """An ordered pipeline of processors applied identically to any side."""

    def __init__(self, processors: Sequence = ()):
        self.processors = tuple(processors)
        for processor in self.processors:
            if not callable(processor):
                raise TypeError(f"Processors([...]) takes callables (logits, context_ids) -> logits; "
                                f"got {type(processor).__name__}.")

    def __repr__(self) -> str:
        return f"Processors({list(self.processors)!r})"

    def logits(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Processed logits, same dtype and device as the input."""
        for processor in self.processors:
            logits = processor(logits, context_ids)
        return logits

    def probs(self, logits: torch.Tensor, context_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``softmax`` of the processed logits, in the logits' dtype."""
        return self.logits(logits, context_ids).softmax(dim=-1)

    def process_probs(self, probs: torch.Tensor,
                      context_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the pipeline to probabilities via ``log p`` (``0 -> -inf``), back through softmax."""
        return self.probs(torch.log(probs), context_ids)
