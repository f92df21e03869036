"""The generate contract: a whole pipeline, ``generate(target, draft, prompt_ids, max_new_tokens,
sampling, generator) -> [B, N]``.

The signature, the model protocol and the output contract are :mod:`..pipeline_contract`'s; the
scenarios :func:`..pipeline_scenarios.pipeline_suite` (table models) or
:func:`..pipeline_transformers.transformers_suite` (``models="transformers"``), each under its own
sampling setting or under ``sampling`` for all; the exact law of the ``N`` new tokens and its families
are :mod:`specproof.proofs.laws.generate`'s.  The pipeline chooses its own drafts: a batch is the prompt repeated.
Impossible outcome, certain: a token the processed target gives probability 0 at its prefix.  The RNG
edge injection runs on at most :data:`INJECTION_SCENARIOS` scenarios with such tokens, those tagged
``inject`` first (a pass under the dispatch mode costs about ten plain ones), and on the zero-site ladders
(:func:`.scenarios.zero_site_ladder`, table models only: injection-only, their zero edges only) of every
round position those scenarios do not reach in every row; :func:`coverage` states per position how surely
the zero coin met it (:mod:`.sites`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
from specproof.proofs.laws.generate import PipelineLaw

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
    its models built, its exact law enumerated.

    Float margins.  The exact law refuses a top-k, top-p or min-p decision that a correct implementation
    may take either way (:func:`~specproof.harness.exact.sampling.processed_law`); how close is "may"
    depends on the dtype the pipeline *processes* in, not on its logits' dtype: an upcasting pipeline
    (bfloat16 logits, float32 softmax) decides within float32's margin.  ``arithmetic`` is that dtype:
    the dtype under test until the precision probe observes the pipeline rounding in nothing coarser
    (:func:`~specproof.harness.check.intercept.precision.choose_band` sets it, with the derived band, under the
    same assumptions: the probe call's dtypes hold for every call), and the law's margins follow it.
    A margin only refuses a decision, never changes one, and it shrinks with the unit roundoff: the law
    built at the dtype's margin (when it builds) is the law at every finer arithmetic, so it is built
    once here, and again only for a scenario the dtype's margin refuses.  A scenario whose law cannot be
    built at its arithmetic's margin is *out of scope* for that dtype (:attr:`out_of_scope`, the reason):
    the driver runs no row of it and reports why, rather than ending the whole check (issue 41, item 4).
    The injection's subjects are chosen on the dtype's margin (:attr:`has_target_zeros`): the coverage
    record, prepared without the probe, then chooses the same ones."""

    impossible_labels = (ZERO_TOKEN,)
    certainty_probe = False
    max_call_rows = MAX_CALL_ROWS

    def __init__(self, scenario: PipelineScenario, dtype: str, device: torch.device):
        self.scenario, self.dtype, self.device = scenario, dtype, device
        pair, n = scenario.pair, scenario.new_tokens
        self.name, self.vocab, self.k, self.new_tokens = scenario.name, int(pair.vocab), n - 1, n
        self.target_model, self.draft_model = pair.build(dtype, str(device), n)
        self.arithmetic = dtype  # the dtype the pipeline processes in (class docstring); the probe may refine it
        self._at_dtype = self._build(dtype)  # a PipelineLaw, or why the dtype's margin refuses it
        self._law, self._tried = self._at_dtype, dtype
        self.edge_labels = scenario.edge_labels  # a zero-site ladder: its zero edges only
        extra = pair.extra_tolerance(dtype, n, scenario.sampling)  # e.g. the temperature's rounding
        self.tolerance = float(pipeline_tolerance(dtype, self.vocab, n, extra))
        self.notes: dict[str, str] = {}

    def _build(self, arithmetic: str) -> PipelineLaw | str:
        """The exact law at ``arithmetic``'s float margins, or why a decision lies within them (any other
        refusal, too many sequences say, is the caller's error and raised)."""
        scenario = self.scenario
        try:
            return pipeline_law(scenario.pair, self.target_model, scenario.sampling, self.new_tokens, arithmetic)
        except SpecproofInputError as err:
            if err.argument != "sampling":
                raise
            return (f"its exact law cannot be built ({scenario.sampling.describe()}, logits in {self.dtype}, "
                    f"processed in {arithmetic}): {err.problem}")

    def _found(self) -> PipelineLaw | str:
        if isinstance(self._law, str) and self._tried != self.arithmetic:
            self._law, self._tried = self._build(self.arithmetic), self.arithmetic
        return self._law

    @property
    def out_of_scope(self) -> str | None:
        """Why no row of this scenario is judged for its dtype (class docstring); None when its law builds."""
        found = self._found()
        return found if isinstance(found, str) else None

    @property
    def law(self) -> PipelineLaw:
        """The exact law at the margins of :attr:`arithmetic` (raises where :attr:`out_of_scope`)."""
        found = self._found()
        if isinstance(found, str):
            raise SpecproofInputError("sampling", f"scenario '{self.name}': {found}",
                                      "move the threshold away from the boundary (or use other logits); a narrow "
                                      "dtype widens the float margin: check in float32")
        return found

    @cached_property
    def first_zero(self) -> np.ndarray:
        return self.law.first_zero()

    @property
    def has_target_zeros(self) -> bool:
        """Whether the law at the dtype's margin gives some token probability 0 (False where that margin
        refuses it: the injection's subjects are chosen on it, class docstring)."""
        law = self._at_dtype
        return not isinstance(law, str) and any(x == 0 for row in law.rows.values() for x in row)

    @cached_property
    def families(self) -> list[Any]:
        return pipeline_families(self.law)

    band_assumptions = (PIPELINE_ROWS_ASSUMPTION,)  # what band_for's step is derived for

    def band_for(self, precision: Precision) -> float | None:
        """The null band for an observed precision (:func:`.laws.pipeline_tolerance`, rows computed by the
        pipeline itself), plus the model pair's own term; None when its arithmetic is coarser than the dtype
        (:meth:`no_band_reason`).  Draws coarser than the dtype alone (float32 logits, bfloat16 uniforms) get
        the derived band: its grid term is the coarsest observed grid, whatever the dtype."""
        if coarser_than(self.dtype, replace(precision, uniforms=self.dtype)):
            return None
        pair, n = self.scenario.pair, self.new_tokens
        extra = pair.extra_tolerance(self.dtype, n, self.scenario.sampling, precision.arithmetic)
        return float(pipeline_tolerance(self.dtype, self.vocab, n, extra, precision))

    def no_band_reason(self, precision: Precision) -> str:
        """Why a pipeline rounding below its dtype gets no derived band: the probe sees the dtypes of its ops,
        not which logits they carry, so a narrowed drafter (harmless to a lossless pipeline) and a narrowed
        target (whose softmax error grows with the logit's size, beyond any ``(V + 3) u``) look alike."""
        return (f"the pipeline rounds in {precision.arithmetic}, below {self.dtype}: the probe cannot tell a narrowed "
                "drafter from a narrowed target, and the softmax bound does not cover a narrowed target logit (its "
                "error grows with the logit's size; exact/tolerances)")

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
    run's :class:`..intercept.injection.InjectionResult` (None: not run)."""
    fraction, injected = injected_rows(injection)
    cpu = torch.device("cpu")  # exact laws: the device does not matter
    tables = [prepare(s, options, cpu) for s in suite if isinstance(s.pair, TablePair)]
    subjects = injection_scenarios(tables, options, cpu) if len(tables) == len(suite) else []
    return generate_coverage(suite, subjects, fraction, injected, probe_rows)
