"""White-box step: the float quantities a canonical verifier computes for one position.

Given target ``p`` and draft ``q`` of shape ``[V]`` or ``[B, V]`` in the dtype under test, each function
returns a :class:`WhiteboxStepLaw` in that dtype, on that device, with fields named like the harness's exact
reference (``specproof.harness.exact_reference``) so drift can be read off field by field:

- ``target``: ``p`` as given;
- ``accept``: acceptance probability ``A(x) = min(1, p(x)/q(x))`` as the implementation computes it
  (``0`` where ``q(x) = 0``: such a draft is rejected, and ``q(x) A(x) = 0`` either way);
- ``accepted_mass``: ``q(x) A(x)`` (``min(p, q)`` in exact arithmetic);
- ``rejection``: ``1 - sum_x q(x) A(x)``, not clamped, so rounding can make it slightly negative;
- ``residual``: ``max(0, p - q) / sum max(0, p - q)``; with no positive entry it falls back to
  ``p / sum p`` (as the batched verifiers do);
- ``output``: the implied output law ``accepted_mass + rejection * residual``.

The three correct variants differ in how ``accept`` and ``accepted_mass`` are computed, mirroring the
acceptance tests of :mod:`.acceptance`: ``ratio`` divides and multiplies back, ``product`` takes the
exact ``min(p, q)`` first, ``log`` goes through ``exp(min(0, log p - log q))``.
:func:`step_residual_clamped` is the vLLM v0 residual (see :mod:`.mutants`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from specproof.impls.contract import check_step

__all__ = ["WhiteboxStepLaw", "step_ratio", "step_product", "step_log", "step_residual_clamped",
           "normalised_residual"]


class WhiteboxStepLaw(NamedTuple):
    """Float quantities of one verification step; every field has the shape of ``p``.

    The float counterpart of :class:`specproof.proofs.laws.step_rules.StepLaw` (the exact law of a
    rule), whose field names it keeps where they mean the same quantity."""

    target: torch.Tensor
    accept: torch.Tensor
    accepted_mass: torch.Tensor
    rejection: torch.Tensor
    residual: torch.Tensor
    output: torch.Tensor


def normalised_residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``max(0, p - q)`` normalised; ``p / sum p`` when it has no positive entry."""
    unnormalised = torch.relu(p - q)
    empty = ~(unnormalised > 0).any(dim=-1, keepdim=True)
    unnormalised = torch.where(empty, p, unnormalised)
    return unnormalised / unnormalised.sum(dim=-1, keepdim=True)


def _assemble(p, accept, accepted_mass, residual) -> WhiteboxStepLaw:
    rejection = 1 - accepted_mass.sum(dim=-1, keepdim=True)
    output = accepted_mass + rejection * residual
    return WhiteboxStepLaw(p, accept, accepted_mass, rejection.squeeze(-1), residual, output)


def step_ratio(p: torch.Tensor, q: torch.Tensor) -> WhiteboxStepLaw:
    """``A = min(1, p/q)``, ``accepted_mass = q * A`` (two roundings)."""
    check_step(p, q)
    accept = torch.where(q > 0, torch.clamp(p / q, max=1.0), torch.zeros_like(p))
    return _assemble(p, accept, q * accept, normalised_residual(p, q))


def step_product(p: torch.Tensor, q: torch.Tensor) -> WhiteboxStepLaw:
    """``accepted_mass = min(p, q)`` (exact in floats), ``A = accepted_mass / q``."""
    check_step(p, q)
    accepted_mass = torch.minimum(p, q)
    accept = torch.where(q > 0, accepted_mass / q, torch.zeros_like(p))
    return _assemble(p, accept, accepted_mass, normalised_residual(p, q))


def step_log(p: torch.Tensor, q: torch.Tensor) -> WhiteboxStepLaw:
    """``A = exp(min(0, log p - log q))``, ``accepted_mass = q * A``."""
    check_step(p, q)
    log_ratio = torch.clamp(torch.log(p) - torch.log(q), max=0.0)
    accept = torch.where(q > 0, torch.exp(log_ratio), torch.zeros_like(p))
    return _assemble(p, accept, q * accept, normalised_residual(p, q))


def step_residual_clamped(p: torch.Tensor, q: torch.Tensor) -> WhiteboxStepLaw:
    """Known-bad: residual ``clamp(p - q, min=tiny)`` renormalised (vLLM v0).

    Every token gets residual mass ``tiny / sum``; with ``p <= q`` everywhere the residual is uniform
    over the vocabulary, including tokens with ``p = 0``. In float16 ``tiny = 2^-14``, so at
    ``V = 131072`` the clamp alone adds 8 units of unnormalised mass.
    """
    check_step(p, q)
    accept = torch.where(q > 0, torch.clamp(p / q, max=1.0), torch.zeros_like(p))
    clamped = torch.clamp(p - q, min=torch.finfo(p.dtype).tiny)
    residual = clamped / clamped.sum(dim=-1, keepdim=True)
    return _assemble(p, accept, q * accept, residual)
