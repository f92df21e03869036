"""Sampling parameters and the harness's one definition of processing, in torch and exactly.

:class:`Sampling` is the frozen record a ``generate`` pipeline receives: ``temperature`` (> 0),
``top_k``, ``top_p``, ``min_p`` (each ``None`` when off).  Processing is, in this order:

1. temperature: ``l / T``;
2. top-k: keep every token whose logit is at least the ``k``-th largest (ties at the boundary are all
   kept, as transformers' ``TopKLogitsWarper`` does);
3. top-p: on ``softmax`` of what is left, sorted descending (ties: lower token id first), keep a token
   iff the mass of the tokens before it is ``< top_p``: the smallest prefix whose mass reaches
   ``top_p`` (the top token is always kept);
4. min-p: keep ``p(x) >= min_p * max_y p(y)`` (on what is left; renormalising does not change ratios);

masked entries become ``-inf``.  A runtime that processes in another order declares it in
``Sampling.order`` (a permutation of :data:`ORDER`; the reference follows it: a filter after the
temperature reads ``softmax(l / T)``, one before it ``softmax(l)``; top-k acts on the tokens still kept).
"Off" in runtimes' own spellings: ``top_k = 0`` (transformers'
default is ``top_k = 50``, so off must be spelled ``top_k=0``), ``top_p = 1.0``, ``min_p = 0`` or
``None``: :meth:`Sampling.from_runtime` maps them to ``None``.

:func:`apply_sampling` is the torch form (``impls.processors``: the same processors a pipeline uses).
:func:`processed_law` is the exact reference: certified softmax of ``logits / T``
(:mod:`.softmax`, relative error ~2^-120), the masks above decided on exact rationals, then the kept
entries renormalised exactly.  A decision is refused (:class:`SpecproofInputError`) where a correct
float implementation, processing in a dtype of unit roundoff ``u`` (the ``dtype`` argument: the
dtype the processing *rounds* in, which may be finer than the logits'), may decide either way, so
scenarios keep away from boundaries.  The float margin :func:`decision_margin` bounds how far such an
implementation's probabilities sit from the exact ones, relatively:

* the temperature: ``T`` (or ``1 / T``) and each quotient ``l / T`` round by a relative ``u``, so each
  logit moves by at most ``delta_T = 2 u / (1 - u) max|l| / T`` (:func:`temperature_shift`; 0 at
  ``T = 1``, where nothing is divided, and for a filter that reads ``softmax(l)`` before the
  temperature), each probability by a factor in ``exp(+-2 delta_T)``: relatively at most
  ``exp(2 delta_T) - 1 <= 4 delta_T`` for ``delta_T <= 1/2``;
* the softmax and its partial sums, computed on those logits: relatively ``(V + 3) u``
  (:func:`boundary_margin`, the arithmetic bound of one row as in :mod:`.tolerances`);

composed, ``rho = (1 + (V + 3) u)(1 + 4 delta_T) - 1`` (1, refusing every decision, past
``delta_T = 1/2``).  Top-p's mass before a token (a sum of shares each within ``rho`` relatively) is
within ``rho`` of the exact one; min-p's ratio ``p(x) / max p`` within ``2 rho / (1 - rho)`` (two
relative moves; ratios at most 1); two tokens straddling the top-p boundary swap places only when
``p_i - p_j <= rho (p_i + p_j)``; rounding ``l / T`` is monotone, so top-k's k-th and next logits can
only tie, and only when their gap after the temperature is within ``(1 + u) delta_T``.  Each is refused.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.dtypes import dtype_info
from specproof.harness.exact.softmax import exact_softmax
from specproof.impls.pipelines.processing import ORDER  # the processing order, defined once

__all__ = ["Sampling", "apply_sampling", "processed_law", "boundary_margin", "temperature_shift", "shifted_margin",
           "decision_margin", "ORDER"]


def _number(value: Any, argument: str, low: float, high: float, low_open: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecproofInputError(argument, f"{value!r} is not a finite number", "pass a number in the range")
    if value < low or value > high or (low_open and value == low):
        side = "(" if low_open else "["
        raise SpecproofInputError(argument, f"{value!r} is outside {side}{low:g}, {high:g}]",
                                  f"pass a value in {side}{low:g}, {high:g}] or leave it off")
    return float(value)


@dataclass(frozen=True)
class Sampling:
    """``temperature > 0``; ``top_k >= 1``, ``0 < top_p <= 1``, ``0 <= min_p <= 1`` or ``None`` (off)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    order: tuple[str, ...] = ORDER  # a runtime that processes in another order declares it here

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            raise SpecproofInputError("temperature", f"{t!r} is not a finite number > 0",
                                      "pass e.g. 1.0 or 0.7 (temperature 0 is greedy decoding, another contract)")
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, int)
                                       or self.top_k < 1):
            raise SpecproofInputError("top_k", f"{self.top_k!r} is not an integer >= 1",
                                      "pass e.g. 4, or None (0 in runtimes' spelling) for off")
        if self.top_p is not None:
            _number(self.top_p, "top_p", 0.0, 1.0, True)
        if self.min_p is not None:
            _number(self.min_p, "min_p", 0.0, 1.0, False)
        if not isinstance(self.order, tuple) or sorted(self.order) != sorted(ORDER):
            raise SpecproofInputError("order", f"{self.order!r} is not an ordering of {ORDER}",
                                      f"pass a tuple with each of {', '.join(ORDER)} once")

    @classmethod
    def from_runtime(cls, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
                     min_p: float | None = None, order: tuple[str, ...] = ORDER) -> "Sampling":
        """Runtimes' "off" spellings to ``None``: ``top_k = 0``, ``top_p = 1.0``, ``min_p = 0``."""
        return cls(temperature, None if top_k == 0 else top_k, None if top_p == 1.0 else top_p,
                   None if min_p == 0 else min_p, tuple(order))

    def describe(self) -> str:
        parts = [f"T={self.temperature:g}"]
        parts += [f"{name}={value:g}" for name, value in (("top_k", self.top_k), ("top_p", self.top_p),
                                                           ("min_p", self.min_p)) if value is not None]
        if self.order != ORDER:
            parts.append("order " + " > ".join(self.order))
        return ", ".join(parts)


