"""Greedy verification (a different contract from sampling; notes/algorithms.md section 2).

Accept draft ``x_i`` iff ``x_i == argmax p_i``, stop at the first mismatch ``n``, emit the accepted
prefix and then ``argmax p_n`` (the correction at a mismatch, the bonus when ``n == K``). Ties break
toward the lowest index (``torch.argmax``). Deterministic: the generator is validated if given but
never consumed, so it may be ``None``. It reproduces the target's greedy output, and does not
preserve the target's sampling law at temperature > 0.
"""

from __future__ import annotations

import torch

from specproof.impls.kernels.rounds import assemble_emitted, leading_accepts, rows_at
from specproof.impls.contract import check_round

__all__ = ["greedy_verify"]


def greedy_verify(draft_probs: torch.Tensor, target_probs: torch.Tensor,
                  draft_token_ids: torch.Tensor, generator: torch.Generator | None = None
                  ) -> torch.Tensor:
    """Batched greedy round: ``[B, K+1]`` int64, accepted drafts, ``argmax p_n``, then ``-1``."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator,
                needs_generator=False)
    drafts = draft_token_ids.shape[1]
    target_argmax = target_probs.argmax(dim=-1)
    n_accepted = leading_accepts(draft_token_ids == target_argmax[:, :drafts])
    final_token = rows_at(target_argmax.unsqueeze(-1), n_accepted).squeeze(-1)
    return assemble_emitted(draft_token_ids, n_accepted, final_token)
