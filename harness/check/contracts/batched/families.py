"""Event families: what the statistical check measures on a scenario, with exact probabilities.

Each family maps every verifier row to a *key* (an integer computed from the emitted tokens) and
holds a matrix ``M[key, event]`` of per-row contributions in ``[0, 1]`` whose expectation under the
reference law is the event's exact probability.  Observed means are ``counts @ M / N``.

* ``lossless`` - prefix events of "one round, then plain target sampling to K+1 tokens", on class
  sequences.  The continuation is never sampled: a row that emitted ``s`` contributes the exact
  conditional probability that the target would extend ``s`` into the event (Rao-Blackwellisation;
  the expectation is unchanged and the variance can only drop).  Every lossless rule must match.
* ``first-token`` - every non-trivial union of first-token buckets holding bucket 0 (the complement
  of a union is the same event read from its other side; single tokens when V <= 8, otherwise 8
  buckets ordered by ``p - q``): any deviation of the first token's law of total variation ``d``
  shows as a shift of ``d`` in one of these events, on one of its sides.
* ``later-token`` - for every later position ``j = 2..K+1``, every non-trivial union of classes (when
  there are 2 to 8; one of each complementary pair, both sides tested) that the ``j``-th token of the
  continued sequence falls in, Rao-Blackwellised as ``lossless`` is: a bug confined to one position
  (a bonus token drawn from the wrong law) shifts one such event by its whole size at that position,
  where a prefix event splits it over every prefix.  Its contributions are sums of ``lossless``
  columns (the full-length ones).
* ``correction-floor`` - for every union ``U`` of first-token buckets holding residual mass, the floor
  ``P(first token in U, no draft accepted) >= sum_{y in U} max(0, p(y) - q(y))`` less ``tau`` and
  float64's step tolerance (the drafts' own drift): a lossless rule accepts at most ``min(p, q)`` of
  each token, so its corrections must make up the rest.  The canonical rule meets every floor
  exactly, so a correction that misses part of the residual (a reused uniform, a stale buffer) falls
  below it by its whole deficit on rows without accepted-token noise.  Lower side only.
* ``every-token`` (:mod:`.bet_products`) - for every union ``U`` of classes and a few bet fractions
  ``f``, the product over a row's emitted tokens of fair bets on "this token's class is in ``U``",
  Rao-Blackwellised and scaled into ``[0, 1]``: its mean is exact for every lossless rule, and a tilt
  of every token's law (a temperature on one side) compounds over the row.  Upper side only.
* ``position`` (:mod:`..events.positions`) - when ``V`` exceeds 1,024: the first token's index in
  tiles of every power-of-two block 2^10..2^16, above 2^15 / 2^16 / 2^17, and in residues mod a
  block: a tiled kernel's bug moves mass between positions, which events by value cannot see.
* ``bug-class`` - for small vocabularies, the excess set ``{s : P_bad(s) > P(s)}`` of each known
  incorrect rule in the catalogue (the most powerful single event against that alternative).
* ``conforms`` - when a rule is named: every cell of the rule's exact emission law and the law of the
  number of accepted drafts (not on deliberately unnormalised inputs, whose emission law differs
  from the renormalised one for every correct rule).

Exact probabilities come from the realisation's one rounded pair (``harness.exact.rounded``)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import torch

from specproof.proofs.laws.step_rules import StepRule, get_step_rule, step_rules
from specproof.proofs.laws.sequences import continued_law, law_tv, round_law, target_law

from specproof.harness.exact.reference import takes_logs
from specproof.harness.exact.rounded import exact_sum
from specproof.harness.exact.tolerances import draft_sampling_tolerance
from specproof.harness.check.contracts.batched.bet_products import every_token_family
from specproof.harness.check.events.family import (FLOOR_FAMILY, EventFamily, as_numpy, decode_sequences,
                                                   first_difference, sequence_keys)
from specproof.harness.check.events.positions import position_family
from specproof.harness.check.contracts.batched.scenarios import Realisation

__all__ = ["build_families"]

MAX_BUCKETS = 8


def _lossless_family(real: Realisation) -> EventFamily:
    c, k = real.classes, real.k
    trans = real.target_class_transitions
    seqs = decode_sequences(c, k + 1)
    index = {s: i for i, s in enumerate(seqs)}

    def step(pos: int, prev: tuple[int, ...], nxt: int) -> Fraction:
        return trans[pos][prev[-1] if pos > 0 else 0][nxt]

    expected = []
    for t in seqs:
        prob = Fraction(1)
        for pos in range(len(t)):
            prob *= step(pos, t[:pos], t[pos])
        expected.append(prob)
    matrix = np.zeros((len(seqs), len(seqs)))
    for s in seqs:
        row = index[s]
        for j in range(1, len(s) + 1):
            matrix[row, index[s[:j]]] = 1.0
        frontier = [(s, Fraction(1))]
        while frontier:
            prefix, weight = frontier.pop()
            if len(prefix) == k + 1:
                continue
            for nxt in range(c):
                w = weight * step(len(prefix), prefix, nxt)
                if w:
                    ext = prefix + (nxt,)
                    matrix[row, index[ext]] = float(w)
                    frontier.append((ext, w))
    label = "tokens" if c == real.vocab else f"classes mod {c}"
    return EventFamily(
        name="lossless",
        key=lambda e: sequence_keys(e, c, c, k),
        n_keys=len(seqs),
        matrix=matrix,
        expected=np.array([float(p) for p in expected]),
        names=[f"first {len(t)} {label} = {t}" for t in seqs],
        zero_tolerance=np.array([p == 0 for p in expected]),
        positions={i: len(t) for i, t in enumerate(seqs)},
    )


def _later_token_family(real: Realisation, lossless: EventFamily) -> EventFamily | None:
    """Unions of classes at each later position of the continued sequence (module docstring)."""
    c, k = real.classes, real.k
    if k == 0 or not 2 <= c <= MAX_BUCKETS:
        return None
    seqs = decode_sequences(c, k + 1)
    full = np.array([i for i, t in enumerate(seqs) if len(t) == k + 1])
    classes = np.array([seqs[i] for i in full])  # [full sequences, K+1]
    # a union and its complement are one event read from its two sides (their contributions sum to
    # 1 row by row): only the unions holding class 0 are kept
    subsets = [sub for size in range(1, c) for sub in itertools.combinations(range(c), size) if 0 in sub]
    label = "token" if c == real.vocab else f"class mod {c} of token"
    columns, expected, zero, names, positions = [], [], [], [], {}
    for j in range(1, k + 1):
        for sub in subsets:
            members = full[np.isin(classes[:, j], sub)]
            positions[len(names)] = j + 1
            columns.append(lossless.matrix[:, members].sum(axis=1))
            expected.append(float(lossless.expected[members].sum()))
            zero.append(bool(lossless.zero_tolerance[members].all()))  # exact: every member has probability 0
            names.append(f"{label} {j + 1} of the continued sequence in {set(sub)}")
    return EventFamily(
        name="later-token",
        key=lossless.key,
        n_keys=lossless.n_keys,
        matrix=np.clip(np.stack(columns, axis=1), 0.0, 1.0),
        expected=np.array(expected),
        names=names,
        zero_tolerance=np.array(zero),
        positions=positions,
    )


def _first_buckets(real: Realisation) -> tuple[np.ndarray, list[str]]:
    """Bucket of every first token (the token itself when V <= 8, else 8 buckets of equal target mass
    ordered by ``p - q``) and the buckets' labels."""
    vocab = real.vocab
    if vocab <= MAX_BUCKETS:
        return np.arange(vocab), [f"token {v}" for v in range(vocab)]
    p0f = np.array([float(x) if x else 0.0 for x in real.rounded.exact_row("target", (0, 0))])
    q0 = real.rounded.row("draft", ()).double().numpy()
    order = np.argsort(p0f - q0, kind="stable")
    cumulative = np.cumsum(p0f[order])
    cut = np.minimum((cumulative * MAX_BUCKETS / cumulative[-1]).astype(np.int64), MAX_BUCKETS - 1)
    bucket_of = np.empty(vocab, dtype=np.int64)
    bucket_of[order] = cut
    return bucket_of, [f"bucket {b} (by p-q)" for b in range(int(bucket_of.max()) + 1)]


