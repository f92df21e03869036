"""The generate contract: a whole pipeline, ``generate(target, draft, prompt_ids, max_new_tokens,
sampling, generator) -> [B, N]``.

The signature, the model protocol and the output contract are :mod:`..pipeline_contract`'s; the
scenarios :func:`..pipeline_scenarios.pipeline_suite` (table models) or
:func:`..pipeline_transformers.transformers_suite` (``models="transformers"``), each under its own
sampling setting or under ``sampling`` for all; the exact law of the ``N`` new tokens and its families
are :mod:`..pipeline_laws`'.  The pipeline chooses its own drafts: a batch is the prompt repeated.
Impossible outcome, certain: a token the processed target gives probability 0 at its prefix.  The RNG
edge injection runs on at most :data:`INJECTION_SCENARIOS` scenarios with such tokens, those tagged
``inject`` first (a pass under the dispatch mode costs about ten plain ones), and on the zero-site ladders
(:func:`.scenarios.zero_site_ladder`, table models only: injection-only, their zero edges only) of every
round position those scenarios do not reach in every row; :func:`coverage` states per position how surely
the zero coin met it (:mod:`.sites`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

import numpy as np
import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts.coverage import injected_rows
from specproof.harness.check.contracts.prepared import ZERO_TOKEN
from specproof.harness.check.contracts.generate.signature import call_generate
from specproof.harness.check.contracts.generate.families import (PIPELINE_ROWS_ASSUMPTION, pipeline_families,
                                                                 pipeline_law, pipeline_tolerance, sequence_codes_of)
from specproof.harness.check.contracts.generate.models import TablePair
from specproof.harness.check.contracts.generate.scenarios import (PipelineScenario, pipeline_suite, with_sampling,
                                                                  zero_site_ladder)
from specproof.harness.check.contracts.generate.sites import generate_coverage, site_positions, site_reach
from specproof.harness.exact.tolerances import Precision, coarser_than

__all__ = ["GenerateScenarioPrepared", "default_suite", "prepare", "injection_scenarios", "coverage", "INJECTION_ROWS"]

INJECTION_ROWS = 256
INJECTION_SCENARIOS = 2
MAX_CALL_ROWS = 4096


def default_suite(options: Any) -> list[PipelineScenario]:
    """Table models under their own settings (or ``options.sampling``), or tiny transformers models."""
    if options.models == "transformers":
        try:
            from specproof.harness.check.contracts.generate.transformers.suite import transformers_suite
        except ModuleNotFoundError as err:
            raise SpecproofInputError("models", f"transformers models need the transformers package ({err})",
                                      "pip install specproof[transformers], or use models='table'") from None
        return transformers_suite(options.sampling, options.new_tokens)
    return with_sampling(pipeline_suite(), options.sampling, options.new_tokens)


@dataclass(frozen=True)
class PromptBatch:
    """A batch of the generate contract: the scenario's prompt, ``rows`` times (no harness randomness)."""

    rows: int


