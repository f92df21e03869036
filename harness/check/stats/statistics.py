"""Event tests with a guaranteed false-alarm rate, and the power they have.

Every statistical check in specproof reduces to events: an event ``A`` has an exactly known
probability ``P(A)`` under the reference law, and each of ``N`` independent verifier rows contributes
``Y_i in [0, 1]`` with ``E[Y_i] = P(A)`` (an indicator, or a conditional expectation that removes
continuation noise).  The null hypothesis allows a derived tolerance ``tau``: ``|E[Y] - P(A)| <= tau``.

Test.  With ``m = mean(Y)``, reject when ``m > P(A) + tau`` and ``N KL(m || P(A) + tau) >= c``, or
symmetrically below.  Chernoff-Hoeffding: for ``[0,1]``-valued i.i.d. variables with mean ``mu``,
``P(mean >= a) <= exp(-N KL(a || mu))`` for every ``a >= mu`` and every ``N`` (Hoeffding 1963, Thm 1),
so each side of each event has false-alarm probability at most ``exp(-c)``.  ``c = ln(2 E L / alpha)``
over ``E`` events and ``L`` sequential looks (Bonferroni) keeps the whole check at ``alpha``.  The
bound is non-asymptotic: no small-expected-count caveat, unlike a chi-square approximation.

Power.  Against an alternative with ``E[Y] = P(A) + tau + delta`` the test fires with probability at
least ``1 - beta`` when the rejection threshold ``a*`` satisfies ``exp(-N KL(a* || P(A)+tau+delta))
<= beta`` (Chernoff again, lower tail); :func:`detectable_shift` solves for the smallest ``delta``.

The engine's tests are the e-processes of :mod:`.eprocess`; this module holds what plans them: the
fixed-sample threshold :func:`rejection_threshold`, the power solvers :func:`detectable_shift` and
:func:`samples_for_shift` (a stream's quota and detectable TV), the rate a certainty probe sees, and
:func:`bernoulli_kl`, the scalar KL they bisect on.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "bernoulli_kl",
    "bernoulli_kl_array",
    "rejection_threshold",
    "detectable_shift",
    "samples_for_shift",
    "certain_rate_seen",
    "rows_to_see_rate",
]


def bernoulli_kl(a: float, b: float) -> float:
    """``KL(Bern(a) || Bern(b))`` in nats; ``inf`` where ``b`` cannot produce ``a``."""
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"a={a} is not a probability")
    if b <= 0.0:
        return 0.0 if a <= 0.0 else math.inf
    if b >= 1.0:
        return 0.0 if a >= 1.0 else math.inf
    out = 0.0
    if a > 0.0:
        out += a * math.log(a / b)
    if a < 1.0:
        out += (1.0 - a) * math.log((1.0 - a) / (1.0 - b))
    return max(out, 0.0)


def bernoulli_kl_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised ``KL(Bern(a) || Bern(b))`` (``inf`` where ``b`` cannot produce ``a``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * np.log(a / b), 0.0)
        t2 = np.where(a < 1, (1 - a) * np.log((1 - a) / (1 - b)), 0.0)
    out = t1 + t2
    out = np.where((b <= 0) & (a > 0), np.inf, out)
    out = np.where((b >= 1) & (a < 1), np.inf, out)
    return np.maximum(np.nan_to_num(out, nan=np.inf), 0.0)


def rejection_threshold(mu: float, n: int, c: float, upper: bool = True) -> float:
    """The mean beyond which ``N KL(mean || mu) >= c`` (above ``mu`` if ``upper``, else below).

    Returns ``1.0 + eps`` (never reached) above, or ``-eps`` below, when no mean in ``[0, 1]`` is
    extreme enough."""
    target = c / n
    lo, hi = (mu, 1.0) if upper else (0.0, mu)
    edge = 1.0 if upper else 0.0
    if bernoulli_kl(edge, mu) < target:
        return 1.0 + 1e-12 if upper else -1e-12
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        far_enough = bernoulli_kl(mid, mu) >= target
        if upper:
            lo, hi = (lo, mid) if far_enough else (mid, hi)
        else:
            lo, hi = (mid, hi) if far_enough else (lo, mid)
    return hi if upper else lo


def detectable_shift(p: float, n: int, c: float, tau: float = 0.0, beta: float = 0.01) -> float:
    """Smallest ``delta`` such that a shift of ``E[Y]`` to ``p + tau + delta`` (or the mirror image
    below, whichever is harder) is detected with probability at least ``1 - beta``."""
    worst = 0.0
    for upper in (True, False):
        base = min(1.0, p + tau) if upper else max(0.0, p - tau)
        threshold = rejection_threshold(base, n, c, upper)
        if not 0.0 <= threshold <= 1.0:
            worst = max(worst, 1.0)
            continue
        lo, hi = 0.0, (1.0 - base) if upper else base
        if hi <= 0.0:
            continue
        miss = math.log(1.0 / beta) / n
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            alt = base + mid if upper else base - mid
            beyond = alt > threshold if upper else alt < threshold
            if beyond and bernoulli_kl(threshold, alt) >= miss:
                hi = mid
            else:
                lo = mid
        worst = max(worst, hi)
    return worst


def samples_for_shift(delta: float, p: float, c: float, tau: float = 0.0, beta: float = 0.01,
                      limit: int = 10**9) -> int:
    """Smallest ``N`` (doubling then bisection) with ``detectable_shift(p, N, c, tau, beta) <= delta``."""
    if delta <= 0:
        raise ValueError("delta must be positive")
    n = 16
    while detectable_shift(p, n, c, tau, beta) > delta:
        n *= 2
        if n > limit:
            return limit
    lo, hi = n // 2, n
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if detectable_shift(p, mid, c, tau, beta) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def certain_rate_seen(rows: int, beta: float = 0.01) -> float:
    """The smallest per-row rate ``r`` of an impossible outcome (a certain finding at its first
    occurrence) that ``rows`` i.i.d. rows show with probability at least ``1 - beta``:
    ``(1 - r)^rows <= beta``, i.e. ``r = 1 - beta^(1/rows)`` (1 at 0 rows)."""
    return 1.0 if rows <= 0 else float(-math.expm1(math.log(beta) / rows))


def rows_to_see_rate(rate: float, beta: float = 0.01) -> int | float:
    """Rows that show an impossible outcome of per-row rate ``rate`` with probability ``1 - beta``:
    ``ceil(ln(beta) / ln(1 - rate))`` (the inverse of :func:`certain_rate_seen`; ``inf`` at rate 0)."""
    if rate <= 0:
        return math.inf
    if rate >= 1:
        return 1
    return max(1, math.ceil(math.log(beta) / math.log1p(-rate) - 1e-9))
