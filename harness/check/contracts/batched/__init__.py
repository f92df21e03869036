"""The batched contract: ``verify(draft_probs, target_probs, draft_token_ids, generator) -> emitted``.

For each scenario (:mod:`..scenarios`) the harness drafts ``x_1..x_K`` from the rounded draft law,
builds ``draft_probs [B,K,V]`` / ``target_probs [B,K+1,V]`` in the dtype under test on the device under
test and calls the verifier; the output contract is ``[B,K+1]`` int64 ids in ``[-1, V)``, ``-1`` only
as padding after the last token, at least one token per row (:func:`..calls.validate_output`; a
violation is a usage error).  Impossible outcomes, certain: an emitted token the rounded target gives
probability exactly 0 at its emitted prefix, and emitted tokens before the last that are not the
drafted ones.  The event families are :func:`..events.build_families` (with a ``rule``, also the
rule's own emission law); the null band :func:`harness.exact.tolerances.check_tolerance`.  The RNG
edge injection runs on the small default scenarios with a draftable token of target probability 0
(:func:`zero_target_scenarios`), whatever the check's suite.
"""

from __future__ import annotations

from dataclasses import replace

from functools import cached_property
from typing import Any, Sequence

import numpy as np
import torch

from specproof.proofs.laws.step_rules import StepRule, get_step_rule

from specproof.harness.check.calls import call_verifier, validate_output
from specproof.harness.check.contracts.prepared import ZERO_TOKEN, first_true
from specproof.harness.check.contracts.batched.families import EventFamily, build_families
from specproof.harness.check.contracts.batched.scenarios import (ZERO_SITE_POSITIONS, Realisation, Scenario,
                                                                 default_suite as scenario_suite, zero_site_ladder)
from specproof.harness.exact.tolerances import BATCHED_ROWS_ASSUMPTION, Precision, check_tolerance

__all__ = ["BatchedScenario", "default_suite", "prepare", "injection_scenarios", "zero_target_scenarios", "coverage",
           "ZERO_TOKEN", "MISMATCH", "INJECTION_ROWS"]

MISMATCH = "emitted tokens before the last that are not the drafted ones"
INJECTION_ROWS = 512  # rows per injection pass (an edge flags 3-32 of 512 rows in the zoo)
_CACHE_SIZE = 256
# the summed V of the prepared scenarios kept: one at a runtime's V holds a call's row buffers and its
# position events (hundreds of MB at V = 151,936), so a long session (a test suite, a campaign) keeps a
# few of them, not 256 (a slow test of 240 tiled checks grew one process past 21 GB before this bound)
_CACHE_TOKENS = 1 << 20


def _rule(options: Any) -> StepRule | None:
    return None if options.rule is None else get_step_rule(options.rule)


def default_suite(options: Any) -> list[Scenario]:
    """The 14 default scenarios and one tiled scenario per ``options.vocab`` size (:mod:`.tiled`); for the
    ``greedy`` rule their temperature-0 variants (greedy is lossless for temperature-0 targets only)."""
    rule = _rule(options)
    suite = scenario_suite(vocab=getattr(options, "vocab", None))
    if rule is not None and rule.name == "greedy":
        return [s.greedy() for s in suite]
    return suite


