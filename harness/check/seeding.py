"""Every seed a check derives from its one ``seed``: the formulas, written once.

A check's rows are a function of ``seed`` and of the sizes the engine asks for, never of timing.  Each
stream (scenario ``number`` of the suite, :func:`.driver.stream_numbers`) draws its inputs from a
generator seeded :func:`stream_seed` and calls the target with a generator seeded :func:`call_seed` of
the stream's rows drawn so far, so rows ``[a, b)`` get the same generators in one call or in several
(the Ray engine's pieces re-seed the inputs by :func:`shard_seed`).  The reproducibility pair uses a
seed no stream reaches (:func:`pair_seed`, ``2^40`` apart), and each injection scenario ``index``
:func:`injection_seed`.  Seeds are reduced modulo ``2^63`` where a generator takes them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SEED_LIMIT", "stream_seed", "call_seed", "pair_seed", "probe_seed", "injection_seed", "shard_seed", "generator"]

SEED_LIMIT = 2**63  # torch.Generator.manual_seed takes [0, 2^63) as given


def stream_seed(seed: int, number: int) -> int:
    """The input generator of stream ``number`` (drafts, tree node tokens)."""
    return (seed * 1_000_003 + number) % SEED_LIMIT


def call_seed(seed: int, number: int, offset: int) -> int:
    """The target's generator for the rows of stream ``number`` starting at row ``offset``."""
    return seed * 7_919 + number * 104_729 + offset


def pair_seed(seed: int, offset: int = 0) -> int:
    """The target's generator in both runs of the reproducibility pair (inputs from ``seed`` itself); a
    pair run in several calls seeds the part from row ``offset`` (its inputs too) with ``offset`` added."""
    return seed * 7_919 + 2**40 + offset


def probe_seed(seed: int, number: int) -> int:
    """Inputs and target generator of the precision probe's call on scenario ``number``
    (:mod:`.intercept.precision`; the global RNG is restored after it)."""
    return pair_seed(seed) + 1 + number


def injection_seed(seed: int, index: int) -> int:
    """Inputs, target generator and global RNG of injection scenario ``index`` (every pass of it)."""
    return stream_seed(seed, index)


def shard_seed(seed: int, index: int, start: int) -> int:
    """The input generator of the Ray piece starting at row ``start`` of stream ``index``."""
    state = np.random.SeedSequence([seed, index, start]).generate_state(2, np.uint32)
    return (int(state[0]) << 31 | int(state[1]) >> 1) % SEED_LIMIT


def generator(seed: int, device: object = "cpu") -> "object":
    """A ``torch.Generator`` on ``device`` seeded ``seed mod 2^63``."""
    import torch

    return torch.Generator(device=device).manual_seed(seed % SEED_LIMIT)
