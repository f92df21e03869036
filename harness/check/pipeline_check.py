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

Order: the reproducibility pair, the statistics, then the injection.  A ``time_budget`` covers the
whole check: the preparation (exact laws, models) and the pair are spent first, the injection keeps a
tenth of the budget (at most ``INJECTION_SECONDS``) and the statistics get the rest; an injection
pass that would end past that share (:class:`.calls.Deadline`, at the pipeline's speed so far) is
skipped and listed in the summary as NOT run.

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

from specproof.harness.check.calls import (ContractViolation, Deadline, VerifierError, check_run_arguments,
                                           resolve_device)
from specproof.harness.check.engine import RowBatch, run_streams, verdict_for
from specproof.harness.check.injection import DEFAULT_FRACTION, EdgeInjection, kinds_drawn, not_run_text
from specproof.harness.check.runner import INJECTION_SECONDS
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
        self.seconds, self.rows = 0.0, 0  # in generate, over every call (statistics, pair, injection)

    def run(self, rows: int, seed: int) -> np.ndarray:
        """``generate`` on ``rows`` rows with a generator seeded ``seed``: the ``[rows, N]`` tokens."""
        prompt = torch.tensor([list(self.scenario.pair.prompt)] * rows, dtype=torch.int64, device=self.device)
        generator = torch.Generator(device=self.device).manual_seed(seed % (2**63))
        out, seconds = call_generate(self.generate, self.target, self.draft, prompt, self.new_tokens,
                                     self.scenario.sampling, generator, timeout=self.timeout,
                                     scenario=self.name, hard_exit=self.hard_exit)
        self.seconds += seconds
        self.rows += rows
        return out.numpy()

    def seconds_per_row(self) -> float:
        """Seconds per row over the calls so far (0 before any)."""
        return self.seconds / max(self.rows, 1)

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


class _PassClock:
    """The rate a :class:`.calls.Deadline` reads for injection passes: seconds per row of the cheapest
    injected pass so far (the first pays the dispatch mode's one-time warm-up, 1.6 s on table models),
    else ten plain rows of ``stream`` (a pass under the mode costs about ten plain ones)."""

    def __init__(self) -> None:
        self.cheapest: float | None = None
        self.stream: GenerateStream | None = None

    def seconds_per_row(self) -> float:
        if self.cheapest is not None:
            return self.cheapest
        return 10 * self.stream.seconds_per_row() if self.stream is not None else 0.0

    def record(self, seconds: float) -> None:
        per_row = seconds / INJECTION_ROWS
        self.cheapest = per_row if self.cheapest is None else min(self.cheapest, per_row)


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


def _under(stream: GenerateStream, mode: EdgeInjection, seed: int, clock: _PassClock) -> np.ndarray | str:
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed % (2**63))  # a global-RNG pipeline reproduces too
        before = stream.seconds
        with mode:
            try:
                return stream.run(INJECTION_ROWS, seed)
            except (ContractViolation, VerifierError) as error:
                return str(error)
            finally:
                clock.record(stream.seconds - before)


def _injection_findings(stream: GenerateStream, fraction: Fraction, clock: _PassClock, deadline: Deadline | None,
                        not_run: list[str]) -> list[Finding]:
    """Edge injection on one stream (module docstring); certain findings only.  A pass that would end
    past ``deadline`` (at ``clock``'s rate) is skipped and appended to ``not_run``."""
    seed = stream.seed + 2**41
    if deadline is not None and not deadline.fits(INJECTION_ROWS):
        not_run.append(f"{stream.name}: its baseline and edge passes")
        return []
    baseline = EdgeInjection()
    base = _under(stream, baseline, seed, clock)
    if isinstance(base, str):
        raise VerifierError("generate", base, "make the pipeline run under torch's dispatch modes")
    base_bad = stream.impossible(base)[0] > 0
    findings = []
    for kind in kinds_drawn(baseline.records, DRAW_KINDS):
        for label in EDGE_LABELS[kind]:
            if deadline is not None and not deadline.fits(INJECTION_ROWS):
                not_run.append(f"{stream.name}: {kind} edge '{label}'")
                continue
            out = _under(stream, EdgeInjection(kind, label, fraction, seed), seed, clock)
            what = f"when a {kind} draw is its edge value '{label}' ({fraction} of entries injected)"
            if isinstance(out, str):
                findings.append(Finding(stream.name, "injection", f"broke the contract or raised {what}: {out}",
                                        0.0, 1.0, 0.0, math.inf, 0.0, INJECTION_ROWS))
                continue
            first, pos = stream.impossible(out)
            new = (first > 0) & ~base_bad
            if new.any():
                again = _under(stream, EdgeInjection(kind, label, fraction, seed), seed, clock)
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
    share = None if time_budget is None else min(INJECTION_SECONDS, 0.1 * time_budget) if inject else 0.0
    run = run_streams(streams, alpha=alpha, rows=rows, level=level, max_detectable_tv=max_detectable_tv,
                      # the budget covers the whole check (module docstring: Order)
                      time_budget=None if time_budget is None else max(
                          1e-3, time_budget - (time.perf_counter() - start) - share),
                      fail_fast=fail_fast and not extra, progress=progress)
    not_run: list[str] = []
    if inject and not (fail_fast and (extra or any(r.findings for r in run.reports))):
        chosen = sorted((i for i, s in enumerate(streams) if s.has_zeros),
                        key=lambda i: ("inject" not in streams[i].scenario.tags, i))[:INJECTION_SCENARIOS]
        clock = _PassClock()
        deadline = None if share is None else Deadline(share, clock.seconds_per_row)
        for i in chosen:
            clock.stream = streams[i]
            found = _injection_findings(streams[i], Fraction(injection_fraction), clock, deadline, not_run)
            run.reports[i].findings.extend(found)
            run.reports[i].rejected_events += len(found)
    verdict = verdict_for(run.reports, extra, max_detectable_tv)
    spent = sum(s.seconds for s in streams)
    return CheckResult(verdict=verdict, dtype=name, device=str(torch_device), seed=seed, alpha=alpha,
                       samples=rows or 0, rule=None, scenarios=run.reports, verifier_seconds=spent,
                       harness_seconds=time.perf_counter() - start - spent,
                       max_detectable_tv=float(max_detectable_tv), reproducibility=extra,
                       injection_summary=None if not not_run else (
                           f"RNG edge injection (its share of the time budget: {share:.3g} s): "
                           + not_run_text(not_run)),
                       time_budget=time_budget, stop_reason=run.stop_reason)