class BatchedScenario:
    """One batched scenario prepared for a dtype, a device and an optional rule
    (:class:`.prepared.PreparedScenario`)."""

    impossible_labels = (ZERO_TOKEN, MISMATCH)

    def __init__(self, real: Realisation, rule: StepRule | None):
        self.real, self.rule, self.scenario = real, rule, real.scenario
        self.name, self.vocab, self.k, self.device = real.scenario.name, real.vocab, real.k, real.device
        self.certainty_probe = real.scenario.certainty_probe  # only impossible outcomes (engine: plan_quota)
        self.tolerance = float(check_tolerance(real.dtype, real.support, real.k))
        # rows per call: at most ~2^25 probabilities per batch (128 MiB in float32)
        self.max_call_rows = max(16, (1 << 25) // ((2 * real.k + 1) * real.vocab))
        self.notes: dict[str, str] = {}
        if real.dtype == "float16" and real.device.type == "cpu":
            from specproof.impls.sampler_probe import MULTINOMIAL_FLOAT16_DEFECT

            self.notes[ZERO_TOKEN] = ("if the verifier draws with torch.multinomial, this is a sampler defect: "
                                      f"{MULTINOMIAL_FLOAT16_DEFECT}")

    @cached_property
    def families(self) -> list[EventFamily]:
        return build_families(self.real, self.rule)

    def band_for(self, precision: Precision) -> float | None:
        """The null band for an observed precision (:func:`check_tolerance`) with these rows' ``t_in``; None
        under a ``rule`` (``t_in`` is computed for the canonical step)."""
        if self.rule is not None:
            return None
        return float(check_tolerance(self.real.dtype, self.real.support, self.k,
                                     replace(precision, inputs_tv=self.real.rounded.unnormalised_tv)))

    band_assumptions = (BATCHED_ROWS_ASSUMPTION,)  # what band_for's t_in is computed for

    def no_band_reason(self, precision: Precision) -> str:
        return "a --rule's band is derived for the canonical step only"

    @cached_property
    def has_target_zeros(self) -> bool:
        real = self.real
        return bool(((real.target[: real.k] == 0) & (real.draft > 0)).any())

    def sample(self, rows: int, generator: torch.Generator) -> torch.Tensor:
        return self.real.sample_drafts(rows, generator)

    def batch_rows(self, batch: torch.Tensor) -> int:
        return int(batch.shape[0])

    def arguments(self, batch: torch.Tensor, generator: torch.Generator) -> tuple:
        draft_rows, target_rows = self.real.rows(batch)
        return draft_rows, target_rows, batch.to(self.device, copy=True), generator

    def invoke(self, target: Any, batch: torch.Tensor, generator: torch.Generator, timeout: float | None,
               hard_exit: bool) -> torch.Tensor:
        out = call_verifier(target, self.arguments(batch, generator), timeout, self.name, hard_exit)
        return validate_output(out, batch.shape[0], self.k, self.vocab, self.name)

    def impossible(self, batch: torch.Tensor, emitted: torch.Tensor) -> dict[str, np.ndarray]:
        """Per row: the first token of target probability 0 at its emitted prefix (the harness's own
        rounded tables), and the first token before the last that is not the drafted one."""
        real = self.real
        out, drafted = emitted.numpy(), batch.numpy()
        n, width = out.shape
        lengths = (out >= 0).sum(axis=1)
        positions = np.arange(width)
        inside = positions < lengths[:, None]
        tokens = np.maximum(out, 0)
        classes = np.concatenate([np.zeros((n, 1), dtype=np.int64), tokens[:, :-1] % real.classes], axis=1)
        zero_cells = inside & real.target_zero_mask[np.broadcast_to(positions, (n, width)), classes, tokens]
        mismatch_cells = (positions[:-1] < (lengths - 1)[:, None]) & (out[:, :-1] != drafted)
        return {ZERO_TOKEN: first_true(zero_cells), MISMATCH: first_true(mismatch_cells)}

    def describe_row(self, batch: torch.Tensor, emitted: torch.Tensor, row: int) -> str:
        return f"drafts {batch[row].tolist()} -> emitted {emitted[row].tolist()}"


_PREPARED: dict[tuple, tuple[Scenario, BatchedScenario]] = {}


def prepare(scenario: Scenario, options: Any, device: torch.device) -> BatchedScenario:
    """The scenario prepared, cached: its realisation and families are exact computations that do not
    depend on the target (the scenario is kept alive in the cache so its id stays unique).  The cache is
    emptied past ``_CACHE_SIZE`` entries or ``_CACHE_TOKENS`` vocabulary entries in all."""
    rule = _rule(options)
    key = (id(scenario), options.dtype, str(device), rule.name if rule else None)
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not scenario:
        if len(_PREPARED) > _CACHE_SIZE or \
                sum(kept.vocab for kept, _ in _PREPARED.values()) + scenario.vocab > _CACHE_TOKENS:
            _PREPARED.clear()
        hit = _PREPARED[key] = (scenario, BatchedScenario(scenario.realise(options.dtype, str(device)), rule))
    return hit[1]


def zero_target_scenarios(dtype: str = "float32") -> list[Scenario]:
    """Default-suite scenarios (small vocabularies) with a draftable token of target probability 0, and the
    zero-site ladders that put one at each later draft position (:mod:`.sites`: every position of the
    default suite is met)."""
    return [s for s in scenario_suite(large_vocab=0, vocab=())
            if BatchedScenario(s.realise(dtype), None).has_target_zeros] + \
        [zero_site_ladder(j) for j in ZERO_SITE_POSITIONS]


def coverage(suite: Sequence[Scenario], options: Any, injection: Any, probe_rows: dict[str, int]) -> Any:
    """The acceptance-site coverage of a batched check (:func:`.sites.batched_coverage`); ``injection``:
    the run's :class:`..intercept.injection.InjectionResult` (None: not run)."""
    from specproof.harness.check.contracts.batched.sites import batched_coverage
    from specproof.harness.check.contracts.coverage import injected_rows

    fraction, injected = injected_rows(injection)
    reals = [s.realise(options.dtype) for s in zero_target_scenarios(options.dtype)]
    return batched_coverage(suite, reals, fraction, injected, probe_rows)


def injection_scenarios(prepared: Sequence[BatchedScenario], options: Any, device: torch.device) -> list[BatchedScenario]:
    """:func:`zero_target_scenarios` prepared (whatever the check's own suite)."""
    return [BatchedScenario(s.realise(options.dtype, str(device)), None) for s in zero_target_scenarios(options.dtype)]
