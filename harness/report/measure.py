"""The measurements behind ``specproof report``: one task, one implementation in one dtype (or one proof).

Four kinds of rows (:mod:`.schema` describes the fields; the tasks are :mod:`.plan`'s):

* ``proof`` - one catalogue rule or theorem: claim, verdict, method, counterexample TV and the
  worst-case TV over the simplex (lower bound attained, upper bound certified or trivial);
* ``whitebox`` - :func:`~specproof.harness.drift.whitebox.measure_whitebox` of a ``whitebox`` record on one input
  pair: exact TV of the implied output law against the exact target, with its derived bound; maximum
  absolute and ULP errors; acceptance-rate error ``sum_x A_f(x) q(x) - sum_x min(p, q)``; target mass the
  float law drops; impossible mass (zero tolerance);
* ``grid`` - :func:`~specproof.harness.drift.grid.measure_grid` of a ``uniforms`` record on one small scenario:
  the exact law on the RNG grid against the rule's exact law, TV and grid tolerance
  ``min(1, (K+1)(delta + V delta/2 + (V+3) u))``, impossible mass;
* ``statistical`` - :func:`~specproof.harness.check.driver.check` of a ``batched`` record over the
  default suite: verdict, the worst finding's excess ``|observed - expected| - tolerance`` and the
  detectable TV (power 0.99) of the run.

A task never raises for a misbehaving implementation: an exception inside the code under test is an
``error`` row (flagged, so a zoo member that raises counts as caught); an input the dtype cannot
represent is a skip with its reason.
"""

from __future__ import annotations

import functools
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.report.plan import TaskOutcome, TaskSpec, WhiteboxInput
from specproof.harness.report.rows import Figure, Hashes, Row
from specproof.harness.report.schema import bytes_hash, definition_hash, expected_outcome, rule_hash
from specproof.harness.files.json_numbers import number_word

__all__ = ["run_task", "FORM_OF_RULE", "STEP_RULE_NAMES", "ulp_bin_label", "ulp_histogram_bins", "ULP_BINS"]

FORM_OF_RULE = {"canonical": "ratio", "canonical-mul": "product", "canonical-log": "log"}
STEP_RULE_NAMES = ("canonical", "canonical-mul", "canonical-log", "canonical-le", "greedy",
                   "resample-from-target", "top-k-accept")
ULP_BINS = 24


def _scenario_digest(scenarios: list[Any], *extra: str) -> str:
    chunks: list[bytes | str] = list(extra)
    for s in scenarios:
        chunks += [s.name, np.ascontiguousarray(s.target).tobytes(), np.ascontiguousarray(s.draft).tobytes()]
    return bytes_hash(chunks)


# -- hashes of the measuring code and references ------------------------------------------------------

@functools.lru_cache(maxsize=None)
def reference_hash(kind: str) -> str:
    """Hash of the exact reference and the measurement code of one row kind."""
    if kind == "whitebox":
        from specproof.harness.drift.whitebox import measure_whitebox
        from specproof.harness.exact.reference import exact_reference
        return definition_hash("whitebox", measure_whitebox, exact_reference)
    if kind == "grid":
        from specproof.harness.drift.grid import ideal_round_law, measure_grid
        return definition_hash("grid", measure_grid, ideal_round_law)
    from specproof.harness.check.driver import run_check
    from specproof.harness.check.contracts.batched.families import build_families
    return definition_hash("statistical", run_check, build_families)


@functools.lru_cache(maxsize=None)
def _rule_hash(rule: str) -> str | None:
    return rule_hash(rule)


# -- rows ----------------------------------------------------------------------------------------------

def _row(kind: str, record: Any, dtype: str | None, input_name: str, *, passed: bool, verdict: str,
         figures: dict[str, Figure], detail: dict[str, Any], input_hash: str | None, seconds: float,
         rule: str | None = None, device: str = "cpu") -> dict[str, Any]:
    rule = rule or record.rule
    expected = bool(record.expected_exact)
    defect = _known_defect(record, dtype, device)
    if defect:  # exact by construction, but a defect outside the code (torch's sampler) applies here
        expected = False
        detail = {**detail, "known_defect": defect}
    return Row(kind, record.name, rule, dtype, input_name, expected, bool(passed),
               expected_outcome({"kind": kind, "passed": passed, "expected_exact": expected, "detail": detail}),
               verdict,
               Hashes(record.source_hash, _rule_hash(rule), reference_hash(kind), input_hash),
               figures, detail, contract=record.contract, seconds=round(seconds, 3)).to_json()


