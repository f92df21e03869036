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

``V`` counts the tokens some row of the scenario gives positive probability (its support; the full
vocabulary for a dense scenario): adding a zero is exact in floating point, so a sum over the row
rounds at most ``m - 1`` times for ``m`` positive terms whatever its order or tiling, and a token of
weight 0 has an empty interval in an inverse CDF and never wins a race, so it quantises nothing.  A
sparse row at a runtime's vocabulary (150,000 tokens, a few thousand of them positive) thus has the
band of its support, not of its width.

``tau_step = g + V g / 2 + (V + 3) u``; an exactly counted grid (:mod:`.uniform_grids`) passes its own
discrepancy ``delta`` as ``g`` (``grid_step``), the one place the formula is written.  A round composes at most ``K + 1`` steps and total variation
is subadditive under composition, so ``tau_round = (K + 1) tau_step``, capped at 1 (vacuous: the
dtype cannot certify anything at that size, and reports say so).

That is the *worst case*: every uniform drawn, and every sum, ratio and normalisation rounded, in the
inputs' dtype.  A verifier whose arithmetic was observed (:mod:`specproof.harness.check.intercept.precision`)
gets the same derivation with each role's own precision (:class:`Precision`, :func:`step_tolerance`
with ``precision=``):

* ``g`` is the coarsest uniform grid among the dtypes the verifier *drew* its uniforms and
  exponentials in (acceptance ``g``, correction/bonus draw ``V g / 2``, as above);
* ``u_a`` is the largest unit roundoff among the dtypes of the operations that *round* (every
  floating-point op except the exact ones: copies, views, indexing, comparisons, ``max``/``min``/``relu``,
  widening conversions); ratio, subtraction, the ``V``-term normalising sum and its division move each
  probability by at most ``(V + 2) u_a`` relative (the ``(V + 3) u`` above, less the row-sum term);
* the inputs, rounded to their dtype, are used as they are: a rounded row need not sum to 1, while the
  exact law renormalises it.  The canonical step on unnormalised rows ``p~`` (target) and ``q~`` (draft;
  the harness draws the drafted token from ``q~`` renormalised) accepts with ``min(1, p~/q~)`` and draws the
  correction from ``max(0, p~ - q~)`` normalised (``p~`` when that is empty); its law is computed exactly
  for every pair of rows of the scenario, and ``t_in`` is the largest total variation from the
  renormalised target (:func:`unnormalised_step_tv`; the bonus draw normalises itself and costs nothing).

``tau_step = g + V g / 2 + (V + 2) u_a + t_in``.  A verifier observed drawing and rounding in its
inputs' dtype gets exactly the worst case; one whose roles are all at least as fine gets the smaller of
the two (both are bounds then); one with a role *coarser* than its inputs (float32 inputs, float16
arithmetic) gets the derived band alone, since the worst case assumes everything in the inputs' dtype.

Every contract composes steps (:func:`composed_tolerance`, the one place the choice above is made):
``min(1, S tau_step + M tau_64)`` for ``S`` steps along a row (total variation is subadditive under
composition) and ``M`` float64 draws of the harness's own (:func:`draft_sampling_tolerance`).  The
batched round has ``S = K + 1``, ``M = K``; a tree ``S = N + 1`` (at most ``N`` sibling tests and
one final draw along a row), ``M = N``; a ``generate`` pipeline ``S = 2N`` (each new token an accepted
draft's draw and test, or a rejected one's and the final draw).  The inputs' term comes in one of
three forms, each derived, never tuned:

* per step, ``t_in`` as above (the batched contract: every step reads one rounded pair of rows);
* once for the whole composition, ``T_in`` (``rows_tv``): the exact total variation between the law
  of the whole round run in real arithmetic on the rounded rows as given and the exact law (the
  tree contract computes it for every exact tree rule: ``tree_law`` with ``given`` rows in
  ``proofs.laws.tree``); by the triangle inequality the band is then ``S tau_arith + T_in`` with
  ``tau_arith = g + V g / 2 + (V + 2) u_a`` (the step without ``t_in``);
