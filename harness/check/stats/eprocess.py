"""Anytime-valid event tests: e-processes that may be read after every batch (Ville's inequality).

Null of one event side.  Each row gives ``Y in [0, 1]`` (an indicator, or a Rao-Blackwellised
conditional probability) and rows are i.i.d.; the upper side's null is ``E[Y] <= mu`` (``mu`` the
upper edge ``P(A) + tau`` of the tolerance band), the lower side is the upper side of ``1 - Y``
against ``1 - (P(A) - tau)``.

Supermartingale.  On ``[0, 1]``, ``e^(l y) <= 1 - y + y e^l`` (convexity), so for ``l >= 0`` and any
null law ``E[exp(l Y - psi(l))] <= 1`` with ``psi(l) = log(1 - mu + mu e^l)``.  A product of such
factors whose ``l_b`` is fixed before batch ``b`` is read (*predictable*) is a nonnegative
supermartingale ``M`` with ``M_0 = 1`` (Howard, Ramdas, McAuliffe, Sekhon 2020, "Time-uniform Chernoff
bounds via nonnegative supermartingales", Probab. Surveys 17).  Ville's inequality:
``P(sup_n M_n >= 1/a) <= a`` - however often, and after whichever batch, ``M`` is read.

Each side reads the mean ``E = (M_bet + M_design) / 2`` of two such processes (a mean of
supermartingales is one):

* betting mixture: the average over a fixed grid of ``G`` bet fractions ``0 < t_1 < ... < t_G < 1``
  (geometric in ``t`` below 1/2 and in ``1 - t`` above it, ratio ``BET_RATIO``; ``l = t / mu``) of
  ``prod_i (1 + (t_j / mu) (Y_i - mu))`` (testing by betting: Waudby-Smith and Ramdas 2024,
  "Estimating means of bounded random variables by betting", JRSS B 86(1), sec. 4; a discrete
  mixture as in Howard et al. 2021, Ann. Statist. 49(2), sec. 3).  For
  ``0 <= l < 1/mu`` every factor is positive and ``E[1 + l (Y - mu)] = 1 + l (E[Y] - mu) <= 1`` under
  every null law, so each product is a nonnegative supermartingale.  On an indicator ``Y`` it is the
  Bernoulli likelihood ratio of the mean ``mu + t (1 - mu)`` (the exponential bet's family); on a
  Rao-Blackwellised ``Y`` (the conditional probability ``P(A | s)`` of a row whose emitted prefix
  ``s`` does not decide the event) it can only gain: ``log(1 + l (y - mu))`` is concave in ``y``, so a
  law on ``[0, 1]`` grows at least as fast as the indicator of the same mean, and a row whose ``Y``
  equals the edge multiplies by exactly 1, where ``exp(l Y - psi(l))`` is below 1 (Jensen).  Its
  bets need no estimate, so the very first batch counts: ``log M_bet >= sum_i log(1 + l_j (Y_i -
  mu)) - ln G`` for the best grid bet ``l_j``, whose expected growth per row ``g`` is, on indicators of
  mean ``m`` whose optimal fraction ``(m - mu) / (1 - mu)`` lies in ``[1.2e-3, 0.975]``, at least
  ``0.95 KL(m || mu)`` (a sweep in the tests);
* design: one exponential bet ``exp(l Y - psi(l))`` fixed when the row quota ``n`` is planned, at the
  fixed-sample Chernoff threshold for ``t = ln(2/a)``: at ``n`` rows it rejects exactly when
  ``n KL(mean || mu) >= t``, so the run keeps the fixed-sample power of
  :func:`.statistics.detectable_shift` at its quota.

The side rejects when ``E >= 1/a``.  The family-wise argument (a union over sides, events and
streams of Ville's bound) is in :mod:`.engine`.
"""

from __future__ import annotations

import math

import numpy as np

from specproof.harness.check.stats.statistics import bernoulli_kl

__all__ = ["confidence_radius", "CS_PRIOR", "DRIFT_LEVEL", "SideEvidence", "bet_for_mean", "design_bets", "log_mgf", "design_detectable_shift", "LN2",
           "BET_FRACTIONS", "betting_growth", "log_bet_factors"]

LN2 = math.log(2.0)
CS_PRIOR = 256.0  # rho of the normal mixture below: the radius is tightest near n = 4 rho rows
DRIFT_LEVEL = 0.01  # the drift figure's interval: 99%, simultaneous over every scenario and event