def _known_defect(record: Any, dtype: str | None, device: str) -> str | None:
    """The registry's per-dtype defect of an otherwise exact record (e.g. float16 torch.multinomial)."""
    defect_on = getattr(record, "defect_on", None)
    if not record.expected_exact or dtype is None or defect_on is None:
        return None
    return defect_on(dtype, device)


def _error_row(kind: str, record: Any, dtype: str, input_name: str, err: BaseException, input_hash: str | None,
               seconds: float) -> dict[str, Any]:
    message = f"{type(err).__name__}: {err}"
    return _row(kind, record, dtype, input_name, passed=False, verdict="error", figures={},
                detail={"error": message[:500]}, input_hash=input_hash, seconds=seconds)


def whitebox_row(record: Any, dtype: str, pair: WhiteboxInput, device: str) -> dict[str, Any]:
    """Drift of one white-box record on one pair (module docstring)."""
    from specproof.harness.drift.whitebox import measure_whitebox

    start = time.perf_counter()
    try:
        result = measure_whitebox(record, pair.p, pair.q, dtype=dtype, device=device,
                                  form=FORM_OF_RULE.get(record.rule, "any"))
    except SpecproofInputError:
        raise
    except Exception as err:  # the implementation under test raised
        return _error_row("whitebox", record, dtype, pair.name, err, pair.digest, time.perf_counter() - start)
    law, fields = result.law, result.fields
    out = fields["output"]
    impossible = sum((f.impossible_mass for f in fields.values()), Fraction(0))
    rate_error = abs(law.acceptance_rate_error)
    tv_bound = law.tv_bound
    figures = {
        "tv": Figure.of(law.tv, tv_bound, "derived TV bound of the output law", dtype),
        "max_abs_error": Figure.of(out.max_abs_error, out.bound_at_worst, "derived bound at the worst entry", dtype),
        "acceptance_rate_error": Figure.of(rate_error, fields["rejection"].bound_at_worst,
                                        "derived bound on the rejection probability", dtype),
        "lost_mass": Figure.of(law.lost_mass, tv_bound, "derived TV bound (lost mass counts in TV)", dtype),
        "impossible_mass": Figure.of(impossible, 0.0, "zero tolerance", dtype),
        "max_ulp_error": Figure.of(out.max_ulp_error, None, "informational", dtype),
        "kl": Figure.of(law.kl, None, "informational", dtype),
    }
    if law.tv == 0 and all(f.max_abs_error == 0 for f in fields.values()):
        verdict = "exact"
    elif impossible > 0:
        verdict = "impossible-mass"
    elif result.within_tolerance:
        verdict = "within-tolerance"
    else:
        verdict = "beyond-tolerance"
    detail = {
        "vocab": pair.vocab, "input_description": pair.description,
        "tv_pq": f"{1 - result.reference.acceptance_rate}",
        "tv_pq_float": float(1 - result.reference.acceptance_rate),
        "tv_bound": tv_bound, "tolerance_vacuous": bool(tv_bound >= 1), "form": result.model.form,
        "failing_fields": result.failing_fields(), "residual_vanished": law.residual_vanished,
        "fields": {name: {"max_abs_error": float(f.max_abs_error), "max_rel_error": number_word(f.max_rel_error),
                          "max_ulp_error": number_word(f.max_ulp_error),
                          "bound_at_worst": number_word(f.bound_at_worst),
                          "zero_mismatches": f.zero_mismatches,
                          "max_ulp_error_same_support": number_word(f.max_ulp_error_same_support),
                          "violations": f.violations, "within_tolerance": f.within_tolerance}
                   for name, f in fields.items()},
        "ulp_histogram": ulp_histogram_bins(out.ulp_histogram),
    }
    return _row("whitebox", record, dtype, pair.name, passed=result.within_tolerance, verdict=verdict,
                figures=figures, detail=detail, input_hash=pair.digest, seconds=time.perf_counter() - start,
                device=device)


def ulp_bin_label(index: int) -> str:
    """``"00 =0"``, ``"01 <=2^-1"``, ..., ``"22 <=2^20"``, ``"23 >2^20"``: sortable bin names."""
    if index == 0:
        return "00 =0"
    if index == 23:
        return "23 >2^20"
    return f"{index:02d} <=2^{index - 2}"