* rows the verifier computes itself (a pipeline's softmax of the rounded logits, which the exact law
  reads too): no rounded row is given, and the computed row's sum is off from 1 by its own arithmetic,
  the ``u`` of the worst case's ``(V + 3) u`` at the observed ``u_a`` (:func:`computed_rows`): the
  step is ``g + V g / 2 + (V + 3) u_a``.  Only for arithmetic at least as fine as the logits' dtype
  (:func:`coarser_than` with the draws' role set aside: a coarser grid is counted by ``g`` itself):
  narrowing logits of size up to ``L`` moves a probability by a factor up to ``exp(2 L u_a)``, which no
  ``(V + 3) u_a`` bounds (logits of 20 in bfloat16: 17%), and the probe sees the dtypes of operations,
  not whether the target's logits or only a drafter's were narrowed, so a pipeline that rounds below
  its logits' dtype is held to its dtype's worst case.  The exact law's float margins follow the same
  observed arithmetic (:mod:`.sampling`: a margin only refuses a decision, never changes one).

Assumptions (printed with the verdict): the probe call's dtypes are those of every call (the
arithmetic does not change dtype with the data), the observed draws are torch's CPU/CUDA generators
with the grids of :data:`~specproof.harness.exact.dtypes.DTYPES`, and each contract's own (its
prepared scenarios' ``band_assumptions``: which rule the inputs' term is computed for).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Callable, Sequence

from specproof.harness.exact.dtypes import dtype_info

BAND_DERIVED, BAND_WORST, BAND_USER = "derived from observed precision", "worst case", "stated by the user"
DERIVED_ASSUMPTIONS = ("the probe call's dtypes hold for every call (no data-dependent change of dtype)",
                       "draws come from torch generators on their dtype's uniform grid")
# each contract's own assumption of the inputs' term (module docstring), printed after the two above
BATCHED_ROWS_ASSUMPTION = "the verifier follows the canonical step on the rounded rows as given (their sums counted exactly)"


@dataclass(frozen=True)
class Precision:
    """The observed precision of a verifier's roles (module docstring): ``uniforms`` the coarsest dtype it
    drew in, ``arithmetic`` the coarsest dtype an operation rounded in, ``inputs_tv`` (``t_in``) the exact
    per-step drift of using the rounded rows unnormalised (:func:`unnormalised_step_tv`)."""

    uniforms: str
    arithmetic: str
    inputs_tv: Fraction


__all__ = ["unnormalised_step_tv", "Precision", "BAND_DERIVED", "BAND_WORST", "BAND_USER", "DERIVED_ASSUMPTIONS",
           "BATCHED_ROWS_ASSUMPTION", "coarser_than", "step_tolerance", "round_tolerance", "check_tolerance",
           "composed_tolerance", "computed_rows", "draft_sampling_tolerance"]


def _roles(dtype: str, precision: Precision, grid: Fraction, grid_given: bool) -> tuple[Fraction, Fraction, str]:
    """``(g_obs, u_a, which)``: the observed grid and unit roundoff, and which band the roles allow
    (module docstring): ``"worst"`` (everything in the dtype), ``"smaller"`` (every role at least as
    fine: both are bounds), ``"derived"`` (a role coarser than the dtype: the derived band alone)."""
    info = dtype_info(dtype)
    drawn = max(dtype_info(precision.uniforms).uniform_step, grid if grid_given else 0)
    rounding = dtype_info(precision.arithmetic).unit_roundoff
    if drawn == grid and rounding == info.unit_roundoff:
        return drawn, rounding, "worst"  # observed: everything in the dtype, the worst case itself
    return drawn, rounding, "derived" if drawn > grid or rounding > info.unit_roundoff else "smaller"


def coarser_than(dtype: str, precision: Precision) -> bool:
    """Whether an observed role (draws or arithmetic) is coarser than ``dtype``: the worst case of the dtype
    is then no bound, and only the derived band is (module docstring)."""
    info = dtype_info(dtype)
    return _roles(dtype, precision, info.uniform_step, False)[2] == "derived"


def _arithmetic_step(vocab: int, drawn: Fraction, rounding: Fraction) -> Fraction:
    """``tau_arith = g + V g / 2 + (V + 2) u_a``: one step's drift without the inputs' term."""
    return drawn + vocab * drawn / 2 + (vocab + 2) * rounding


def step_tolerance(dtype: str, vocab: int, *, grid_step: Fraction | None = None,
                   precision: Precision | None = None) -> Fraction:
    """``tau_step = g + V g / 2 + (V + 3) u`` (module docstring); ``g`` is the dtype's ideal grid step
    ``2^-d`` unless ``grid_step`` (a counted grid's discrepancy) is given.  With ``precision`` (observed),
    the derived ``g_obs + V g_obs / 2 + (V + 2) u_a + t_in`` (module docstring: which one)."""
    info = dtype_info(dtype)
    grid = info.uniform_step if grid_step is None else Fraction(grid_step)
    worst = grid + vocab * grid / 2 + (vocab + 3) * info.unit_roundoff
    if precision is None:
        return worst
    drawn, rounding, which = _roles(dtype, precision, grid, grid_step is not None)
    if which == "worst":
        return worst
    derived = _arithmetic_step(vocab, drawn, rounding) + Fraction(precision.inputs_tv)
    # a role coarser than the dtype: the worst case (everything *in* the dtype) is no bound, the derived one is
    return derived if which == "derived" else min(worst, derived)


