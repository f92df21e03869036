"""A speculative-sampling verifier written the way a runtime team writes one on day one (the batched
contract): probabilities upcast to float32, one uniform per draft, accept while ``u < p/q``, a correction
from the clamped residual at the first rejection, a bonus token from the last target row when every draft
passes.  Used as a user target (``specproof report tests/support/newcomer/spec.py:verify``); ``commits.py`` writes it as a later
"commit" that takes the bonus from the wrong row."""

import torch


def verify(draft_probs, target_probs, draft_token_ids, generator):
    q = draft_probs.float()
    p = target_probs.float()
    batch, k, _ = q.shape
    rows = torch.arange(batch, device=q.device)
    out = torch.full((batch, k + 1), -1, dtype=torch.int64, device=q.device)
    alive = torch.ones(batch, dtype=torch.bool, device=q.device)
    uniforms = torch.rand((batch, k), generator=generator, device=q.device)
    for i in range(k):
        token = draft_token_ids[:, i]
        p_tok, q_tok = p[rows, i, token], q[rows, i, token]
        accept = uniforms[:, i] * q_tok < p_tok  # u < p/q without dividing by zero
        take = alive & accept
        out[take, i] = token[take]
        reject = alive & ~accept
        if reject.any():
            residual = (p[reject, i] - q[reject, i]).clamp(min=0)
            empty = residual.sum(-1, keepdim=True) <= 0  # p <= q everywhere: resample from p itself
            residual = torch.where(empty, p[reject, i], residual)
            out[reject, i] = torch.multinomial(residual, 1, generator=generator).squeeze(1)
        alive = take
    if alive.any():
        out[alive, k] = torch.multinomial(p[alive, k], 1, generator=generator).squeeze(1)
    return out