def apply_sampling(logits: Any, sampling: Sampling) -> Any:
    """Processed logits ``[..., V]`` (torch, same dtype and device): the module docstring's order."""
    from specproof.impls.pipelines.processing import sampling_processors

    return sampling_processors(sampling).logits(logits)


def boundary_margin(dtype: str, vocab: int) -> Fraction:
    """``(V + 3) u``: the relative error of one softmax row and its partial sums computed in ``dtype``."""
    return (vocab + 3) * dtype_info(dtype).unit_roundoff


def temperature_shift(dtype: str, largest: Fraction, temperature: Fraction) -> Fraction:
    """``delta_T = 2 u / (1 - u) max|l| / T`` (module docstring): how far dividing logits of size at most
    ``largest`` by ``temperature`` in ``dtype`` (unit roundoff ``u``) moves each; 0 at ``T = 1``."""
    if temperature == 1:
        return Fraction(0)
    u = dtype_info(dtype).unit_roundoff
    return 2 * u / (1 - u) * Fraction(largest) / Fraction(temperature)


def shifted_margin(dtype: str, vocab: int, shift: Fraction) -> Fraction:
    """``rho = (1 + (V + 3) u)(1 + 4 s) - 1``: how far, relatively, a correct implementation's probabilities
    in ``dtype`` sit from the exact ones when each logit it reads is within ``s`` of the exact one (module
    docstring); 1 (every decision refused) when ``s > 1/2``, where ``4 s`` no longer bounds ``exp(2 s) - 1``."""
    if shift > Fraction(1, 2):
        return Fraction(1)
    return (1 + boundary_margin(dtype, vocab)) * (1 + 4 * Fraction(shift)) - 1


def decision_margin(dtype: str, vocab: int, largest: Fraction, temperature: Fraction) -> Fraction:
    """:func:`shifted_margin` of the temperature's move :func:`temperature_shift` (module docstring)."""
    return shifted_margin(dtype, vocab, temperature_shift(dtype, largest, temperature))


def _refuse(what: str) -> SpecproofInputError:
    return SpecproofInputError("sampling", f"{what}: a correct float implementation may decide either way",
                               "move the threshold away from the boundary (or use other logits)")


def processed_law(logits: Sequence[Any], sampling: Sampling, dtype: str = "float32") -> tuple[Fraction, ...]:
    """Exact law of the next token under ``sampling`` (module docstring); zeros are the masked tokens.
    ``dtype``: the dtype the implementation's processing rounds in (its margins'; the law itself does not
    depend on it: a margin only refuses a decision, never changes one).  Memoised on the exact logits (a
    model pair's reference and its margin check ask for the same rows)."""
    return _processed(to_exact(list(logits), "logits"), sampling, dtype)


