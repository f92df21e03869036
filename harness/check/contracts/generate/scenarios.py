"""Scenarios of the ``generate`` contract: table model pairs, sampling settings and ``N``, each built to
make some bug class visible.

Tables are logits ``[P, C, V]`` on a grid of ``1/64`` (exact in float32): seeded normal draws scaled
and shifted, so the pair's law depends on position and on the class of the last token.  Every suite
member keeps its top-k, top-p and min-p decisions away from the float boundary (the exact processing
refuses otherwise, :mod:`specproof.harness.exact.sampling`; these thresholds clear every row's
decisions even by float16's margin ``(V + 3) 2^-11``), and has ``N = 5 > K + 1`` for the default
``K = 2``, so round bookkeeping matters.

* ``plain-T1`` / ``T0.7``: no filter, temperature 1 and 0.7 (a temperature applied to one side only);
* ``top-k2-offsupport``: the draft favours tokens the target's top-2 removes (drafts that propose
  processed-away tokens: verifying against the unprocessed target emits impossible tokens);
* ``top-p0.75``, ``min-p0.32``, ``combo``: each filter, and all four together;
* ``llm-logits``: raw-LLM-sized logits ``20 +- 3`` on a grid finer than bfloat16's ``1/8`` there, the
  draft close to the target (high acceptance): a bfloat16 draft law differs from the float32 ``q``;
* ``prefix-dependent``: ``C = V = 4``, ``N = 6``, strong dependence on the last token and position.

:func:`with_sampling` re-targets the suite's pairs to one sampling setting (the CLI's flags).
:func:`zero_site_ladder` builds the injection-only scenarios that put a token of target probability 0
at one position of the round (:mod:`.sites`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts.generate.signature import ModelPair
from specproof.harness.check.contracts.generate.models import TablePair
from specproof.harness.exact.sampling import Sampling

__all__ = ["PipelineScenario", "pipeline_suite", "with_sampling", "table_pair", "zero_site_ladder", "ZERO_SITE",
           "DEFAULT_NEW_TOKENS"]

DEFAULT_NEW_TOKENS = 5
GRID = 64


@dataclass(frozen=True)
class PipelineScenario:
    """A model pair, a sampling setting and the number of new tokens ``N``; ``edge_labels``: the only RNG
    edges the injection tries on it (None: all; :mod:`specproof.harness.check.intercept.injection`)."""

    name: str
    pair: ModelPair
    sampling: Sampling
    new_tokens: int
    description: str = ""
    tags: tuple[str, ...] = field(default=())
    edge_labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.new_tokens, bool) or not isinstance(self.new_tokens, int) or self.new_tokens < 1:
            raise SpecproofInputError("new_tokens", f"{self.new_tokens!r} is not an integer >= 1",
                                      f"pass e.g. {DEFAULT_NEW_TOKENS}")


def table_pair(name: str, seed: int, vocab: int, classes: int, positions: int, *, scale: float = 1.5,
               offset: float = 0.0, draft_noise: float = 1.0, draft_bias: np.ndarray | None = None,
               prompt: tuple[int, ...] = (0, 1)) -> TablePair:
    """Seeded tables on the 1/64 grid: target ``offset + scale N(0,1)``, draft = target + ``draft_noise``
    ``N(0,1)`` (+ ``draft_bias`` per token)."""
    rng = np.random.default_rng(seed)
    target = offset + scale * rng.standard_normal((positions, classes, vocab))
    draft = target + draft_noise * rng.standard_normal((positions, classes, vocab))
    if draft_bias is not None:
        draft = draft + draft_bias
    return TablePair(name, prompt, np.round(target * GRID) / GRID, np.round(draft * GRID) / GRID)


def _offsupport_bias(vocab: int) -> np.ndarray:
    return np.linspace(1.5, -1.5, vocab)[::-1].copy()  # the draft leans towards high token ids


def pipeline_suite() -> list[PipelineScenario]:
    """The default suite (module docstring)."""
    n = DEFAULT_NEW_TOKENS
    base = table_pair("base", 11, 5, 5, n + 1)
    six = table_pair("six", 23, 6, 3, n + 1)
    off = table_pair("offsupport", 5, 6, 3, n + 1, draft_bias=_offsupport_bias(6))
    llm = table_pair("llm", 7, 8, 2, 4, scale=2.0, offset=20.0, draft_noise=0.05)
    prefix = table_pair("prefix", 3, 4, 4, 7, scale=2.5)
    return [
        PipelineScenario("plain-T1", base, Sampling(1.0), n, "no processing at temperature 1"),
        PipelineScenario("T0.7", base, Sampling(0.7), n, "temperature 0.7 only"),
        PipelineScenario("top-k2-offsupport", off, Sampling(1.0, top_k=2), n,
                         "top-k 2; the draft often proposes tokens the target's top-k removes", ("zeros", "inject")),
        PipelineScenario("top-p0.75", six, Sampling(1.0, top_p=0.75), n, "top-p 0.75", ("zeros",)),
        PipelineScenario("min-p0.32", six, Sampling(1.0, min_p=0.32), n, "min-p 0.32", ("zeros",)),
        PipelineScenario("combo", off, Sampling(0.8, top_k=4, top_p=0.9, min_p=0.05), n,
                         "temperature 0.8, top-k 4, top-p 0.9, min-p 0.05", ("zeros", "inject")),
        PipelineScenario("llm-logits", llm, Sampling(1.0), 4, "logits 20 +- 3, draft within 0.05 of the target"),
        PipelineScenario("prefix-dependent", prefix, Sampling(1.0), 6, "laws by position and last token, N = 6"),
    ]


ZERO_SITE = "zero site at round position"
LADDER_SAMPLING = Sampling(1.0, top_k=2)
_KEPT, _DROPPED = (1.0, 0.5), (-1.0, -1.5)  # logits of the two tokens top-k 2 keeps, of the two it removes


def zero_site_ladder(position: int) -> PipelineScenario:
    """The ladder of round position ``position``: ``V = 4`` (tokens ``a, b, y, z``), one class (the laws depend
    on the position only), top-k 2 on both sides, ``N = position``.  Before the site target and draft have
    the same logits (``a, b`` kept: ``p == q``, every draft accepted by an exact rule); at token ``position``
    the target keeps ``a, b`` and the draft keeps ``y, z``: every draft there has target probability 0 and
    positive draft probability.  In a first round of at least ``position`` drafts, every row tries such a
    token at the site, so an injected zero coin there (``f`` of the rows) accepted by ``u <= p/q`` is a
    certain finding.  Top-k 2, not top-1: a pipeline may route top-1 to a greedy path that draws no coin.
    Injection only (``edge_labels``: the zero edges), never in the statistics; its processing is its own,
    whatever the check's sampling flags."""
    if isinstance(position, bool) or not isinstance(position, int) or position < 1:
        raise SpecproofInputError("position", f"{position!r} is not a round position", "pass 1 or more")
    same = np.array(_KEPT + _DROPPED)
    target = np.tile(same, (position, 1, 1))
    draft = target.copy()
    draft[position - 1, 0] = _DROPPED + _KEPT
    pair = TablePair(f"zero-site ladder {position}", (0,), target, draft)
    return PipelineScenario(f"{ZERO_SITE} {position}", pair, LADDER_SAMPLING, position,
                            f"{position - 1} tokens with p == q, then a draft of target probability 0",
                            ("zero-site",), ("zero",))


def with_sampling(suite: list[PipelineScenario], sampling: Sampling | None,
                  new_tokens: int | None) -> list[PipelineScenario]:
    """The suite's distinct pairs under one ``sampling`` and/or ``N`` (``None`` keeps each scenario's)."""
    if sampling is None and new_tokens is None:
        return suite
    out, seen = [], set()
    for s in suite:
        if sampling is not None and id(s.pair) in seen:
            continue
        seen.add(id(s.pair))
        chosen = sampling or s.sampling
        n = new_tokens or s.new_tokens
        name = f"{s.pair.name} ({chosen.describe()}, N={n})" if sampling is not None else f"{s.name} (N={n})"
        out.append(replace(s, name=name, sampling=chosen, new_tokens=n))
    return out
