"""The one exception type that bad input raises, everywhere in specproof."""

from __future__ import annotations

__all__ = ["SpecproofInputError"]


class SpecproofInputError(ValueError):
    """Bad input: the message names the argument and says how to fix it.

    Subclasses ``ValueError`` so generic callers can catch it; the CLI turns it into exit code 2.
    ``detail``: where user code raised, the traceback of its exception, shown only on request
    (``SPECPROOF_TRACEBACK=1``).
    """

    def __init__(self, argument: str, problem: str, fix: str, detail: str | None = None):
        self.argument = argument
        self.problem = problem
        self.fix = fix
        self.detail = detail
        super().__init__(f"{argument}: {problem} - {fix}")
