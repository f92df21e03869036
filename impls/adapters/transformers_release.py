"""Which comparison the installed transformers release accepts with, read without importing it.

transformers' ``_speculative_sampling`` accepted with ``r <= p/q`` up to release 5.24 (``r == 0``
accepts a draft of target probability 0: ``2^-24`` per test on CPU float32) and with ``r < p/q``
from 5.25.0.  The registry labels its records that run transformers' own code by this.
"""

from __future__ import annotations

import functools
import re
from importlib import metadata

__all__ = ["STRICT_RATIO_RELEASE", "ratio_ties_in", "accepts_ratio_ties"]

STRICT_RATIO_RELEASE = (5, 25)  # transformers 5.25.0 accepts with r < p/q; earlier releases with r <= p/q


def ratio_ties_in(version: str) -> bool:
    """Whether transformers ``version`` accepts with ``r <= p/q``: its ``(major, minor)`` is below
    :data:`STRICT_RATIO_RELEASE` (a pre-release of 5.25 counts as 5.25)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2]) < STRICT_RATIO_RELEASE


@functools.cache
def accepts_ratio_ties() -> bool:
    """:func:`ratio_ties_in` of the installed transformers, read once from its package metadata; True
    when it is not installed (the records' documented behaviour; they need the extra anyway)."""
    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return True
    return ratio_ties_in(version)
