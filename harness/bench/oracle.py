"""The oracle row count ``N*``: how few rows any test needs to tell a bad verifier from every lossless one.

**The null.**  On a scenario with exact pair ``(p, q)`` (target and draft conditionals, K drafts), a
verifier's observable is the emitted sequence ``s`` (length 1..K+1).  ``L`` is the set of laws ``Q``
over sequences with

(a) continuing ``Q`` with the target gives the target's law of ``K+1`` tokens
    (``sum_j Q(z_1..z_j) p(z_{j+1}..z_{K+1} | z_1..z_j) = p(z)`` for every ``z``);
(b) ``Q(s) = 0`` where the target gives ``s`` probability 0 (implied by (a) and ``Q >= 0``);
(c) ``P_Q(first j tokens = x and more follow) <= q(x)`` for ``j = 1..K``: every emitted token before
    the last is an accepted draft, and ``x`` is drafted with probability ``q(x)``.

Every lossless verifier's law lies in ``L`` (losslessness is (a); (c) holds for any verifier that
emits accepted drafts then one token), so ``L`` is a relaxation: ``min_{Q in L} KL`` is at most the
true oracle's, and ``N*`` here can only be *larger* than the true oracle's, never smaller.

**Parameterisation.**  ``E(x)``, the probability that the round continues past ``x``
(``1 <= |x| <= K``; ``E(()) = 1``, ``E = 0`` at length ``K+1``), determines ``Q`` through
``Q(x+c) = p(c|x) E(x) - E(x+c)``; (a) holds for every ``E``, and ``L`` is the polytope
``Q(x+c) >= 0, E(x) <= q(x)`` (``E >= 0`` follows: ``E(x)`` is the Q-mass below ``x``).

**The projection** ``Q* = argmin_{Q in L} KL(P || Q)`` (the reverse information projection) maximises
the concave ``sum P log Q`` over that polytope.  It is solved by the barrier method (Boyd &
Vandenberghe 2004, 11.3): ``phi_t = -sum_n (t P_n + 1) log Q_n - sum_x log(q(x) - E(x))`` is
self-concordant (every coefficient is at least 1), minimised by Newton steps that stay strictly
feasible (backtracking line search; damped steps inside the Dikin ellipsoid); the central point at
``t`` is within ``M / t`` of the optimum (``M`` constraints; centring stops at a Newton decrement
below ``1e-5``, adding less than ``1 / t``), so the KL is bracketed by ``[KL_t - gap, KL_t]`` with
``gap = (M + 1) / t <= 1e-9`` and the lower end is
reported (the conservative direction for ``N*``).  Optimality of ``Q*`` is the e-variable property
``E_P[Q / Q*] <= 1`` for every ``Q`` in ``L`` (Grunwald, de Heide, Koolen 2024): the likelihood ratio
``P / Q*`` is then an e-variable against every lossless law, so the sequential test that knows
``P_bad`` is valid against the whole composite null.

**Rows.**  The SPRT of ``P_bad`` against ``Q*`` stops after about ``N*_KL = ln(1/alpha) / KL(P~ || Q*)``
rows (``alpha = 1e-6``), ``P~`` being ``P_bad`` conditioned on outcomes some lossless verifier can
emit.  Where ``P_bad`` puts mass ``m`` on outcomes no law in ``L`` has (``Q* = 0`` there: a token of
target probability 0, a prefix that is never drafted, a raise), the first such outcome is certain
evidence, seen within ``N*_imp = ln(1/beta) / -ln(1 - m)`` rows with probability ``1 - beta``
(``beta = 0.01``).  A scenario's ``N*`` is the smaller of the two; a member's is the minimum over the
enumerable scenarios of the default suite, naming the scenario.  ``N*`` against ``P_good`` (the
canonical rule's law, a member of ``L``) is reported beside it (the same two formulas, ``m`` being
the mass where ``P_good = 0``): a test against the one law ``P_good`` alone is not valid against the
composite null, and needs at most as many rows, as many where ``P_good`` is the projection.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.members import APPROXIMATE, MEMBER_LAWS
from specproof.proofs.laws.sequences import MAX_SEQUENCES, ToyPair, round_law
from specproof.proofs.laws.step_rules import CANONICAL

from specproof.harness.bench.member_rows import member_law
from specproof.harness.check.contracts.batched.scenarios import Scenario

__all__ = ["ORACLE_ALPHA", "ORACLE_BETA", "LosslessPolytope", "Projection", "kl_divergence", "project",
           "kl_rows", "impossible_rows", "rows_against", "scenario_oracle", "oracle_table"]

ORACLE_ALPHA = 1e-6  # specproof's family-wise level
ORACLE_BETA = 0.01  # miss probability of the impossible-outcome test
GAP = 1e-9  # barrier duality gap at which the projection stops (nats; below it float64 roundoff in phi_t ~ t stalls Newton)

Seq = tuple[int, ...]


def kl_divergence(p: Mapping[Seq, float], q: Mapping[Seq, float]) -> float:
    """``KL(p || q) = sum p log(p / q)`` in nats (``inf`` where ``p > 0 = q``; rounding below 0 is 0)."""
    total = 0.0
    for key, pk in p.items():
        pk = float(pk)
        if pk <= 0:
            continue
        qk = float(q.get(key, 0.0))
        if qk <= 0:
            return math.inf
        total += pk * math.log(pk / qk)
    return max(total, 0.0)


def kl_rows(kl: float, alpha: float = ORACLE_ALPHA) -> float:
    """``ln(1/alpha) / KL`` rows, at least one (``inf`` at ``KL = 0``; one row at ``KL = inf``, where
    no outcome some lossless law has is left)."""
    return max(1.0, math.log(1 / alpha) / kl) if kl > 0 else math.inf


def impossible_rows(mass: float, beta: float = ORACLE_BETA) -> float:
    """Rows within which an outcome of per-row probability ``mass`` is seen w.p. ``1 - beta``:
    ``ln(1/beta) / -ln(1 - mass)`` (at least one row; ``inf`` at ``mass = 0``)."""
    if mass <= 0:
        return math.inf
    if mass >= 1:
        return 1.0
    return max(1.0, math.log(1 / beta) / -math.log1p(-mass))


class LosslessPolytope:
    """The set ``L`` of a pair (module docstring) as ``Q = A E + b``, ``E <= cap``."""

    def __init__(self, pair: ToyPair):
        self.pair = pair
        k, vocab = pair.k, pair.vocab
        variables: list[Seq] = []  # prefixes x (1 <= |x| <= K) with p(x) > 0 and q(x) > 0
        caps: list[float] = []
        reach = {(): (Fraction(1), Fraction(1))}  # prefix -> (target, draft) probability
        frontier = [()]
        for _ in range(k):
            nxt = []
            for x in frontier:
                pt, pd = reach[x]
                for c in range(vocab):
                    t, d = pt * pair.target[x][c], pd * pair.draft[x][c]
                    if t and d:
                        reach[x + (c,)] = (t, d)
                        variables.append(x + (c,))
                        caps.append(float(d))
                        nxt.append(x + (c,))
            frontier = nxt
        self.variables = variables
        self.index = {x: i for i, x in enumerate(variables)}
        nodes: list[Seq] = []
        rows: list[tuple[float, list[tuple[int, float]]]] = []
        for parent in [()] + variables:
            for c, pc in enumerate(pair.target[parent]):
                if not pc:
                    continue
                child = parent + (c,)
                terms = []
                const = 0.0
                if parent:
                    terms.append((self.index[parent], float(pc)))
                else:
                    const = float(pc)
                if child in self.index:
                    terms.append((self.index[child], -1.0))
                nodes.append(child)
                rows.append((const, terms))
        self.nodes = nodes
        self.node_index = {s: i for i, s in enumerate(nodes)}
        self.A = np.zeros((len(nodes), len(variables)))
        self.b = np.array([const for const, _ in rows])
        for i, (_, terms) in enumerate(rows):
            for j, coef in terms:
                self.A[i, j] += coef
        self.cap = np.array(caps)

    def possible(self, seq: Seq) -> bool:
        """Whether some law in ``L`` can give ``seq`` positive probability."""
        return seq in self.node_index

    def law(self, e: np.ndarray) -> dict[Seq, float]:
        q = self.A @ e + self.b
        return {s: float(v) for s, v in zip(self.nodes, q)}

    def start(self) -> np.ndarray:
        """A strictly feasible point: ``E(x+c) = min(p(c|x) E(x), q(x+c)) / 2`` top-down."""
        e = np.zeros(len(self.variables))
        for x in self.variables:
            parent = 1.0 if len(x) == 1 else e[self.index[x[:-1]]]
            e[self.index[x]] = 0.5 * min(float(self.pair.target[x[:-1]][x[-1]]) * parent, self.cap[self.index[x]])
        return e

    def point(self, law: Mapping[Seq, float]) -> np.ndarray:
        """``E`` of a law over sequences (the mass of its sequences strictly extending each prefix)."""
        e = np.zeros(len(self.variables))
        for s, mass in law.items():
            for j in range(1, len(s)):
                i = self.index.get(s[:j])
                if i is not None:
                    e[i] += float(mass)
        return e


@dataclass(frozen=True)
class Projection:
    """``Q*`` and its KL from ``P~`` (the conditioned bad law), bracketed by the barrier's gap."""

    law: dict[Seq, float]
    kl: float  # lower end of the bracket: KL_t - gap (never above the true minimum)
    kl_upper: float
    gap: float
    impossible_mass: float  # P_bad's mass on outcomes no law in L has
    conditioned: dict[Seq, float]  # P~

    def e_value(self, other: Mapping[Seq, float]) -> float:
        """``E_P~[Q / Q*]`` for a law ``Q`` (at most 1 + gap for every ``Q`` in ``L`` when optimal)."""
        return sum(p * float(other.get(s, 0.0)) / self.law[s] for s, p in self.conditioned.items())