def _first_token_family(real: Realisation) -> EventFamily:
    p0 = real.rounded.exact_row("target", (0, 0))
    bucket_of, labels = _first_buckets(real)
    n_buckets = len(labels)
    mass = [exact_sum(p0[v] for v in np.flatnonzero(bucket_of == b)) for b in range(n_buckets)]
    # one union of each complementary pair (both sides are tested, and a complement's sides are its own)
    subsets = [sub for size in range(1, n_buckets) for sub in itertools.combinations(range(n_buckets), size)
               if 0 in sub]
    if n_buckets == 1:
        subsets = []
    matrix = np.zeros((n_buckets, len(subsets)))
    for e, sub in enumerate(subsets):
        matrix[list(sub), e] = 1.0
    expected = [sum((mass[b] for b in sub), Fraction(0)) for sub in subsets]
    return EventFamily(
        name="first-token",
        key=lambda e: bucket_of[np.maximum(as_numpy(e[:, 0]), 0)],
        n_keys=n_buckets,
        matrix=matrix,
        expected=np.array([float(x) for x in expected]),
        names=["first token in {" + ", ".join(labels[b] for b in sub) + "}" for sub in subsets],
        zero_tolerance=np.array([x == 0 for x in expected]),
        positions={i: 1 for i in range(len(subsets))},
    )


