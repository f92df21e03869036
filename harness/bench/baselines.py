"""The two baselines the detection benchmark compares specproof against, written for it here.

Both feed a batched-contract verifier (``fn(draft_probs [B,K,V], target_probs [B,K+1,V],
draft_token_ids [B,K], generator) -> emitted [B,K+1]``) float32 rows built from laws that depend on
the position only, never on the prefix, and each is one test at a given row count ``N`` that says
"flag" or not.  :func:`rows_to_flag` then runs a test on a doubling schedule of ``N``.

``runtime_distribution_test`` (the serving runtimes' own test, notes/runtimes.md, re-implemented from
the description): one context-free pair ``p, q ~ Dirichlet(1)`` over ``V = 10`` used at every
position, ``K = 2`` drafts, and 100 random reference laws (``Dirichlet(1)``).  For each sample count
``n`` on a geometric schedule of five counts from 10 to ``N`` it runs ``n`` rows, pools every emitted
token into a histogram, and measures the L2 distance of the normalised histogram to ``p`` and its mean
L2 distance to the references.  For an exact verifier the distance to ``p`` falls like
``1 / sqrt(n)``, so from the first count to the last it shrinks by about ``sqrt(N / 10)`` while the
distance to the references stays put.  The runtimes require a 20-fold larger shrink than for the
references at ``N = 100,000``, a fifth of the ``sqrt(10^4) = 100`` expected there; the same fifth is
kept at every ``N``: flag when ``shrink(p) < sqrt(N / 10) / 5 * shrink(references)`` (20 at
``N = 100,000``, the runtimes' own setting).  Rows consumed: the sum of the five counts.

``chi_square_first_token``: target rows ``p_0..p_K`` and draft rows ``q_0..q_{K-1}`` drawn
independently from ``Dirichlet(alpha = 1)`` over ``V = 10`` (``K = 2``; position-dependent, which
lets a position mix-up show in the first token), ``N`` rows, Pearson's chi-square of the first
emitted token's counts against ``p_0`` (``V - 1`` degrees of freedom; the p-value is the regularised
upper incomplete gamma ``Q((V-1)/2, X^2/2)``); flag when the p-value is below ``alpha_test``
(default ``1e-6``, specproof's own family-wise level, so this single test is held to a looser
standard than specproof's Bonferroni over every event, scenario and look).  A count on a token of
probability 0 gives ``X^2 = inf``.  Its p-value is asymptotic: at a few dozen rows a single count on a
token of small ``p_0`` already gives ``X^2`` past the critical value, so its real false-alarm rate is
far above ``alpha_test``; :func:`chi_square_null_rate` measures it.

The float32 target is renormalised in float64 for the expectations, so rounding of the inputs is
not counted against a verifier (its size, about ``1e-7``, is far below either test's resolution).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from specproof.errors import SpecproofInputError
from specproof.harness.files.json_numbers import number_word
from specproof.harness.check.seeding import generator as seeded_generator, stream_seed

__all__ = ["BASELINE_VOCAB", "BASELINE_DRAFTS", "DIRICHLET_ALPHA", "REFERENCE_LAWS", "RUNTIME_MULTIPLIER",
           "Flag", "RowsToFlag", "runtime_distribution_test", "chi_square_first_token",
           "runtime_schedule", "rows_to_flag", "CountingVerifier", "BASELINES", "pearson_p_values",
           "chi_square_null_rate", "chi_square_schedule"]

BASELINE_VOCAB = 10
BASELINE_DRAFTS = 2
DIRICHLET_ALPHA = 1.0
REFERENCE_LAWS = 100
RUNTIME_MULTIPLIER = 20.0  # the runtimes' required factor at their top count
RUNTIME_TOP_COUNT = 100_000
RUNTIME_POINTS = 5
CALL_ROWS = 1 << 16  # rows per verifier call


@dataclass(frozen=True)
class Flag:
    """One test's outcome at one row count: flagged or not, rows consumed, the statistic behind it."""

    flagged: bool
    rows: int
    statistic: float
    threshold: float
    how: str = "statistical"
    scenario_rows: int | None = None  # rows within the scenario that flagged (specproof's suite only)
    test_rows: int | None = None  # specproof: rows of its anytime-valid streams (CheckResult.rows)

    def as_json(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "rows": self.rows, "statistic": number_word(self.statistic),
                "threshold": number_word(self.threshold), "how": self.how,
                "rows_in_flagging_scenario": self.scenario_rows, "test_rows": self.test_rows}


