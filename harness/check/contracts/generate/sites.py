"""Acceptance-site coverage of the generate contract: each position of the round meets a token of target probability 0.

A pipeline's round drafts ``K`` tokens and verifies them left to right; round position ``j`` (1-based) is an
acceptance site (:mod:`..coverage`).  A ``u <= p/q`` bug accepts a drafted token of target probability 0
there when the RNG edge injection writes a zero coin into position ``j``'s uniform.  The pipeline chooses
its own ``K`` and drafts, so the harness counts the *first* round (it starts at the prompt, whatever
the pipeline's bookkeeping): for a scenario with exact table laws, the probability that a row's first
round tries, at position ``j``, a token of target probability 0 and positive draft probability is

``a_j = sum over prefixes s (|s| = j - 1) of R(s) * Z(s)``, ``R(s) = prod_i min(p(s_i | s_<i), q(s_i | s_<i))``,

``p`` and ``q`` the processed target and draft laws (:func:`specproof.harness.exact.sampling.processed_law`,
exact), ``Z(s)`` the draft mass of the tokens ``p`` gives probability 0 after ``s``.  ``R`` is the
probability that the drafts ``s`` are drafted and accepted by the canonical ``u < p/q`` (a lower bound
for any verifier whose acceptances are at least the canonical ones: an injected zero coin only accepts
more).  A row of an injection pass exercises the site with probability ``f a_j`` (its own uniform
injected); the run misses it with probability ``prod_s (1 - f a_j,s)^R_s`` over the covering scenarios.

Assumptions, stated with the coverage: the first round only (later rounds meet the sites again: the figure
is a lower bound); the drafts drawn from ``q`` (multinomial: an injected uniform in an inverse-CDF draft
moves the statistical scenarios' drafts; the ladders put all their draft mass on target zeros, so theirs
holds for any draft draw); a round of at least ``j`` drafts (a pipeline with fewer never tries position
``j``, and has no such site).  Sites are the positions ``1..min(max N, MAX_DRAFT)`` of the suite; the
zero-site ladders (:func:`.scenarios.zero_site_ladder`, ``a_j = 1``) cover positions ``2..`` (position 1
too when no statistical injection scenario reaches it).  Only table models have laws the harness reads
without running the model: with ``--models transformers`` the sites are ``not tested``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts.coverage import Coverage, position_sites
from specproof.harness.check.contracts.generate.models import TablePair
from specproof.harness.check.contracts.generate.signature import MAX_DRAFT
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.sampling import processed_law

__all__ = ["site_reach", "site_name", "site_positions", "generate_coverage"]


def site_name(position: int) -> str:
    return f"round position {position}"


def site_positions(suite: Sequence[Any]) -> int:
    """The acceptance sites of a suite: positions ``1..min(max N, MAX_DRAFT)`` (a round cannot draft more)."""
    return min(max((s.new_tokens for s in suite), default=0), MAX_DRAFT)


def _draft_law(prepared: Any, prefix: tuple[int, ...]) -> tuple[Fraction, ...]:
    """The processed draft law after ``prefix``, exactly, from the built draft table (the values the pipeline reads)."""
    pair, table = prepared.scenario.pair, prepared.draft_model.table
    column = min(len(pair.prompt) - 1 + len(prefix), int(table.shape[0]) - 1)
    last = prefix[-1] if prefix else pair.prompt[-1]
    row = table[column, last % pair.classes].cpu()
    return processed_law(to_exact(row, "draft logits"), prepared.scenario.sampling, prepared.dtype)


def site_reach(prepared: Any) -> list[Fraction] | None:
    """``a_j`` for ``j = 1..N`` (module docstring) of one prepared scenario; None for a pair without tables
    (transformers models) or a draft row whose processing sits on a float boundary."""
    if not isinstance(prepared.scenario.pair, TablePair):
        return None
    law = prepared.law
    reach: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}
    out: list[Fraction] = []
    try:
        for _ in range(prepared.new_tokens):
            zero, following = Fraction(0), {}
            for prefix, mass in reach.items():
                p, q = law.next_law(prefix), _draft_law(prepared, prefix)
                for token, (p_x, q_x) in enumerate(zip(p, q)):
                    if q_x <= 0:
                        continue
                    if p_x == 0:
                        zero += mass * q_x
                    elif len(prefix) + 1 < prepared.new_tokens:
                        following[prefix + (token,)] = mass * min(p_x, q_x)
            out.append(zero)
            reach = following
    except SpecproofInputError:
        return None
    return out


def generate_coverage(suite: Sequence[Any], subjects: Sequence[Any], fraction: Fraction, injected: dict[str, int],
                      probe_rows: dict[str, int]) -> Coverage:
    """The coverage record of a generate check: the round positions of its suite (:func:`site_positions`), each
    covered by the injection's prepared ``subjects`` (``injected``: rows per injection pass per scenario name,
    absent when its passes did not run; ``probe_rows``: the statistics' rows per scenario name)."""
    reaches = {s.name: reach for s in subjects if (reach := site_reach(s)) is not None}
    tables = all(isinstance(s.pair, TablePair) for s in suite)
    sites, missing = position_sites(site_positions(suite), reaches, fraction, injected, probe_rows, site_name,
                                    *(() if tables else ("the site reach is computed for table models only, and "
                                                         "the zero-site ladders are table models",)))
    model = ("per row: the first round, its drafts before the site drafted from q and accepted with min(1, p/q) on "
             "the processed laws, a drafted token of target probability 0 at the site, its uniform injected to 0 "
             f"(f = {fraction}); a lower bound (later rounds meet the sites too) for a round of at least that many "
             "drafts; the zero-site ladders are injection-only and keep their own top-k 2 under the sampling "
             "flags; missed w.p. the product over the covering scenarios of (1 - a)^rows")
    return Coverage("generate", "", tuple(sites), tuple(missing), model)
