"""Acceptance tests of canonical speculative sampling, one per runtime idiom.

Each takes the acceptance uniform ``u``, the target probability ``p_x = p(x)`` and the draft
probability ``q_x = q(x)`` of the drafted token (same shape, dtype under test) and returns a bool
mask. In real arithmetic all three accept with probability ``min(1, p(x)/q(x))``; on a finite uniform
grid they differ (see notes/numerics.md). All three reject a draft with ``q(x) = 0`` (it cannot have
been drawn from q, so accepting it would emit a token the law never proposed) and, because the
comparisons are strict, a draft with ``p(x) = 0`` even when ``u == 0``.
"""

from __future__ import annotations

import torch

__all__ = ["accept_ratio", "accept_product", "accept_log", "ACCEPTANCE_TESTS"]


def accept_ratio(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """``u < p(x)/q(x)``: one rounded division, then a strict comparison."""
    return (q_x > 0) & (u < p_x / q_x)


def accept_product(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """``u * q(x) < p(x)``: no division (FlashInfer's form); one rounded product."""
    return (q_x > 0) & (u * q_x < p_x)


def accept_log(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """``log u + log q(x) < log p(x)``: log space (vLLM model runner v2's form).

    ``u == 0`` gives ``-inf`` on the left, which accepts any ``p(x) > 0`` and, strictly, rejects
    ``p(x) = 0`` (``-inf < -inf`` is false).
    """
    return (q_x > 0) & (torch.log(u) + torch.log(q_x) < torch.log(p_x))


ACCEPTANCE_TESTS = {"ratio": accept_ratio, "product": accept_product, "log": accept_log}