def _correction_floor_family(real: Realisation) -> EventFamily | None:
    """Correction floors of the first token (module docstring): ``P(X_1 in U, no draft accepted) >=
    sum_{y in U} max(0, p(y) - q(y)) - (tau + tau_64)`` for every union ``U`` of first-token buckets.

    Bound.  A row accepting the first draft emits it first (the contract; anything else is a certain
    finding), so with ``p'`` the system's first-token law and ``q'`` the drafts' law, ``P(X_1 = y,
    accepted) <= min(p'(y), q'(y))`` and ``P(X_1 = y, none accepted) >= (p' - q')^+(y) >= (p - q)^+(y)
    - (p - p')^+(y) - (q' - q)^+(y)``.  A lossless system is within ``tau`` (the stream's band,
    :func:`~specproof.harness.exact.tolerances.check_tolerance`) of ``p`` in total variation and the
    harness's float64 drafts are within ``tau_64`` (float64's step tolerance) of ``q``, so over
    ``U`` the two positive parts sum to at most ``tau`` and ``tau_64``.  The canonical rule meets every
    floor exactly (it accepts ``min(p, q)`` of every token), so a correction draw that misses part of
    the residual ``max(0, p - q)`` - a reused uniform, a stale residual - falls below it by the whole
    deficit, on rows that carry no accepted-token noise.  Only the lower side is a null
    (``sides="lower"``)."""
    if real.k == 0:
        return None
    p0 = real.rounded.exact_row("target", (0, 0))
    q0 = real.rounded.exact_row("draft", (0, 0))
    bucket_of, labels = _first_buckets(real)
    n_buckets = len(labels)
    positive = np.array([bool(x) for x in p0])  # max(0, p - q) is 0 off the target's support
    excess = [exact_sum(max(Fraction(0), p0[v] - q0[v]) for v in np.flatnonzero((bucket_of == b) & positive))
              for b in range(n_buckets)]
    subsets = [sub for size in range(1, n_buckets + 1) for sub in itertools.combinations(range(n_buckets), size)
               if all(excess[b] > 0 for b in sub)]  # a bucket without residual mass only adds noise
    if not subsets:
        return None
    matrix = np.zeros((2 * n_buckets, len(subsets)))  # key: bucket, + n_buckets when no draft was accepted
    for e, sub in enumerate(subsets):
        matrix[[n_buckets + b for b in sub], e] = 1.0
    floors = [sum((excess[b] for b in sub), Fraction(0)) for sub in subsets]

    def key(emitted: torch.Tensor) -> np.ndarray:
        out = as_numpy(emitted)
        corrected = (out >= 0).sum(axis=1) == 1
        return bucket_of[np.maximum(out[:, 0], 0)] + n_buckets * corrected

    return EventFamily(
        name=FLOOR_FAMILY,
        key=key,
        n_keys=2 * n_buckets,
        matrix=matrix,
        expected=np.array([float(x) for x in floors]),
        names=["first token in {" + ", ".join(labels[b] for b in sub) + "} with no draft accepted"
               for sub in subsets],
        zero_tolerance=np.zeros(len(subsets), dtype=bool),
        positions={i: 1 for i in range(len(subsets))},
        sides="lower",
        tolerance_extra=float(draft_sampling_tolerance(real.vocab, 1)),  # the first draft's own drift
    )


def _token_matrix(real: Realisation, events: list[set[tuple[int, ...]]]) -> np.ndarray:
    """``M[s, e] = P_target(a (K+1)-sequence in event e extends s | s)`` for every emitted ``s``."""
    pair, k, vocab = real.rounded.toy_pair, real.k, real.vocab
    seqs = decode_sequences(vocab, k + 1)
    matrix = np.zeros((len(seqs), len(events)))
    for row, s in enumerate(seqs):
        frontier = [(s, Fraction(1))]
        while frontier:
            prefix, weight = frontier.pop()
            if len(prefix) == k + 1:
                for e, members in enumerate(events):
                    if prefix in members:
                        matrix[row, e] += float(weight)
                continue
            for nxt, py in enumerate(pair.target[prefix]):
                if py:
                    frontier.append((prefix + (nxt,), weight * py))
    return matrix


