"""The tree contract: ``verify(parents, draft_probs, target_probs, node_tokens, generator) -> emitted``.

The signature and output contract are :mod:`.signature`'s; the scenarios
(:func:`.scenarios.default_tree_suite`: i.i.d., distinct and top-k siblings, depths 1 to 4) draw
node tokens from the exact sibling laws; the families and band are :mod:`.families`'.  Impossible
outcomes, certain: a token of target probability 0 at its emitted prefix, and tokens before the last
that leave the row's tree.  ``siblings`` keeps the scenarios of those sibling modes (default: the
modes the target declares, e.g. an adapter's, else all).  The suite starts with the zero-site ladders
(:mod:`.ladders`, certainty probes: every sibling index at every depth of every mode meets a token of
target probability 0 and positive draft probability in every row, under sub- and super-stochastic
target rows); :func:`coverage` states per site how surely the RNG edge injection's zero coin met it.
The RNG edge injection runs on every scenario of the suite.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

import numpy as np
import torch

from specproof.harness.check.calls import call_verifier
from specproof.harness.check.contracts.prepared import ZERO_TOKEN
from specproof.harness.check.contracts.tree.signature import off_tree_rows, validate_tree_output
from specproof.harness.check.contracts.tree.scenarios import TreeBatch, TreeRealisation, TreeScenario, default_tree_suite
from specproof.harness.check.contracts.tree.families import (OFF_TREE, TREE_ROWS_ASSUMPTION, rows_as_given_tv,
                                                              tree_families, tree_tolerance)
from specproof.harness.check.contracts.tree.ladders import ladders_for, tree_coverage
from specproof.proofs.laws.tree import SIBLING_MODES
from specproof.harness.exact.tolerances import Precision

__all__ = ["TreeScenarioPrepared", "default_suite", "prepare", "injection_scenarios", "coverage", "INJECTION_ROWS"]

INJECTION_ROWS = 1024
MAX_CALL_ROWS = 8192
_CACHE_SIZE = 64


def default_suite(options: Any) -> list[TreeScenario]:
    """The zero-site ladders of the default tree suite, then the suite; restricted to ``options.siblings``
    when given."""
    suite = default_tree_suite()
    suite = ladders_for(suite) + suite
    return suite if options.siblings is None else [s for s in suite if s.scheme in options.siblings]


def coverage(suite: Sequence[TreeScenario], options: Any, injection: Any, probe_rows: dict[str, int]) -> Any:
    """The acceptance-site coverage of a tree check (:func:`.ladders.tree_coverage`); ``injection``: the
    run's :class:`..intercept.injection.InjectionResult` (None: not run)."""
    from specproof.harness.check.contracts.coverage import injected_rows

    fraction, injected = injected_rows(injection)
    modes = [m for m in SIBLING_MODES if any(s.scheme == m for s in suite)]
    return tree_coverage(suite, fraction, injected, probe_rows, modes)


class TreeScenarioPrepared:
    """One tree scenario prepared for a dtype and a device (:class:`.prepared.PreparedScenario`)."""

    impossible_labels = (ZERO_TOKEN, OFF_TREE)
    has_target_zeros = True  # the injection runs on every tree scenario
    max_call_rows = MAX_CALL_ROWS

    def __init__(self, real: TreeRealisation):
        self.real, self.scenario = real, real.scenario
        self.name, self.vocab, self.k, self.device = real.scenario.name, real.vocab, real.depth, real.device
        self.certainty_probe = real.scenario.certainty_probe  # only impossible outcomes (engine: plan_quota)
        self.tolerance = float(tree_tolerance(real.dtype, real.vocab, len(real.tree.parents)))
        self.notes: dict[str, str] = {}

    @cached_property
    def families(self) -> list[Any]:
        return [] if self.certainty_probe else tree_families(self.real)

    band_assumptions = (TREE_ROWS_ASSUMPTION,)  # what band_for's T_in is computed for

    def band_for(self, precision: Precision) -> float:
        """The null band for an observed precision (:func:`.families.tree_tolerance`) with these rows' exact
        ``T_in`` (:func:`.families.rows_as_given_tv`)."""
        real = self.real
        return float(tree_tolerance(real.dtype, real.vocab, len(real.tree.parents), precision,
                                    lambda: rows_as_given_tv(real)))

    def sample(self, rows: int, generator: torch.Generator) -> TreeBatch:
        return self.real.sample(rows, generator)

    def batch_rows(self, batch: TreeBatch) -> int:
        return batch.rows

    def arguments(self, batch: TreeBatch, generator: torch.Generator) -> tuple:
        return batch.arguments(generator)

    def invoke(self, target: Any, batch: TreeBatch, generator: torch.Generator, timeout: float | None,
               hard_exit: bool) -> torch.Tensor:
        out = call_verifier(target, batch.arguments(generator), timeout, self.name, hard_exit)
        return validate_tree_output(out, batch.rows, self.k, self.vocab, self.name)

    def impossible(self, batch: TreeBatch, emitted: torch.Tensor) -> dict[str, np.ndarray]:
        return {ZERO_TOKEN: np.asarray(self.real.zero_positions(emitted)),
                OFF_TREE: np.asarray(off_tree_rows(emitted, self.real.tree.parents, batch.node_tokens))}

    def describe_row(self, batch: TreeBatch, emitted: torch.Tensor, row: int) -> str:
        return f"node tokens {batch.node_tokens[row].tolist()} -> emitted {emitted[row].tolist()}"


_PREPARED: dict[tuple, tuple[TreeScenario, TreeScenarioPrepared]] = {}


def prepare(scenario: TreeScenario, options: Any, device: torch.device) -> TreeScenarioPrepared:
    """The scenario prepared, cached (exact computations independent of the target)."""
    key = (id(scenario), options.dtype, str(device))
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not scenario:
        if len(_PREPARED) > _CACHE_SIZE:
            _PREPARED.clear()
        hit = _PREPARED[key] = (scenario, TreeScenarioPrepared(scenario.realise(options.dtype, str(device))))
    return hit[1]


def injection_scenarios(prepared: Sequence[TreeScenarioPrepared], options: Any,
                        device: torch.device) -> list[TreeScenarioPrepared]:
    """Every scenario of the check's suite."""
    return list(prepared)
