"""Random verifier inputs for the implementations-under-test suite."""

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def random_round(dtype, batch=64, drafts=3, vocab=7, seed=0, device="cpu", zero_fraction=0.3):
    """A batched round with exact zeros in both laws: draft ids drawn from draft_probs (in float64,
    then the laws are cast to ``dtype``), so some drafted tokens have target probability 0."""
    g = torch.Generator().manual_seed(seed)

    def law(*shape):
        w = torch.rand(*shape, generator=g, dtype=torch.float64)
        w = torch.where(torch.rand(*shape, generator=g, dtype=torch.float64) < zero_fraction, 0.0, w)
        w[..., 0] += 1e-3  # every row keeps positive mass
        return w / w.sum(-1, keepdim=True)

    draft = law(batch, drafts, vocab)
    target = law(batch, drafts + 1, vocab)
    ids = torch.multinomial(draft.reshape(-1, vocab), 1, generator=g).reshape(batch, drafts)
    return draft.to(dtype).to(device), target.to(dtype).to(device), ids.to(device)