class CountingVerifier:
    """Wraps a verifier and counts the rows it was called with (also when it raises)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.rows = 0

    def __call__(self, draft_probs: Any, target_probs: Any, draft_token_ids: Any, generator: Any) -> Any:
        self.rows += int(draft_token_ids.shape[0])
        return self.fn(draft_probs, target_probs, draft_token_ids, generator)


def _float32_expectations(rows: np.ndarray) -> np.ndarray:
    """Each row rounded to float32 (what the verifier sees), renormalised in float64 (the expectation)."""
    exact = np.asarray(rows, dtype=np.float32).astype(np.float64)
    return exact / exact.sum(axis=-1, keepdims=True)


def _float32_law(row: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
    """The float32 row the verifier sees, and its float64 renormalisation (the expectation)."""
    return torch.tensor(row, dtype=torch.float32), _float32_expectations(row)


def chi_square_schedule(budget: int) -> list[int]:
    """The chi-square baseline's doubling sizes: 16, 32, ... up to ``budget`` rows."""
    return [1 << j for j in range(4, 64) if (1 << j) <= budget]


def _emitted(fn: Callable[..., Any], target: torch.Tensor, draft: torch.Tensor, n: int,
             generator: torch.Generator) -> torch.Tensor:
    """``[n, K+1]`` emitted ids from ``n`` rows of position-only laws (drafts ``x_i ~ draft[i]``)."""
    k, vocab = draft.shape
    out = []
    done = 0
    while done < n:
        m = min(CALL_ROWS, n - done)
        ids = torch.stack([torch.multinomial(draft[i].double(), m, replacement=True, generator=generator)
                           for i in range(k)], dim=1)
        draft_probs = draft.expand(m, k, vocab).contiguous()
        target_probs = target.expand(m, k + 1, vocab).contiguous()
        emitted = fn(draft_probs, target_probs, ids, generator)
        if not isinstance(emitted, torch.Tensor) or tuple(emitted.shape) != (m, k + 1):
            raise SpecproofInputError("verify", f"returned {type(emitted).__name__} of shape "
                                      f"{tuple(getattr(emitted, 'shape', ()))}, expected ({m}, {k + 1})",
                                      "return emitted [B, K+1] int64")
        out.append(emitted.detach().cpu().long())
        done += m
    return torch.cat(out)


def runtime_schedule(top: int) -> list[int]:
    """Five geometric sample counts from 10 to ``top`` (10, 100, ..., 100,000 at ``top = 100,000``)."""
    return sorted({int(round(x)) for x in np.geomspace(10, top, RUNTIME_POINTS)})


