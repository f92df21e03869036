"""``check_generate``: does a whole speculative-decoding pipeline sample from the processed target?

Per scenario (:mod:`.pipeline_scenarios`) the harness builds the models (:mod:`.pipeline_models`, or a
provider's :class:`~.pipeline_contract.ModelPair`), the exact law of the ``N`` new tokens and its event
families (:mod:`.pipeline_laws`), and one :class:`GenerateStream` whose ``draw(n)`` runs ``generate`` on
``n`` fresh rows (one prompt repeated, a generator seeded per call).  The streams go to the one
statistical engine (:func:`specproof.harness.check.engine.run_streams`); a row whose tokens the
processed target gives probability 0 is a certain finding.  Two more checks, also certain:

* reproducibility: one batch twice with same-seeded generators (randomness not from ``generator``);
* RNG edge injection (:class:`.injection.EdgeInjection`) on (at most two of) the scenarios with
  processed-away tokens, those tagged ``inject`` first: one pass per injectable draw kind seen and edge value, ``fraction`` of the entries overwritten; an
  impossible row that the baseline pass (same seeds) did not show is a finding, with its edge.

Layer: harness.check (2); imports proofs, harness.exact and harness.check.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import torch

from specproof.proofs.errors import SpecproofInputError

from specproof.harness.check.calls import ContractViolation, VerifierError, check_run_arguments, resolve_device
from specproof.harness.check.engine import RowBatch, run_streams, verdict_for
from specproof.harness.check.injection import DEFAULT_FRACTION, EdgeInjection
from specproof.harness.check.pipeline_contract import call_generate, check_generate_signature
from specproof.harness.check.pipeline_laws import (PipelineLaw, pipeline_families, pipeline_tolerance,
                                                   sequence_codes_of)
from specproof.harness.check.pipeline_scenarios import PipelineScenario, pipeline_suite
from specproof.harness.check.result import (DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT, CheckResult, Finding)
from specproof.harness.exact.dtypes import dtype_name
from specproof.harness.exact.rng_edges import DRAW_KINDS, EDGE_LABELS

__all__ = ["GenerateStream", "check_generate", "IMPOSSIBLE", "CHUNK_ROWS", "INJECTION_ROWS"]

IMPOSSIBLE = "emitted a token the processed target gives probability 0 at its prefix"
CHUNK_ROWS = 4096  # rows per generate call
INJECTION_ROWS = 256
INJECTION_SCENARIOS = 2  # a pass under the dispatch mode costs ~10x a plain one: the first scenarios with zeros
REPRODUCIBILITY_ROWS = 256


class GenerateStream:
    """One scenario's stream for the engine: families, tolerance, ``draw``.  ``k`` is ``N - 1`` (a row
    holds ``N = k + 1`` tokens, as a batched round's ``K + 1``); the pipeline chooses its own drafts."""

    def __init__(self, scenario: PipelineScenario, generate: Callable[..., Any], dtype: str, device: torch.device,
                 seed: int, index: int, timeout: float | None, hard_exit: bool = False):
        self.scenario, self.generate, self.dtype, self.device = scenario, generate, dtype, device
        self.timeout, self.hard_exit = timeout, hard_exit
        pair, n = scenario.pair, scenario.new_tokens
        self.name, self.vocab, self.k, self.new_tokens = scenario.name, int(pair.vocab), n - 1, n
        self.target, self.draft = pair.build(dtype, str(device), n)
        try:
            self.law = PipelineLaw.build(pair, self.target, scenario.sampling, n, dtype)
        except SpecproofInputError as err:  # name the scenario whose processing sits on a boundary
            if err.argument != "sampling":
                raise
            raise SpecproofInputError("sampling", f"scenario '{self.name}' ({scenario.sampling.describe()}, {dtype}): "
                                      f"{err.problem}", f"{err.fix}; a narrow dtype widens the float margin: "
                                      "check in float32") from None
        self.families = pipeline_families(self.law)
        self.first_zero = self.law.first_zero()
        self.has_zeros = any(x == 0 for row in self.law.rows.values() for x in row)
        self.tolerance = float(pipeline_tolerance(dtype, self.vocab, n, pair.extra_tolerance(dtype, n)))
        self.impossible_labels = [IMPOSSIBLE]
        self.seed = (seed * 1_000_003 + index * 7_919) % (2**63)
        self.calls = 0
        self.seconds = 0.0

    def run(self, rows: int, seed: int) -> np.ndarray:
        """``generate`` on ``rows`` rows with a generator seeded ``seed``: the ``[rows, N]`` tokens."""
        prompt = torch.tensor([list(self.scenario.pair.prompt)] * rows, dtype=torch.int64, device=self.device)
        generator = torch.Generator(device=self.device).manual_seed(seed % (2**63))
        out, seconds = call_generate(self.generate, self.target, self.draft, prompt, self.new_tokens,
                                     self.scenario.sampling, generator, timeout=self.timeout,
                                     scenario=self.name, hard_exit=self.hard_exit)
        self.seconds += seconds
        return out.numpy()

    def impossible(self, tokens: np.ndarray) -> tuple[np.ndarray, int]:
        """Per row the first position of probability 0 (0: none), and the earliest over the rows."""
        first = self.first_zero[sequence_codes_of(tokens, self.vocab)]
        hit = first[first > 0]
        return first, int(hit.min()) if hit.size else 0

    def draw(self, rows: int) -> RowBatch:
        counts = [np.zeros(f.n_keys) for f in self.families]
        bad, earliest, done = 0, 0, 0
        while done < rows:
            n = min(CHUNK_ROWS, rows - done)
            tokens = self.run(n, self.seed + self.calls * 104_729)
            self.calls += 1
            for fam, cnt in zip(self.families, counts):
                cnt += np.bincount(fam.key(tokens), minlength=fam.n_keys)
            first, pos = self.impossible(tokens)
            bad += int((first > 0).sum())
            earliest = min(earliest, pos) if earliest and pos else earliest or pos
            done += n
        return RowBatch(rows, counts, {IMPOSSIBLE: bad} if bad else {}, {IMPOSSIBLE: earliest} if bad else {})