def _bug_class_family(real: Realisation) -> EventFamily | None:
    """Excess sets chosen on the scenario's ideal (small-denominator) tables; their null
    probabilities are then computed exactly on the realised tables."""
    ideal = real.scenario.ideal_pair()
    ideal_reference = target_law(ideal)
    reference = target_law(real.rounded.toy_pair)
    events, names, tvs, expected, rules, positions = [], [], {}, [], {}, {}
    laws = {}
    for rule in step_rules():
        # rules computed through logarithms (typical acceptance's entropy) compare exact logs by
        # raising rationals to powers as large as their common denominator: infeasible on realistic
        # tables, so the bug-class family leaves them to the proofs' own counterexample search
        if rule.claim != "not-exact" or takes_logs(rule):
            continue
        bad = laws[rule.name] = continued_law(ideal, rule)
        excess = {s for s, w in bad.items() if w > ideal_reference.get(s, Fraction(0))}
        tv = law_tv(bad, ideal_reference)
        if not excess or tv == 0:
            continue
        tvs[len(events)] = tv
        rules[len(events)] = rule.name
        first = first_difference(bad, ideal_reference, real.k + 1)
        if first is not None:
            positions[len(events)] = first
        events.append(excess)
        names.append(f"excess set of '{rule.name}' (exact TV {float(tv):.4g})")
        expected.append(sum((reference.get(s, Fraction(0)) for s in excess), Fraction(0)))
    if not events:
        return None
    # every rule's means of every excess set, on the scenario's ideal tables (the diagnosis ranks the
    # rules by how well they predict the observed means; a rule exact here predicts the reference's)
    predicted = {name: np.array([float(sum((law.get(s, Fraction(0)) for s in members), Fraction(0)))
                                 for members in events]) for name, law in laws.items()}
    vocab, k = real.vocab, real.k
    return EventFamily(
        name="bug-class",
        key=lambda e: sequence_keys(e, vocab, vocab, k),
        n_keys=len(decode_sequences(vocab, k + 1)),
        matrix=_token_matrix(real, events),
        expected=np.array([float(x) for x in expected]),
        names=names,
        zero_tolerance=np.array([x == 0 for x in expected]),
        exact_tv=tvs,
        rules=rules,
        positions=positions,
        predicted=predicted,
    )


def _conforms_family(real: Realisation, rule: StepRule) -> EventFamily:
    vocab, k = real.vocab, real.k
    law = round_law(real.rounded.toy_pair, rule)
    seqs = decode_sequences(vocab, k + 1)
    lengths = sorted({len(s) for s in seqs})
    matrix = np.zeros((len(seqs), len(seqs) + len(lengths)))
    expected: list[Fraction] = []
    names = []
    for i, s in enumerate(seqs):
        matrix[i, i] = 1.0
        expected.append(law.get(s, Fraction(0)))
        names.append(f"emits exactly {s}")
    for j, length in enumerate(lengths):
        col = len(seqs) + j
        for i, s in enumerate(seqs):
            if len(s) == length:
                matrix[i, col] = 1.0
        expected.append(sum((w for s, w in law.items() if len(s) == length), Fraction(0)))
        names.append(f"{length - 1} drafts accepted")
    # zero tolerance only where no lossless implementation can go (a token of target probability 0);
    # a cell the rule never produces but the target allows (a rejection where p == q, after rounding)
    # is drift, held to the dtype's tolerance like every other cell
    target = real.rounded.toy_pair.target
    impossible = [not all(target[s[:i]][t] > 0 for i, t in enumerate(s)) for s in seqs] + [False] * len(lengths)
    return EventFamily(
        name=f"conforms to {rule.name}",
        key=lambda e: sequence_keys(e, vocab, vocab, k),
        n_keys=len(seqs),
        matrix=matrix,
        expected=np.array([float(x) for x in expected]),
        names=names,
        zero_tolerance=np.array(impossible),
        positions={i: len(s) for i, s in enumerate(seqs)},
    )


def build_families(real: Realisation, rule: str | StepRule | None = None) -> list[EventFamily]:
    """The families tested on one realised scenario (``rule``: also test conformance to it); none on a
    certainty probe (``Scenario.certainty_probe``: only its impossible outcomes are tested)."""
    if real.scenario.certainty_probe:
        return []
    lossless = _lossless_family(real)
    families = [lossless, _first_token_family(real)]
    floor = _correction_floor_family(real)
    if floor is not None:
        families.append(floor)
    positions = position_family(real.rounded.exact_row("target", (0, 0)))
    for extra in (_later_token_family(real, lossless), every_token_family(real, lossless), positions):
        if extra is not None:
            families.append(extra)
    if real.enumerable:
        bug = _bug_class_family(real)
        if bug is not None:
            families.append(bug)
        # an unnormalised input changes the emission law a correct rule realises (it rejects where
        # the renormalised law would not), but never the lossless property: conformance is skipped
        if rule is not None and "unnormalised" not in real.scenario.tags:
            families.append(_conforms_family(real, get_step_rule(rule)))
    return [f for f in families if f.size]
