"""The one exception type that bad input raises, everywhere in specproof."""

from __future__ import annotations

__all__ = ["SpecproofInputError"]


class SpecproofInputError(ValueError):
    """Bad input: the message names the argument and says how to fix it.

    Subclasses ``ValueError`` so generic callers can catch it; the CLI turns it into exit code 2.
    """

    def __init__(self, argument: str, problem: str, fix: str):
        self.argument = argument
        self.problem = problem
        self.fix = fix
        super().__init__(f"{argument}: {problem} - {fix}")
