"""The canonical speculative-decoding pipeline behind the ``generate`` contract, built from replaceable parts.

    canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator) -> [B, N]

Rounds, all rows in lock-step (row ``b`` holds ``n_b`` tokens in a buffer ``[B, L + N + K + 1]``):

1. propose: ``K`` times, ``q_i = processed(draft(buffer)[b, n_b - 1 + i])``, ``x_i ~ q_i`` (multinomial,
   the generator), written at ``n_b + i``;
2. score: one target call, ``p_i = processed(target(buffer)[b, n_b - 1 + i])``, ``i = 0..K``;
3. verify: canonical speculative sampling (``u < p/q``, residual ``max(0, p - q)``, bonus ``p_K``;
   :func:`specproof.impls.verifiers.canonical.sampled_round`) with the very ``q`` the drafts came from;
4. advance: write the accepted drafts and the final token, ``n_b += accepted + 1``;

until every row has ``N`` new tokens (extra tokens of the last round are dropped).  Rows of different
lengths share one model call: the tail after a row's end holds stale ids, which a causal model indexed
by column never reads for that row's earlier columns.  ``processed`` is temperature, top-k, top-p,
min-p (:mod:`.processing`) applied identically to both sides, so the pipeline samples from the
processed target exactly in real arithmetic (Leviathan et al. 2023, Thm 1, applied to processed laws).

:class:`Parts` names each step; the lossless variants and the mutants replace one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import torch

from specproof.impls.kernels.acceptance import accept_ratio
from specproof.impls.kernels.sampling import draw_multinomial
from specproof.impls.pipelines.processing import processed_probs
from specproof.impls.verifiers.canonical import sampled_round

__all__ = ["Parts", "Round", "run_pipeline", "canonical_generate", "CANONICAL", "model_logits", "columns",
           "propose", "score", "verify", "advance", "write_emitted"]

DEFAULT_K = 2


def model_logits(model: Any, input_ids: torch.Tensor) -> torch.Tensor:
    """Logits ``[B, T, V]`` of a table model (a tensor) or a transformers model (``.logits``)."""
    out = model(input_ids)
    return out if isinstance(out, torch.Tensor) else out.logits


def columns(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``logits[b, index[b, i]]`` for ``index [B, m]``: ``[B, m, V]``."""
    return logits.gather(1, index.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))


@dataclass
class Round:
    """One round's state: the buffer, each row's length, the drafts and both sides' laws."""

    buffer: torch.Tensor  # [B, W] int64: the context the models read
    output: torch.Tensor  # [B, W] int64: the tokens the pipeline returns (the same unless a bug splits them)
    lengths: torch.Tensor  # [B] tokens held (prompt included)
    k: int
    drafts: torch.Tensor | None = None  # [B, K]
    q_sampled: torch.Tensor | None = None  # [B, K, V]: the law each draft was drawn from
    q_verify: torch.Tensor | None = None  # [B, K, V]: the law handed to verification
    p: torch.Tensor | None = None  # [B, K+1, V]


def propose(r: Round, draft: Any, sampling: Any, generator: torch.Generator, *, lag: int = 0,
            sample_law: Callable[[torch.Tensor, Any], torch.Tensor] | None = None,
            draw: Callable[[torch.Tensor, torch.Generator], torch.Tensor] = draw_multinomial) -> None:
    """``K`` drafts, draft ``i`` from the processed draft law at column ``n - 1 - lag + i`` (clamped to 0);
    ``q_verify = q_sampled``.  ``sample_law(row, sampling)``: draw from another law than the one
    recorded (a mutant's hook; default the same law); ``draw(weights, generator)``: the draft sampler
    (default ``torch.multinomial``)."""
    qs, xs = [], []
    for i in range(r.k):
        logits = model_logits(draft, r.buffer[:, :int(r.lengths.max()) + i])
        row = columns(logits, (r.lengths - 1 - lag + i).clamp(min=0).unsqueeze(1))[:, 0]
        q = processed_probs(row, sampling)
        x = draw(q if sample_law is None else sample_law(row, sampling), generator)
        r.buffer.scatter_(1, (r.lengths + i).unsqueeze(1), x.unsqueeze(1))
        qs.append(q)
        xs.append(x)
    r.drafts, r.q_sampled = torch.stack(xs, 1), torch.stack(qs, 1)
    r.q_verify = r.q_sampled


