"""Torch interpretation of :class:`~specproof.proofs.arith.interface.Arith`: the rule evaluated in a float dtype.

Vectors are tensors whose last axis is the vocabulary; a ``total`` keeps that axis (size 1) so it
broadcasts back.  Every operation runs in ``dtype`` on ``device``: this is the rule as a float
implementation would compute it, and its drift from the exact backend is what the harness measures.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import torch

from specproof.proofs.arith.interface import Arith

__all__ = ["TorchArith"]


class TorchArith(Arith):
    """Elementwise torch arithmetic in one dtype on one device."""

    name = "torch"

    def __init__(self, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
        if not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating dtype, got {dtype}")
        self.dtype = dtype
        self.device = torch.device(device)

    def _t(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
            return torch.tensor(float(x), dtype=self.dtype, device=self.device)
        raise TypeError(f"TorchArith takes tensors, ints or Fractions, got {type(x).__name__}")

    def const(self, value: int | Fraction) -> torch.Tensor:
        return self._t(value)

    def add(self, a: Any, b: Any) -> torch.Tensor:
        return self._t(a) + self._t(b)

    def sub(self, a: Any, b: Any) -> torch.Tensor:
        return self._t(a) - self._t(b)

    def mul(self, a: Any, b: Any) -> torch.Tensor:
        return self._t(a) * self._t(b)

    def div(self, a: Any, b: Any) -> torch.Tensor:
        return self._t(a) / self._t(b)

    def minimum(self, a: Any, b: Any) -> torch.Tensor:
        return torch.minimum(self._t(a), self._t(b))

    def maximum(self, a: Any, b: Any) -> torch.Tensor:
        return torch.maximum(self._t(a), self._t(b))

    def total(self, v: Any) -> torch.Tensor:
        v = self._t(v)
        return v.sum(dim=-1, keepdim=True) if v.dim() > 0 else v

    def lt(self, a: Any, b: Any) -> torch.Tensor:
        return torch.lt(self._t(a), self._t(b))

    def le(self, a: Any, b: Any) -> torch.Tensor:
        return torch.le(self._t(a), self._t(b))

    def eq(self, a: Any, b: Any) -> torch.Tensor:
        return torch.eq(self._t(a), self._t(b))

    def select(self, cond: Any, a: Any, b: Any) -> torch.Tensor:
        return torch.where(self._t(cond), self._t(a), self._t(b))

    def log(self, a: Any) -> torch.Tensor:
        return torch.log(self._t(a))

    def mass_ahead(self, key: Any, weight: Any) -> torch.Tensor:
        """Vectorised :meth:`Arith.mass_ahead` over the last axis (ties to the lower index)."""
        key = self._t(key)
        n = key.shape[-1]
        weight = self._t(weight).expand(key.shape)
        ky, kx = key.unsqueeze(-2), key.unsqueeze(-1)  # [..., x, y]
        idx = torch.arange(n, device=key.device)
        lower = idx.unsqueeze(0) < idx.unsqueeze(1)  # [x, y]: y < x
        ahead = (ky > kx) | ((ky == kx) & lower)
        return torch.where(ahead, weight.unsqueeze(-2), torch.zeros((), dtype=self.dtype,
                                                                    device=key.device)).sum(dim=-1)
