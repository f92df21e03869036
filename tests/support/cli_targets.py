"""Verifiers used as ``specproof check`` targets in the CLI tests (well-behaved and misbehaving)."""

import time

import torch

from specproof.impls import canonical_ratio_race
from specproof.impls.zoo import resample_from_target


def exact(draft_probs, target_probs, draft_token_ids, generator):
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def lossy(draft_probs, target_probs, draft_token_ids, generator):
    return resample_from_target(draft_probs, target_probs, draft_token_ids, generator)


def raises(draft_probs, target_probs, draft_token_ids, generator):
    raise RuntimeError("kernel exploded")


def hangs(draft_probs, target_probs, draft_token_ids, generator):
    while True:
        time.sleep(0.01)


def wrong_shape(draft_probs, target_probs, draft_token_ids, generator):
    return torch.zeros(draft_token_ids.shape, dtype=torch.int64)


def wrong_dtype(draft_probs, target_probs, draft_token_ids, generator):
    return exact(draft_probs, target_probs, draft_token_ids, generator).to(torch.int32)


def out_of_range(draft_probs, target_probs, draft_token_ids, generator):
    out = exact(draft_probs, target_probs, draft_token_ids, generator)
    out[:, 0] = draft_probs.shape[-1]
    return out


def holes(draft_probs, target_probs, draft_token_ids, generator):
    out = exact(draft_probs, target_probs, draft_token_ids, generator)
    out[:, 1] = -1
    out[:, 2] = 0
    return out


def not_a_tensor(draft_probs, target_probs, draft_token_ids, generator):
    return [[0]]


def two_arguments(draft_probs, target_probs):
    return None


NOT_CALLABLE = 3


def exits_zero(draft_probs, target_probs, draft_token_ids, generator):
    raise SystemExit(0)


def own_timeout(draft_probs, target_probs, draft_token_ids, generator):
    raise TimeoutError("backend queue timed out")


def swallows_everything(draft_probs, target_probs, draft_token_ids, generator):
    """Catches the alarm (BaseException) once, then returns a late but valid answer."""
    try:
        time.sleep(5)
    except BaseException:
        time.sleep(0.2)
    return exact(draft_probs, target_probs, draft_token_ids, generator)


def scribbles_on_inputs(draft_probs, target_probs, draft_token_ids, generator):
    """Exact, but reuses its inputs as scratch space after computing the answer."""
    out = exact(draft_probs, target_probs, draft_token_ids, generator)
    target_probs.zero_()
    draft_probs.fill_(0.5)
    draft_token_ids.fill_(0)
    return out


def global_rng(draft_probs, target_probs, draft_token_ids, generator):
    """Exact law, but ignores ``generator``: draws from the global RNG."""
    return exact(draft_probs, target_probs, draft_token_ids, torch.default_generator)


def on_meta(draft_probs, target_probs, draft_token_ids, generator):
    return torch.empty((draft_token_ids.shape[0], draft_token_ids.shape[1] + 1), dtype=torch.int64, device="meta")


def never_yields(draft_probs, target_probs, draft_token_ids, generator):
    """Catches every interrupt, forever: only a watchdog outside the call can stop it."""
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            pass


def emits_impossible_second_token(draft_probs, target_probs, draft_token_ids, generator):
    """Exact, except that a row emitting two or more tokens gets a probability-0 second token where
    the target has one."""
    out = exact(draft_probs, target_probs, draft_token_ids, generator)
    zero = (target_probs[:, 1] == 0).to(torch.int64).argmax(dim=-1)
    has_zero = (target_probs[:, 1] == 0).any(dim=-1) & (out[:, 1] >= 0) & (out[:, 0] == draft_token_ids[:, 0])
    out[:, 1] = torch.where(has_zero, zero, out[:, 1])
    return out