def score(r: Round, target: Any, sampling: Any) -> None:
    """``p_i`` at columns ``n - 1 + i``, ``i = 0..K``: one target call."""
    logits = model_logits(target, r.buffer[:, :int(r.lengths.max()) + r.k])
    index = r.lengths.unsqueeze(1) - 1 + torch.arange(r.k + 1, device=r.lengths.device)
    r.p = processed_probs(columns(logits, index), sampling)


def verify(r: Round, generator: torch.Generator) -> torch.Tensor:
    """Canonical speculative sampling on ``(q_verify, p, drafts)``: emitted ``[B, K+1]``, ``-1`` padded."""
    return sampled_round(accept_ratio, draw_multinomial, r.q_verify, r.p, r.drafts, generator)


def write_emitted(tokens: torch.Tensor, lengths: torch.Tensor, emitted: torch.Tensor) -> None:
    """``tokens[b, n_b + j] = emitted[b, j]`` for the emitted (non ``-1``) entries."""
    position = lengths.unsqueeze(1) + torch.arange(emitted.shape[1], device=emitted.device)
    keep = emitted >= 0
    last = lengths.unsqueeze(1) - 1  # -1 entries rewrite the row's last token with itself
    tokens.scatter_(1, torch.where(keep, position, last), torch.where(keep, emitted, tokens.gather(1, last)))


def advance(r: Round, emitted: torch.Tensor) -> None:
    """Write the emitted tokens after each row's prefix (context and output); lengths grow by their count."""
    write_emitted(r.buffer, r.lengths, emitted)
    write_emitted(r.output, r.lengths, emitted)
    r.lengths = r.lengths + (emitted >= 0).sum(1)


@dataclass(frozen=True)
class Parts:
    """The replaceable steps of a pipeline and its drafts per round (``k_of_round(round, generator)``)."""

    propose: Callable[[Round, Any, Any, torch.Generator], None] = propose
    score: Callable[[Round, Any, Any], None] = score
    verify: Callable[[Round, torch.Generator], torch.Tensor] = verify
    advance: Callable[[Round, torch.Tensor], None] = advance
    k_of_round: Callable[[int, torch.Generator], int] = lambda index, generator: DEFAULT_K

    def but(self, **changes: Any) -> "Parts":
        return replace(self, **changes)


def run_pipeline(parts: Parts, target: Any, draft: Any, prompt_ids: torch.Tensor, max_new_tokens: int,
                 sampling: Any, generator: torch.Generator) -> torch.Tensor:
    """The round loop of the module docstring with ``parts``; returns the ``N`` new tokens ``[B, N]``."""
    batch, prompt = prompt_ids.shape
    max_k = 8
    width = prompt + max_new_tokens + max_k + 1
    buffer = torch.zeros((batch, width), dtype=torch.int64, device=prompt_ids.device)
    buffer[:, :prompt] = prompt_ids
    output = buffer.clone()
    lengths = torch.full((batch,), prompt, dtype=torch.int64, device=prompt_ids.device)
    index = 0
    while int(lengths.min()) < prompt + max_new_tokens:
        k = min(max_k, int(parts.k_of_round(index, generator)))
        r = Round(buffer, output, lengths, k)
        parts.propose(r, draft, sampling, generator)
        parts.score(r, target, sampling)
        emitted = parts.verify(r, generator)
        parts.advance(r, emitted)
        lengths = r.lengths.clamp(max=prompt + max_new_tokens)  # a finished row stays finished
        index += 1
    return output[:, prompt:prompt + max_new_tokens].clone()


CANONICAL = Parts()


def canonical_generate(target, draft, prompt_ids, max_new_tokens, sampling, generator):
    """The canonical pipeline, ``K = 2`` drafts per round (module docstring)."""
    return run_pipeline(CANONICAL, target, draft, prompt_ids, max_new_tokens, sampling, generator)
