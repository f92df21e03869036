"""Table models for the ``generate`` contract: logits by position and class of the last token, no arithmetic.

A :class:`TablePair` holds two logit tables ``[P, C, V]`` (float64 values, rounded once to the dtype
under test when built).  :class:`TableModel` returns, for ``input_ids [B, T]``,
``logits[b, t] = table[min(t, P - 1), input_ids[b, t] mod C]``: an exact lookup, so the harness's
reference reads the very values the pipeline sees.  Column ``t`` is the next-token law after column
``t``; position rows past ``P - 1`` repeat the last one.  ``max_length = L + N + MAX_DRAFT + 1``.

A call with a wrong argument (not a LongTensor, not 2-D, ``T`` out of ``[1, max_length]``, another
device, ids out of ``[0, V)``) records and raises :class:`ContractViolation` naming the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Hashable, Sequence

import numpy as np
import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.calls import ContractViolation
from specproof.harness.check.contracts.generate.signature import MAX_DRAFT, record_violation
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.dtypes import dtype_info, torch_dtype
from specproof.harness.exact.sampling import Sampling, temperature_shift

__all__ = ["TableModel", "TablePair"]


class TableModel(torch.nn.Module):
    """``model(input_ids [B, T]) -> logits [B, T, V]`` by lookup (module docstring)."""

    def __init__(self, role: str, table: torch.Tensor, classes: int, max_length: int):
        super().__init__()
        self.role = role
        self.register_buffer("table", table)  # [P, C, V]
        self.classes = classes
        self.vocab_size = int(table.shape[-1])
        self.max_length = max_length
        self.specproof_violations: list[ContractViolation] = []

    def _refuse(self, problem: str, fix: str) -> ContractViolation:
        return record_violation(self, ContractViolation(f"{self.role} model", problem, fix))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.int64:
            raise self._refuse(f"called with {getattr(input_ids, 'dtype', type(input_ids).__name__)}, "
                               "not a LongTensor", "call model(input_ids) with int64 token ids [B, T]")
        if input_ids.dim() != 2:
            raise self._refuse(f"called with shape {tuple(input_ids.shape)}, not [B, T]",
                               "pass input_ids of shape [B, T] (prompt first, no padding on the left)")
        length = input_ids.shape[1]
        if not 1 <= length <= self.max_length:
            raise self._refuse(f"called with T = {length}, outside [1, {self.max_length}]",
                               f"keep T <= max_length = {self.max_length} (draft at most "
                               f"{MAX_DRAFT} tokens beyond max_new_tokens)")
        if input_ids.device != self.table.device:
            raise self._refuse(f"called on {input_ids.device}, the model is on {self.table.device}",
                               "keep input_ids on the prompt's device")
        if input_ids.numel() and bool(((input_ids < 0) | (input_ids >= self.vocab_size)).any()):
            raise self._refuse(f"called with ids outside [0, {self.vocab_size})",
                               "pass token ids of the vocabulary (no -1 padding)")
        rows = torch.arange(length, device=input_ids.device).clamp(max=self.table.shape[0] - 1)
        return self.table[rows.unsqueeze(0), input_ids % self.classes]


@dataclass(frozen=True, eq=False)
class TablePair:
    """Target and draft logit tables ``[P, C, V]`` with a prompt; implements ``ModelPair``."""

    name: str
    prompt: tuple[int, ...]
    target: np.ndarray  # [P, C, V] float64
    draft: np.ndarray  # [P, C, V] float64 (P may differ from the target's)

    def __post_init__(self) -> None:
        for side in ("target", "draft"):
            table = getattr(self, side)
            if table.ndim != 3 or not np.all(np.isfinite(table)):
                raise SpecproofInputError(side, f"table of shape {table.shape} is not [P, C, V] of finite values",
                                          "pass logits[position, class, token]")
        if self.target.shape[1:] != self.draft.shape[1:]:
            raise SpecproofInputError("draft", f"classes/vocabulary {self.draft.shape[1:]} differ from the "
                                      f"target's {self.target.shape[1:]}", "use one vocabulary and class count")
        if not self.prompt or not all(0 <= t < self.vocab for t in self.prompt):
            raise SpecproofInputError("prompt", f"{self.prompt!r} is empty or has ids outside [0, {self.vocab})",
                                      "pass at least one token id of the vocabulary")

    @property
    def vocab(self) -> int:
        return int(self.target.shape[2])

    @property
    def classes(self) -> int:
        return int(self.target.shape[1])

    def max_length(self, new_tokens: int) -> int:
        return len(self.prompt) + new_tokens + MAX_DRAFT + 1

    def build(self, dtype: str, device: str, new_tokens: int) -> tuple[TableModel, TableModel]:
        dt, length = torch_dtype(dtype), self.max_length(new_tokens)
        return tuple(TableModel(side, torch.as_tensor(getattr(self, side)).to(dt).to(device), self.classes, length)
                     for side in ("target", "draft"))  # type: ignore[return-value]

    def law_key(self, prefix: tuple[int, ...]) -> Hashable:
        column = len(self.prompt) - 1 + len(prefix)
        last = prefix[-1] if prefix else self.prompt[-1]
        return min(column, self.target.shape[0] - 1), last % self.classes

    def reference_logits(self, target: TableModel, prefixes: Sequence[tuple[int, ...]]) -> torch.Tensor:
        keys = [self.law_key(p) for p in prefixes]
        position = torch.tensor([k[0] for k in keys], dtype=torch.int64, device=target.table.device)
        cls = torch.tensor([k[1] for k in keys], dtype=torch.int64, device=target.table.device)
        return target.table[position, cls].cpu()

    def extra_tolerance(self, dtype: str, new_tokens: int, sampling: Sampling | None = None,
                        arithmetic: str | None = None) -> Fraction:
        """``2 N delta_T``: the lookups are exact (the pipeline reads the reference's own values), but a
        temperature ``T != 1`` is applied in the pipeline's arithmetic (``arithmetic``, default ``dtype``):
        each logit moves by at most ``delta_T`` (:func:`~specproof.harness.exact.sampling.temperature_shift`,
        ``max|l|`` of the table rounded to ``dtype``: at most ``(1 + u_dtype)`` times the float64 one), each
        kept probability by a factor in ``exp(+-2 delta_T)``, one token's law by at most ``2 delta_T`` in
        total variation and ``N`` tokens by ``2 N delta_T``, provided the masks do not change.  They do not:
        the exact reference (:func:`~specproof.harness.exact.sampling.processed_law`, at the same
        arithmetic) refuses every top-k, top-p and min-p decision within the float margin that includes
        this move (:func:`~specproof.harness.exact.sampling.decision_margin`).  0 at ``T = 1``: no division."""
        if sampling is None:
            return Fraction(0)
        largest = to_exact(float(np.abs(self.target).max())) * (1 + dtype_info(dtype).unit_roundoff)
        shift = temperature_shift(arithmetic or dtype, largest, to_exact(sampling.temperature))
        return min(Fraction(1), 2 * new_tokens * shift)