@functools.lru_cache(maxsize=1 << 16)
def _processed(values: tuple[Fraction, ...], sampling: Sampling, dtype: str) -> tuple[Fraction, ...]:
    vocab, largest = len(values), max(abs(v) for v in values)
    laws: dict[Fraction, tuple[list[Fraction], Fraction]] = {}  # temperature -> (softmax, its error bound)

    def law(t: Fraction) -> tuple[list[Fraction], Fraction]:
        if t not in laws:
            reference = exact_softmax(values, t)
            laws[t] = reference.probs.fractions(), decision_margin(dtype, vocab, largest, t) + reference.rel_error_bound
        return laws[t]

    t, keep = Fraction(1), [True] * vocab
    for step in sampling.order:
        if step == "temperature":
            t = to_exact(sampling.temperature)
        elif step == "top_k" and sampling.top_k is not None:
            keep = _top_k(values, keep, sampling.top_k, t, dtype)
        elif step == "top_p" and sampling.top_p is not None:
            keep = _top_p(*law(t), keep, sampling.top_p)
        elif step == "min_p" and sampling.min_p is not None:
            keep = _min_p(*law(t), keep, sampling.min_p)
    probs = law(t)[0]
    total = sum((p for p, k in zip(probs, keep) if k), Fraction(0))
    return tuple(p / total if k else Fraction(0) for p, k in zip(probs, keep))


def _top_k(values: tuple[Fraction, ...], keep: list[bool], k: int, t: Fraction, dtype: str) -> list[bool]:
    """Rounding ``l / T`` is monotone, so it can only merge the k-th and next logits into a tie (kept):
    refused when their gap after the temperature is within ``(1 + u) delta_T`` (module docstring; never
    at ``T = 1``): with ``T`` rounded to ``T'``, the quotients differ by ``gap / T' >= gap / ((1 + u) T)``
    before their own rounding, which moves each by at most ``u max|l| / T' <= delta_T / 2``."""
    kept = sorted((v for v, on in zip(values, keep) if on), reverse=True)
    if k >= len(kept):
        return keep
    kth = kept[k - 1]
    below = [v for v in kept if v < kth]
    shift = temperature_shift(dtype, max(abs(v) for v in values), t)
    if below and t != 1 and (kth - max(below)) / t <= (1 + dtype_info(dtype).unit_roundoff) * shift:
        raise _refuse(f"top_k={k}: the k-th and next logits differ by less than the rounding of l/T")
    return [on and v >= kth for v, on in zip(values, keep)]


def _top_p(probs: list[Fraction], margin: Fraction, keep: list[bool], top_p_value: float) -> list[bool]:
    kept = sum((p for p, k in zip(probs, keep) if k), Fraction(0))
    order = sorted((i for i in range(len(probs)) if keep[i]), key=lambda i: (-probs[i], i))
    top_p, before, survivors = to_exact(top_p_value), Fraction(0), set()
    for rank, i in enumerate(order):
        share = probs[i] / kept
        if abs(before - top_p) <= margin and before != 0:
            raise _refuse(f"top_p={top_p_value:g}: the mass before token {i} is {float(before):.6g}")
        if before < top_p:
            survivors.add(i)
            nxt = order[rank + 1] if rank + 1 < len(order) else None
            if nxt is not None and before + share >= top_p and probs[nxt] != probs[i] \
                    and probs[i] - probs[nxt] <= margin * (probs[i] + probs[nxt]):
                raise _refuse(f"top_p={top_p_value:g}: tokens {i} and {nxt} straddle the boundary "
                              "with nearly equal probabilities")
        before += share
    return [i in survivors for i in range(len(probs))]


def _min_p(probs: list[Fraction], margin: Fraction, keep: list[bool], min_p_value: float) -> list[bool]:
    top = max(p for p, k in zip(probs, keep) if k)
    min_p = to_exact(min_p_value)
    for i, (p, k) in enumerate(zip(probs, keep)):
        if k and p != top and (margin >= 1 or abs(p / top - min_p) <= 2 * margin / (1 - margin)):
            raise _refuse(f"min_p={min_p_value:g}: token {i}'s ratio to the top is {float(p / top):.6g}")
    return [k and p >= min_p * top for p, k in zip(probs, keep)]
