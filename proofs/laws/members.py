"""Exact emitted-sequence laws ``P_bad`` of the zoo's batched members, one scenario at a time (ints and
Fractions only).

Each member's rule is read from its code (``specproof.impls.zoo``, the transformers adapter) and
written here as a :class:`RoundModel`: the probability that a drafted ``x`` is accepted after the
accepted prefix ``s``, and the weights of the token emitted after a rejection of ``x`` at ``s`` (or
the bonus after ``K`` acceptances).  :func:`leading_accepts_law` walks the draft tree exactly
(Fractions), as :func:`~specproof.proofs.laws.sequences.round_law` does for single-step rules::

    walk(s, w):  len(s) = K: emit s+y with w * bonus(s)(y)
                 else for x: walk(s+x, w q(x|s) a(s, x));  emit s+y with w q(x|s) (1 - a(s, x)) final(s, x)(y)

``continue-after-rejection`` does not stop at the first rejection; its law is
:func:`continue_after_rejection_law` (every draft sequence, the Poisson-binomial count of accepts).

What the verifier sees (:class:`RoundView`, plain data): the scenario's rows rounded to the dtype, taken
exactly and *not* renormalised (a float32 row need not sum to 1, and the scenario "target sums below 1"
is built on that), by table and prefix.  Drafts are drawn from the renormalised draft rows
(``RoundView.pair``), as the harness draws them.  Weights are normalised as ``torch.multinomial``
normalises them; a residual with no positive entry falls back to ``p``
(``specproof.impls.kernels.sampling.correction_weights``).  The harness builds the view from a scenario
realised in a dtype (``specproof.harness.bench.member_rows``).

Idealisations, stated: uniforms are continuous (``P(u < r) = min(1, r)``) and ratios exact, except
where the bug is the uniform grid itself: ``u <= p/q`` accepts a ``p = 0`` draft with the real
generator's ``P(u == 0)`` (``RoundView.zero_uniform``, ``2^-24`` for CPU float32); the grid's other
``O(2^-24)`` effects, shared with the exact float32 implementations, are not modelled.  Processed rows
(temperature, min-p, top-k: the tables of :data:`PROCESSED_TABLES`) are the member's own processor's
float output on the rounded row, taken exactly.  transformers sees ``softmax(log p)``, modelled as
``p / sum p`` (its adapter: equal up to about an ulp), accepting a ``p = 0`` draft on ``r == 0`` only
in releases before 5.25.0 (``r <= p/q``; 5.25.0 tests ``r < p/q``); its all-zero-residual division
raises, an outcome (:data:`RAISED`) no lossless verifier has.  Both facts of the installed release and the
dtype (``RoundView.ratio_ties``, ``RoundView.tiny``) are the view's, given by the harness.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from specproof.proofs.laws.sequences import SequenceLaw, ToyPair

__all__ = ["RAISED", "TEMPERED_TARGET", "MIN_P_TARGET", "TOP_K_DRAFT", "PROCESSED_TABLES", "RoundView", "RoundModel",
           "leading_accepts_law", "continue_after_rejection_law", "MEMBER_LAWS", "APPROXIMATE", "CANONICAL_MODEL"]

RAISED: tuple[int, ...] = (-1,)
"""The outcome "the verifier raised on this row" (no emitted sequence; no lossless verifier has it)."""

Row = tuple[Fraction, ...]
Prefix = tuple[int, ...]
ZERO, ONE = Fraction(0), Fraction(1)


def normalised(weights: Row) -> Row:
    total = sum(weights, ZERO)
    return tuple(w / total for w in weights)


def residual(p: Row, q: Row) -> Row:
    """``max(0, p - q)``, or ``p`` where that has no positive entry (the canonical fallback)."""
    w = tuple(max(ZERO, a - b) for a, b in zip(p, q))
    return w if any(w) else p


def ratio_acceptance(p: Row, q: Row, x: int) -> Fraction:
    """``P(u < p(x)/q(x)) = min(1, p/q)`` for a continuous uniform; 0 where ``q(x) = 0``."""
    return min(ONE, p[x] / q[x]) if q[x] > 0 else ZERO


TEMPERED_TARGET, MIN_P_TARGET, TOP_K_DRAFT = "target after temperature", "target after min-p", "draft after top-k"
PROCESSED_TABLES: dict[str, tuple[str, str]] = {TEMPERED_TARGET: ("target", "target-only-temperature"),
                                                MIN_P_TARGET: ("target", "min-p-bonus-only"),
                                                TOP_K_DRAFT: ("draft", "draft-top-k-in-verifier")}
"""The processed tables a member reads beside ``"target"`` and ``"draft"``: table -> (the table it processes,
the member whose own processor processes it, in the dtype)."""


@dataclass(frozen=True)
class RoundView:
    """One realisation's rows as a verifier sees them (module docstring), and the facts of its arithmetic."""

    pair: ToyPair  # renormalised exact pair: the draft law drafts are drawn from
    rows: Callable[[str, Prefix], Row]  # (table, prefix) -> the rounded row, exact, unnormalised
    zero_uniform: Fraction  # P(u == 0) of the verifier's uniforms (torch.rand in the dtype on CPU)
    tiny: Fraction  # the dtype's smallest positive normal (torch.finfo(dtype).tiny)
    ratio_ties: bool  # transformers' installed release accepts on r <= p/q (before 5.25.0)

    @property
    def k(self) -> int:
        return self.pair.k

    @property
    def vocab(self) -> int:
        return self.pair.vocab

    def row(self, table: str, prefix: Prefix) -> Row:
        """The rounded ``table`` row after ``prefix`` (``"target"``, ``"draft"`` or one of
        :data:`PROCESSED_TABLES`), exactly."""
        return self.rows(table, prefix)

    def p(self, prefix: Prefix) -> Row:
        return self.row("target", prefix)

    def q(self, prefix: Prefix) -> Row:
        return self.row("draft", prefix)


