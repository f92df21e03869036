"""Tree scenarios as streams of the one statistical engine (:mod:`.engine`): families, band, draw.

Families (row key: the emitted sequence's code, :func:`.events.sequence_keys` with ``k = D``):

* ``lossless`` - for every ``t`` of length ``1..D+1`` the event "the emitted sequence, continued by
  target sampling, starts with ``t``", of exact probability ``P_target(t)``.  A row that emitted ``s``
  contributes ``1`` if ``t`` is a prefix of ``s``, ``P_target(t | s)`` if ``s`` is a proper prefix of
  ``t`` (the continuation is never sampled: Rao-Blackwellisation), else 0.  Lossless iff all hold.
* ``bug-class`` - for each known incorrect tree rule (:data:`specproof.proofs.laws.tree.TREE_MUTANT_RULES`) whose
  continued law differs on this scenario, its excess set ``{u : P_bad(u) > P_target(u)}`` over
  ``D+1``-token sequences (the most powerful single event against that rule), computed exactly on
  the realised tables.

Null band.  The verifier reads rounded rows in the dtype under test; along a row at most ``N``
sibling tests and residual updates and one final draw happen, each at most one verification step's
drift (:func:`harness.exact.tolerances.step_tolerance`), and the harness draws the ``N`` tree tokens by
a float64 inverse CDF, each within ``tau_64 = step_tolerance("float64", V)`` of its row; total
variation is subadditive, so ``tau = min(1, (N + 1) tau_step + N tau_64)``
(:func:`~specproof.harness.exact.tolerances.composed_tolerance`).  With an observed precision the step
is the derived ``tau_arith`` and the rounded rows' own cost is counted once, exactly:
:func:`rows_as_given_tv` is the largest total variation, over the exact tree rules (recursive
rejection sampling, the target-only walk), between the rule run in real arithmetic on the rows as the
verifier reads them (:class:`specproof.proofs.laws.tree.GivenRows`) and the exact law, both continued by
the target (every tested event is an event of the continued law).

Impossible outcomes (certain): a token of target probability 0 at its emitted prefix (read from the
harness's exact tables), and tokens before the last that leave the row's tree
(:func:`.signature.off_tree_rows`).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Callable

import numpy as np

from specproof.proofs.laws.sequences import law_tv, target_law

from specproof.harness.check.events.family import EventFamily, first_difference, sequence_keys
from specproof.proofs.laws.tree import (TREE_MUTANT_RULES, TREE_REFERENCE, TREE_TARGET_ONLY,
                                        GivenRows, conditionals, continued, extensions, tree_law)
from specproof.harness.check.contracts.tree.scenarios import TreeRealisation
from specproof.harness.exact.tolerances import Precision, composed_tolerance

__all__ = ["OFF_TREE", "TREE_ROWS_ASSUMPTION", "tree_tolerance", "rows_as_given_tv", "tree_families"]

OFF_TREE = "emitted tokens before the last that leave the tree"
TREE_ROWS_ASSUMPTION = ("the tree verifier follows recursive rejection sampling or the target-only walk on the "
                        "rounded rows as given (the whole round's cost of their sums counted exactly)")


def tree_tolerance(dtype: str, vocab: int, nodes: int, precision: Precision | None = None,
                   rows_tv: Callable[[], Fraction] | None = None) -> Fraction:
    """``min(1, (N + 1) tau_step + N tau_64)`` (module docstring); with ``precision`` and ``rows_tv``
    (computing :func:`rows_as_given_tv`, only where the derived band is used) the derived
    ``(N + 1) tau_arith + T_in + N tau_64``."""
    return composed_tolerance(dtype, vocab, nodes + 1, nodes, precision=precision, rows_tv=rows_tv)


def rows_as_given_tv(real: TreeRealisation) -> Fraction:
    """``T_in`` (module docstring): the largest exact TV, over the exact tree rules, of running the rule
    on the rounded rows the verifier reads instead of the exact laws they stand for."""
    exact = lambda row: tuple(Fraction(x) for x in row.double().tolist())  # noqa: E731  (floats are dyadic)
    scheme = real.scenario.scheme

    def read(prefix: tuple[int, ...], tried: tuple[int, ...], index: int) -> tuple[Fraction, ...]:
        mask = sum(1 << t for t in set(tried)) if real.masks > 1 else 0
        return exact(real.draft_rows[real.state(real.code(prefix), mask, index if scheme == "topk" else 0)])

    given = GivenRows(lambda prefix: exact(real.target_rows[real.code(prefix)]), read)
    reference = target_law(real.pair)
    return max(law_tv(continued(real.pair, tree_law(real.pair, real.tree, rule, real.row, given)), reference)
               for rule in (TREE_REFERENCE, TREE_TARGET_ONLY))


def _sequences(vocab: int, depth: int) -> list[tuple[int, ...]]:
    """Sequences of length 1..D+1 in key order (:func:`.events.sequence_keys`)."""
    return [s for length in range(1, depth + 2) for s in itertools.product(range(vocab), repeat=length)]


def _lossless(real: TreeRealisation, seqs: list[tuple[int, ...]]) -> EventFamily:
    index = {s: i for i, s in enumerate(seqs)}
    matrix = np.zeros((len(seqs), len(seqs)))
    for row, s in enumerate(seqs):
        for j in range(1, len(s) + 1):
            matrix[row, index[s[:j]]] = 1.0
        for t, w in conditionals(real.pair, s).items():
            matrix[row, index[t]] = float(w)
    marginal = conditionals(real.pair)
    expected = [marginal.get(t, Fraction(0)) for t in seqs]
    v, d = real.vocab, real.depth
    return EventFamily(
        name="lossless", key=lambda e: sequence_keys(e, v, v, d), n_keys=len(seqs), matrix=matrix,
        expected=np.array([float(x) for x in expected]),
        names=[f"first {len(t)} tokens (continued by the target) = {t}" for t in seqs],
        zero_tolerance=np.array([x == 0 for x in expected]), positions={i: len(t) for i, t in enumerate(seqs)})


def _bug_class(real: TreeRealisation, seqs: list[tuple[int, ...]]) -> EventFamily | None:
    reference = target_law(real.pair)
    events, names, tvs, expected, rules, positions = [], [], {}, [], {}, {}
    for rule in TREE_MUTANT_RULES:
        bad = continued(real.pair, tree_law(real.pair, real.tree, rule, real.row))
        tv = law_tv(bad, reference)
        excess = {u for u, w in bad.items() if w > reference.get(u, Fraction(0))}
        if not tv or not excess:
            continue
        e = len(events)
        tvs[e], rules[e] = tv, rule.name
        first = first_difference(bad, reference, real.depth + 1)
        if first is not None:
            positions[e] = first
        events.append(excess)
        names.append(f"excess set of '{rule.name}' (exact TV {float(tv):.4g})")
        expected.append(sum((reference.get(u, Fraction(0)) for u in excess), Fraction(0)))
    if not events:
        return None
    matrix = np.zeros((len(seqs), len(events)))
    for row, s in enumerate(seqs):
        for u, w in extensions(real.pair, s):
            for e, members in enumerate(events):
                if u in members:
                    matrix[row, e] += float(w)
    v, d = real.vocab, real.depth
    return EventFamily(
        name="bug-class", key=lambda em: sequence_keys(em, v, v, d), n_keys=len(seqs), matrix=matrix,
        expected=np.array([float(x) for x in expected]), names=names,
        zero_tolerance=np.array([x == 0 for x in expected]), exact_tv=tvs, rules=rules, positions=positions)


def tree_families(real: TreeRealisation) -> list[EventFamily]:
    """The families tested on one realised tree scenario (module docstring)."""
    seqs = _sequences(real.vocab, real.depth)
    families = [_lossless(real, seqs)]
    bug = _bug_class(real, seqs)
    if bug is not None:
        families.append(bug)
    return families
