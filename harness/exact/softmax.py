"""Certified softmax: ``softmax(logits / T)`` as exact rationals with a proven error bound.

Softmax is not rational, so the exact reference of a runtime that starts from logits is computed with
mpmath interval arithmetic at ``precision_bits`` (default 128): every ``exp`` and division is rounded
outward, so each true probability ``p_i`` lies in a computed interval ``[a_i, b_i]``.  The returned law
is the midpoints renormalised exactly, ``m_i / sum_j m_j``, and with ``rho = max_i (b_i - a_i) / (2 a_i)``

    |p_hat_i - p_i| <= eps * p_i,     eps = 2 rho / (1 - rho)

(``|m_i - p_i| <= rho p_i`` and ``|sum m - 1| <= rho``).  At 128 bits ``eps`` is about ``2^-120``, far
below a float64 ULP (``2^-52`` relative), so measured float drift is the implementation's, not ours.
The logits and the temperature enter through the one exact conversion.

Bounded work.  The exact law is dyadic, and a token at distance ``d = (max - x_i) / T`` from the top
logit needs about ``d / ln 2 + precision_bits`` bits.  Spreads beyond :data:`MAX_LOGIT_SPREAD`
``= 16494 ln 2`` (about 11,433) are refused: such a token's probability is below ``2^-16494``, the
smallest subnormal of IEEE binary128, so it is 0 in every float format a softmax is computed in, and a
mask written as a huge negative logit (``-1e30``, ``finfo.min``) is best expressed by removing the token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from mpmath import iv

from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import to_exact
from specproof.proofs.arith.fast import DVec
from specproof.harness.exact.reference import ExactVector

__all__ = ["SoftmaxReference", "exact_softmax", "MAX_LOGIT_SPREAD"]

MAX_LOGIT_SPREAD = Fraction(16494) * Fraction(math.log(2))  # binary128's smallest subnormal is 2^-16494


@dataclass(frozen=True)
class SoftmaxReference:
    """Exact law ``probs`` with ``|probs[i] - softmax(logits/T)[i]| <= rel_error_bound * softmax[i]``."""

    probs: ExactVector
    rel_error_bound: Fraction
    precision_bits: int
    temperature: Fraction

    def as_json(self) -> dict[str, Any]:
        return {
            "precision_bits": self.precision_bits,
            "temperature": f"{self.temperature.numerator}/{self.temperature.denominator}",
            "rel_error_bound": float(self.rel_error_bound),
            "rel_error_bound_exact": f"{self.rel_error_bound.numerator}/{self.rel_error_bound.denominator}",
        }


def _mpf_fraction(raw: tuple) -> Fraction:
    """An mpmath raw mpf ``(sign, man, exp, bc)`` as an exact Fraction."""
    sign, man, exp, _ = raw
    value = Fraction(int(man)) * (Fraction(2) ** int(exp))
    return -value if sign else value


def exact_softmax(logits: Any, temperature: Any = 1, *, precision_bits: int = 128,
                  argument: str = "logits") -> SoftmaxReference:
    """Certified ``softmax(logits / temperature)`` (see the module docstring for the bound).

    ``logits``: a 1-D list, numpy array or torch tensor of finite values; ``-inf`` is not accepted
    (mask by removing the token, or use a large negative logit).  ``temperature > 0``.  ``argument``
    names the input in error messages."""
    if not isinstance(precision_bits, int) or precision_bits < 64:
        raise SpecproofInputError("precision_bits", f"{precision_bits!r} is too small",
                                  "use at least 64 bits (default 128)")
    values = to_exact(logits, argument)
    if not isinstance(values, tuple) or not values or isinstance(values[0], tuple):
        raise SpecproofInputError(argument, "expected a non-empty 1-D vector", "pass one row of logits")
    t = to_exact(temperature, "temperature")
    if isinstance(t, tuple) or t <= 0:
        raise SpecproofInputError("temperature", f"{temperature!r} is not a positive number",
                                  "pass temperature > 0 (greedy decoding is a separate contract)")
    scaled = [v / t for v in values]
    top = max(scaled)
    spread = top - min(scaled)
    if spread > MAX_LOGIT_SPREAD:
        raise SpecproofInputError(
            argument, f"span {float(spread):.4g} (max - min) / temperature, beyond {float(MAX_LOGIT_SPREAD):.0f}: "
            "the smallest token's softmax is below 2^-16494, 0 in every float format",
            "drop masked tokens (huge negative logits) from the vector, or pass probabilities without --logits")
    saved = iv.prec
    iv.prec = precision_bits  # the interval context has no workprec(); restore it below
    try:
        exps = [iv.exp(iv.mpf(d.numerator) / d.denominator) for d in (s - top for s in scaled)]
        total = iv.fsum(exps)
        probs = [e / total for e in exps]
        rho = max(((p.b - p.a) / (2 * p.a) for p in probs), key=lambda r: r.b).b  # outward: an upper bound
    finally:
        iv.prec = saved
    lows = [_mpf_fraction(p.a._mpi_[0]) for p in probs]
    highs = [_mpf_fraction(p.b._mpi_[1]) for p in probs]
    mids = [(a + b) / 2 for a, b in zip(lows, highs)]
    den = max(m.denominator for m in mids)  # all dyadic: the largest power of two is a common one
    nums = np.array([m.numerator * (den // m.denominator) for m in mids], dtype=object)
    rho_exact = _mpf_fraction(rho._mpi_[1]) if hasattr(rho, "_mpi_") else Fraction(rho)
    bound = 2 * rho_exact / (1 - rho_exact)
    return SoftmaxReference(
        probs=ExactVector(DVec(nums, int(nums.sum()))),
        rel_error_bound=bound,
        precision_bits=precision_bits,
        temperature=t,
    )
