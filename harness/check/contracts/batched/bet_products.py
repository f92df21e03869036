"""Every-token bet products: one ceiling per class set ``U`` and bet fraction ``f``, over all emitted tokens.

Identity.  A system is lossless when its emitted sequence, continued by target sampling to ``K + 1``
tokens, follows the target law.  Comparing the laws of the first ``j`` continued tokens gives, for
every prefix ``s`` of ``j - 1`` tokens and every token ``y``,
``P(L >= j, X_{<=j} = (s, y)) = P(L >= j, X_{<j} = s) p(y | s)`` (``L`` the emitted length): each
emitted token, given its prefix and that it is emitted, follows the target.

Event.  With ``pi_j = P_target(class of token j in U | prefix)`` (the class process is Markov: a target
row depends on the position and the previous token's class only), the fair bet
``b_j = 1 + f (1[token j in U] - pi_j) / pi_j`` (1 where ``pi_j`` is 0 or 1) has conditional mean 1,
so the product ``B = prod_{j <= L} b_j`` over the emitted tokens has mean 1 (the tower rule).  And
``B(s) = E[G(Z) | s]``, ``G`` the same product over all ``K + 1`` tokens of the continued sequence
``Z`` (the continuation's factors have mean 1), so ``Y = B / max G`` is a Rao-Blackwellised
contribution in ``[0, 1]`` of mean ``P = 1 / max G``: a system whose continued law is within ``tau``
of the target in total variation has ``E[Y] <= P + tau``.  A ceiling (``sides = "upper"``): a
shortfall of the product for ``U`` is an excess for the complement's (its bet on the complement is
the opposite one), which is tested at no further share of alpha.  The float64 evaluation (each
factor within ``3u`` relative, ``u = 2^-53``; ``K + 1`` factors, one division) keeps ``Y`` within
``(6K + 7) u`` and ``P`` within ``(3K + 4) u`` to first order: the band adds twice their sum,
``(18K + 22) u`` (``tolerance_extra``).

Why.  A bug that tilts every token's law a little the same way (a temperature applied to one side
only) moves each single-position event a little; a row's product compounds the tilt over all its
emitted tokens.  The growth of ``E log B`` peaks near ``f = 0.3`` on the zoo's tilts; larger fractions
grow ``max G``, and with it the tolerance's weight ``tau max G``, like ``(1 + f (1 - pi) / pi)^(K+1)``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from specproof.harness.check.events.family import BET_PRODUCT_FAMILY, EventFamily, decode_sequences
from specproof.harness.check.contracts.batched.scenarios import Realisation

__all__ = ["every_token_family", "BET_PRODUCT_FRACTIONS", "MAX_PRODUCT_CLASSES"]

BET_PRODUCT_FRACTIONS = (Fraction(1, 8), Fraction(1, 4), Fraction(2, 5))
MAX_PRODUCT_CLASSES = 8  # 2^C - 2 class sets: 254 at C = 8


def _factors(real: Realisation, unions: list[tuple[int, ...]]) -> list[list[np.ndarray]]:
    """``factor[pos][prev][y]``: the bet ``b`` of every event (union-major, then fraction) at token
    position ``pos`` after a token of class ``prev``, when the token's class is ``y``: ``[C, events]``."""
    fractions = np.array([float(f) for f in BET_PRODUCT_FRACTIONS])
    out = []
    for rows in real.target_class_transitions:  # rows[prev][class], exact
        per_prev = []
        for row in rows:
            table = np.ones((real.classes, len(unions), len(fractions)))
            for e, sub in enumerate(unions):
                pi = sum((row[u] for u in sub), Fraction(0))
                if 0 < pi < 1:
                    hit = np.isin(np.arange(real.classes), sub)
                    odds = float((1 - pi) / pi)
                    table[hit, e] = 1.0 + fractions * odds
                    table[~hit, e] = 1.0 - fractions
            per_prev.append(table.reshape(real.classes, -1))
        out.append(per_prev)
    return out


def every_token_family(real: Realisation, lossless: EventFamily) -> EventFamily | None:
    """Bet-product ceilings over class sets and fractions (module docstring), keyed as ``lossless``."""
    c, k = real.classes, real.k
    if k == 0 or not 2 <= c <= MAX_PRODUCT_CLASSES:
        return None
    unions = [sub for size in range(1, c) for sub in itertools.combinations(range(c), size)]
    factors = _factors(real, unions)
    seqs = decode_sequences(c, k + 1)
    index = {s: i for i, s in enumerate(seqs)}
    products = np.ones((len(seqs), len(unions) * len(BET_PRODUCT_FRACTIONS)))
    for i, s in enumerate(seqs):  # code order: every prefix comes before its extensions
        pos = len(s) - 1
        parent = products[index[s[:-1]]] if pos else 1.0
        products[i] = parent * factors[pos][s[-2] if pos else 0][s[-1]]
    full = np.array([len(s) == k + 1 for s in seqs])
    top = products[full].max(axis=0)  # max G >= 1 (all-miss and all-hit rows bracket 1)
    keep = np.flatnonzero(top > 1.0)  # a product that is 1 on every row (pi is 0 or 1 everywhere) tests nothing
    if not keep.size:
        return None
    products, top = products[:, keep], top[keep]
    kept = set(keep.tolist())
    events = [e for i, e in enumerate(itertools.product(unions, BET_PRODUCT_FRACTIONS)) if i in kept]
    label = "token" if c == real.vocab else f"token's class mod {c}"
    names = [f"bets on '{label} in {set(sub)}' at fraction {f}: their product over the emitted tokens, "
             f"divided by its largest value {t:.4g}" for (sub, f), t in zip(events, top)]
    return EventFamily(
        name=BET_PRODUCT_FAMILY,
        key=lossless.key,
        n_keys=lossless.n_keys,
        matrix=np.clip(products / top, 0.0, 1.0),
        expected=1.0 / top,
        names=names,
        zero_tolerance=np.zeros(len(names), dtype=bool),
        sides="upper",
        tolerance_extra=(18 * k + 22) * 2.0**-53,
    )
