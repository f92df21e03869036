"""Exact RNG-grid drift of a uniform-injection verifier: :func:`measure_grid`.

A ``contract="uniforms"`` implementation is a deterministic function of its uniforms
``[B, K+1]`` (column ``i < K``: acceptance uniform of draft ``i``; column ``K``: the final inverse-CDF
draw).  ``torch.rand`` draws them from a finite grid, so the law the implementation realises is a
finite sum that can be computed exactly by counting grid points, with no sampling noise.

Grids: :mod:`.uniform_grids` (what ``torch.rand`` draws per dtype, and each grid's discrepancy ``delta``).

Counting (the implementation is a black box called on crafted batches, never re-implemented).  For
each draft sequence ``x`` (enumerated, exact draft probability ``Q(x) = prod_i q^(x_i | x_<i)``):

1. every acceptance column acts through one threshold: the output with column ``i`` at grid index
   ``j`` equals the output at ``j = 0`` for ``j < j*_i`` and the output at ``j = M - 1`` otherwise.
   ``j*_i`` is found by bisection (at most ``log2 M + 1`` batched calls, 54 for float64) in a context
   of the other columns where the column changes the output; the threshold is then checked in every
   context (others at index 0 or ``M - 1``).  ``c_i = W(j*_i)``, the grid mass below it;
2. for each pattern ``b`` (column ``i`` below (1) or above (0) its threshold, probability
   ``prod c_i/N`` or ``(N - c_i)/N``) the emitted prefix is read off and the final token is assumed
   non-decreasing in the last uniform (inverse CDF): for each token boundary ``t`` the first index
   ``J(t)`` with token ``> t`` is found by bisection, so ``P(token = t) = (W(J(t)) - W(J(t-1))) / N``.

The exact law is ``sum_x Q(x) sum_b P(b) P(y | x, b)`` on the emitted sequences.  Any observation that
contradicts the threshold/monotone model (a column changing at different points in different contexts,
the last uniform changing the accepted prefix, boundaries out of order) makes the verdict
``unanalysable``, never a pass.

Verdict against the exact law of the claimed rule (``proofs.sequences.round_law``, or
``proofs.block.block_round_law`` for ``rule="block"``) on the same rounded, renormalised pair: any mass
on a sequence containing a token of target probability 0 at its prefix is ``impossible-mass`` (``u <= p/q``
with ``u == 0`` accepting a draft with ``p(x) = 0``): no lossless implementation can emit it.  Mass moved
between possible sequences (a log-space test rejecting when ``p == q`` because ``log u`` is absorbed
by ``log q``, say) is drift, measured by the TV; otherwise
``exact`` (TV 0), ``within-grid-tolerance`` (TV at most ``min(1, (K+1)(delta + V delta/2 + (V+3) u))``,
:func:`grid_round_tolerance`, which is :func:`~specproof.harness.exact.tolerances.round_tolerance` with the
grid's own ``delta``) or ``algorithmic-bias``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import torch

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.laws.block import Tables, block_round_law
from specproof.errors import SpecproofInputError
from specproof.verdicts import GridVerdict
from specproof.proofs.laws.step_rules import get_step_rule
from specproof.proofs.laws.sequences import MAX_SEQUENCES, SequenceLaw, ToyPair, law_tv, round_law

from specproof.harness.exact.dtypes import DTYPES, dtype_name
from specproof.harness.exact.reference import fraction_string
from specproof.harness.exact.rounded import RoundedPair
from specproof.harness.files.kinds import GRID_DRIFT
from specproof.harness.check.contracts.batched.scenarios import Realisation
from specproof.harness.exact.dtypes import TORCH_DTYPES
from specproof.harness.exact.uniform_grids import GRID_MODELS, UniformGrid, grid_round_tolerance, uniform_grid

__all__ = ["GRID_MODELS", "UniformGrid", "GridVerdict", "GridDrift", "uniform_grid", "measure_grid",
           "grid_round_tolerance", "ideal_round_law"]

SCHEMA = GRID_DRIFT.schema


def _target_possible(pair: Any, seq: tuple[int, ...]) -> bool:
    """``prod_i p(seq_i | seq_<i) > 0``: every token has positive target probability at its prefix."""
    return all(pair.target[seq[:i]][tok] > 0 for i, tok in enumerate(seq))


def ideal_round_law(pair: ToyPair, rule: str) -> SequenceLaw:
    """The exact law of one round of ``rule`` (a step rule's ``round_law``, or block verification)."""
    if rule == "block":
        law, _ = block_round_law(ExactArith(), Tables.from_pair(pair))
        return {s: m for s, m in law.items() if m}
    try:
        step = get_step_rule(rule)
    except ValueError:
        raise SpecproofInputError("rule", f"unknown rule {rule!r}", "use a step rule name or 'block'") from None
    return round_law(pair, step)


@dataclass(frozen=True)
class GridDrift:
    """The exact grid law of one implementation, compared with the ideal law of its rule."""

    implementation: str
    rule: str
    dtype: str
    grid: UniformGrid
    vocab: int
    k: int
    law: SequenceLaw = field(repr=False)
    ideal: SequenceLaw = field(repr=False)
    tv: Fraction
    tolerance: Fraction
    impossible_mass: Fraction
    violations: tuple[str, ...]
    columns: tuple[tuple[tuple[int, ...], Fraction, tuple[Fraction, ...]], ...] = field(repr=False)
    calls: int = 0
    rows: int = 0
    elapsed_s: float = 0.0
    impossible: tuple[tuple[int, ...], ...] = ()

    @property
    def verdict(self) -> GridVerdict:
        if self.violations:
            return GridVerdict.UNANALYSABLE
        if self.impossible_mass > 0:
            return GridVerdict.IMPOSSIBLE
        if self.tv == 0:
            return GridVerdict.EXACT
        return GridVerdict.WITHIN if self.tv <= self.tolerance else GridVerdict.BIAS

    @property
    def impossible_sequences(self) -> list[tuple[int, ...]]:
        """Emitted sequences with a token of target probability 0 at its prefix."""
        return sorted(self.impossible)

    def summary(self) -> str:
        """One line: verdict, TV against the grid tolerance, impossible mass (floats, 3 digits)."""
        text = (f"{self.implementation} ({self.rule}) {self.dtype}, V={self.vocab}, K={self.k}: {self.verdict.value}; "
                f"TV {float(self.tv):.3g} (grid tolerance {float(self.tolerance):.3g})")
        if self.impossible_mass:
            text += f"; impossible mass {float(self.impossible_mass):.3g} ({len(self.impossible)} sequences)"
        return text + "".join(f"; {v}" for v in self.violations)

    def __repr__(self) -> str:
        return f"GridDrift({self.summary()}; .cells() and .as_json() for the law)"

    def cells(self) -> list[tuple[tuple[int, ...], Fraction, Fraction]]:
        """``(sequence, grid mass, ideal mass)`` for every sequence, largest deviation first."""
        keys = set(self.law) | set(self.ideal)
        rows = [(s, self.law.get(s, Fraction(0)), self.ideal.get(s, Fraction(0))) for s in keys]
        return sorted(rows, key=lambda r: (-abs(r[1] - r[2]), r[0]))

    def as_json(self) -> dict[str, Any]:
        return GRID_DRIFT.envelope({
            "implementation": self.implementation,
            "rule": self.rule, "dtype": self.dtype, "grid": self.grid.as_json(), "vocab": self.vocab,
            "k": self.k, "verdict": self.verdict.value, "tv": fraction_string(self.tv),
            "tv_float": float(self.tv), "tolerance": fraction_string(self.tolerance),
            "tolerance_float": float(self.tolerance),
            "impossible_mass": fraction_string(self.impossible_mass),
            "impossible_mass_float": float(self.impossible_mass),
            "impossible_sequences": [list(s) for s in self.impossible_sequences],
            "violations": list(self.violations),
            "cells": [{"sequence": list(s), "grid": fraction_string(g), "ideal": fraction_string(i),
                       "deviation": fraction_string(g - i)} for s, g, i in self.cells()],
            "columns": [{"drafts": list(x), "probability": fraction_string(qx),
                         "below_threshold_mass": [fraction_string(c) for c in masses]}
                        for x, qx, masses in self.columns],
            "calls": self.calls, "rows": self.rows, "elapsed_s": self.elapsed_s,
        }).to_json()


# -- the rounded pair (harness.exact.rounded) -----------------------------------------------------

def _rounded_pair(source: Any, dtype: Any) -> RoundedPair:
    if isinstance(source, Realisation):
        if dtype is not None and dtype_name(dtype) != source.dtype:
            raise SpecproofInputError("dtype", f"{dtype_name(dtype)} differs from the realisation's "
                                      f"{source.dtype}", "omit dtype or realise the scenario in it")
        pair = source.rounded
    elif isinstance(source, ToyPair):
        if dtype is None:
            raise SpecproofInputError("dtype", "is required with a ToyPair", "pass dtype='float32' etc.")
        pair = None
    else:
        raise SpecproofInputError("source", f"unsupported {type(source).__name__}",
                                  "pass a ToyPair or a Scenario realisation (Scenario.realise(dtype))")
    vocab, k = source.vocab, source.k
    if vocab ** (k + 1) > MAX_SEQUENCES:
        raise SpecproofInputError("source", f"V^(K+1) = {vocab ** (k + 1)} exceeds {MAX_SEQUENCES}",
                                  f"use V^(K+1) <= {MAX_SEQUENCES} (V 2-6, K 1-3 are fast)")
    return pair if pair is not None else RoundedPair.from_toy_pair(source, dtype)


# -- the black box ----------------------------------------------------------------------------------

class _BlackBox:
    """Calls ``fn`` on rows ``(draft sequence, grid indices [K+1])``; counts calls and rows."""

    def __init__(self, fn: Callable, pair: RoundedPair, drafts: list[tuple[int, ...]], grid: UniformGrid,
                 device: torch.device):
        k = pair.k
        self.fn, self.grid, self.device, self.k, self.vocab = fn, grid, device, k, pair.vocab
        self.dtype = TORCH_DTYPES[pair.dtype]
        self.draft_probs = torch.stack([torch.stack([pair.row("draft", x[:i]) for i in range(k)])
                                        for x in drafts]).to(device)
        self.target_probs = torch.stack([torch.stack([pair.row("target", x[:i]) for i in range(k + 1)])
                                         for x in drafts]).to(device)
        self.ids = torch.tensor(drafts, dtype=torch.int64, device=device).reshape(len(drafts), k)
        self.calls = 0
        self.rows = 0

    def __call__(self, seq: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        if seq.shape[0] == 0:
            return torch.empty((0, self.k + 1), dtype=torch.int64)
        seq_d = seq.to(self.device)
        uniforms = self.grid.values(index).to(self.dtype).to(self.device)
        out = self.fn(self.draft_probs[seq_d], self.target_probs[seq_d], self.ids[seq_d], uniforms)
        self.calls += 1
        self.rows += int(seq.shape[0])
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (seq.shape[0], self.k + 1):
            raise SpecproofInputError("fn", f"returned {getattr(out, 'shape', type(out).__name__)}, expected "
                                      f"[{seq.shape[0]}, {self.k + 1}]", "implement the uniforms contract")
        return out.to(device="cpu", dtype=torch.int64)


def _bisect(box: _BlackBox, seq: torch.Tensor, base: torch.Tensor, column: torch.Tensor,
            is_low: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Smallest grid index in ``(0, M-1]`` where ``is_low(output)`` fails, per row (it holds at 0 and fails
    at ``M - 1`` by precondition).  ``base [B, K+1]`` holds the other columns' indices."""
    lo = torch.zeros(seq.shape[0], dtype=torch.int64)
    hi = torch.full((seq.shape[0],), box.grid.size - 1, dtype=torch.int64)
    rows = torch.arange(seq.shape[0])
    while True:
        open_ = torch.nonzero(hi - lo > 1).squeeze(1)
        if open_.numel() == 0:
            return hi
        mid = (lo[open_] + hi[open_]) // 2
        index = base[open_].clone()
        index[rows[: open_.numel()], column[open_]] = mid
        low = is_low(box(seq[open_], index), open_)
        lo[open_] = torch.where(low, mid, lo[open_])
        hi[open_] = torch.where(low, hi[open_], mid)


def _emitted(out: torch.Tensor, vocab: int) -> tuple[list[tuple[int, ...]], list[str]]:
    """Emitted sequences (entries before the first -1) and any malformed rows."""
    seqs, bad = [], []
    for row in out.tolist():
        n = row.index(-1) if -1 in row else len(row)
        seq = tuple(row[:n])
        if n == 0 or any(v != -1 for v in row[n:]) or any(not 0 <= v < vocab for v in seq):
            bad.append(f"malformed output row {row}")
        seqs.append(seq)
    return seqs, bad


# -- the measurement ---------------------------------------------------------------------------------

def _resolve(fn: Any, rule: str | None) -> tuple[Callable, str, str]:
    if getattr(fn, "contract", None) is not None and hasattr(fn, "fn"):
        if fn.contract != "uniforms":
            raise SpecproofInputError("fn", f"record {fn.name!r} has contract {fn.contract!r}",
                                      "pass a 'uniforms' record or a function with the uniforms contract")
        return fn.fn, fn.name, rule or fn.rule
    if not callable(fn):
        raise SpecproofInputError("fn", f"{type(fn).__name__} is not callable",
                                  "pass a uniforms-contract function or record")
    return fn, getattr(fn, "__name__", type(fn).__name__), rule or "canonical"


def measure_grid(fn: Any, source: Any, *, dtype: Any = None, rule: str | None = None,
                 grid: str | UniformGrid = "torch-cpu", device: str = "cpu") -> GridDrift:
    """Exact law of ``fn`` (uniforms contract) on the ``grid`` of ``dtype``, against ``rule``'s law.

    ``source``: a :class:`ToyPair` (rounded to ``dtype`` here) or a scenario :class:`Realisation`
    (already rounded); ``rule``: the claimed rule (a record's own rule by default, else
    ``"canonical"``); ``grid``: a model name or a :class:`UniformGrid` of the same dtype.
    Raises :class:`~specproof.proofs.SpecproofInputError` naming the bad argument.
    """
    start = time.perf_counter()
    fn, name, rule = _resolve(fn, rule)
    pair = _rounded_pair(source, dtype)
    if isinstance(grid, UniformGrid):
        if grid.dtype != pair.dtype or (grid.step_bits or 0) > DTYPES[pair.dtype].precision:
            raise SpecproofInputError("grid", f"is a {grid.dtype} grid of {grid.size} values; the pair is "
                                      f"{pair.dtype}", "pass a grid whose values the dtype represents")
        grid_ = grid
    else:
        grid_ = uniform_grid(pair.dtype, grid)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise SpecproofInputError("device", f"{device!r} is not a torch device", "use 'cpu' or 'cuda'") from None
    exact, k, vocab = pair.toy_pair, pair.k, pair.vocab
    ideal = ideal_round_law(exact, rule)
    drafts, weights = [], []
    for x in itertools.product(range(vocab), repeat=k):
        qx = Fraction(1)
        for i in range(k):
            qx *= exact.draft[x[:i]][x[i]]
        if qx:
            drafts.append(x)
            weights.append(qx)
    box = _BlackBox(fn, pair, drafts, grid_, dev)
    thresholds, violations = _column_thresholds(box, len(drafts))
    law, more = _final_law(box, drafts, weights, thresholds)
    violations += more
    total = grid_.total
    columns = tuple((x, qx, tuple(Fraction(grid_.mass_below(int(j)), total) for j in thresholds[s].tolist()))
                    for s, (x, qx) in enumerate(zip(drafts, weights)))
    impossible_seqs = tuple(s for s, m in law.items() if m > 0 and not _target_possible(exact, s))
    impossible = sum((law[s] for s in impossible_seqs), Fraction(0))
    return GridDrift(name, rule, pair.dtype, grid_, vocab, k, law, ideal, law_tv(law, ideal),
                     grid_round_tolerance(grid_, vocab, k), impossible, tuple(violations[:20]), columns,
                     box.calls, box.rows, time.perf_counter() - start, impossible_seqs)


def _column_thresholds(box: _BlackBox, n_seq: int) -> tuple[torch.Tensor, list[str]]:
    """``j*_i`` per (draft sequence, column): ``[X, K]`` grid indices (``M`` where the column never
    changes the output), and threshold-model violations."""
    k, top = box.k, box.grid.size - 1
    contexts = list(itertools.product((0, top), repeat=k))  # the other K columns (K-1 acceptance + final)
    seq, column, index = [], [], []
    for s in range(n_seq):
        for i in range(k):
            for ctx in contexts:
                seq.append(s)
                column.append(i)
                index.append(list(ctx[:i]) + [0] + list(ctx[i:]))
    seq_t, col_t, base = torch.tensor(seq), torch.tensor(column), torch.tensor(index, dtype=torch.int64)
    rows = torch.arange(seq_t.shape[0])
    at_top = base.clone()
    at_top[rows, col_t] = top
    out_lo, out_hi = box(seq_t, base), box(seq_t, at_top)
    active = (out_lo != out_hi).any(-1).reshape(n_seq, k, len(contexts))
    thresholds = torch.full((n_seq, k), box.grid.size, dtype=torch.int64)
    pairs = torch.nonzero(active.any(-1))
    if pairs.numel():
        chosen = active[pairs[:, 0], pairs[:, 1]].to(torch.int8).argmax(-1)
        flat = (pairs[:, 0] * k + pairs[:, 1]) * len(contexts) + chosen
        reference = out_lo[flat]
        found = _bisect(box, seq_t[flat], base[flat], col_t[flat],
                        lambda out, open_: (out == reference[open_]).all(-1))
        thresholds[pairs[:, 0], pairs[:, 1]] = found
    # check the threshold in every context of every active column
    violations: list[str] = []
    j_star = thresholds[seq_t, col_t]
    check = torch.nonzero(j_star < box.grid.size).squeeze(1)
    if check.numel():
        below, at = base[check].clone(), base[check].clone()
        r = torch.arange(check.numel())
        below[r, col_t[check]] = j_star[check] - 1
        at[r, col_t[check]] = j_star[check]
        ok = ((box(seq_t[check], below) == out_lo[check]).all(-1)
              & (box(seq_t[check], at) == out_hi[check]).all(-1))
        for row in check[~ok].tolist():
            violations.append(f"column {column[row]} of drafts #{seq[row]} does not act through one "
                              f"threshold (context {index[row]})")
    return thresholds, violations


def _final_law(box: _BlackBox, drafts: list[tuple[int, ...]], weights: list[Fraction],
               thresholds: torch.Tensor) -> tuple[SequenceLaw, list[str]]:
    """The emitted-sequence law: patterns of the acceptance columns, then the final draw's breakpoints."""
    k, top, grid, vocab = box.k, box.grid.size - 1, box.grid, box.vocab
    n_total = grid.total
    below = [[grid.mass_below(int(j)) for j in row] for row in thresholds.tolist()]
    cases = []  # (sequence index, pattern probability, acceptance indices)
    for s in range(len(drafts)):
        for bits in itertools.product((1, 0), repeat=k):
            prob = Fraction(1)
            for c, bit in zip(below[s], bits):
                prob *= Fraction(c if bit else n_total - c, n_total)
            if prob:
                cases.append((s, prob, [0 if bit else top for bit in bits]))
    seq_t = torch.tensor([c[0] for c in cases])
    base = torch.tensor([c[2] + [0] for c in cases], dtype=torch.int64)
    last = base.clone()
    last[:, k] = top
    out_first, out_last = box(seq_t, base), box(seq_t, last)
    emitted_first, bad = _emitted(out_first, vocab)
    emitted_last, bad_last = _emitted(out_last, vocab)
    violations = bad + bad_last
    prefix = [e[:-1] for e in emitted_first]
    y_first = torch.tensor([e[-1] if e else 0 for e in emitted_first])
    y_last = torch.tensor([e[-1] if e else 0 for e in emitted_last])
    for a, b in zip(emitted_first, emitted_last):
        if a[:-1] != b[:-1] or (a and b and a[-1] > b[-1]):
            violations.append(f"the final uniform changes the accepted prefix or runs backwards ({a} vs {b})")
    # J(t) for every case and boundary t with y_first <= t < y_last
    boundaries = torch.full((len(cases), vocab), top + 1, dtype=torch.int64)
    tokens = torch.arange(vocab)
    boundaries[tokens.unsqueeze(0) < y_first.unsqueeze(1)] = 0
    open_cases, open_tokens = torch.nonzero((tokens.unsqueeze(0) >= y_first.unsqueeze(1))
                                            & (tokens.unsqueeze(0) < y_last.unsqueeze(1)), as_tuple=True)
    if open_cases.numel():
        position = torch.tensor([len(p) for p in prefix])[open_cases]
        expected = out_first[open_cases]
        lowest, highest = y_first[open_cases], y_last[open_cases]

        def is_low(out: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
            pos = position[rows]
            same_prefix = ((out == expected[rows]) | (torch.arange(k + 1) >= pos.unsqueeze(1))).all(-1)
            y = out.gather(1, pos.unsqueeze(1)).squeeze(1)
            if not bool(same_prefix.all()):
                violations.append("the final uniform changes the accepted prefix")
            if bool(((y < lowest[rows]) | (y > highest[rows])).any()):
                violations.append("the final draw is not monotone in its uniform")
            return y <= open_tokens[rows]

        column = torch.full((open_cases.numel(),), k, dtype=torch.int64)
        boundaries[open_cases, open_tokens] = _bisect(box, seq_t[open_cases], base[open_cases], column, is_low)
    if bool((boundaries[:, 1:] < boundaries[:, :-1]).any()):
        violations.append("final-draw breakpoints out of order: the draw is not monotone in its uniform")
    law: SequenceLaw = {}
    for c, (s, prob, _) in enumerate(cases):
        previous = 0
        weight = weights[s] * prob
        for t, j in enumerate(boundaries[c].tolist()):
            mass = grid.mass_below(j)  # W(M) = N
            if mass > previous:
                key = prefix[c] + (t,)
                law[key] = law.get(key, Fraction(0)) + weight * Fraction(mass - previous, n_total)
            previous = max(previous, mass)
    return law, violations
