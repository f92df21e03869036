"""Implementation records for tests/harness/report/test_report_ray.py, shipped to Ray workers (which
import this module through the PYTHONPATH the test Ray gives them).

``dies-once``: the canonical verifier, except that its first call anywhere (a marker file named by
SPECPROOF_RAY_REPORT_MARKER) ends its own process with ``os._exit``; ``dies-always``: every call does.
"""

from __future__ import annotations

import dataclasses
import os

import specproof.impls as impls


def dies_once(draft_probs, target_probs, draft_token_ids, generator):
    try:
        fd = os.open(os.environ["SPECPROOF_RAY_REPORT_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return impls.canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)
    os.close(fd)
    os._exit(17)


def dies_always(draft_probs, target_probs, draft_token_ids, generator):
    os._exit(17)


def record(name: str):
    """The canonical record under another name, drawing through ``dies_once`` or ``dies_always``."""
    fn = {"dies-once": dies_once, "dies-always": dies_always}[name]
    return dataclasses.replace(impls.get("canonical-ratio-race"), name=name, fn=fn)
