"""The generate contract's exact reference as streams: the law of the ``N`` new tokens from the pipeline's
logits, the event families tested on it, and the band.

Law.  :class:`~specproof.proofs.laws.generate.PipelineLaw` (``P(s) = prod_j r_{key(s_<j)}[s_j]``) with
``r_k = processed_law(target logits at k, sampling)`` (:func:`specproof.harness.exact.sampling.processed_law`:
certified softmax, exact masks, exact renormalisation), computed once per distinct law key by
:func:`pipeline_law`.

Families (every row's key is a code of its tokens, ``code(s) = sum_j s_j V^(n-1-j)``):

* ``lossless`` - prefix events ``{s_1..s_j = t}`` for ``j = 1..J``, ``J`` the longest prefix length
  keeping at most :data:`MAX_PREFIX_EVENTS` events; an event of probability 0 is zero-tolerance.
* ``pairs at tokens j-1, j`` - for ``j = 2..N``, each cell of the joint law of two consecutive tokens:
  what a round-bookkeeping bug at a late position moves.

Impossible outcome: a row whose sequence has probability 0 (some token is processed away at its
prefix); its first such position is reported (:meth:`~specproof.proofs.laws.generate.PipelineLaw.first_zero`).

Tolerance.  Each of the ``N`` tokens is, in a correct float pipeline, either an accepted draft (one
draft draw, one acceptance test) or a round's final token (its rejected draft's draw and test, then
the correction/bonus draw): at most ``2 tau_step`` in total variation per token
(:func:`specproof.harness.exact.tolerances.step_tolerance` bounds one acceptance or draw with its row's
softmax arithmetic), so ``tau = min(1, 2 N tau_step + extra)``, ``extra`` the model pair's own term
(:func:`~specproof.harness.exact.tolerances.composed_tolerance` with ``S = 2N``).  With an observed
precision the step is derived at the pipeline's own precision, its rows computed by itself
(:func:`~specproof.harness.exact.tolerances.computed_rows`: ``g + V g / 2 + (V + 3) u_a``): the
pipeline reads logits, never rounded probability rows, and the exact law reads the same logits.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from specproof.proofs.laws.generate import PipelineLaw, sequence_code

from specproof.harness.check.contracts.batched.families import EventFamily
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.sampling import Sampling, processed_law
from specproof.harness.exact.tolerances import Precision, composed_tolerance, computed_rows

__all__ = ["MAX_PREFIX_EVENTS", "PIPELINE_ROWS_ASSUMPTION", "pipeline_law", "pipeline_tolerance", "sequence_codes_of",
           "pipeline_families"]

MAX_PREFIX_EVENTS = 1_000
PIPELINE_ROWS_ASSUMPTION = ("the pipeline computes its laws by a softmax of the logits the exact law reads, within the "
                            "softmax bound (V + 3) u of its arithmetic's dtype (exact/sampling), and verifies with the "
                            "canonical step")


def pipeline_law(pair: Any, target: Any, sampling: Sampling, new_tokens: int, dtype: str,
                 argument: str = "new_tokens") -> PipelineLaw:
    """The exact law of ``new_tokens`` tokens of ``pair`` (its ``law_key`` and ``reference_logits`` read
    from ``target``) under ``sampling`` in ``dtype`` (module docstring); ``argument`` is named when the
    enumeration is too large."""

    def next_laws(prefixes: Sequence[tuple[int, ...]]) -> list[tuple[Fraction, ...]]:
        logits = pair.reference_logits(target, list(prefixes))
        return [processed_law(_row(logits, i), sampling, dtype) for i in range(len(prefixes))]

    return PipelineLaw.build(int(pair.vocab), new_tokens, pair.law_key, next_laws, argument)


def pipeline_tolerance(dtype: str, vocab: int, new_tokens: int, extra: Fraction = Fraction(0),
                       precision: Precision | None = None) -> Fraction:
    """``min(1, 2 N tau_step + extra)`` (module docstring); with ``precision`` the step derived at the
    pipeline's own precision, rows computed by itself."""
    derived = None if precision is None else computed_rows(precision)
    return min(Fraction(1), composed_tolerance(dtype, vocab, 2 * new_tokens, precision=derived) + extra)


def sequence_codes_of(tokens: np.ndarray, vocab: int) -> np.ndarray:
    """:func:`~specproof.proofs.laws.generate.sequence_code` of each row of ``tokens [R, n]``, vectorised (int64)."""
    code = np.zeros(tokens.shape[0], dtype=np.int64)
    for j in range(tokens.shape[1]):
        code = code * vocab + tokens[:, j]
    return code


def _row(logits: Any, i: int) -> tuple[Fraction, ...]:
    row = logits[i]
    return to_exact(row, "reference logits") if not isinstance(row, tuple) else row


def _prefix_family(law: PipelineLaw) -> EventFamily:
    v, n = law.vocab, law.new_tokens
    depth = 1
    while depth < n and sum(v ** j for j in range(1, depth + 2)) <= MAX_PREFIX_EVENTS:
        depth += 1
    events = [t for j in range(1, depth + 1) for t in itertools.product(range(v), repeat=j)]
    index = {t: e for e, t in enumerate(events)}
    matrix = np.zeros((v ** depth, len(events)))
    for s in itertools.product(range(v), repeat=depth):
        for j in range(1, depth + 1):
            matrix[sequence_code(s, v), index[s[:j]]] = 1.0
    expected = [law.prefix[t] for t in events]
    return EventFamily(
        name="lossless",
        key=lambda out, d=depth: sequence_codes_of(out[:, :d], v),
        n_keys=v ** depth, matrix=matrix,
        expected=np.array([float(x) for x in expected]),
        names=[f"first {len(t)} tokens = {t}" for t in events],
        zero_tolerance=np.array([x == 0 for x in expected]),
        positions={e: len(t) for e, t in enumerate(events)},
    )


def _pair_family(law: PipelineLaw, j: int) -> EventFamily:
    """Joint law of tokens ``j-1`` and ``j`` (1-based), ``j >= 2``: float cells, exact zeros."""
    v = law.vocab
    cells, positive = np.zeros(v * v), np.zeros(v * v, dtype=bool)
    for s, w in law.prefix.items():
        if len(s) == j and w:
            cells[s[-2] * v + s[-1]] += float(w)
            positive[s[-2] * v + s[-1]] = True
    return EventFamily(
        name=f"pairs at tokens {j - 1}, {j}",
        key=lambda out, j=j: out[:, j - 2] * v + out[:, j - 1],
        n_keys=v * v, matrix=np.eye(v * v),
        expected=cells,
        names=[f"tokens {j - 1}, {j} = ({a}, {b})" for a in range(v) for b in range(v)],
        zero_tolerance=~positive,
        positions=dict.fromkeys(range(v * v), j),
    )


def pipeline_families(law: PipelineLaw) -> list[EventFamily]:
    """The families of the module docstring."""
    return [_prefix_family(law)] + [_pair_family(law, j) for j in range(2, law.new_tokens + 1)]
