"""What a contract's module gives the one driver: each scenario prepared for a dtype and a device.

:class:`PreparedScenario` is the seam between a contract and the driver (:mod:`..driver`): the exact
law's event families and null band, the inputs of a batch of rows drawn from the harness's own seeded
generator, the target's arguments for that batch (fresh copies on every call), the output contract,
and the impossible outcomes (per row, the first 1-based position at which something the exact law rules
out was emitted).  The driver's stream, caller, reproducibility pair and RNG edge injection read only
this protocol, so they are written once for every contract.  A scenario built for one edge (a zero-site
ladder) may also declare ``edge_labels``: the RNG edge injection then runs only those labels' passes on it.

:class:`ContractModule` is what a contract's module (:attr:`.Contract.module`) defines.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

__all__ = ["PreparedScenario", "ContractModule", "bad_rows", "first_true", "ZERO_TOKEN"]


class PreparedScenario(Protocol):
    name: str
    vocab: int
    k: int  # tokens per row minus one (the batched K, a tree's depth D, a pipeline's N - 1)
    families: list[Any]  # events.EventFamily
    tolerance: float  # the null band, in total variation
    impossible_labels: tuple[str, ...]
    notes: dict[str, str]  # impossible label -> what it means for a runtime (printed with the finding)
    certainty_probe: bool
    max_call_rows: int  # rows per call of the target
    has_target_zeros: bool  # some drawable input meets a token of target probability 0 (injection)
    device: Any

    def sample(self, rows: int, generator: Any) -> Any:
        """The inputs of ``rows`` fresh rows (a batch), from the harness's seeded generator."""

    def batch_rows(self, batch: Any) -> int: ...

    def arguments(self, batch: Any, generator: Any) -> tuple:
        """The target's arguments for ``batch``: fresh copies on every call."""

    def invoke(self, target: Any, batch: Any, generator: Any, timeout: float | None, hard_exit: bool) -> Any:
        """``target`` on ``batch`` under the time limit; the output, checked against the contract, on the CPU."""

    def impossible(self, batch: Any, emitted: Any) -> dict[str, np.ndarray]:
        """Per impossible label, per row the first 1-based position of it (0: none)."""

    def describe_row(self, batch: Any, emitted: Any, row: int) -> str:
        """One row's inputs and output in words (findings' examples)."""

    band_assumptions: tuple[str, ...]  # what band_for's inputs' term assumes (printed with a derived band)
    # Optional, where the exact law itself depends on the target's arithmetic (generate's float margins):
    # ``arithmetic``, the dtype it processes in (precision.choose_band sets the observed one with a derived
    # band), and ``out_of_scope``, why the law cannot be built for the dtype (None when it can): the driver
    # runs no row of such a scenario and reports it out of scope with that reason.

    def band_for(self, precision: Any) -> float | None:
        """The null band derived from an observed :class:`~specproof.harness.exact.tolerances.Precision`
        (:func:`~specproof.harness.exact.tolerances.composed_tolerance`); None where the contract cannot
        derive it, and then ``no_band_reason(precision)`` says why (the check uses the worst case)."""


class ContractModule(Protocol):
    INJECTION_ROWS: int  # rows per injection pass (fewer for a slow target)

    def default_suite(self, options: Any) -> list[Any]: ...

    def prepare(self, scenario: Any, options: Any, device: Any) -> PreparedScenario: ...

    def injection_scenarios(self, prepared: Sequence[PreparedScenario], options: Any,
                            device: Any) -> list[PreparedScenario]: ...


def bad_rows(positions: dict[str, np.ndarray], rows: int) -> np.ndarray:
    """``[rows]`` bool: the rows showing any impossible outcome."""
    out = np.zeros(rows, dtype=bool)
    for first in positions.values():
        out |= np.asarray(first) > 0
    return out


ZERO_TOKEN = "emitted a token of target probability 0 at its prefix"
"""The impossible outcome every contract shares: read from the harness's exact tables, never from the
target's inputs."""


def first_true(cells: np.ndarray) -> np.ndarray:
    """``[rows]`` int: per row of the ``[rows, width]`` bool ``cells``, the 1-based column of the first
    True, 0 when none."""
    cells = np.asarray(cells, dtype=bool)
    if cells.size == 0:
        return np.zeros(cells.shape[0], dtype=np.int64)
    return np.where(cells.any(axis=1), cells.argmax(axis=1) + 1, 0).astype(np.int64)
