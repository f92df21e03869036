"""Which comparison the installed transformers release accepts with, read without importing it.

transformers' ``_speculative_sampling`` accepted with ``r <= p/q`` up to release 5.24 (``r == 0``
accepts a draft of target probability 0: ``2^-24`` per test on CPU float32) and with ``r < p/q``
from 5.25.0.  The registry labels its records that run transformers' own code by this.

Layer: impls (the code under test); imports only the standard library.
"""

from __future__ import annotations

import re
from importlib import metadata

__all__ = ["STRICT_RATIO_RELEASE", "accepts_ratio_ties"]

STRICT_RATIO_RELEASE = (5, 25)  # transformers 5.25.0 accepts with r < p/q; earlier releases with r <= p/q


def accepts_ratio_ties() -> bool:
    """Whether the installed transformers accepts with ``r <= p/q`` (a release before 5.25.0), read
    from its package metadata; True when it is not installed (the records' documented behaviour;
    they need the extra anyway).  A pre-release of 5.25 counts as 5.25."""
    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return True
    release = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    return release < STRICT_RATIO_RELEASE