def computed_rows(precision: Precision) -> Precision:
    """``precision`` for a verifier that computes its rows itself (a pipeline's softmax; module docstring):
    the inputs' term is the row sum's own rounding, ``u_a``."""
    return replace(precision, inputs_tv=dtype_info(precision.arithmetic).unit_roundoff)


def composed_tolerance(dtype: str, vocab: int, steps: int, draws: int = 0, *, precision: Precision | None = None,
                       rows_tv: Callable[[], Fraction] | None = None) -> Fraction:
    """``min(1, S tau_step + M tau_64)``: the band of ``steps`` composed verification steps and ``draws``
    float64 draws of the harness's (module docstring).  With ``precision``: each step's derived drift
    (:func:`step_tolerance`); with ``rows_tv`` as well (computing ``T_in``, called only when the derived
    band is used: everything in the dtype is the worst case itself), the inputs' term counted once for
    the whole composition, ``S tau_arith + T_in`` (``precision.inputs_tv`` is then not used), under the
    same choice of band as one step."""
    harness = draft_sampling_tolerance(vocab, draws)
    if precision is None or rows_tv is None:
        return min(Fraction(1), steps * step_tolerance(dtype, vocab, precision=precision) + harness)
    worst = steps * step_tolerance(dtype, vocab)
    drawn, rounding, which = _roles(dtype, precision, dtype_info(dtype).uniform_step, False)
    if which == "worst":
        return min(Fraction(1), worst + harness)
    derived = steps * _arithmetic_step(vocab, drawn, rounding) + Fraction(rows_tv())
    own = derived if which == "derived" else min(worst, derived)
    return min(Fraction(1), own + harness)


def round_tolerance(dtype: str, vocab: int, k: int, *, grid_step: Fraction | None = None,
                    precision: Precision | None = None) -> Fraction:
    """``min(1, (K + 1) tau_step)``: total-variation tolerance of one K-draft round."""
    return min(Fraction(1), (k + 1) * step_tolerance(dtype, vocab, grid_step=grid_step, precision=precision))


def draft_sampling_tolerance(vocab: int, draws: int) -> Fraction:
    """``draws tau_64``: how far the harness's own draws of ``draws`` draft tokens may move a law.  Each
    is a float64 inverse-CDF draw within ``tau_64 = step_tolerance("float64", V)`` of its row in total
    variation; whatever the system computes from them is a randomised function of the draws, so a
    coupling of the draw sequences moves its law by at most the sum."""
    return draws * step_tolerance("float64", vocab)


def check_tolerance(dtype: str, vocab: int, k: int, precision: Precision | None = None) -> Fraction:
    """``min(1, tau_round + K tau_64)``: the statistical check's null band, the verifier's own
    ``tau_round`` plus the drift of the harness's ``K`` draft draws (:func:`draft_sampling_tolerance`)."""
    return composed_tolerance(dtype, vocab, k + 1, k, precision=precision)


def unnormalised_step_tv(target: Sequence[Fraction], draft: Sequence[Fraction]) -> Fraction:
    """Exact total variation between the canonical step run on the rows as given (``p~``, ``q~``, any
    positive sums) and the renormalised target ``p~ / sum p~`` (the exact law of a lossless step): drafted
    ``x ~ q~ / sum q~``, accepted with ``min(1, p~(x) / q~(x))``, else a token from ``max(0, p~ - q~)``
    normalised, or from ``p~`` normalised when that residual is empty.  0 when both rows sum to 1."""
    p, q = [Fraction(x) for x in target], [Fraction(x) for x in draft]
    sp, sq = sum(p), sum(q)
    accepted = [min(qx / sq, px / sq) if qx > 0 else Fraction(0) for px, qx in zip(p, q)]  # q(x) min(1, p~/q~)
    rejected = 1 - sum(accepted)
    residual = [max(Fraction(0), px - qx) for px, qx in zip(p, q)]
    mass = sum(residual)
    if mass == 0:
        residual, mass = p, sp
    law = [a + rejected * r / mass for a, r in zip(accepted, residual)]
    return sum((abs(x - px / sp) for x, px in zip(law, p)), Fraction(0)) / 2
