"""Derived tolerances: how far a *correct* float implementation's law may sit from the exact law.

One table (:data:`~specproof.harness.exact.dtypes.DTYPES`) gives, per dtype, the unit roundoff ``u`` and
the uniform grid ``g = 2^-d`` of ``torch.rand`` (d = 8, 11, 24, 53).  For one verification step over
a vocabulary of ``V`` tokens, with the inputs already rounded to the dtype (the harness computes the
exact law of the rounded inputs, so input rounding is not drift):

* acceptance ``u_i < p/q`` on a grid of spacing ``g`` is off by at most ``g`` per drafted token, so
  the accepted mass moves by at most ``g`` in total variation;
* the correction/bonus draw quantises each token's probability to the grid (inverse CDF, ties of an
  exponential race): at most ``g`` per token, ``V g / 2`` in total variation;
* arithmetic (ratio, ``max(0, p - q)``, normalisation, a row sum off from 1 by the dtype bound) moves
  each probability by at most ``(V + 3) u`` relative, ``(V + 3) u`` in total variation.

``tau_step = g + V g / 2 + (V + 3) u``; an exactly counted grid (:mod:`.uniform_grids`) passes its own
discrepancy ``delta`` as ``g`` (``grid_step``), the one place the formula is written.  A round composes at most ``K + 1`` steps and total variation
is subadditive under composition, so ``tau_round = (K + 1) tau_step``, capped at 1 (vacuous: the
dtype cannot certify anything at that size, and reports say so).
"""

from __future__ import annotations

from fractions import Fraction

from specproof.harness.exact.dtypes import dtype_info

__all__ = ["step_tolerance", "round_tolerance", "check_tolerance", "draft_sampling_tolerance"]


def step_tolerance(dtype: str, vocab: int, *, grid_step: Fraction | None = None) -> Fraction:
    """``tau_step = g + V g / 2 + (V + 3) u`` (module docstring); ``g`` is the dtype's ideal grid step
    ``2^-d`` unless ``grid_step`` (a counted grid's discrepancy) is given."""
    info = dtype_info(dtype)
    grid = info.uniform_step if grid_step is None else Fraction(grid_step)
    return grid + vocab * grid / 2 + (vocab + 3) * info.unit_roundoff


def round_tolerance(dtype: str, vocab: int, k: int, *, grid_step: Fraction | None = None) -> Fraction:
    """``min(1, (K + 1) tau_step)``: total-variation tolerance of one K-draft round."""
    return min(Fraction(1), (k + 1) * step_tolerance(dtype, vocab, grid_step=grid_step))


def draft_sampling_tolerance(vocab: int, draws: int) -> Fraction:
    """``draws tau_64``: how far the harness's own draws of ``draws`` draft tokens may move a law.  Each
    is a float64 inverse-CDF draw within ``tau_64 = step_tolerance("float64", V)`` of its row in total
    variation; whatever the system computes from them is a randomised function of the draws, so a
    coupling of the draw sequences moves its law by at most the sum."""
    return draws * step_tolerance("float64", vocab)


def check_tolerance(dtype: str, vocab: int, k: int) -> Fraction:
    """``min(1, tau_round + K tau_64)``: the statistical check's null band, the verifier's own
    ``tau_round`` plus the drift of the harness's ``K`` draft draws (:func:`draft_sampling_tolerance`)."""
    return min(Fraction(1), round_tolerance(dtype, vocab, k) + draft_sampling_tolerance(vocab, k))