def ulp_histogram_bins(histogram: list[dict[str, Any]]) -> dict[str, int]:
    """The non-empty bins of :func:`~specproof.harness.drift.whitebox.measure_whitebox`'s ULP histogram (bin 0:
    error exactly 0; bin ``j``: error in ``(2^(j-3), 2^(j-2)]`` ULPs; the last: above ``2^20``)."""
    return {ulp_bin_label(i): b["count"] for i, b in enumerate(histogram) if b["count"]}


def grid_row(record: Any, dtype: str, scenario: Any, device: str) -> dict[str, Any]:
    """Exact grid law of one uniforms record on one scenario."""
    from specproof.harness.drift.grid import GridVerdict, measure_grid

    start = time.perf_counter()
    digest = _scenario_digest([scenario])
    real = scenario.realise(dtype)  # an underflowing row is a SpecproofInputError: a skip
    try:
        result = measure_grid(record, real, device=device)
    except SpecproofInputError:
        raise
    except Exception as err:
        return _error_row("grid", record, dtype, scenario.name, err, digest, time.perf_counter() - start)
    verdict = result.verdict
    passed = verdict in (GridVerdict.EXACT, GridVerdict.WITHIN)
    figures = {
        "tv": Figure.of(result.tv, float(result.tolerance), "grid tolerance (K+1)(delta + V delta/2 + (V+3)u)",
                     dtype),
        "impossible_mass": Figure.of(result.impossible_mass, 0.0, "zero tolerance", dtype),
    }
    detail = {"vocab": result.vocab, "k": result.k, "tolerance": f"{result.tolerance}",
              "tolerance_float": float(result.tolerance), "grid": result.grid.as_json(),
              "violations": list(result.violations), "calls": result.calls, "rule": result.rule}
    return _row("grid", record, dtype, scenario.name, passed=passed, verdict=verdict.value, figures=figures,
                detail=detail, input_hash=digest, seconds=time.perf_counter() - start, rule=result.rule, device=device)


# the power a report row's PASS states: its fixed rows per scenario (16,000 by default) see about TV
# 0.04-0.05, not the 0.02 a default `specproof check` plans its rows for
REPORT_MAX_DETECTABLE_TV = 0.05


def statistical_row(record: Any, dtype: str, samples: int, seed: int, device: str,
                    large_vocab: int) -> dict[str, Any]:
    """The statistical check of one batched record (zoo members stop at the first rejecting look)."""
    from specproof.harness.check.calls import ContractViolation, VerifierError
    from specproof.harness.check.driver import check
    from specproof.harness.check.contracts.batched.scenarios import default_suite

    start = time.perf_counter()
    rule = record.rule if record.rule in STEP_RULE_NAMES else None
    suite = default_suite(large_vocab=large_vocab)
    if rule == "greedy":
        suite = [s.greedy() for s in suite]
    digest = _scenario_digest(suite, f"seed={seed}")
    try:
        result = check(record.fn, dtype=dtype, device=device, samples=samples, seed=seed, rule=rule,
                                scenarios=suite, fail_fast=not record.expected_exact,
                                max_detectable_tv=REPORT_MAX_DETECTABLE_TV)
    except (VerifierError, ContractViolation) as err:
        return _error_row("statistical", record, dtype, "default-suite", err, digest, time.perf_counter() - start)
    findings = result.findings
    flagged = getattr(result, "flagged", not result.passed)  # FAIL; UNDERPOWERED is not a finding
    verdict = getattr(result.verdict, "value", result.verdict)
    excess = max((abs(f.observed - f.expected) - f.tolerance for f in findings), default=0.0)
    certifiable = [s.detectable_tv for s in result.scenarios if s.tolerance < 1 and not s.certainty_probe]
    resolution = max(certifiable) if certifiable else 1.0
    figures = {
        "excess": Figure.of(max(0.0, excess), resolution, "detectable TV of the statistical run", dtype),
        "detectable_tv": Figure.of(result.detectable_tv, None, "informational", dtype),
    }
    detail = {
        "samples_per_scenario": samples, "rows": result.rows, "uniforms_core": record.uniforms_core,
        "seed": seed, "fail_fast": not record.expected_exact,
        "rule_checked": rule, "alpha": result.alpha,
        "detectable_tv": result.detectable_tv, "detectable_tv_certifiable": resolution,
        "vacuous_scenarios": [s.name for s in result.scenarios if s.tolerance >= 1],
        "scenarios": [{"name": s.name, "vocab": s.vocab, "k": s.k, "rows": s.rows, "tolerance": s.tolerance,
                       "detectable_tv": s.detectable_tv, "findings": len(s.findings),
                       "stopped_early": s.stopped_early} for s in result.scenarios],
        "findings": [f.line() for f in findings[:5]], "findings_total": len(findings),
        "certain_findings": sum(1 for f in findings if math.isinf(f.statistic)),
        "max_detectable_tv": getattr(result, "max_detectable_tv", None),
        "verifier_seconds": round(result.verifier_seconds, 3), "harness_seconds": round(result.harness_seconds, 3),
    }
    return _row("statistical", record, dtype, "default-suite", passed=not flagged, verdict=verdict,
                figures=figures, detail=detail, input_hash=digest, seconds=time.perf_counter() - start, rule=rule
                or record.rule, device=device)


