"""Scenarios: target/draft model pairs whose laws the harness knows exactly.

A :class:`Scenario` is a toy autoregressive pair in which the conditional law at position ``i``
depends on the prefix through its length and the *class* of its last token, ``class(v) = v mod C``
(``C = V`` makes it the full last token).  Tables: ``target[i, c, :]`` for ``i = 0..K`` and
``draft[i, c, :]`` for ``i = 0..K-1`` (position 0 uses class row 0).  Prefix dependence is what the
runtimes' own tests lack: a bug in position indexing, truncation or the bonus row changes the law
only when rows differ by position and prefix.

:meth:`Scenario.realise` rounds the tables to the dtype under test; everything the harness treats as
"the exact law" is computed from those rounded values, converted exactly and renormalised exactly
per row (the verifier never sees anything else), so rounding of the *inputs* is not counted as drift.

The default suite mixes context-free pairs (what runtimes test), prefix-dependent pairs, edge cases
(position-disjoint supports, ``p == q``, disjoint supports, one-hot, exact zeros) and adversarial
pairs (the proofs' counterexamples: resampling from ``p``, top-k acceptance, the block-verification
check vector), plus one large-vocabulary pair (V = 1,000, K = 4) and one tiled scenario per
vocabulary size asked for (:mod:`.tiled`, ``--vocab``); without ``--vocab``, the tiled rows at V = 151,936
as a certainty probe (:func:`.tiled.tiled_probe`).  :func:`scenario_strategy` exposes random scenarios as a
hypothesis strategy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Sequence

import numpy as np
import torch
from hypothesis import strategies as st

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.sequences import MAX_SEQUENCES, ToyPair

from specproof.harness.exact.dtypes import TORCH_DTYPES
from specproof.harness.exact.rounded import RoundedPair, exact_sum

__all__ = ["Scenario", "Realisation", "default_suite", "scenario_strategy", "CERTAINTY_PROBE", "zero_site_ladder",
           "ZERO_SITE_POSITIONS"]

DYADIC_RESOLUTION = 256  # small random tables use multiples of 1/256: exact in every dtype, bf16 too
DYADIC_MAX_VOCAB = 64
CERTAINTY_PROBE = "certainty-probe"  # tag: only impossible outcomes are tested there (engine: probe quotas)


def _dyadic(table: np.ndarray) -> np.ndarray:
    """Rows rounded to multiples of 1/256 summing to exactly 1 (largest-remainder rounding).

    Such values have at most 8 significant bits, so they are exact in bfloat16 and wider: the
    verifier sees the very law the harness reasons about, in every dtype."""
    scaled = table * DYADIC_RESOLUTION
    counts = np.floor(scaled)
    short = (DYADIC_RESOLUTION - counts.sum(-1)).astype(np.int64)
    order = np.argsort(-(scaled - counts), axis=-1, kind="stable")
    flat_counts, flat_order = counts.reshape(-1, table.shape[-1]), order.reshape(-1, table.shape[-1])
    for row, missing in enumerate(short.reshape(-1)):
        flat_counts[row, flat_order[row, :missing]] += 1
    return flat_counts.reshape(table.shape) / DYADIC_RESOLUTION


@dataclass(frozen=True)
class Scenario:
    """Prefix-dependent toy pair: conditionals indexed by position and class of the last token."""

    name: str
    description: str
    target: np.ndarray  # [K+1, C, V] float64, rows sum to 1
    draft: np.ndarray  # [K, C, V]
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        t, d = np.asarray(self.target), np.asarray(self.draft)
        if t.ndim != 3 or d.ndim != 3 or t.shape[0] != d.shape[0] + 1 or t.shape[1:] != d.shape[1:]:
            raise SpecproofInputError("target", f"tables have shapes {t.shape} and {d.shape}",
                                      "use target [K+1, C, V] and draft [K, C, V]")
        for name, table in (("target", t), ("draft", d)):
            if not np.all(np.isfinite(table)) or np.any(table < 0):
                raise SpecproofInputError(name, "has negative or non-finite entries", "pass laws")
            if np.any(table.sum(-1) <= 0):
                raise SpecproofInputError(name, "has an all-zero row", "every row must be a law")

    @property
    def k(self) -> int:
        return self.draft.shape[0]

    @property
    def classes(self) -> int:
        return self.draft.shape[1]

    @property
    def vocab(self) -> int:
        return self.draft.shape[2]

    @property
    def certainty_probe(self) -> bool:
        """Only impossible outcomes are tested here (no event families: :func:`.events.build_families`)."""
        return CERTAINTY_PROBE in self.tags

    @property
    def context_free(self) -> bool:
        return bool(np.all(self.target == self.target[0, 0]) and np.all(self.draft == self.draft[0, 0]))

    @classmethod
    def from_laws(cls, name: str, description: str, p: Sequence[Any], q: Sequence[Any], k: int,
                  tags: tuple[str, ...] = ()) -> "Scenario":
        """The same p and q at every position (context-free)."""
        p_row = np.array([float(x) for x in p], dtype=np.float64)
        q_row = np.array([float(x) for x in q], dtype=np.float64)
        vocab = len(p_row)
        target = np.broadcast_to(p_row, (k + 1, vocab, vocab)).copy()
        draft = np.broadcast_to(q_row, (k, vocab, vocab)).copy()
        return cls(name, description, target, draft, ("context-free",) + tags)

    @classmethod
    def random(cls, name: str, vocab: int, k: int, seed: int, *, classes: int | None = None,
               concentration: float = 0.5, zeros: float = 0.0, closeness: float = 0.0,
               tags: tuple[str, ...] = ()) -> "Scenario":
        """Dirichlet rows per (position, class); ``zeros`` plants exact zeros (at most half a row);
        ``closeness`` in [0, 1) pulls the draft towards the target (near-identical pairs)."""
        classes = vocab if classes is None else classes
        rng = np.random.default_rng(seed)
        target = rng.dirichlet(np.full(vocab, concentration), size=(k + 1, classes))
        draft = rng.dirichlet(np.full(vocab, concentration), size=(k, classes))
        draft = closeness * target[:k] + (1 - closeness) * draft
        if vocab <= DYADIC_MAX_VOCAB:
            target, draft = _dyadic(target), _dyadic(draft)
        if zeros > 0:
            for table in (target, draft):
                mask = rng.random(table.shape) < zeros
                mask[..., : vocab // 2 + 1] = False  # keep at least half of each row positive
                perm = np.argsort(rng.random(table.shape), axis=-1)
                table *= ~np.take_along_axis(mask, perm, axis=-1)
                table /= table.sum(-1, keepdims=True)
            if vocab <= DYADIC_MAX_VOCAB:
                target, draft = _dyadic(target), _dyadic(draft)
        return cls(name, f"random prefix-dependent pair (V={vocab}, K={k}, C={classes}, seed={seed})",
                   target, draft, ("prefix-dependent",) + tags)

    def greedy(self) -> "Scenario":
        """The same pair with one-hot target rows at ``argmax p`` (lowest index on ties): the
        temperature-0 target, for which greedy verification is lossless."""
        hot = np.zeros_like(self.target)
        np.put_along_axis(hot, self.target.argmax(-1)[..., None], 1.0, axis=-1)
        return Scenario(f"{self.name} (greedy target)", f"{self.description}; target one-hot at argmax",
                        hot, self.draft.copy(), self.tags + ("greedy",))

    def ideal_pair(self, resolution: int = 1024) -> ToyPair:
        """The tables as small-denominator rationals (``limit_denominator``), renormalised exactly:
        cheap exact laws for choosing bug-class events (never used as a null probability)."""
        def row(values: np.ndarray) -> tuple[Fraction, ...]:
            fr = [Fraction(float(x)).limit_denominator(resolution) for x in values]
            total = sum(fr, Fraction(0))
            return tuple(x / total for x in fr)

        classes = self.classes

        def key(prefix: tuple[int, ...]) -> tuple[int, int]:
            return len(prefix), (prefix[-1] % classes) if prefix else 0

        rows_t = {(i, c): row(self.target[i, c]) for i in range(self.k + 1) for c in range(classes)}
        rows_d = {(i, c): row(self.draft[i, c]) for i in range(self.k) for c in range(classes)}
        return ToyPair.from_functions(self.vocab, self.k, lambda s: rows_t[key(s)], lambda s: rows_d[key(s)])

    def realise(self, dtype: str, device: str = "cpu") -> "Realisation":
        return Realisation(self, dtype, torch.device(device))


class Realisation:
    """A scenario rounded to one dtype on one device, with its exact laws."""

    def __init__(self, scenario: Scenario, dtype: str, device: torch.device):
        self.scenario = scenario
        self.dtype = dtype
        self.device = device
        torch_dtype = TORCH_DTYPES[dtype]
        self.target = torch.tensor(scenario.target).to(torch_dtype)
        self.draft = torch.tensor(scenario.draft).to(torch_dtype)
        self.rounded = RoundedPair.from_tables(self.target, self.draft)  # the exact law of what is verified
        self.target_device = self.target.to(device)
        self.draft_device = self.draft.to(device)
        # draft sampling: inverse CDF over the rounded rows, renormalised in float64
        draft64 = self.draft.double()
        self.draft_cdf = torch.cumsum(draft64 / draft64.sum(-1, keepdim=True), -1)
        self._buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def k(self) -> int:
        return self.scenario.k

    @property
    def vocab(self) -> int:
        return self.scenario.vocab

    @property
    def classes(self) -> int:
        return self.scenario.classes

    # -- exact laws (all from the one rounded pair) -----------------------------------------
    @cached_property
    def support(self) -> int:
        """How many tokens some rounded target or draft row of the scenario gives positive probability:
        the ``V`` of the null band's derivation (:mod:`specproof.harness.exact.tolerances`: a zero adds,
        and a zero weight is drawn, exactly)."""
        vocab = self.target.shape[-1]
        positive = (self.target > 0).reshape(-1, vocab).any(0) | (self.draft > 0).reshape(-1, vocab).any(0)
        return int(positive.sum())

    @cached_property
    def target_class_transitions(self) -> list[list[list[Fraction]]]:
        """``T[i][c][c']``: exact probability that token ``i+1`` has class ``c'`` given the last
        prefix class ``c`` (rounded rows renormalised exactly)."""
        return [[[exact_sum(self.exact_row("target", i, c)[cls::self.classes]) for cls in range(self.classes)]
                 for c in range(self.classes if i > 0 else 1)] for i in range(self.k + 1)]

    def exact_row(self, table: str, position: int, cls: int) -> tuple[Fraction, ...]:
        """One rounded row as exact rationals, renormalised exactly."""
        return self.rounded.exact_row(table, (position, cls))

    @property
    def enumerable(self) -> bool:
        return self.rounded.enumerable

    @property
    def toy_pair(self) -> ToyPair:
        """The realised pair as an exact :class:`ToyPair` (small vocabularies only)."""
        if not self.enumerable:
            raise SpecproofInputError("scenario", f"V^(K+1) = {self.vocab ** (self.k + 1)} is too large "
                                      "to enumerate", f"use V^(K+1) <= {MAX_SEQUENCES}")
        return self.rounded.toy_pair

    # -- batches -----------------------------------------------------------------------------
    def sample_drafts(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``[n, K]`` int64 drafts, autoregressive from the rounded draft law (CPU, float64).

        Inverse CDF per (position, class) row: one sorted search per class, O(n log V), in numpy
        (single-threaded: torch's threaded ``searchsorted`` is 25x slower on a busy 2-core machine)."""
        ids = np.empty((n, self.k), dtype=np.int64)
        cls = np.zeros(n, dtype=np.int64)
        cdfs = self._draft_cdf_numpy
        for i in range(self.k):
            u = torch.rand(n, dtype=torch.float64, generator=generator).numpy()
            token = np.empty(n, dtype=np.int64)
            for c in (range(self.classes) if i > 0 else (0,)):
                rows = np.flatnonzero(cls == c) if i > 0 else None
                cdf = cdfs[i, c]
                draws = u if rows is None else u[rows]
                picked = np.minimum(np.searchsorted(cdf, draws * cdf[-1], side="right"), self.vocab - 1)
                if rows is None:
                    token = picked
                else:
                    token[rows] = picked
            ids[:, i] = token
            cls = token % self.classes
        return torch.from_numpy(ids)

    @cached_property
    def _draft_cdf_numpy(self) -> np.ndarray:
        return self.draft_cdf.numpy()

    @cached_property
    def target_zero_mask(self) -> np.ndarray:
        """``[K+1, C, V]`` bool: the rounded target gives the token probability exactly 0 there."""
        return (self.target == 0).numpy()

    def rows(self, draft_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``draft_probs [n, K, V]`` and ``target_probs [n, K+1, V]`` for the drafted prefixes.

        Written into buffers reused from call to call (a fresh multi-GB allocation per batch costs
        more than the copy): a verifier must not keep references to its inputs between calls."""
        ids = draft_ids.to(self.device)
        n = ids.shape[0]
        prev = torch.cat([torch.zeros((n, 1), dtype=torch.int64, device=self.device),
                          ids % self.classes], dim=1)  # class of the last prefix token, per position
        flat = prev + torch.arange(self.k + 1, device=self.device) * self.classes  # row of [(K+1)*C, V]
        vocab = self.vocab
        if self._buffers is None or self._buffers[0].shape[0] < n * (self.k + 1):
            self._buffers = (self.target_device.new_empty((n * (self.k + 1), vocab)),
                             self.draft_device.new_empty((n * self.k, vocab)))
        target_buf = self._buffers[0][: n * (self.k + 1)]
        draft_buf = self._buffers[1][: n * self.k]
        torch.index_select(self.target_device.reshape(-1, vocab), 0, flat.reshape(-1), out=target_buf)
        torch.index_select(self.draft_device.reshape(-1, vocab), 0, flat[:, :-1].reshape(-1), out=draft_buf)
        return draft_buf.view(n, self.k, vocab), target_buf.view(n, self.k + 1, vocab)


def _context_free_random(name: str, vocab: int, k: int, seed: int) -> Scenario:
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(vocab)), rng.dirichlet(np.ones(vocab))
    return Scenario.from_laws(name, f"one random (p, q) at every position (V={vocab}, K={k}, seed={seed})",
                              p, q, k)


def _identical(name: str, vocab: int, k: int, seed: int) -> Scenario:
    target = np.random.default_rng(seed).dirichlet(np.ones(vocab), (k + 1, vocab))
    return Scenario(name, "p == q at every prefix: the residual has mass 0 and is never reached",
                    target, target[:-1].copy(), ("edge", "prefix-dependent"))


def _position_disjoint(name: str) -> Scenario:
    """Each position's target on its own two tokens; the first draft half on two tokens no target allows.

    V = 8, K = 2: ``p_i`` lives on ``{2i, 2i+1}`` (``(3/4, 1/4)``, ``(1/4, 3/4)``, ``(1/2, 1/2)``),
    tokens 6 and 7 have target probability 0 everywhere, ``q_0 = (3/8, 1/8)`` on ``{0, 1}`` and
    ``1/4`` on each of 6 and 7, ``q_1 = p_1``.  A lossless verifier emits at position ``i`` only
    tokens of ``p_i``'s support, so a target row read at the wrong position (every row), an emitted
    rejected draft (a draft of 6 or 7 followed by an accepted one: probability 1/2 per row) or a
    bonus drawn from another row (probability 1/2 per row) emits a token of target probability 0:
    a certain finding within the screening pass's first 4 rows with probability 1, 15/16 and 15/16.
    All values are dyadic (exact in bfloat16).  A certainty probe: only those impossible outcomes are
    tested here (no event families, so no share of alpha), on the rows that see a rate of them of the
    detectable TV."""
    vocab, k = 8, 2
    target = np.zeros((k + 1, 1, vocab))
    for i, law in enumerate(((0.75, 0.25), (0.25, 0.75), (0.5, 0.5))):
        target[i, 0, 2 * i: 2 * i + 2] = law
    draft = np.zeros((k, 1, vocab))
    draft[0, 0, :2] = (0.375, 0.125)
    draft[0, 0, 6:] = 0.25
    draft[1, 0] = target[1, 0]
    return Scenario(name, "p_i on its own tokens {2i, 2i+1}; q_0 half on tokens no target allows: a "
                    "position mix-up or an emitted rejected draft gives a probability-0 token",
                    target, draft, ("edge", "position-dependent", CERTAINTY_PROBE))


def _block_vector() -> tuple[list[Fraction], list[Fraction]]:
    third = Fraction(1, 3)
    return [third, 2 * third], [2 * third, third]


@functools.lru_cache(maxsize=8)
def _default_suite(large_vocab: int, vocab: tuple[int, ...]) -> tuple[Scenario, ...]:
    from specproof.harness.check.contracts.batched.tiled import tiled_scenario

    return tuple(_build_default_suite(large_vocab)) + tuple(tiled_scenario(v) for v in vocab)


ZERO_SITE_POSITIONS = (2, 3, 4)  # draft position 1 is met by the default suite's zero-target scenarios


def zero_site_ladder(position: int) -> Scenario:
    """A scenario whose only token of target probability 0 is tried at draft ``position`` (``K = position``,
    ``V = 2``): every earlier draft has ``p == q`` (always accepted), the site's draft row puts 3/4 on the
    target's zero.  An injected zero coin meets the site in ``3/4 f`` of the rows (the RNG edge injection
    runs on it: :mod:`.sites`)."""
    if position < 1:
        raise SpecproofInputError("position", f"{position} is not a draft position", "pass 1 or more")
    half = [0.5, 0.5]
    target = np.array([[half]] * (position - 1) + [[[0.0, 1.0]]] + [[half]])
    draft = np.array([[half]] * (position - 1) + [[[0.75, 0.25]]])
    return Scenario(f"zero site at draft position {position}", "every earlier draft accepted; the site's draft is "
                    "a token of target probability 0 w.p. 3/4", target, draft, ("edge", "zero-site"))


def default_suite(*, large_vocab: int = 1000, vocab: Sequence[int] | None = None) -> list[Scenario]:
    """The scenarios the batched contract runs by default (fixed seeds: results are reproducible).

    The position-disjoint certainty probe comes first: the screening pass reads the suite in order,
    and a position mix-up is a certain finding there in its first 4 rows with probability 1 or 15/16.
    Its quota is small (254 rows at the default bound: ``engine.plan_quota``), so a bug found
    elsewhere pays its first 4 rows and few more: screening deepens a stream only when it is not far
    ahead in rows over quota.

    ``vocab``: the sizes of the statistical tiled scenarios (:mod:`.tiled`); ``None``: none, and the
    runtime-sized certainty probe :func:`.tiled.tiled_probe` (V = 151,936) last; ``()``: no tiled scenario.
    The same Scenario objects are returned on every call, so their exact laws are computed once."""
    from specproof.harness.check.contracts.batched.tiled import tiled_probe
    from specproof.harness.check.vocab import vocab_sizes

    if vocab is None:
        return list(_default_suite(large_vocab, ())) + [tiled_probe()]
    empty = isinstance(vocab, (tuple, list)) and not vocab
    return list(_default_suite(large_vocab, () if empty else tuple(vocab_sizes(vocab))))


def _build_default_suite(large_vocab: int) -> list[Scenario]:
    h = Fraction(1, 2)
    block_p, block_q = _block_vector()
    suite = [
        _position_disjoint("position-disjoint supports"),
        _context_free_random("runtime-style context-free", 6, 2, seed=101),
        Scenario.random("prefix-dependent V4 K2", 4, 2, seed=102, zeros=0.2),
        Scenario.random("prefix-dependent V3 K3", 3, 3, seed=103),
        Scenario.random("prefix-dependent V2 K4", 2, 4, seed=104),
        Scenario.random("near-identical V4 K2", 4, 2, seed=105, closeness=0.9, tags=("edge",)),
        _identical("identical p == q", 4, 2, seed=106),
        Scenario.from_laws("disjoint supports", "p and q never overlap: every draft is rejected",
                           [h, h, 0, 0], [0, 0, h, h], 2, tags=("edge",)),
        Scenario.from_laws("target sums below 1 (p <= q)",
                           "unnormalised float target, p = q (1 - 2^-7): every token has p <= q, so a "
                           "rejection meets an all-zero residual max(0, p - q)",
                           [Fraction(127, 256), Fraction(127, 256), 0], [h, h, 0], 2,
                           tags=("edge", "unnormalised")),
        Scenario.from_laws("one-hot target", "p is a point mass", [0, 1, 0], [Fraction(1, 3)] * 3, 2,
                           tags=("edge",)),
        Scenario.from_laws("adversarial resample-from-p", "proofs counterexample: p=(1/2,1/2), q=(1,0)",
                           [h, h], [1, 0], 2, tags=("adversarial",)),
        Scenario.from_laws("adversarial top-k", "proofs counterexample: p=(.5,.3,.2), q=(.2,.3,.5)",
                           [h, Fraction(3, 10), Fraction(1, 5)], [Fraction(1, 5), Fraction(3, 10), h], 2,
                           tags=("adversarial",)),
        Scenario.from_laws("block check vector", "p=(1/3,2/3), q=(2/3,1/3), K=2 (Sun et al. 2024)",
                           block_p, block_q, 2, tags=("adversarial",)),
    ]
    if large_vocab:
        suite.append(Scenario.random(f"large vocabulary V{large_vocab} K4", large_vocab, 4, seed=107,
                                     classes=4, concentration=0.1, tags=("large",)))
    return suite


def scenario_strategy(*, max_vocab: int = 5, max_k: int = 3) -> st.SearchStrategy[Scenario]:
    """Random small prefix-dependent scenarios (hypothesis strategy for users' own tests)."""
    return st.builds(
        lambda v, k, seed, zeros, closeness: Scenario.random(f"hypothesis V{v} K{k} #{seed}", v, k, seed,
                                                             zeros=zeros, closeness=closeness),
        st.integers(2, max_vocab), st.integers(1, max_k), st.integers(0, 2**31 - 1),
        st.sampled_from([0.0, 0.3]), st.sampled_from([0.0, 0.5, 0.95]),
    )