def _barrier(poly: LosslessPolytope, coef: np.ndarray, e: np.ndarray) -> float:
    """``phi_t(e)`` (``coef = t P + 1``); ``inf`` outside the open polytope."""
    q, slack = poly.A @ e + poly.b, poly.cap - e
    if (q <= 0).any() or (slack <= 0).any():
        return math.inf
    return float(-(coef @ np.log(q)) - np.log(slack).sum())


def _newton(poly: LosslessPolytope, weights: np.ndarray, e: np.ndarray, t: float) -> np.ndarray:
    """Newton minimisation of ``phi_t`` (module docstring) from the strictly feasible ``e``: a
    backtracking line search (Armijo, staying inside) while the decrement ``lambda`` is at least 1/4,
    the damped step ``1 / (1 + lambda)`` where roundoff stalls it, full steps once ``lambda < 1/4``."""
    coef = t * weights + 1.0
    for _ in range(100):
        q = poly.A @ e + poly.b
        slack = poly.cap - e
        grad = -poly.A.T @ (coef / q) + 1.0 / slack
        hess = (poly.A.T * (coef / q**2)) @ poly.A + np.diag(1.0 / slack**2)
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(hess, grad, rcond=None)[0]
        decrement2 = max(float(-grad @ step), 0.0)
        if decrement2 < 1e-10:  # phi_t within 1e-10 of its minimum: f within 1e-10 / t
            break
        if decrement2 < 1 / 16:
            e = e + step
            continue
        here, size = _barrier(poly, coef, e), 1.0
        for _ in range(60):
            if _barrier(poly, coef, e + size * step) <= here - 0.25 * size * decrement2:
                break
            size *= 0.5
        else:
            size = 1.0 / (1.0 + math.sqrt(decrement2))  # damped step: inside the Dikin ellipsoid
        e = e + size * step
    return e


