"""The rows specproof's own tests need with a perfect allocation: the best single event, per member.

N* (:mod:`.oracle`) bounds every valid test.  Between N* and the rows a check spends lie two losses:
the *test* (specproof reads events, each at its own Bonferroni share of alpha, not the full law) and
the *allocation* (which scenario, and how many rows, it reads).  This module measures the first, so
the bench can split the two: for each enumerable scenario of the suite it takes the check's own event
families and thresholds (:func:`~specproof.harness.check.stats.engine.alpha_shares` over the whole suite),
the member's exact law ``P_bad`` (:mod:`specproof.proofs.laws.members`, :mod:`.member_rows`), and for every side of every event the law of
the row contribution ``Y`` under ``P_bad`` against the band edge ``mu`` (``P(A) + tau`` above, ``P(A) -
tau`` below, with ``1 - Y`` there); a side whose mean ``m = E_bad[Y]`` lies beyond ``mu`` needs about

    n_e = ln(1/a_e) / g_e,    g_e = max_j E_bad[log(1 + (t_j / mu)(Y - mu))]

rows: ``g_e`` is the growth per row of the best bet of the side's betting mixture
(:mod:`specproof.harness.check.stats.eprocess`), the e-process's best case; on an indicator it is
``KL(m || mu)`` up to the bet grid.  The minimum over sides
and scenarios is the *event-limited* row count: what a check that knew the scenario and the event
would need.  ``test rows / event-limited rows`` is then the allocation's loss, and ``event-limited
rows / N*`` the test's.  Zero-tolerance events and impossible outcomes are certain findings (no
threshold) and are not in this count: a member none of whose tested sides is shifted beyond its band
(caught, if at all, by certain findings or the RNG edge injection) has none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from specproof.proofs.laws.members import RAISED
from specproof.proofs.laws.sequences import SequenceLaw

from specproof.harness.bench.member_rows import member_law
from specproof.harness.check.stats.engine import alpha_shares, band_edges
from specproof.harness.check.stats.eprocess import betting_growth
from specproof.harness.check.contracts.batched.families import EventFamily, build_families
from specproof.harness.check.contracts.batched.scenarios import Scenario
from specproof.harness.exact.tolerances import check_tolerance

__all__ = ["event_limited_rows", "event_limit_table", "event_means", "key_weights", "best_side", "prepare_suite"]


@dataclass
class _Stream:
    """What :func:`alpha_shares` reads of a stream: its families and band."""

    families: list[EventFamily]
    tolerance: float


def prepare_suite(suite: Sequence[Scenario], dtype: str, alpha: float) -> list[tuple[Any, _Stream, list]]:
    """``(realisation, stream, thresholds)`` per scenario: the check's families, band and ``ln(1/a)``."""
    out = []
    streams = []
    for scenario in suite:
        real = scenario.realise(dtype, "cpu")
        stream = _Stream(build_families(real, None), float(check_tolerance(dtype, real.support, real.k)))
        streams.append(stream)
        out.append((real, stream))
    return [(real, stream, thr) for (real, stream), thr in zip(out, alpha_shares(streams, alpha))]


def key_weights(law: SequenceLaw, real: Any, families: Sequence[EventFamily]) -> list[np.ndarray]:
    """Probability of every row key of every family under an emitted-sequence law (a row emitting ``s``
    is keyed as the check keys it: ``s`` padded with -1)."""
    seqs = [s for s in law if s != RAISED]
    weights = np.array([float(law[s]) for s in seqs])
    emitted = torch.full((len(seqs), real.k + 1), -1, dtype=torch.long)
    for i, s in enumerate(seqs):
        emitted[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return [np.bincount(fam.key(emitted), weights=weights, minlength=fam.n_keys) for fam in families]


def event_means(law: SequenceLaw, real: Any, families: Sequence[EventFamily]) -> list[np.ndarray]:
    """``E[Y_e]`` of every event of every family under an emitted-sequence law."""
    return [np.clip(w @ fam.matrix, 0.0, 1.0) for w, fam in zip(key_weights(law, real, families), families)]


def best_side(real: Any, stream: _Stream, thresholds: list, weights: list[np.ndarray]) -> dict[str, Any] | None:
    """The side with the fewest rows ``ln(1/a) / g`` (module docstring) among those whose mean lies
    beyond their band edge, given the key probabilities ``weights`` (:func:`key_weights`); None when
    no side is beyond its edge."""
    best: dict[str, Any] | None = None
    for fam, (up, down), w in zip(stream.families, thresholds, weights):
        hi, lo = band_edges(fam, stream.tolerance)
        present = np.flatnonzero(w > 0)
        mean = np.clip(w @ fam.matrix, 0.0, 1.0)
        for e in np.flatnonzero(~fam.zero_tolerance):  # zero-tolerance events are certain findings
            for above, edge, log_thr in ((True, hi[e], up[e]), (False, lo[e], down[e])):
                beyond = mean[e] > edge if above else mean[e] < edge
                if not (beyond and math.isfinite(log_thr) and 0.0 < edge < 1.0):
                    continue
                y = fam.matrix[present, e]
                growth = betting_growth(y if above else 1.0 - y, w[present], edge if above else 1.0 - edge)
                if growth <= 0.0:
                    continue
                rows = float(log_thr) / growth
                if best is None or rows < best["rows"]:
                    best = {"rows": rows, "scenario": real.scenario.name, "family": fam.name,
                            "event": fam.names[e], "side": "above" if above else "below",
                            "expected": float(fam.expected[e]), "bad_mean": float(mean[e]),
                            "edge": float(edge), "log_threshold": float(log_thr), "growth": growth}
    return best


def event_limited_rows(name: str, prepared: list[tuple[Any, _Stream, list]]) -> dict[str, Any] | None:
    """The best side over the prepared scenarios for member ``name`` (module docstring), or None when
    no scenario has a law for it or no side is shifted beyond its band."""
    best: dict[str, Any] | None = None
    for real, stream, thresholds in prepared:
        law = member_law(name, real) if real.enumerable else None
        if law is None:
            continue
        side = best_side(real, stream, thresholds, key_weights(law, real, stream.families))
        if side is not None and (best is None or side["rows"] < best["rows"]):
            best = side
    return best


def event_limit_table(names: Sequence[str], suite: Sequence[Scenario], *, dtype: str,
                      alpha: float) -> dict[str, dict[str, Any] | None]:
    """:func:`event_limited_rows` for every member (the suite's families are built once)."""
    prepared = prepare_suite(suite, dtype, alpha)
    return {name: event_limited_rows(name, prepared) for name in names}
