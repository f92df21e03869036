"""Acceptance-site coverage of the batched contract: each draft position meets a token of target probability 0.

A batched round tries its drafts left to right; draft position ``j`` (1-based) is an acceptance site
(:mod:`..coverage`).  A ``u <= p/q`` bug accepts a drafted token of target probability 0 there when the
RNG edge injection writes a zero coin into position ``j``'s uniform.  The injection's scenarios
(:func:`specproof.harness.check.contracts.batched.zero_target_scenarios`) are fixed, so for each of them
and each position the probability that a row of an injection pass exercises the site is exact:

``a_j = f * sum over prefix classes c of R_j(c) * Z_j(c)``, where ``Z_j(c)`` is the draft mass of the
tokens the target row (position ``j``, class ``c``) gives probability 0 (``q~`` renormalised, as the
harness drafts), ``R_j(c)`` the probability that the row reaches position ``j`` with last-token class
``c`` when every earlier draft is accepted with ``min(1, p~/q~)`` on the rounded rows as given (a
lower bound for any verifier whose earlier acceptances are at least the canonical ones: an injected
zero coin only accepts more), and ``f`` the fraction of uniforms the pass injects.  A site is missed by
the run with probability at most ``prod_s (1 - a_j,s)^R_s`` over the injection scenarios ``s`` (``R_s``
rows per pass).  Positions beyond every injection scenario's ``K`` are ``not tested``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from specproof.harness.check.contracts.coverage import Coverage, position_sites
from specproof.harness.exact.convert import dyadic_array

__all__ = ["site_reach", "batched_coverage", "site_name"]


def site_name(position: int) -> str:
    return f"draft position {position}"


def _raw(row: Any) -> list[Fraction]:
    """A rounded row's values as given (not renormalised), exactly."""
    nums, exponent, _ = dyadic_array(row.double().cpu().numpy().reshape(-1), "row")
    scale = Fraction(2) ** exponent
    return [int(n) * scale for n in nums.tolist()]


def site_reach(real: Any) -> list[Fraction]:
    """``a_j / f`` for ``j = 1..K`` (module docstring) of one realised batched scenario."""
    classes = real.classes
    reach = {0: Fraction(1)}  # the prefix's last-token class -> probability (position 1: class 0)
    out = []
    for position in range(real.k):
        zero_mass, following = Fraction(0), {}
        for cls, mass in reach.items():
            if not mass:
                continue
            prefix = (0,) * (position - 1) + (cls,) if position else ()  # the rows depend on its last class only
            target, draft = _raw(real.rounded.row("target", prefix)), _raw(real.rounded.row("draft", prefix))
            total = sum(draft)
            for token, (p, q) in enumerate(zip(target, draft)):
                if q <= 0:
                    continue
                if p == 0:
                    zero_mass += mass * q / total
                else:
                    step = mass * (q / total) * min(Fraction(1), p / q)
                    following[token % classes] = following.get(token % classes, Fraction(0)) + step
        out.append(zero_mass)
        reach = following
    return out


def batched_coverage(suite: Sequence[Any], injection_reals: Sequence[Any], fraction: Fraction,
                     injected: dict[str, int], probe_rows: dict[str, int]) -> Coverage:
    """The coverage record of a batched check: the draft positions of its statistical scenarios, each covered by
    the injection scenarios (``injection_reals``, realised; ``injected``: rows per injection pass per scenario
    name, absent when its passes did not run; ``probe_rows``: the statistics' rows per scenario name)."""
    positions = max((s.k for s in suite), default=0)
    reaches = {r.scenario.name: site_reach(r) for r in injection_reals}
    sites, missing = position_sites(positions, reaches, fraction, injected, probe_rows, site_name)
    model = ("per row: the drafts before the site accepted with min(1, p/q) on the rounded rows, a drafted token "
             f"of target probability 0 at the site, its uniform injected to 0 (f = {fraction}); missed w.p. the "
             "product over the covering scenarios of (1 - a)^rows")
    return Coverage("batched", "", tuple(sites), tuple(missing), model)  # the verdict line needs no scope here