def _reproducibility(stream: GenerateStream) -> list[Finding]:
    seed = stream.seed + 2**40
    first, second = stream.run(REPRODUCIBILITY_ROWS, seed), stream.run(REPRODUCIBILITY_ROWS, seed)
    differ = int((first != second).any(axis=1).sum())
    if not differ:
        return []
    return [Finding(stream.name, "reproducibility",
                    f"two runs of the same {REPRODUCIBILITY_ROWS}-row batch with same-seeded generators differ in "
                    f"{differ} rows: the pipeline draws randomness that the generator argument does not control "
                    "(e.g. the global RNG); fix: pass generator=generator to every random call",
                    0.0, differ / REPRODUCIBILITY_ROWS, 0.0, math.inf, 0.0, REPRODUCIBILITY_ROWS)]


def _under(stream: GenerateStream, mode: EdgeInjection, seed: int) -> np.ndarray | str:
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed % (2**63))  # a global-RNG pipeline reproduces too
        with mode:
            try:
                return stream.run(INJECTION_ROWS, seed)
            except (ContractViolation, VerifierError) as error:
                return str(error)


def _injection_findings(stream: GenerateStream, fraction: Fraction) -> list[Finding]:
    """Edge injection on one stream (module docstring); certain findings only."""
    seed = stream.seed + 2**41
    baseline = EdgeInjection()
    base = _under(stream, baseline, seed)
    if isinstance(base, str):
        raise VerifierError("generate", base, "make the pipeline run under torch's dispatch modes")
    base_bad = stream.impossible(base)[0] > 0
    findings = []
    for kind in sorted({r.kind for r in baseline.records if r.kind in DRAW_KINDS}):
        for label in EDGE_LABELS[kind]:
            out = _under(stream, EdgeInjection(kind, label, fraction, seed), seed)
            what = f"when a {kind} draw is its edge value '{label}' ({fraction} of entries injected)"
            if isinstance(out, str):
                findings.append(Finding(stream.name, "injection", f"broke the contract or raised {what}: {out}",
                                        0.0, 1.0, 0.0, math.inf, 0.0, INJECTION_ROWS))
                continue
            first, pos = stream.impossible(out)
            new = (first > 0) & ~base_bad
            if new.any():
                again = _under(stream, EdgeInjection(kind, label, fraction, seed), seed)
                repro = not isinstance(again, str) and bool((again == out).all())
                row = int(np.flatnonzero(new)[0])
                findings.append(Finding(
                    stream.name, "injection", f"{IMPOSSIBLE} {what}", 0.0, float(new.mean()), 0.0, math.inf, 0.0,
                    INJECTION_ROWS, position=int(first[row]),
                    note=("reproducible" if repro else "NOT reproducible") + f"; e.g. tokens {out[row].tolist()}"))
    return findings