@dataclass(frozen=True)
class RoundModel:
    """A leading-accepts round: ``accept(view, s, x)`` and ``final(view, s, rejected)`` (weights, or
    :data:`RAISED`; ``rejected`` is None for the bonus after ``K`` acceptances)."""

    accept: Callable[[RoundView, Prefix, int], Fraction]
    final: Callable[[RoundView, Prefix, int | None], Row | tuple[int, ...]]


def leading_accepts_law(view: RoundView, model: RoundModel) -> SequenceLaw:
    """Exact law of one round of ``model`` (module docstring); :data:`RAISED` keys a raise."""
    law: SequenceLaw = {}

    def emit(prefix: Prefix, weight: Fraction, rejected: int | None) -> None:
        weights = model.final(view, prefix, rejected)
        if weights == RAISED:
            law[RAISED] = law.get(RAISED, ZERO) + weight
            return
        for y, py in enumerate(normalised(weights)):
            if py:
                law[prefix + (y,)] = law.get(prefix + (y,), ZERO) + weight * py

    def walk(prefix: Prefix, weight: Fraction) -> None:
        if len(prefix) == view.k:
            emit(prefix, weight, None)
            return
        for x, qx in enumerate(view.pair.draft[prefix]):
            if not qx:
                continue
            a = model.accept(view, prefix, x)
            if a:
                walk(prefix + (x,), weight * qx * a)
            if a != 1:
                emit(prefix, weight * qx * (1 - a), x)

    walk((), ONE)
    return law