def project(p_bad: Mapping[Seq, Fraction | float], pair: ToyPair) -> Projection:
    """``Q* = argmin_{Q in L} KL(P~ || Q)`` on ``pair`` (module docstring); ``p_bad`` sums to 1."""
    poly = LosslessPolytope(pair)
    total = sum(float(v) for v in p_bad.values())
    if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-12):
        raise SpecproofInputError("p_bad", f"sums to {total!r}, not 1", "pass a law over emitted sequences")
    weights = np.zeros(len(poly.nodes))
    impossible = 0.0
    for s, mass in p_bad.items():
        i = poly.node_index.get(tuple(s))
        if i is None:
            impossible += float(mass)
        else:
            weights[i] += float(mass)
    possible_mass = weights.sum()
    if possible_mass <= 0:
        return Projection({}, math.inf, math.inf, 0.0, impossible, {})
    weights = weights / possible_mass
    conditioned = {s: float(w) for s, w in zip(poly.nodes, weights) if w > 0}
    constraints = len(poly.nodes) + len(poly.variables)
    e = poly.start()
    t = 1.0
    if len(poly.variables):
        while True:
            e = _newton(poly, weights, e, t)
            if constraints / t < GAP:
                break
            t *= 20.0
    law = poly.law(e)
    kl_t = kl_divergence(conditioned, law)
    gap = (constraints + 1) / t if len(poly.variables) else 0.0  # m/t, plus the centring residual (< 1e-10 / t)
    return Projection(law, max(0.0, kl_t - gap), kl_t, gap, impossible, conditioned)


