"""Coverage of a contract's acceptance sites: where a probability-0 token meets the acceptance test.

An *acceptance site* is a place where a verifier decides to accept a drafted token (batched: a draft
position; tree: a sibling index at a depth, in a sibling mode; generate: a position of the round).  A
rare-draw bug such as ``u <= p/q`` instead of ``u < p/q`` accepts a token of target probability 0 only
when a zero coin meets a site whose tried token has target probability 0 and positive draft
probability.  A contract whose suite gives every site such a prefix *by construction* turns that bug
into a certain FAIL on every seed: the RNG edge injection writes the zero coin into a known fraction
``f`` of the uniforms, so a pass of ``R`` rows in which each row reaches the site with probability at
least ``a`` misses it with probability at most ``(1 - a)^R`` (:func:`miss_probability`).

:class:`SiteCoverage` is one site's line; :class:`Coverage` the record a check carries
(:attr:`.result.CheckResult.coverage`), printed under the verdict and written to the JSON.  A site no
scenario of the run reaches is listed as ``not tested``: a stated scope limit, never a silent PASS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

__all__ = ["SiteCoverage", "Coverage", "miss_probability", "rows_for_aim", "injected_rows", "position_sites",
           "COVERAGE_AIM"]

COVERAGE_AIM = 1e-6  # the miss probability per run aimed at on every site (:func:`rows_for_aim`)


def miss_probability(per_row: Fraction | float, rows: int) -> float:
    """``(1 - a)^R``: a pass of ``rows`` independent rows, each exercising the site with probability
    ``a``, never exercises it (upper bound on a missed zero-coin finding there)."""
    a = float(per_row)
    if rows <= 0 or a <= 0:
        return 1.0
    if a >= 1:
        return 0.0
    return math.exp(rows * math.log1p(-a))


def rows_for_aim(per_row: Sequence[Fraction | float], aim: float = COVERAGE_AIM) -> int:
    """The fewest rows per injection pass with :func:`miss_probability` at most ``aim`` on every site whose
    rate per row is in ``per_row`` (zeros skipped): ``ceil(ln aim / ln(1 - min a))``; 0 without a site."""
    rates = [float(a) for a in per_row if a > 0]
    if not rates:
        return 0
    lowest = min(rates)
    if lowest >= 1:
        return 1
    rows = math.ceil(math.log(aim) / math.log1p(-lowest))
    return rows if miss_probability(lowest, rows) <= aim else rows + 1  # the float logs' last bit


def injected_rows(injection: Any) -> tuple[Fraction, dict[str, int]]:
    """``(f, rows per pass per scenario name)`` of a run's :class:`..intercept.injection.InjectionResult` (None: not
    run, no rows); a scenario whose passes were skipped by the deadline has no rows."""
    if injection is None:
        from specproof.harness.check.intercept.injection import DEFAULT_FRACTION

        return DEFAULT_FRACTION, {}
    skipped = {entry.split(":")[0] for entry in injection.not_run}
    return injection.fraction, {name: injection.rows for name in injection.scenarios if name not in skipped}


@dataclass(frozen=True)
class SiteCoverage:
    """One acceptance site: ``scenarios`` give it a tried token of target probability 0 and positive
    draft probability; ``per_row`` is the probability that a row of an injection pass reaches it with
    an injected zero coin (its own coin injected, the earlier tried ones not); ``rows`` the rows per
    injection pass and the probe rows of the statistics; ``miss`` the probability that the injection
    misses it on this run (:func:`miss_probability`, 1 when the injection did not run)."""

    site: str
    scenarios: tuple[str, ...]
    per_row: Fraction
    injection_rows: int
    probe_rows: int
    miss: float

    def line(self) -> str:
        return (f"{self.site}: {', '.join(self.scenarios)}; {self.injection_rows} injected rows "
                f"(zero coin there w.p. {float(self.per_row):.3g} per row: missed w.p. {self.miss:.2g}), "
                f"{self.probe_rows} probe rows")

    def as_json(self) -> dict[str, Any]:
        return {"site": self.site, "scenarios": list(self.scenarios), "per_row": float(self.per_row),
                "injection_rows": self.injection_rows, "probe_rows": self.probe_rows, "miss": self.miss}


@dataclass(frozen=True)
class Coverage:
    """The acceptance sites of one check (module docstring).  ``scope``: what the run judged, in words
    (tree: the sibling modes), shown on the verdict line; ``model``: how ``per_row`` is counted."""

    contract: str
    scope: str
    sites: tuple[SiteCoverage, ...]
    not_tested: tuple[str, ...] = field(default=())
    model: str = ""

    @property
    def worst_miss(self) -> float:
        return max((s.miss for s in self.sites), default=1.0)

    def lines(self) -> list[str]:
        head = (f"Acceptance-site coverage ({self.scope or self.contract}): {len(self.sites)} sites meet a token of target "
                f"probability 0 with positive draft probability; a zero-coin acceptance is missed w.p. <= "
                f"{self.worst_miss:.2g} per run")
        if self.sites and not any(s.injection_rows for s in self.sites):
            head += (" (the RNG edge injection did not run: the zero coin was NOT tested; the probe rows meet it "
                     "only at the real generator's rate)")
        out = [head] + [f"  {s.line()}" for s in self.sites]
        out += [f"  not tested: {what}" for what in self.not_tested]
        if self.model:
            out.append(f"  ({self.model})")
        return out

    def as_json(self) -> dict[str, Any]:
        return {"contract": self.contract, "scope": self.scope, "worst_miss": self.worst_miss,
                "sites": [s.as_json() for s in self.sites], "not_tested": list(self.not_tested),
                "model": self.model}


def position_sites(positions: int, reaches: Mapping[str, Sequence[Fraction]], fraction: Fraction,
                   injected: Mapping[str, int], probe_rows: Mapping[str, int],
                   name: Callable[[int], str], unreached: str = "no injection scenario tries a token of target "
                   "probability 0 there") -> tuple[list[SiteCoverage], list[str]]:
    """Sites ``1..positions`` of a contract whose injection scenarios each reach position ``j`` with a tried
    token of target probability 0 w.p. ``reaches[scenario][j - 1]`` per row (before the injection's ``f``):
    per site the covering scenarios, ``per_row = f max a``, and the miss ``prod_s (1 - f a_s)^R_s`` over
    them (``R_s``: ``injected`` rows per pass, 0 when its passes did not run).  Returns the sites and the
    ``not tested`` lines (``unreached``: why) of positions no scenario reaches."""
    sites, missing = [], []
    for position in range(1, positions + 1):
        covering = [(scenario, reach[position - 1]) for scenario, reach in reaches.items()
                    if len(reach) >= position and reach[position - 1] > 0]
        if not covering:
            missing.append(f"{name(position)}: {unreached}")
            continue
        rows = sum(injected.get(scenario, 0) for scenario, _ in covering)
        log_miss = sum(injected.get(scenario, 0) * math.log1p(-float(fraction * a)) for scenario, a in covering)
        sites.append(SiteCoverage(name(position), tuple(scenario for scenario, _ in covering),
                                  max(fraction * a for _, a in covering), rows,
                                  sum(probe_rows.get(scenario, 0) for scenario, _ in covering),
                                  math.exp(log_miss) if rows else 1.0))
    return sites, missing