def confidence_radius(rows: int | np.ndarray, alpha: float) -> np.ndarray:
    """Anytime-valid radius of the mean of i.i.d. ``Y in [0, 1]``: with probability ``>= 1 - alpha``,
    ``|mean_n - E[Y]| < r(n)`` for *every* ``n`` at once (a confidence sequence).

    Proof.  ``Y - E[Y]`` is sub-Gaussian with variance proxy 1/4 (Hoeffding's lemma), so for every real
    ``l``, ``exp(l S_n - l^2 n / 8)`` is a nonnegative martingale (``S_n`` the centred sum).  Mixing ``l``
    over ``N(0, 1/rho)`` (``rho = CS_PRIOR``, fixed in advance; any ``rho > 0`` is valid) gives the
    nonnegative supermartingale ``M_n = sqrt(rho / (v + rho)) exp(S_n^2 / (2 (v + rho)))``, ``v = n / 4``,
    ``M_0 = 1`` (Robbins' normal mixture; Howard, Ramdas, McAuliffe, Sekhon 2021, Ann. Statist. 49(2),
    eq. (14)).  Ville: ``P(exists n: M_n >= 1/alpha) <= alpha``, and ``M_n < 1/alpha`` is
    ``|S_n| < sqrt((v + rho) (ln((v + rho) / rho) + 2 ln(1/alpha)))``; divide by ``n``.  QED."""
    n = np.maximum(np.asarray(rows, dtype=np.float64), 1.0)
    v = n / 4.0 + CS_PRIOR
    return np.sqrt(v * (np.log(v / CS_PRIOR) + 2.0 * math.log(1.0 / alpha))) / n
MAX_BET = 60.0  # l beyond this changes nothing measurable (e^-60) and would overflow expm1
BET_RATIO = 1.5
# bet fractions t = l mu of the largest admissible bet 1/mu; t = (m - mu) / (1 - mu) is the optimal
# fraction on indicators of mean m.  Geometric in t up to 1/2 and in 1 - t above it (ratio BET_RATIO
# both ways), so shifts from 1e-3 to almost certain events are each near a grid point
_LOW = np.geomspace(1e-3, 0.5, int(np.ceil(np.log(0.5 / 1e-3) / np.log(BET_RATIO))) + 1)
_HIGH = 1.0 - np.geomspace(0.5, 0.02, int(np.ceil(np.log(0.5 / 0.02) / np.log(BET_RATIO))) + 1)[1:]
BET_FRACTIONS = np.concatenate([_LOW, _HIGH])
LOG_GRID = math.log(len(BET_FRACTIONS))


def log_mgf(mu: np.ndarray, bet: np.ndarray) -> np.ndarray:
    """``psi(l) = log(1 - mu + mu e^l)``: the Bernoulli(mu) log-MGF, the bound for every [0,1] law of mean mu."""
    return np.log1p(mu * np.expm1(bet))


