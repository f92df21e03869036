"""Multi-draft verification: recursive rejection sampling and SpecTr K-SEQ, written against Arith.

Recursive rejection sampling (SpecInfer), ``k`` drafts: ``r_1 = p``; draft ``x_i`` from ``q_i``,
accept it w.p. ``min(1, r_i(x_i) / q_i(x_i))``; else ``r_{i+1} = norm(max(0, r_i - q_i))``; after ``k``
rejections sample ``r_{k+1}``.

* with replacement: ``q_i = q`` (i.i.d. drafts);
* without replacement (EAGLE style): ``q_{i+1} = norm(q_i with x_i zeroed)``; a draft law with no
  mass left drafts nothing (acceptance 0, the residual is ``r_i`` itself).

Each level is one canonical step whose residual draw is replaced by the next level, so exactness
follows by induction on the levels from T3 (which holds for *any* draft law at the next level).

SpecTr K-SEQ (Sun et al. 2023), ``k`` i.i.d. drafts and ``rho`` in ``[1, k]`` with
``1 - (1 - beta)^k = rho beta``, ``beta = sum_x min(q(x), p(x)/rho)``: drafts are tried in order, each
accepted w.p. ``min(1, p/(rho q))``; the first accepted is emitted; if none is,
``[p - min(q, p/rho) (1 - (1-beta)^k)/beta] / (1 - beta)^k`` is sampled.  ``(1 - (1-beta)^k)/beta`` is
written as the finite sum ``sum_{i<k} (1-beta)^i`` (no division by ``beta``).

Vectors must be tuples here (exact, sympy, z3 backends): zeroing one draft indexes into ``q``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from specproof.proofs.arith.interface import Arith
from specproof.proofs.laws.step_rules import canonical_acceptance, canonical_residual_weight

__all__ = ["recursive_rejection_law", "rrs_level", "spectr_law", "spectr_round", "spectr_compose",
           "spectr_instance"]


def _with_zero(ar: Arith, q: tuple[Any, ...], x: int) -> tuple[Any, ...]:
    mask = tuple(ar.zero if i == x else ar.one for i in range(len(q)))
    return ar.normalise(ar.mul(q, mask))


def rrs_level(ar: Arith, r: Any, q_i: Any, rest: Callable[[Any, Any], Any], *, replacement: bool) -> Any:
    """One level of recursive rejection sampling with target ``r`` and draft law ``q_i``;
    ``rest(r_next, q_next)`` is the output law of the levels after it (the induction hypothesis of
    the proof replaces it by ``r_next``).  Without replacement the loop over drafts needs tuples."""
    accept = canonical_acceptance(ar, r, q_i)
    accepted = ar.mul(q_i, accept)
    r_next = ar.normalise(canonical_residual_weight(ar, r, q_i))
    if replacement:
        rejection = ar.sub(ar.one, ar.total(accepted))
        return ar.add(accepted, ar.mul(rejection, rest(r_next, q_i)))
    out = ar.add(accepted, ar.mul(ar.sub(ar.one, ar.total(q_i)), r))  # no mass left: sample r_i
    for x in range(len(q_i)):
        rejected_x = ar.mul(q_i[x], ar.sub(ar.one, accept[x]))
        out = ar.add(out, ar.mul(rejected_x, rest(r_next, _with_zero(ar, q_i, x))))
    return out


def recursive_rejection_law(ar: Arith, p: Any, q: Any, k: int, *, replacement: bool = True) -> Any:
    """The output law of recursive rejection sampling with ``k`` drafts."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k: {k!r} is not a positive int - pass k >= 1 drafts")

    def level(r: Any, q_i: Any, i: int) -> Any:
        if i > k:
            return r
        return rrs_level(ar, r, q_i, lambda r_next, q_next: level(r_next, q_next, i + 1), replacement=replacement)

    return level(p, q, 1)


def spectr_round(ar: Arith, reach: Any, none: Any, miss: Any) -> tuple[Any, Any]:
    """One more draft: ``(reach + none, none * miss)``; from ``(0, 1)``, after ``j`` drafts
    ``reach = sum_{i<j} (1-beta)^i`` and ``none = (1-beta)^j`` (``miss = 1 - beta``)."""
    return ar.add(reach, none), ar.mul(none, miss)


def spectr_compose(ar: Arith, p: Any, accepted_each: Any, reach: Any, none: Any) -> tuple[Any, Any]:
    """``(output law, residual law)``: the first accepted draft has mass ``accepted_each * reach``; with
    probability ``none`` no draft is accepted and ``(p - accepted) / none`` is sampled."""
    accepted = ar.mul(accepted_each, reach)
    residual = ar.safe_div(ar.sub(p, accepted), none, ar.zero)
    return ar.add(accepted, ar.mul(none, residual)), residual


def spectr_law(ar: Arith, p: Any, q: Any, k: int, rho: Any) -> tuple[Any, Any]:
    """``(output law, residual law)`` of SpecTr K-SEQ for a given ``rho`` (exact only when ``rho``
    solves ``1 - (1-beta)^k = rho beta``; see :func:`spectr_instance` for rational instances)."""
    accepted_each = ar.minimum(q, ar.div(p, rho))  # q min(1, p / (rho q))
    beta = ar.total(accepted_each)
    miss = ar.sub(ar.one, beta)
    reach, none = ar.zero, ar.one
    for _ in range(k):
        reach, none = spectr_round(ar, reach, none, miss)
    return spectr_compose(ar, p, accepted_each, reach, none)


def spectr_instance(p: tuple[Fraction, ...], rho: Fraction, j: int) -> tuple[Fraction, ...] | None:
    """A draft law ``q`` for which a rational ``rho`` in ``(1, 2)`` solves the K-SEQ equation with
    ``k = 2``, i.e. ``beta(rho) = 2 - rho``: ``q_t = t e_j + (1 - t) p`` with ``t`` solved exactly
    (``beta`` is piecewise linear in ``t``).  None when ``p_j / rho > 2 - rho`` (no such ``t``)."""
    goal = 2 - rho

    def beta(t: Fraction) -> Fraction:
        q = [(1 - t) * x for x in p]
        q[j] += t
        return sum((min(a, b / rho) for a, b in zip(q, p)), Fraction(0))

    if beta(Fraction(1)) > goal or beta(Fraction(0)) < goal:
        return None
    # breakpoints where some (1-t) p_x (+t) crosses p_x / rho
    cuts = {Fraction(0), Fraction(1)}
    for x, px in enumerate(p):
        if x == j:
            if px != 1:
                cuts.add((px / rho - px) / (1 - px))
        elif px:
            cuts.add(1 - 1 / rho)
    cuts = sorted(c for c in cuts if 0 <= c <= 1)
    for lo, hi in zip(cuts, cuts[1:]):
        b_lo, b_hi = beta(lo), beta(hi)
        if min(b_lo, b_hi) <= goal <= max(b_lo, b_hi):
            t = lo if b_hi == b_lo else lo + (goal - b_lo) * (hi - lo) / (b_hi - b_lo)
            q = [(1 - t) * x for x in p]
            q[j] += t
            return tuple(q)
    return None
