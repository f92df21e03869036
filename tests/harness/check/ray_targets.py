"""Verifiers for tests/harness/check/test_ray_engine.py, imported by Ray workers as path.py targets.

``dies_once``: the first call anywhere (a marker file named by SPECPROOF_RAY_MARKER) ends its own
process with ``os._exit``; later calls are the canonical verifier.  ``dies_always``: every call does.
"""

from __future__ import annotations

import os

from specproof.impls import canonical_ratio_race as canonical


def dies_once(draft_probs, target_probs, draft_token_ids, generator):
    marker = os.environ["SPECPROOF_RAY_MARKER"]
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return canonical(draft_probs, target_probs, draft_token_ids, generator)
    os.close(fd)
    os._exit(17)


def dies_always(draft_probs, target_probs, draft_token_ids, generator):
    os._exit(17)


def raises(draft_probs, target_probs, draft_token_ids, generator):
    raise RuntimeError("boom")
