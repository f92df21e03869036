"""Sampling processors, where they are applied, and drafts sampled from one law but verified with another.

A processor maps a law to a law, written against :class:`~specproof.proofs.arith.interface.Arith`:

* ``temperature-half``: ``norm(p^(1/T))`` with ``T = 1/2``, i.e. ``norm(p^2)`` (exact in rationals);
* ``top-k-2``: keep the 2 most likely tokens (ties to the lower index), renormalise;
* ``top-p-half``: keep ``x`` while the mass strictly ahead of it is below 1/2, renormalise.

Placements for a processor ``P`` (drafts come from the draft model *with* the sampling parameters,
so the law drafts are really sampled from is ``P(q)``; the target is ``P(p)``):

* ``both-sides``: accept and correct with ``(P(p), P(q))``: the canonical step on two laws, so the
  output is ``P(p)`` by T3 (exact);
* ``target-only``: accept and correct with ``(P(p), q)``, raw ``q``, while drafts follow ``P(q)``:
  the "drafts sampled from r, verified with q" law below with ``r = P(q)``;
* ``draft-only``: accept and correct with ``(p, P(q))``: the output is raw ``p``, not ``P(p)``.

:func:`draft_from_r_law`: drafts from ``r`` verified with ``q``:
``P = r min(1, p/q) + [1 - sum r min(1, p/q)] norm(max(0, p - q))``; exact only when ``r = q``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from specproof.proofs.arith.interface import Arith
from specproof.proofs.laws.step_rules import CANONICAL, canonical_acceptance, canonical_residual_weight, step_law

__all__ = ["PROCESSORS", "PLACEMENTS", "temperature_half", "top_k", "top_p", "draft_from_r_law",
           "processed_law"]

Processor = Callable[[Arith, Any], Any]


def temperature_half(ar: Arith, v: Any) -> Any:
    """Temperature ``T = 1/2``: ``norm(v^2)``."""
    return ar.normalise(ar.mul(v, v))


def top_k(k: int) -> Processor:
    def processor(ar: Arith, v: Any) -> Any:
        keep = ar.lt(ar.mass_ahead(v, ar.one), ar.const(k))
        return ar.normalise(ar.select(keep, v, ar.zero))
    processor.__doc__ = f"top-k with k = {k}"
    return processor


def top_p(threshold: Fraction) -> Processor:
    def processor(ar: Arith, v: Any) -> Any:
        keep = ar.lt(ar.mass_ahead(v, v), ar.const(threshold))
        return ar.normalise(ar.select(keep, v, ar.zero))
    processor.__doc__ = f"top-p (nucleus) with p = {threshold}"
    return processor


PROCESSORS: dict[str, Processor] = {
    "temperature-half": temperature_half,
    "top-k-2": top_k(2),
    "top-p-half": top_p(Fraction(1, 2)),
}
PLACEMENTS = ("both-sides", "target-only", "draft-only")


def draft_from_r_law(ar: Arith, p: Any, q: Any, r: Any) -> Any:
    """Output law when drafts follow ``r`` but acceptance and residual use ``q``."""
    accepted = ar.mul(r, canonical_acceptance(ar, p, q))
    rejection = ar.sub(ar.one, ar.total(accepted))
    return ar.add(accepted, ar.mul(rejection, ar.normalise(canonical_residual_weight(ar, p, q))))


def processed_law(ar: Arith, p: Any, q: Any, processor: Processor, placement: str) -> tuple[Any, Any]:
    """``(output law, target law P(p))`` for one processor and placement."""
    target, drafts = processor(ar, p), processor(ar, q)
    if placement == "both-sides":
        output = step_law(ar, CANONICAL, target, drafts).output
    elif placement == "target-only":
        output = draft_from_r_law(ar, target, q, drafts)
    elif placement == "draft-only":
        output = step_law(ar, CANONICAL, p, drafts).output
    else:
        raise ValueError(f"placement: {placement!r} is not one of {PLACEMENTS}")
    return output, target
