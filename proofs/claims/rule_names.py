"""What a user rule may be called: a printable, single-line string that no catalogue name resembles.

A name is printed at the start of a verdict line, so a newline or a control character could forge
another line, and a homoglyph of a catalogue name (Cyrillic ``с`` for Latin ``c``) would read as the
catalogue rule.  :func:`check_rule_name` refuses both: names are compared by their *skeleton*,
NFKC-normalised, format characters (zero-width joiners, ...) dropped, letters that look like Latin
letters or digits (:data:`CONFUSABLES`, the Cyrillic, Greek and dash look-alikes of Unicode's
confusables list) mapped to them, and case-folded.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Iterable

from specproof.errors import SpecproofInputError

__all__ = ["CONFUSABLES", "skeleton", "check_rule_name", "MAX_NAME_LENGTH"]

MAX_NAME_LENGTH = 120
CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i",
    "ј": "j", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "к": "k", "м": "m", "н": "h", "т": "t",
    "ь": "b", "г": "r", "п": "n", "ɡ": "g", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "У": "Y", "Ԁ": "D",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # other letters and marks that read as Latin or as a hyphen
    "ı": "i", "ℓ": "l", "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "⁃": "-",
    "˗": "-", "ー": "-", "０": "0", "Օ": "O", "օ": "o", "ս": "u", "ց": "g", "զ": "q",
})
"""Characters that look like a Latin letter, digit or ``-``, mapped to it (applied after NFKC)."""


def skeleton(name: str) -> str:
    """``name`` as it looks: NFKC, format characters dropped, look-alikes mapped, case-folded."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn", "Me"))
    return unicodedata.normalize("NFKC", text.translate(CONFUSABLES)).casefold()


def check_rule_name(name: Any, type_name: str, spec: str, catalogue_names: Iterable[str]) -> None:
    """Refuse a name that is not a printable single-line string, or that looks like a catalogue name."""
    if not isinstance(name, str) or type(name) is not str:
        raise SpecproofInputError("--rule", f"{spec}: the rule's name is a {type_name}, not a string",
                                  "pass name='my-rule' (a printable, single-line string)")
    if not name.strip() or len(name) > MAX_NAME_LENGTH or not name.isprintable():
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise SpecproofInputError("--rule", f"{spec}: the rule's name {shown!r} is empty, longer than "
                                  f"{MAX_NAME_LENGTH} characters, or holds a newline or another unprintable "
                                  "character", "pass a printable, single-line name such as 'my-rule'")
    own = skeleton(name)
    for known in catalogue_names:
        if own == skeleton(known):
            what = "a catalogue rule's name" if name == known else \
                f"a catalogue rule's name up to look-alike characters ({known!r})"
            raise SpecproofInputError("--rule", f"{spec} is named {name!r}, {what}",
                                      "give your rule a name of its own")
