"""Test helpers: sample verifier inputs from exact toy tables and test emitted laws.

Sampling only: the exact laws come from ``specproof.harness`` (``round_law``, ``target_law``).

Conformance test. ``N`` rounds give a histogram over emitted sequences; the exact law gives the
expected counts. Any sequence outside the exact support is a certain violation (false-alarm rate 0).
Otherwise a Pearson chi-square test on the sequences, with categories of expected count < 5 pooled,
rejects at level ``alpha`` (asymptotic chi-square null). Power: against a law at total variation
``eps`` on those categories the statistic is asymptotically noncentral chi-square with
``lambda = N chi2(alt || exact) >= 4 N eps^2``; ``detectable_tv`` is the smallest ``eps`` detected with
probability ``power`` under that bound.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import torch
from scipy import optimize, stats

SequenceLaw = dict[tuple[int, ...], Fraction]


def table_tensors(pair, dtype=torch.float64):
    """``(draft_tables, target_tables)``: row ``code(prefix)`` of table ``L`` is the law after prefix
    of length ``L`` (base-V code, first token most significant)."""
    vocab = pair.vocab

    def table(mapping, length):
        rows = [mapping[prefix] for prefix in itertools.product(range(vocab), repeat=length)]
        return torch.tensor([[float(x) for x in row] for row in rows], dtype=torch.float64).to(dtype)

    drafts = [table(pair.draft, length) for length in range(pair.k)]
    targets = [table(pair.target, length) for length in range(pair.k + 1)]
    return drafts, targets


def sample_round_inputs(pair, rounds: int, dtype: torch.dtype, generator: torch.Generator):
    """Draft ``K`` tokens autoregressively from the exact draft tables (float64 sampling), and gather
    the laws each verifier input needs: ``draft_probs [N,K,V]``, ``target_probs [N,K+1,V]``, ids."""
    drafts, targets = table_tensors(pair)
    code = torch.zeros(rounds, dtype=torch.int64)
    draft_rows, target_rows, ids = [], [], []
    for position in range(pair.k):
        q = drafts[position][code]
        draft_rows.append(q)
        target_rows.append(targets[position][code])
        x = torch.multinomial(q, 1, generator=generator).squeeze(-1)
        ids.append(x)
        code = code * pair.vocab + x
    target_rows.append(targets[pair.k][code])
    return (torch.stack(draft_rows, 1).to(dtype), torch.stack(target_rows, 1).to(dtype),
            torch.stack(ids, 1))


def emitted_counts(emitted: torch.Tensor) -> Counter:
    """Histogram of emitted sequences (``-1`` padding stripped) of a ``[N, K+1]`` output."""
    rows, counts = torch.unique(emitted, dim=0, return_counts=True)
    out: Counter = Counter()
    for row, count in zip(rows.tolist(), counts.tolist()):
        out[tuple(x for x in row if x >= 0)] += count
    return out


def continue_with_target(pair, emitted: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Extend each emitted sequence to ``K+1`` tokens by sampling the exact target tables."""
    _, targets = table_tensors(pair)
    out = emitted.clone()
    for position in range(pair.k + 1):
        missing = out[:, position] < 0
        if bool(missing.any()):
            code = torch.zeros(out.shape[0], dtype=torch.int64)
            for j in range(position):
                code = code * pair.vocab + out[:, j]
            draws = torch.multinomial(targets[position][code], 1, generator=generator).squeeze(-1)
            out[:, position] = torch.where(missing, draws, out[:, position])
    return out


@dataclass(frozen=True)
class Conformance:
    """Outcome of one conformance test; ``conforms`` is the verdict at level ``alpha``."""

    rounds: int
    alpha: float
    outside_support: int
    statistic: float
    df: int
    p_value: float
    detectable_tv: float

    @property
    def conforms(self) -> bool:
        return self.outside_support == 0 and self.p_value >= self.alpha

    def __str__(self) -> str:
        return (f"N={self.rounds} alpha={self.alpha} outside_support={self.outside_support} "
                f"chi2={self.statistic:.1f} df={self.df} p={self.p_value:.3g} "
                f"detectable_tv(power .99)={self.detectable_tv:.4f}")


def detectable_tv(rounds: int, df: int, alpha: float, power: float = 0.99) -> float:
    """Smallest TV detected with probability ``power`` (noncentral chi-square, lambda = 4 N eps^2)."""
    critical = stats.chi2.isf(alpha, df)
    gap = lambda eps: stats.ncx2.sf(critical, df, 4 * rounds * eps * eps) - power  # noqa: E731
    return optimize.brentq(gap, 1e-9, 1.0)


def conformance(counts: Counter, law: SequenceLaw, alpha: float = 1e-3) -> Conformance:
    """Pearson chi-square test of ``counts`` against the exact ``law`` (see the module docstring)."""
    rounds = sum(counts.values())
    support = {seq: prob for seq, prob in law.items() if prob > 0}
    outside = sum(count for seq, count in counts.items() if seq not in support)
    ordered = sorted(support, key=lambda seq: support[seq])
    bins: list[tuple[float, int]] = []
    pooled_expected, pooled_observed = 0.0, 0
    for seq in ordered:
        expected = rounds * float(support[seq])
        if expected < 5 or pooled_expected and pooled_expected < 5:
            pooled_expected += expected
            pooled_observed += counts.get(seq, 0)
            continue
        bins.append((expected, counts.get(seq, 0)))
    if pooled_expected:
        bins.append((pooled_expected, pooled_observed))
    statistic = sum((observed - expected) ** 2 / expected for expected, observed in bins)
    df = max(len(bins) - 1, 1)
    return Conformance(rounds, alpha, outside, statistic, df, float(stats.chi2.sf(statistic, df)),
                       detectable_tv(rounds, df, alpha))
