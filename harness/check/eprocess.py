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

Each side reads the mean ``E = (M_mix + M_design) / 2`` of two such processes (a mean of
supermartingales is one):

* mixture: the average over a fixed geometric grid of ``G`` bets ``l_1 < ... < l_G`` (ratio
  ``BET_RATIO``) of ``exp(l_j S_n - n psi(l_j))`` - a discrete mixture martingale (Howard et al. 2021,
  "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2), sec. 3).
  Its bets need no estimate, so the very first batch counts: ``log M_mix >= n KL(mean || mu)
  (1 - (sqrt(BET_RATIO) - 1)^2) - ln G`` whenever the optimal bet lies in the grid's range - a large
  deviation is flagged after few rows;
* design: one ``l`` fixed when the row quota ``n`` is planned, the bet at the fixed-sample Chernoff
  threshold for ``t = ln(2/a)``: at ``n`` rows it rejects exactly when ``n KL(mean || mu) >= t``, so
  the run keeps the fixed-sample power of :func:`.statistics.detectable_shift` at its quota.

The side rejects when ``E >= 1/a``.  The family-wise argument (a union over sides, events and
streams of Ville's bound) is in :mod:`.engine`.

Layer: harness.check (2); imports numpy and harness.check.statistics.
"""

from __future__ import annotations

import math

import numpy as np

from specproof.harness.check.statistics import bernoulli_kl

__all__ = ["SideEvidence", "bet_for_mean", "design_bets", "log_mgf", "design_detectable_shift", "LN2"]

LN2 = math.log(2.0)
MAX_BET = 60.0  # l beyond this changes nothing measurable (e^-60) and would overflow expm1
BET_RATIO = 1.5
BET_GRID = np.geomspace(1e-3, 40.0, int(np.ceil(np.log(40.0 / 1e-3) / np.log(BET_RATIO))) + 1)
LOG_GRID = math.log(len(BET_GRID))


def log_mgf(mu: np.ndarray, bet: np.ndarray) -> np.ndarray:
    """``psi(l) = log(1 - mu + mu e^l)``: the Bernoulli(mu) log-MGF, the bound for every [0,1] law of mean mu."""
    return np.log1p(mu * np.expm1(bet))


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
    tested exactly elsewhere)."""

    def __init__(self, mu: np.ndarray, log_threshold: np.ndarray, active: np.ndarray):
        self.mu = np.clip(np.asarray(mu, dtype=np.float64), 1e-300, 1.0)
        self.log_threshold = np.asarray(log_threshold, dtype=np.float64)
        self.active = np.asarray(active, dtype=bool) & (self.mu < 1.0)
        size = self.mu.shape[0]
        self.rows = 0
        self.total = np.zeros(size)
        self.log_design = np.zeros(size)
        self.design_bet = np.zeros(size)
        self.design_rows = 0  # rows seen since the design bet was fixed
        self.design_offset = np.zeros(size)  # log M_design when the bet was last fixed
        self.planned = 0
        self._cached: np.ndarray | None = None
        safe_mu = np.where(self.active, self.mu, 0.5)
        self._grid_mgf = log_mgf(safe_mu[:, None], BET_GRID[None, :])  # [events, G]: psi(l_j) per event

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

    def update(self, sums: np.ndarray, rows: int) -> None:
        """Fold in one batch: ``sums`` of ``Y`` per event over its ``rows`` rows."""
        if rows <= 0:
            return
        self.log_design += self.design_bet * sums - rows * log_mgf(self.mu, self.design_bet)
        self.total += sums
        self.rows += rows
        self.design_rows += rows
        self._cached = None

    @property
    def log_mixture(self) -> np.ndarray:
        """``log M_mix = log mean_j exp(l_j S_n - n psi(l_j))`` per event."""
        terms = BET_GRID[None, :] * self.total[:, None] - self.rows * self._grid_mgf
        top = terms.max(axis=1)
        return top + np.log(np.exp(terms - top[:, None]).sum(axis=1)) - LOG_GRID

    @property
    def log_evidence(self) -> np.ndarray:
        """``log E = log((M_mix + M_design) / 2)`` per event; ``-inf`` on inactive sides (cached per batch)."""
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