def rows_against(p_bad: Mapping[Seq, Fraction | float], null: Mapping[Seq, float], *,
                 alpha: float = ORACLE_ALPHA, beta: float = ORACLE_BETA) -> float:
    """``N*`` of ``p_bad`` against one law ``null``: ``min(N*_imp, N*_KL)`` with ``m`` the mass where
    ``null`` is 0 and the KL taken from ``p_bad`` conditioned on ``null``'s support."""
    m = sum(float(v) for s, v in p_bad.items() if float(null.get(s, 0.0)) <= 0)
    rest = {s: float(v) / (1 - m) for s, v in p_bad.items() if float(null.get(s, 0.0)) > 0} if m < 1 else {}
    return min(impossible_rows(m, beta), kl_rows(kl_divergence(rest, null), alpha) if rest else math.inf)


def scenario_oracle(p_bad: Mapping[Seq, Fraction], pair: ToyPair, *, p_good: Mapping[Seq, Fraction] | None = None,
                    alpha: float = ORACLE_ALPHA, beta: float = ORACLE_BETA) -> dict[str, Any]:
    """``N*`` of one bad law on one pair, against ``Q*`` and against ``P_good`` (module docstring);
    ``tv``: the total variation ``(1/2) sum_s |P_bad(s) - P_good(s)|`` over emitted sequences."""
    projection = project(p_bad, pair)
    good = {s: float(v) for s, v in (p_good if p_good is not None else round_law(pair, CANONICAL)).items()}
    m = projection.impossible_mass
    n_imp, n_kl = impossible_rows(m, beta), kl_rows(projection.kl, alpha)
    kl_good = kl_divergence(projection.conditioned, good) if projection.conditioned else math.inf
    tv = 0.5 * sum(abs(float(p_bad.get(s, 0)) - good.get(s, 0.0)) for s in set(p_bad) | set(good))
    return {"n_star": min(n_imp, n_kl), "via": "impossible" if n_imp <= n_kl else "kl", "tv": tv,
            "kl": projection.kl, "kl_gap": projection.gap, "impossible_mass": m,
            "n_star_kl": n_kl, "n_star_impossible": n_imp,
            "n_star_vs_p_good": rows_against(p_bad, good, alpha=alpha, beta=beta),
            "p_good_is_projection": kl_good - projection.kl_upper <= projection.gap}


def oracle_table(names: Sequence[str], suite: Sequence[Scenario], *, dtype: str = "float32",
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``N*`` per member: the minimum over the suite's enumerable scenarios, naming the scenario.

    Returns ``{"members": {name: {n_star, scenario, via, n_star_vs_p_good, scenario_vs_p_good,
    in_goals, note, tv, tv_scenario (the largest TV from P_good and its scenario),
    scenarios: {scenario: scenario_oracle(...)}}}, "excluded_scenarios": {name: why},
    "unmodelled": {member: why}, "alpha", "beta", "seconds"}``."""
    say = progress or (lambda _msg: None)
    start = time.perf_counter()
    realised, excluded = [], {}
    for scenario in suite:
        real = scenario.realise(dtype)
        if real.enumerable:
            realised.append((scenario.name, real, round_law(real.toy_pair, CANONICAL)))
        else:
            excluded[scenario.name] = (f"V^(K+1) = {scenario.vocab}^{scenario.k + 1} sequences: beyond the "
                                       f"exact enumeration limit {MAX_SEQUENCES:,}")
    members: dict[str, Any] = {}
    unmodelled: dict[str, str] = {}
    for name in names:
        if name not in MEMBER_LAWS:
            unmodelled[name] = "no exact model of its rule in proofs.laws.members"
            continue
        say(f"oracle: {name}")
        per = {sname: scenario_oracle(member_law(name, real), real.toy_pair, p_good=good)
               for sname, real, good in realised}
        best = min(per, key=lambda k: per[k]["n_star"])
        best_good = min(per, key=lambda k: per[k]["n_star_vs_p_good"])
        widest = max(per, key=lambda k: per[k]["tv"])
        note = APPROXIMATE.get(name)
        members[name] = {"n_star": per[best]["n_star"], "scenario": best, "via": per[best]["via"],
                         "n_star_vs_p_good": per[best_good]["n_star_vs_p_good"],
                         "scenario_vs_p_good": best_good, "in_goals": note is None, "note": note,
                         "tv": per[widest]["tv"], "tv_scenario": widest,
                         "scenarios": per}
    return {"members": members, "excluded_scenarios": excluded, "unmodelled": unmodelled,
            "alpha": ORACLE_ALPHA, "beta": ORACLE_BETA, "seconds": time.perf_counter() - start}