def runtime_distribution_test(fn: Callable[..., Any], top: int, seed: int) -> Flag:
    """The runtimes' histogram-shrink test with top count ``top`` (module docstring)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA))
    q = rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA))
    references = rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA), REFERENCE_LAWS)
    p32, p_law = _float32_law(p)
    q32, _ = _float32_law(q)
    target = p32.expand(BASELINE_DRAFTS + 1, BASELINE_VOCAB)
    draft = q32.expand(BASELINE_DRAFTS, BASELINE_VOCAB)
    counts = runtime_schedule(top)
    to_target, to_references = [], []
    for n in counts:
        generator = seeded_generator(stream_seed(seed, n))  # the one seed formula (check.seeding)
        emitted = _emitted(fn, target, draft, n, generator)
        tokens = emitted[emitted >= 0].numpy()
        histogram = np.bincount(tokens, minlength=BASELINE_VOCAB)[:BASELINE_VOCAB].astype(np.float64)
        estimate = histogram / max(histogram.sum(), 1.0)
        to_target.append(float(np.linalg.norm(estimate - p_law)))
        to_references.append(float(np.mean(np.linalg.norm(references - estimate, axis=1))))
    shrink_target = to_target[0] / to_target[-1] if to_target[-1] > 0 else math.inf
    shrink_references = to_references[0] / to_references[-1] if to_references[-1] > 0 else math.inf
    multiplier = RUNTIME_MULTIPLIER * math.sqrt(top / RUNTIME_TOP_COUNT)
    ratio = shrink_target / shrink_references if math.isfinite(shrink_references) else 0.0
    return Flag(ratio < multiplier, sum(counts), ratio, multiplier)


def chi_square_first_token(fn: Callable[..., Any], n: int, seed: int, *, alpha_test: float = 1e-6) -> Flag:
    """Pearson chi-square of the first emitted token against ``p_0`` on ``n`` rows (module docstring)."""
    rng = np.random.default_rng(seed)
    target_rows = rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA), BASELINE_DRAFTS + 1)
    draft_rows = rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA), BASELINE_DRAFTS)
    target = torch.stack([_float32_law(r)[0] for r in target_rows])
    draft = torch.stack([_float32_law(r)[0] for r in draft_rows])
    p0 = _float32_law(target_rows[0])[1]
    generator = seeded_generator(stream_seed(seed, n))  # the one seed formula (check.seeding)
    first = _emitted(fn, target, draft, n, generator)[:, 0].numpy()
    in_range = first[(first >= 0) & (first < BASELINE_VOCAB)]
    observed = np.bincount(in_range, minlength=BASELINE_VOCAB).astype(np.float64)
    if np.any((first < 0) | (first >= BASELINE_VOCAB)):
        statistic, p_value = math.inf, 0.0
    else:
        stats, values = pearson_p_values(observed[None, :], n * p0[None, :])
        statistic, p_value = float(stats[0]), float(values[0])
    return Flag(p_value < alpha_test, n, statistic, alpha_test, how=f"statistical (p-value {p_value:.3g})")


def pearson_p_values(observed: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson's ``X^2`` per row of ``observed`` counts against ``expected`` ones, and its asymptotic
    p-value ``Q((d-1)/2, X^2/2)`` over the ``d`` cells of positive expectation; a count where the
    expectation is 0 gives ``X^2 = inf``, p-value 0."""
    positive = expected > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(positive, (observed - expected) ** 2 / np.where(positive, expected, 1.0), 0.0)
    stats = np.where(np.any(~positive & (observed > 0), axis=1), np.inf, cells.sum(axis=1))
    dof = positive.sum(axis=1) - 1
    finite = np.isfinite(stats)
    values = np.zeros(stats.shape)
    if finite.any():
        values[finite] = torch.special.gammaincc(torch.tensor(dof[finite] / 2, dtype=torch.float64),
                                                 torch.tensor(stats[finite] / 2, dtype=torch.float64)).numpy()
    return stats, values


def chi_square_null_rate(trials: int, seed: int, budget: int, *, alpha_test: float = 1e-6) -> dict[str, Any]:
    """The chi-square baseline's real false-alarm rate: its own procedure (:func:`chi_square_first_token`
    on the doubling schedule up to ``budget`` rows, one fresh Dirichlet pair per trial) applied to
    first tokens drawn from ``p_0`` itself - the law every lossless verifier's first token follows.
    Returns the trials flagged at the first look and anywhere on the schedule (nominal: ``alpha_test``
    per look; the bench's time limit, which can cut a schedule short, is not applied, so the schedule's
    rate is an upper bound for a time-limited run); the asymptotic p-value makes them differ from it."""
    rng = np.random.default_rng(seed)
    p0 = _float32_expectations(rng.dirichlet(np.full(BASELINE_VOCAB, DIRICHLET_ALPHA), trials))
    sizes = chi_square_schedule(budget)
    flagged = np.zeros(trials, dtype=bool)
    first = 0
    for i, n in enumerate(sizes):
        counts = rng.multinomial(n, p0).astype(np.float64)
        hit = pearson_p_values(counts, n * p0)[1] < alpha_test
        if i == 0:
            first = int(hit.sum())
        flagged |= hit
    return {"trials": trials, "seed": seed, "looks": sizes, "alpha_test": alpha_test,
            "first_look_alarms": first, "schedule_alarms": int(flagged.sum()),
            "first_look_rate": first / trials, "schedule_rate": float(flagged.mean())}


