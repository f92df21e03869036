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
entries renormalised exactly.  A decision is refused (:class:`SpecproofInputError`) when its exact
quantity lies within the float margin ``(V + 3) u`` (relative; ``u`` the unit roundoff of the dtype
under test: the arithmetic bound of one softmax row and its partial sums, as in :mod:`.tolerances`)
of its threshold, or when two near-equal tokens straddle the top-p boundary (top-k: when rounding
``l / T`` could tie the k-th and next logits): there a correct float
implementation may decide either way, so scenarios keep away from boundaries.
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

__all__ = ["Sampling", "apply_sampling", "processed_law", "boundary_margin", "ORDER"]


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
    """``(V + 3) u``: how close to a threshold a float implementation may decide differently."""
    return (vocab + 3) * dtype_info(dtype).unit_roundoff


def _refuse(what: str) -> SpecproofInputError:
    return SpecproofInputError("sampling", f"{what}: a correct float implementation may decide either way",
                               "move the threshold away from the boundary (or use other logits)")


def processed_law(logits: Sequence[Any], sampling: Sampling, dtype: str = "float32") -> tuple[Fraction, ...]:
    """Exact law of the next token under ``sampling`` (module docstring); zeros are the masked tokens.
    Memoised on the exact logits (a model pair's reference and its margin check ask for the same rows)."""
    return _processed(to_exact(list(logits), "logits"), sampling, dtype)


@functools.lru_cache(maxsize=1 << 16)
def _processed(values: tuple[Fraction, ...], sampling: Sampling, dtype: str) -> tuple[Fraction, ...]:
    vocab = len(values)
    laws: dict[Fraction, tuple[list[Fraction], Fraction]] = {}  # temperature -> (softmax, its error bound)

    def law(t: Fraction) -> tuple[list[Fraction], Fraction]:
        if t not in laws:
            reference = exact_softmax(values, t)
            laws[t] = reference.probs.fractions(), boundary_margin(dtype, vocab) + reference.rel_error_bound
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
    refused when their gap after the temperature is within ``2 u max|l| / T`` (never at ``T = 1``)."""
    kept = sorted((v for v, on in zip(values, keep) if on), reverse=True)
    if k >= len(kept):
        return keep
    kth = kept[k - 1]
    below = [v for v in kept if v < kth]
    scale = max(abs(v) for v in values) / t
    if below and t != 1 and (kth - max(below)) / t <= 2 * dtype_info(dtype).unit_roundoff * scale:
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
                    and probs[i] - probs[nxt] <= margin * probs[i]:
                raise _refuse(f"top_p={top_p_value:g}: tokens {i} and {nxt} straddle the boundary "
                              "with nearly equal probabilities")
        before += share
    return [i in survivors for i in range(len(probs))]


def _min_p(probs: list[Fraction], margin: Fraction, keep: list[bool], min_p_value: float) -> list[bool]:
    top = max(p for p, k in zip(probs, keep) if k)
    min_p = to_exact(min_p_value)
    for i, (p, k) in enumerate(zip(probs, keep)):
        if k and p != top and abs(p / top - min_p) <= 2 * margin:
            raise _refuse(f"min_p={min_p_value:g}: token {i}'s ratio to the top is {float(p / top):.6g}")
    return [k and p >= min_p * top for p, k in zip(probs, keep)]