def continue_after_rejection_law(view: RoundView) -> SequenceLaw:
    """``continue-after-rejection``: every draft tested (``u_i < p_i/q_i``, independent), ``n`` = the
    number accepted, emitted ``x_1..x_n`` then the residual at row ``n`` (``p_K`` when ``n = K``)."""
    law: SequenceLaw = {}
    k = view.k
    for drafts in itertools.product(range(view.vocab), repeat=k):
        weight = ONE
        for i in range(k):
            weight *= view.pair.draft[drafts[:i]][drafts[i]]
            if not weight:
                break
        if not weight:
            continue
        counts = [ONE]  # Poisson-binomial law of the number of accepted drafts
        for i in range(k):
            a = ratio_acceptance(view.p(drafts[:i]), view.q(drafts[:i]), drafts[i])
            counts = [c * (1 - a) + (counts[j - 1] * a if j else ZERO) for j, c in enumerate(counts + [ZERO])]
        for n, pn in enumerate(counts):
            if not pn:
                continue
            prefix = drafts[:n]
            weights = view.p(prefix) if n == k else residual(view.p(prefix), view.q(prefix))
            for y, py in enumerate(normalised(weights)):
                if py:
                    law[prefix + (y,)] = law.get(prefix + (y,), ZERO) + weight * pn * py
    return law


# -- the members' rules ----------------------------------------------------------------------------

def _canonical_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    return ratio_acceptance(view.p(s), view.q(s), x)


def _canonical_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.p(s) if rejected is None else residual(view.p(s), view.q(s))