def proof_row(name: str, drift: bool, rlimit: int) -> dict[str, Any]:
    """One catalogue rule (or theorem ``T1``..``T7``) proved or refuted."""
    from specproof.proofs import Settings, prove_theorem
    from specproof.proofs import catalogue, theorems

    theorem = {t.name: t for t in theorems()}.get(name)
    names = [e.name for e in catalogue()] + [t.name for t in theorems()]
    if theorem is not None:
        result = prove_theorem(theorem, rlimit=rlimit)
        definition = definition_hash(theorem.name, theorem.statement, theorem.check)
        description = theorem.title
    else:
        entry = {e.name: e for e in catalogue()}[name]
        result = entry.prove(Settings(rlimit=rlimit, drift=drift))
        definition = (rule_hash(entry.name) if entry.step_rule is not None
                      else definition_hash(entry.name, entry.claim, entry.prove))
        description = entry.description
    worst = [{"n": w.n, "lower": f"{w.lower}", "upper": f"{w.upper}", "lower_float": float(w.lower),
              "upper_float": float(w.upper), "certified": w.certified} for w in result.worst_case]
    worst_lower = max((w.lower for w in result.worst_case), default=None)
    figures = {"counterexample_tv": Figure.of(result.tv, None, "informational", None),
               "worst_case_tv": Figure.of(worst_lower, None, "informational", None)}
    return Row("proof", None, result.rule, None, "", result.claim != "not-exact", result.ok, result.ok,
               result.verdict.value, Hashes(rule=definition), figures,
               {"description": description, "method": result.method, "n": result.n,
                "worst_case": worst, "worst_case_computed": drift or theorem is not None,
                "reason": result.reason, "obligations": len(result.obligations),
                "scope": getattr(result, "scope", "") or result.n,
                "assumptions": [a.as_json() for a in getattr(result, "assumptions", ())],
                "order": names.index(name) if name in names else len(names)},
               seconds=round(result.seconds, 3), claim=result.claim, expected=result.expected.value,
               ok=result.ok).to_json()


def run_task(spec: TaskSpec, record: Any, context: dict[str, Any]) -> TaskOutcome:
    """Run one task; ``record`` is the implementation (None for proofs); ``context`` holds the inputs."""
    start = time.perf_counter()
    outcome = TaskOutcome()
    device = context.get("device", "cpu")
    try:
        if spec.kind == "proof":
            outcome.rows.append(proof_row(spec.name, spec.param("drift", True), spec.param("rlimit")))
        elif spec.kind == "whitebox":
            for pair in context["whitebox_inputs"]:
                if pair.name in spec.param("inputs", ()):
                    outcome.rows.append(whitebox_row(record, spec.dtype, pair, device))
        elif spec.kind == "grid":
            for scenario in context["grid_scenarios"]:
                try:
                    outcome.rows.append(grid_row(record, spec.dtype, scenario, device))
                except SpecproofInputError as err:
                    outcome.skipped.append(_skip(spec, f"{scenario.name}: {err}"))
        elif spec.kind == "statistical":
            outcome.rows.append(statistical_row(record, spec.dtype, spec.param("samples"), spec.param("seed", 0),
                                                device, spec.param("large_vocab", 1000)))
        else:
            raise ValueError(f"unknown task kind {spec.kind!r}")
    except SpecproofInputError as err:
        outcome.skipped.append(_skip(spec, str(err)))
    outcome.seconds = time.perf_counter() - start
    return outcome


def _skip(spec: TaskSpec, reason: str) -> dict[str, Any]:
    return {"kind": spec.kind, "implementation": spec.name, "dtype": spec.dtype, "reason": reason}