def check_generate(generate: Callable[..., Any], *, scenarios: list[PipelineScenario] | None = None,
                   dtype: Any = "float32", device: str = "cpu", seed: int = 0, alpha: float = 1e-6,
                   rows: int | None = None, level: str = "default",
                   max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV, time_budget: float | None = None,
                   fail_fast: bool = False, timeout: float | None = DEFAULT_TIMEOUT, inject: bool = True,
                   injection_fraction: Fraction = DEFAULT_FRACTION,
                   progress: bool | Callable[[str], None] | None = None, hard_timeout: bool = False) -> CheckResult:
    """Check ``generate`` (the contract of :mod:`.pipeline_contract`) on ``scenarios`` (default
    :func:`pipeline_suite`).  ``rows``: a fixed number of rows per scenario, else the engine's ``level``
    quota for ``max_detectable_tv``.  ``inject``: also run the RNG edge injection (module docstring).
    A pipeline that raises, hangs past ``timeout`` seconds per call or breaks the contract raises
    :class:`VerifierError` / :class:`ContractViolation` (usage errors: exit 2)."""
    check_generate_signature(generate, "generate")
    name = dtype_name(dtype)
    check_run_arguments(seed, max_detectable_tv, timeout)
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 64):
        raise SpecproofInputError("rows", f"{rows!r} is not an integer >= 64", "pass at least 64 rows per scenario")
    torch_device = resolve_device(device)
    suite = list(scenarios) if scenarios is not None else pipeline_suite()
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
    start = time.perf_counter()
    streams = [GenerateStream(s, generate, name, torch_device, seed, i, timeout, hard_timeout)
               for i, s in enumerate(suite)]
    extra = _reproducibility(streams[0])
    run = run_streams(streams, alpha=alpha, rows=rows, level=level, max_detectable_tv=max_detectable_tv,
                      time_budget=time_budget, fail_fast=fail_fast and not extra, progress=progress)
    if inject and not (fail_fast and (extra or any(r.findings for r in run.reports))):
        chosen = sorted((i for i, s in enumerate(streams) if s.has_zeros),
                        key=lambda i: ("inject" not in streams[i].scenario.tags, i))[:INJECTION_SCENARIOS]
        for i in chosen:
            found = _injection_findings(streams[i], Fraction(injection_fraction))
            run.reports[i].findings.extend(found)
            run.reports[i].rejected_events += len(found)
    verdict = verdict_for(run.reports, extra, max_detectable_tv)
    spent = sum(s.seconds for s in streams)
    return CheckResult(verdict=verdict, dtype=name, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=rows or 0, rule=None, scenarios=run.reports, verifier_seconds=spent,
                       harness_seconds=time.perf_counter() - start - spent,
                       max_detectable_tv=float(max_detectable_tv), reproducibility=extra)
