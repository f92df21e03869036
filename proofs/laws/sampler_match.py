"""Sampler-match verification: draw ``y ~ p`` independently of the draft ``x ~ q``; accept iff
``x == y``; emit ``y`` either way.

Written against :class:`~specproof.proofs.arith.interface.Arith`:

* accepted mass at ``y``: ``q(y) p(y)`` (draft ``y``, target draw ``y``);
* corrected mass at ``y``: ``p(y) sum_{x != y} q(x) = p(y) (sum q - q(y))``;
* output ``q p + p (sum q - q) = p sum q = p``: exact, with acceptance rate ``sum_x p(x) q(x)``
  (a public thread claims otherwise; the proof settles it).
"""

from __future__ import annotations

from typing import Any

from specproof.proofs.arith.interface import Arith

__all__ = ["sampler_match_law"]


def sampler_match_law(ar: Arith, p: Any, q: Any) -> tuple[Any, Any, Any]:
    """``(accepted mass, corrected mass, output law)``; the acceptance rate is ``total(accepted)``."""
    accepted = ar.mul(q, p)
    corrected = ar.mul(p, ar.sub(ar.total(q), q))
    return accepted, corrected, ar.add(accepted, corrected)