class GenerateScenarioPrepared:
    """One pipeline scenario prepared for a dtype and a device (:class:`.prepared.PreparedScenario`):
    its models built, its exact law enumerated."""

    impossible_labels = (ZERO_TOKEN,)
    certainty_probe = False
    max_call_rows = MAX_CALL_ROWS

    def __init__(self, scenario: PipelineScenario, dtype: str, device: torch.device):
        self.scenario, self.dtype, self.device = scenario, dtype, device
        pair, n = scenario.pair, scenario.new_tokens
        self.name, self.vocab, self.k, self.new_tokens = scenario.name, int(pair.vocab), n - 1, n
        self.target_model, self.draft_model = pair.build(dtype, str(device), n)
        try:
            self.law = pipeline_law(pair, self.target_model, scenario.sampling, n, dtype)
        except SpecproofInputError as err:  # name the scenario whose processing sits on a boundary
            if err.argument != "sampling":
                raise
            raise SpecproofInputError("sampling", f"scenario '{self.name}' ({scenario.sampling.describe()}, {dtype}): "
                                      f"{err.problem}", f"{err.fix}; a narrow dtype widens the float margin: "
                                      "check in float32") from None
        self.edge_labels = scenario.edge_labels  # a zero-site ladder: its zero edges only
        self.first_zero = self.law.first_zero()
        self.has_target_zeros = any(x == 0 for row in self.law.rows.values() for x in row)
        extra = pair.extra_tolerance(dtype, n, scenario.sampling)  # e.g. the temperature's rounding
        self.tolerance = float(pipeline_tolerance(dtype, self.vocab, n, extra))
        self.notes: dict[str, str] = {}

    @cached_property
    def families(self) -> list[Any]:
        return pipeline_families(self.law)

    band_assumptions = (PIPELINE_ROWS_ASSUMPTION,)  # what band_for's step is derived for

    def band_for(self, precision: Precision) -> float | None:
        """The null band for an observed precision (:func:`.laws.pipeline_tolerance`, rows computed by the
        pipeline itself), plus the model pair's own term; None when a role is coarser than the dtype
        (:meth:`no_band_reason`)."""
        if coarser_than(self.dtype, precision):
            return None
        pair, n = self.scenario.pair, self.new_tokens
        extra = pair.extra_tolerance(self.dtype, n, self.scenario.sampling, precision.arithmetic)
        return float(pipeline_tolerance(self.dtype, self.vocab, n, extra, precision))

    def no_band_reason(self, precision: Precision) -> str:
        return (f"the pipeline narrows below {self.dtype} and the softmax bound does not cover a narrowed logit "
                "(its error grows with the logit's size; exact/tolerances)")

    def sample(self, rows: int, generator: torch.Generator) -> PromptBatch:
        return PromptBatch(rows)

    def batch_rows(self, batch: PromptBatch) -> int:
        return batch.rows

    def arguments(self, batch: PromptBatch, generator: torch.Generator) -> tuple:
        prompt = torch.tensor([list(self.scenario.pair.prompt)] * batch.rows, dtype=torch.int64, device=self.device)
        return self.target_model, self.draft_model, prompt, self.new_tokens, self.scenario.sampling, generator

    def invoke(self, target: Any, batch: PromptBatch, generator: torch.Generator, timeout: float | None,
               hard_exit: bool) -> np.ndarray:
        _, _, prompt, n, sampling, _ = self.arguments(batch, generator)
        out, _ = call_generate(target, self.target_model, self.draft_model, prompt, n, sampling, generator,
                               timeout=timeout, scenario=self.name, hard_exit=hard_exit)
        return out.numpy()

    def impossible(self, batch: PromptBatch, emitted: np.ndarray) -> dict[str, np.ndarray]:
        return {ZERO_TOKEN: self.first_zero[sequence_codes_of(np.asarray(emitted), self.vocab)]}

    def describe_row(self, batch: PromptBatch, emitted: np.ndarray, row: int) -> str:
        return f"prompt {list(self.scenario.pair.prompt)} -> tokens {np.asarray(emitted)[row].tolist()}"


def prepare(scenario: PipelineScenario, options: Any, device: torch.device) -> GenerateScenarioPrepared:
    """The scenario prepared (its models built; not cached: a model is the target's to call and may keep
    state)."""
    return GenerateScenarioPrepared(scenario, options.dtype, device)


def injection_scenarios(prepared: Sequence[GenerateScenarioPrepared], options: Any,
                        device: torch.device) -> list[GenerateScenarioPrepared]:
    """At most :data:`INJECTION_SCENARIOS` scenarios with target zeros, those tagged ``inject`` first, then the
    zero-site ladders of the round positions (:func:`.sites.site_positions`) those do not reach in every row
    (table models only: a ladder's models are tables)."""
    chosen = sorted((i for i, s in enumerate(prepared) if s.has_target_zeros),
                    key=lambda i: ("inject" not in prepared[i].scenario.tags, i))[:INJECTION_SCENARIOS]
    subjects = [prepared[i] for i in chosen]
    if not prepared or not all(isinstance(s.scenario.pair, TablePair) for s in prepared):
        return subjects
    reaches = [r for s in subjects if (r := site_reach(s)) is not None]
    full = {j for r in reaches for j, a in enumerate(r, 1) if a == 1}
    return subjects + [prepare(zero_site_ladder(j), options, device)
                       for j in range(1, site_positions([s.scenario for s in prepared]) + 1) if j not in full]


def coverage(suite: Sequence[PipelineScenario], options: Any, injection: Any, probe_rows: dict[str, int]) -> Any:
    """The acceptance-site coverage of a generate check (:func:`.sites.generate_coverage`); ``injection``: the
    run's :class:`..injection.InjectionResult` (None: not run)."""
    fraction, injected = injected_rows(injection)
    cpu = torch.device("cpu")  # exact laws: the device does not matter
    tables = [prepare(s, options, cpu) for s in suite if isinstance(s.pair, TablePair)]
    subjects = injection_scenarios(tables, options, cpu) if len(tables) == len(suite) else []
    return generate_coverage(suite, subjects, fraction, injected, probe_rows)