def log_bet_factors(y: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``log(1 + (t_j / mu)(y - mu))`` for every bet fraction ``t_j``: ``[len(y), G]`` (``mu`` per entry
    or one edge); at least ``log(1 - t_j) > -inf`` on ``y`` in [0, 1]."""
    y = np.asarray(y, dtype=np.float64)[:, None]
    mu = np.asarray(mu, dtype=np.float64)
    mu = mu[:, None] if mu.ndim else mu
    return np.log1p(BET_FRACTIONS[None, :] * (y - mu) / mu)


def betting_growth(values: np.ndarray, weights: np.ndarray, mu: float) -> float:
    """``max_j sum_i w_i log(1 + (t_j / mu)(y_i - mu))``: the best growth per row of the betting
    mixture's components when ``Y`` takes ``values`` with probabilities ``weights`` (0 when no bet grows)."""
    w = np.asarray(weights, dtype=np.float64)
    return max(0.0, float((w[:, None] * log_bet_factors(values, mu)).sum(axis=0).max()))


def bet_for_mean(mean: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """KL-optimal bet ``log(m (1 - mu) / (mu (1 - m)))`` for a mean ``m`` above ``mu``; 0 at or below it."""
    m = np.clip(mean, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bet = np.log(m * (1.0 - mu)) - np.log(mu * (1.0 - m))
    bet = np.where(m > mu, bet, 0.0)
    return np.clip(np.nan_to_num(bet, nan=0.0, posinf=MAX_BET), 0.0, MAX_BET)


def design_bets(mu: np.ndarray, rows: int, log_threshold: np.ndarray) -> np.ndarray:
    """Bets of the fixed-sample Chernoff test at ``rows`` with threshold ``log_threshold + ln 2``: the
    bet for the mean ``m*`` above ``mu`` with ``rows KL(m* || mu) = t + ln 2`` (vectorised bisection;
    where no mean in ``[0, 1)`` reaches it, the bet for the largest mean ``1 - 1/(2(n+1))``)."""
    mu = np.asarray(mu, dtype=np.float64)
    target = (np.asarray(log_threshold, dtype=np.float64) + LN2) / rows
    cap = 1.0 - 0.5 / (rows + 1)
    finite = np.isfinite(target) & (mu < cap)
    m = np.where(finite, mu, 0.5)
    lo, hi = m.copy(), np.full_like(m, cap)
    log_mu, log_not_mu = np.log(m), np.log1p(-m)
    for _ in range(48):  # the bracket shrinks to 2^-48 of [mu, 1): far below any row count's resolution
        mid = 0.5 * (lo + hi)
        kl = mid * (np.log(mid) - log_mu) + (1.0 - mid) * (np.log1p(-mid) - log_not_mu)
        far = kl >= target
        hi = np.where(far, mid, hi)
        lo = np.where(far, lo, mid)
    return np.where(finite, bet_for_mean(hi, m), 0.0)


def design_detectable_shift(mu: float, rows: int, bet: float, log_threshold: float, beta: float = 0.01) -> float:
    """Smallest ``delta`` with P(the design process alone rejects at ``rows``) >= 1 - beta when E[Y] = mu + delta.

    It rejects at ``n`` rows iff ``mean >= m* = (t + ln 2 + n psi(l)) / (n l)``; Chernoff's lower tail
    gives a miss probability ``<= exp(-n KL(m* || mu + delta))`` for ``mu + delta > m*``."""
    if rows <= 0 or bet <= 0.0:
        return 1.0 - mu
    edge = (log_threshold + LN2 + rows * float(log_mgf(np.array([mu]), np.array([bet]))[0])) / (rows * bet)
    if edge >= 1.0:
        return 1.0 - mu
    miss = math.log(1.0 / beta) / rows
    lo, hi = max(edge, mu), 1.0
    if bernoulli_kl(edge, 1.0) < miss:
        return 1.0 - mu
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bernoulli_kl(edge, mid) >= miss else (mid, hi)
    return hi - mu


class SideEvidence:
    """The two e-processes of one side of every event of a stream (vectorised over events).

    ``mu``: null edges (after mapping the lower side to ``1 - Y``); ``log_threshold``: ``ln(1/a)`` per
    event; ``active``: sides that can reject at all (``mu < 1``, and not a zero-tolerance event, which is
    tested exactly elsewhere); ``contributions``: ``Y[key, event]`` in [0, 1] of a row by its key (the
    family matrix, or ``1 -`` it on a lower side), which the betting mixture needs row by row; without
    it every ``Y`` is an indicator and a batch is known by its sums alone."""

    def __init__(self, mu: np.ndarray, log_threshold: np.ndarray, active: np.ndarray,
                 contributions: np.ndarray | None = None):
        self.mu = np.clip(np.asarray(mu, dtype=np.float64), 1e-300, 1.0)
        self.log_threshold = np.asarray(log_threshold, dtype=np.float64)
        self.active = np.asarray(active, dtype=bool) & (self.mu < 1.0)
        size = self.mu.shape[0]
        self.rows = 0
        self.log_design = np.zeros(size)
        self.design_bet = np.zeros(size)
        self.design_rows = 0  # rows seen since the design bet was fixed
        self.design_offset = np.zeros(size)  # log M_design when the bet was last fixed
        self.planned = 0
        self._cached: np.ndarray | None = None
        safe_mu = np.where(self.active, self.mu, 0.5)
        self._log_growth = np.zeros((size, len(BET_FRACTIONS)))  # log of each bet's product, per event
        self._log_zero = log_bet_factors(np.zeros(size), safe_mu)  # a row with Y = 0: log(1 - t)
        self._log_one = log_bet_factors(np.ones(size), safe_mu)
        self._ones: np.ndarray | None = None
        self._inner = None
        self._idle = not self.active.any()  # no event can reject on this side (a floor's upper, a ceiling's lower): only count rows
        if contributions is not None and not self._idle:
            y = np.asarray(contributions, dtype=np.float64)
            self._ones = (y >= 1.0).astype(np.float64)  # [keys, events]
            events, keys = np.nonzero(((y > 0.0) & (y < 1.0)).T)  # the fractional entries, grouped by event
            if keys.size:
                starts = np.flatnonzero(np.r_[True, events[1:] != events[:-1]])
                self._inner = (keys, events[starts], starts, log_bet_factors(y[keys, events], safe_mu[events]))

    def plan(self, rows: int) -> None:
        """Fix the design bet for a quota of ``rows`` further rows (only between batches: predictable)."""
        # the design process continues (a restart at 1 could jump up: no longer a supermartingale); a new
        # bet only changes its factors from here on, and what it reached so far shifts the threshold
        # the new segment must climb (known now, so the power statement stays exact)
        self.planned = int(rows)
        self.design_rows = 0
        self.design_offset = self.log_design.copy()
        self.design_bet = np.where(self.active, design_bets(self.mu, self.planned, self._segment_threshold()), 0.0)

    def _segment_threshold(self) -> np.ndarray:
        """``ln(1/a)`` less what the design process had reached when its bet was last fixed."""
        return np.maximum(self.log_threshold - self.design_offset, 0.0)

    def update(self, sums: np.ndarray, rows: int, counts: np.ndarray | None = None) -> None:
        """Fold in one batch: ``sums`` of ``Y`` per event over its ``rows`` rows; ``counts``: rows per key
        (needed when the side was built with ``contributions``)."""
        if rows <= 0:
            return
        if self._idle:
            self.rows += rows
            self.design_rows += rows
            return
        self.log_design += self.design_bet * sums - rows * log_mgf(self.mu, self.design_bet)
        if counts is None:  # indicators: sums rows have Y = 1, the rest Y = 0
            ones, inner = np.asarray(sums, dtype=np.float64), 0.0
        else:
            if self._ones is None:
                raise ValueError("counts per key need the contributions matrix: build the side with contributions=")
            c = np.asarray(counts, dtype=np.float64)
            if abs(float(c.sum()) - rows) > 0.5:
                raise ValueError(f"counts sum to {c.sum():g}, not to the batch's {rows} rows")
            ones = c @ self._ones
            inner = np.zeros_like(ones)  # rows with a fractional Y, per event
            if self._inner is not None:
                keys, events, starts, terms = self._inner
                present = c[keys]
                inner[events] = np.add.reduceat(present, starts)
                self._log_growth[events] += np.add.reduceat(terms * present[:, None], starts, axis=0)
        zeros = np.maximum(rows - ones - inner, 0.0)  # >= 0 up to float rounding
        self._log_growth += zeros[:, None] * self._log_zero + np.asarray(ones)[:, None] * self._log_one
        self.rows += rows
        self.design_rows += rows
        self._cached = None

    @property
    def log_mixture(self) -> np.ndarray:
        """``log M_bet = log mean_j prod_i (1 + (t_j / mu)(Y_i - mu))`` per event."""
        top = self._log_growth.max(axis=1)
        return top + np.log(np.exp(self._log_growth - top[:, None]).sum(axis=1)) - LOG_GRID

    @property
    def log_evidence(self) -> np.ndarray:
        """``log E = log((M_bet + M_design) / 2)`` per event; ``-inf`` on inactive sides (cached per batch)."""
        if self._cached is None:
            self._cached = np.where(self.active, np.logaddexp(self.log_mixture, self.log_design) - LN2, -np.inf)
        return self._cached

    @property
    def rejected(self) -> np.ndarray:
        return self.log_evidence >= self.log_threshold

    def detectable_shift(self, event: int, beta: float = 0.01) -> float:
        """Power of the design process of ``event`` at the rows seen since the design was fixed."""
        if not self.active[event]:
            return 0.0 if self.mu[event] >= 1.0 else 1.0
        return design_detectable_shift(float(self.mu[event]), self.design_rows, float(self.design_bet[event]),
                                       float(self._segment_threshold()[event]), beta)