@dataclass
class RowsToFlag:
    """A doubling schedule's outcome: the first flagging test (if any), and every step run."""

    flagged: Flag | None
    steps: list[Flag] = field(default_factory=list)
    stopped: str = "row budget"
    seconds: float = 0.0

    @property
    def rows(self) -> int | None:
        return self.flagged.rows if self.flagged else None

    def as_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "flag": self.flagged.as_json() if self.flagged else None,
                "steps": len(self.steps), "largest_rows_tried": max((s.rows for s in self.steps), default=0),
                "stopped": None if self.flagged else self.stopped, "seconds": self.seconds}


def rows_to_flag(test: Callable[[int], Flag], sizes: list[int], *, time_limit: float | None = None) -> RowsToFlag:
    """Run ``test(size)`` for growing ``sizes`` until it flags.

    ``time_limit``: the schedule stops before a test whose predicted duration would take it past
    the limit; the prediction scales the previous test's duration by the growth in size (tests are
    linear in their rows), so a slow verifier costs about ``time_limit`` seconds, not twice that.
    A verifier that raises (or breaks the output contract) on a test's valid input is flagged by
    that test (``how = "raised: ..."``) with the rows it had been called with."""
    start = time.perf_counter()
    result = RowsToFlag(None)
    previous: tuple[int, float] | None = None
    for size in sizes:
        elapsed = time.perf_counter() - start
        if time_limit is not None and previous is not None:
            predicted = previous[1] * size / previous[0]
            if elapsed + predicted > time_limit:
                result.stopped = f"time limit ({time_limit:g} s)"
                break
        t0 = time.perf_counter()
        flag = test(size)
        previous = (size, time.perf_counter() - t0)
        result.steps.append(flag)
        if flag.flagged:
            result.flagged = flag
            break
    result.seconds = time.perf_counter() - start
    return result


def _guard(run: Callable[[CountingVerifier], Flag], fn: Callable[..., Any]) -> Flag:
    counted = CountingVerifier(fn)
    try:
        return run(counted)
    except Exception as err:  # the verifier's own failure on a valid input: a finding of this test
        return Flag(True, counted.rows, math.inf, math.inf, how=f"raised: {type(err).__name__}: {err}"[:300])


def _runtime(fn: Callable[..., Any], seed: int, budget: int, time_limit: float | None) -> RowsToFlag:
    tops = []
    top = 160
    while sum(runtime_schedule(top)) <= budget:
        tops.append(top)
        top *= 2
    return rows_to_flag(lambda t: _guard(lambda f: runtime_distribution_test(f, t, seed), fn), tops,
                        time_limit=time_limit)


def _chi_square(fn: Callable[..., Any], seed: int, budget: int, time_limit: float | None) -> RowsToFlag:
    return rows_to_flag(lambda n: _guard(lambda f: chi_square_first_token(f, n, seed), fn),
                        chi_square_schedule(budget), time_limit=time_limit)


BASELINES: dict[str, tuple[str, Callable[[Callable[..., Any], int, int, float | None], RowsToFlag]]] = {
    "runtime-distribution-test": (
        "serving runtimes' test: context-free Dirichlet(1) p, q, V=10, K=2, pooled histogram of emitted "
        "tokens; L2 distance to p must shrink sqrt(N/10)/5 times (20x at N=100k) faster than to 100 "
        "random references over 5 geometric counts 10..N", _runtime),
    "chi-square-first-token": (
        "Pearson chi-square of the first emitted token vs p_0, position-dependent Dirichlet(alpha=1) "
        "pairs, V=10, K=2, p-value < 1e-6", _chi_square),
}
"""name -> (description, ``run(fn, seed, row_budget, time_limit) -> RowsToFlag``)."""