def _from_target(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.p(s)


def _top1_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    p = view.p(s)
    return ONE if x == p.index(max(p)) else ZERO  # ties: the lowest index (stable sort, argmax)


def _le_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    p, q = view.p(s), view.q(s)
    if q[x] > 0 and p[x] == 0:
        return view.zero_uniform  # u <= 0/q holds exactly when u == 0
    return ratio_acceptance(p, q, x)


def _clamped_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    if rejected is None:
        return view.p(s)
    return tuple(max(view.tiny, a - b) for a, b in zip(view.p(s), view.q(s)))


def _stale_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    if rejected is None:
        return view.p(s)
    stale = view.q(s[:-1]) if s else (ZERO,) * view.vocab  # row n reads the draft row of n - 1
    return residual(view.p(s), stale)


def _tempered_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    return ratio_acceptance(view.row(TEMPERED_TARGET, s), view.q(s), x)


def _tempered_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    p = view.row(TEMPERED_TARGET, s)
    return p if rejected is None else residual(p, view.q(s))


def _min_p_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.row(MIN_P_TARGET, s) if rejected is None else residual(view.p(s), view.q(s))


def _top_k_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    return ratio_acceptance(view.p(s), view.row(TOP_K_DRAFT, s), x)


def _top_k_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.p(s) if rejected is None else residual(view.p(s), view.row(TOP_K_DRAFT, s))


def _wrong_bonus_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.p(s[:-1]) if rejected is None else residual(view.p(s), view.q(s))


def _shifted_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    return ratio_acceptance(view.p(s + (x,)), view.q(s), x)  # draft i against target row i + 1


def _shifted_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    return view.p(s) if rejected is None else residual(view.p(s + (rejected,)), view.q(s))


def _renormalised_p(view: RoundView, s: Prefix) -> Row:
    return view.pair.target[s]


def _transformers_accept(view: RoundView, s: Prefix, x: int) -> Fraction:
    p, q = _renormalised_p(view, s), view.pair.draft[s]
    if q[x] > 0 and p[x] == 0 and view.ratio_ties:
        return view.zero_uniform  # releases before 5.25.0: r <= p/q with r = rand_like(...) == 0
    return ratio_acceptance(p, q, x)


def _transformers_final(view: RoundView, s: Prefix, rejected: int | None) -> Row | tuple[int, ...]:
    p = _renormalised_p(view, s)
    if rejected is None:
        return p
    w = tuple(max(ZERO, a - b) for a, b in zip(p, view.pair.draft[s]))
    return w if any(w) else RAISED  # clamp(p - q, 0) / 0: torch.multinomial raises


def _reused_needle_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    """FlashInfer's reused uniform: after rejecting ``x`` (``u >= r = min(1, p/q)``) the inverse-CDF needle
    is that same ``u``, uniform on ``[r, 1)``: ``P(y) = |[c_{y-1}, c_y) & [r, 1)| / (1 - r)``."""
    if rejected is None:
        return view.p(s)
    r = ratio_acceptance(view.p(s), view.q(s), rejected)
    law, below = [], ZERO
    for w in normalised(residual(view.p(s), view.q(s))):
        above = below + w
        law.append(max(ZERO, above - max(below, r)) / (1 - r))
        below = above
    return tuple(law)


def _empty_residual_last_final(view: RoundView, s: Prefix, rejected: int | None) -> Row:
    """FlashInfer's ``sampled_id = d - 1`` start: an all-zero residual emits id ``V - 1``."""
    if rejected is None:
        return view.p(s)
    if not any(a > b for a, b in zip(view.p(s), view.q(s))):
        return (ZERO,) * (view.vocab - 1) + (ONE,)
    return residual(view.p(s), view.q(s))


MEMBER_LAWS: dict[str, Callable[[RoundView], SequenceLaw]] = {
    "resample-from-target": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _from_target)),
    "top1-acceptance": lambda v: leading_accepts_law(v, RoundModel(_top1_accept, _from_target)),
    "greedy-while-sampling": lambda v: leading_accepts_law(v, RoundModel(_top1_accept, _from_target)),
    "continue-after-rejection": continue_after_rejection_law,
    "le-ratio-invcdf": lambda v: leading_accepts_law(v, RoundModel(_le_accept, _canonical_final)),
    "residual-clamped-tiny": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _clamped_final)),
    "stale-residual-buffer": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _stale_final)),
    "target-only-temperature": lambda v: leading_accepts_law(v, RoundModel(_tempered_accept, _tempered_final)),
    "min-p-bonus-only": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _min_p_final)),
    "draft-top-k-in-verifier": lambda v: leading_accepts_law(v, RoundModel(_top_k_accept, _top_k_final)),
    "bonus-from-wrong-row": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _wrong_bonus_final)),
    "target-rows-shifted": lambda v: leading_accepts_law(v, RoundModel(_shifted_accept, _shifted_final)),
    "transformers-speculative-sampling":
        lambda v: leading_accepts_law(v, RoundModel(_transformers_accept, _transformers_final)),
    # runtime layouts behind their adapters (impls.runtime_layouts): vLLM v1 float32 p/q >= u is the
    # u == 0 rule above; vLLM v0's shipped residual is the clamped one; FlashInfer's two mutants
    "vllm-v1-layout-float32-ge": lambda v: leading_accepts_law(v, RoundModel(_le_accept, _canonical_final)),
    "vllm-v0-layout-clamped-residual": lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _clamped_final)),
    "flashinfer-layout-reused-uniform":
        lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _reused_needle_final)),
    "flashinfer-layout-empty-residual-last":
        lambda v: leading_accepts_law(v, RoundModel(_canonical_accept, _empty_residual_last_final)),
}
"""member name -> exact law of one round on a :class:`RoundView` (greedy-while-sampling accepts
``x == argmax p``, the same rule as top-1 acceptance; both resample from ``p``).  The races of the
vLLM layouts (``argmax w / E``) and the inverse CDF of FlashInfer's draw the normalised weights,
idealised as above."""

APPROXIMATE: dict[str, str] = {
    "transformers-speculative-sampling":
        "law modelled, not exact: transformers' softmax(log p) taken as p / sum p (equal up to about an ulp "
        "per entry, its adapter's docstring), so its N* is shown but kept out of the N* goals",
}
"""Members whose law is a model rather than exact, with the reason (kept out of the N* goals)."""

CANONICAL_MODEL = RoundModel(_canonical_accept, _canonical_final)
"""The canonical rule on the rows as seen (a control: on exactly normalised rows it is the target law)."""
