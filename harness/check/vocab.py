"""Vocabulary sizes a check judges (``--vocab``): validation and the blocks tiled kernels use.

Torch-free (the options import it before any check runs)."""

from __future__ import annotations

from typing import Any

from specproof.errors import SpecproofInputError

__all__ = ["BLOCKS", "RUNTIME_PROBE_VOCAB", "MIN_VOCAB", "MAX_VOCAB", "vocab_sizes"]

BLOCKS = tuple(1 << b for b in range(10, 17))  # the power-of-two tile widths kernels use: 1,024 .. 65,536
# The default batched suite holds one runtime-sized scenario: the tiled scenario at V = 151,936 (above 2^17,
# no power-of-two block divides it) as a certainty probe (impossible outcomes only: a token of target
# probability 0, a broken output contract, a crash at that size), 254 rows.  The statistical tiled scenario
# is opt-in (--vocab): at the stated power it needs 12,736 rows (V = 131,072 and 151,936), each a pass over
# V entries in a plain torch verifier, and it doubled a default check or more (tiled_ratio_invcdf 99.8 s
# against 48.7 s and 43.7 s, busy; tiled_ratio_race 85.8 s against 9.6 s, idle), against the 30% the default
# may grow by.
RUNTIME_PROBE_VOCAB = 151936
MIN_VOCAB = 2
# the rows of one call hold at least 3 V probabilities each; 2^24 keeps one row under 200 MiB in
# float32 and every id below 2^24 (exact in float32, so an id passed through a float stays exact)
MAX_VOCAB = 1 << 24


def vocab_sizes(values: Any, argument: str = "vocab") -> tuple[int, ...]:
    """The vocabulary sizes a check builds tiled scenarios at (sorted, distinct); a bad value is a
    usage error naming ``argument`` and the fix."""
    if isinstance(values, int) and not isinstance(values, bool):
        values = (values,)
    if isinstance(values, str):
        values = [v for v in values.replace(",", " ").split() if v]
    try:
        items = list(values)
    except TypeError:
        raise SpecproofInputError(argument, f"{values!r} is not a vocabulary size or a list of them",
                                  "pass e.g. 151936, or several: 32000 131072") from None
    if not items:
        raise SpecproofInputError(argument, "names no vocabulary size", "pass at least one, e.g. 151936")
    out = []
    for value in items:
        if isinstance(value, str):
            try:
                value = int(value.replace("_", ""))
            except ValueError:
                raise SpecproofInputError(argument, f"{value!r} is not a whole number",
                                          "pass sizes such as 151936") from None
        if hasattr(value, "__index__") and not isinstance(value, (bool, int)):
            value = value.__index__()  # numpy integers
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecproofInputError(argument, f"{value!r} is not a whole number", "pass sizes such as 151936")
        value = int(value)
        if value < MIN_VOCAB:
            raise SpecproofInputError(argument, f"{value} is below {MIN_VOCAB}",
                                      f"pass a vocabulary size of at least {MIN_VOCAB}, e.g. 151936")
        if value > MAX_VOCAB:
            raise SpecproofInputError(
                argument, f"{value:,} is above {MAX_VOCAB:,} (2^24)",
                f"pass at most {MAX_VOCAB:,}: one row of a call holds 3 V probabilities (over 200 MiB in float32 "
                "above it) and ids above 2^24 are not exact in float32")
        out.append(value)
    return tuple(sorted(set(out)))
