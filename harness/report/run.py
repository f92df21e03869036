"""``specproof report``: proofs, drift matrix and statistical checks in one versioned, rendered report.

:func:`run_report` plans one task per (implementation, dtype[, input]) and per proof
(:mod:`.report_tasks`), runs them (in ``jobs`` worker processes, each with one torch thread so float
reductions are reproducible run to run), and assembles the ``results.json`` document
(:mod:`.report_schema`); :func:`write_report` renders ``report.md`` and a self-contained ``report.html``
(:mod:`.report_render`, plots from :mod:`.report_plots`) and publishes all three atomically.

Budgets (:class:`ReportConfig`; ``--quick`` halves everything that scales):

* proofs: every catalogue rule and theorem T1-T7 (``--quick``: no worst-case TV search);
* white-box: Dirichlet pairs at ``V`` in ``whitebox_vocabs`` (up to 262,144), a ``TV(p, q)`` sweep at
  ``V = 4096`` and an all-equal pair with exact zeros, in every dtype;
* grid: every ``uniforms`` record on the small scenarios of the default suite;
* statistical: every ``batched`` record, ``samples`` rows per scenario (detectable TV about ``0.04``
  at 16,000 rows, ``0.16`` at 1,000 with ``--quick``; ``check`` defaults to 200,000);
  zoo members stop at the first rejecting look.
  Compiled records run in ``compiled_dtypes`` only (compilation dominates their cost), third-party
  adapters in ``adapter_dtypes`` only (a per-row Python loop: about a minute per dtype).
* pipelines: each whole pipeline through the ``generate`` contract in float32 (:mod:`.pipelines`:
  lossless ones at detectable TV 0.045, mutants fail-fast; ``--quick``: canonical and two mutants).

Publication is atomic (:mod:`.report_publish`): the previous report or the new one, never a mix.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import dtype_name
from specproof.harness.exact.dtypes import DTYPE_NAMES
from specproof.harness.files.provenance import provenance
from specproof.harness.report.analysis import summarise
from specproof.harness.report.publish import OUTPUT_FILES, check_out_dir, write_report
from specproof.harness.files.kinds import REPORT
from specproof.harness.report.rows import Row
from specproof.harness.report.schema import validate
from specproof.harness.report.plan import TaskOutcome, TaskSpec, grid_scenarios, run_task, whitebox_inputs
from specproof.harness.report.pipelines import pipeline_tasks, run_pipeline_task
from specproof.harness.report.targets import TARGET_KIND, TargetPlan, run_target_task, target_tasks

__all__ = ["ReportConfig", "ReportEngine", "run_report", "write_report", "check_out_dir", "check_dependencies", "zoo_verdicts",
           "OUTPUT_FILES", "ProgressBar", "execute_tasks", "plan", "RENDER_DEPENDENCIES", "INSTALL_REPORT_EXTRA"]

RENDER_DEPENDENCIES = ("matplotlib",)  # what rendering imports beyond the core install (the [report] extra)
INSTALL_REPORT_EXTRA = "pip install -e '.[report]' in a clone, or pip install 'specproof[report]'"
ALL_DTYPES = DTYPE_NAMES


@dataclass(frozen=True)
class ReportConfig:
    """What ``specproof report`` measures (module docstring); ``for_mode`` gives the two presets."""

    mode: str = "default"
    device: str = "cpu"
    dtypes: tuple[str, ...] = ALL_DTYPES
    implementations: tuple[str, ...] | None = None
    seed: int = 0
    samples: int = 16000
    large_vocab: int = 1000
    whitebox_vocabs: tuple[int, ...] = (256, 4096, 65536, 262144)
    closeness: tuple[float, ...] = (0.0, 0.5, 0.9, 0.99, 0.999)
    sweep_vocab: int = 4096
    grid_scenario_limit: int | None = None
    compiled_dtypes: tuple[str, ...] = ("float32",)
    adapter_dtypes: tuple[str, ...] = ("bfloat16",)
    proofs: bool = True
    proof_drift: bool = True
    rlimit: int = 20_000_000
    jobs: int = 1
    pipelines: tuple[str, ...] | None = None  # None: every pipeline (--quick: canonical and two mutants)
    pipeline_rows: int | None = None  # rows per scenario; None: the engine's quota (harness.report.pipelines)
    pipeline_transformers_rows: int = 64
    catalogue: bool = True  # the built-in catalogue (proofs, implementations, pipelines); off: only the targets

    @classmethod
    def for_mode(cls, mode: str, **overrides: Any) -> "ReportConfig":
        if mode == "default":
            base = cls(jobs=min(os.cpu_count() or 1, 4))
        elif mode == "quick":
            base = cls(mode="quick", samples=1000, whitebox_vocabs=(256, 4096, 16384), closeness=(0.0, 0.9, 0.999),
                       grid_scenario_limit=5, compiled_dtypes=(), adapter_dtypes=(), proof_drift=False,
                       jobs=min(os.cpu_count() or 1, 4))
        else:
            raise SpecproofInputError("mode", f"unknown mode {mode!r}", "use 'default' or 'quick'")
        return replace(base, **overrides)

    def validated(self) -> "ReportConfig":
        dtypes = tuple(dict.fromkeys(dtype_name(d) for d in self.dtypes))
        if not dtypes:
            raise SpecproofInputError("--dtypes", "is empty", f"pass some of {', '.join(ALL_DTYPES)}")
        if self.samples < 64:
            raise SpecproofInputError("samples", f"{self.samples} rows per scenario is too few", "use at least 64")
        for name, rows in (("pipeline_rows", self.pipeline_rows), ("pipeline_transformers_rows",
                                                                   self.pipeline_transformers_rows)):
            if rows is not None and rows < 64:
                raise SpecproofInputError(name, f"{rows} rows per scenario is too few", "use at least 64")
        if self.jobs < 1:
            raise SpecproofInputError("--jobs", f"{self.jobs} is not positive", "use 1 or more worker processes")
        if self.device not in ("cpu", "cuda"):
            raise SpecproofInputError("--device", f"unknown device {self.device!r}", "use cpu or cuda")
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise SpecproofInputError("--device", "CUDA is not available here", "use --device cpu")
        return replace(self, dtypes=dtypes)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["implementations"] = list(self.implementations) if self.implementations else None
        data["pipelines"] = list(self.pipelines) if self.pipelines is not None else None
        data["torch_threads_per_worker"] = 1
        return data


# -- planning ------------------------------------------------------------------------------------------

def _select(config: ReportConfig, records: list[Any] | None) -> list[Any]:
    import specproof.impls as impls

    if records is not None:
        return list(records)
    if not config.implementations:
        return list(impls.implementations())
    chosen = []
    for name in config.implementations:
        try:
            chosen.append(impls.get(name))
        except KeyError as err:
            raise SpecproofInputError("--impl", str(err.args[0]), "pass names from specproof.impls") from None
    return chosen


def check_dependencies(modules: tuple[str, ...] = RENDER_DEPENDENCIES) -> None:
    """Refuse the run before it starts when a module rendering needs is missing (a usage error)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SpecproofInputError("report", f"needs {', '.join(missing)} to render, which is not installed",
                                  f"install the report extra: {INSTALL_REPORT_EXTRA}")


def _extra_missing(record: Any) -> bool:
    if not record.needs_extra:
        return False
    import importlib.util

    return importlib.util.find_spec(record.needs_extra) is None


def plan(config: ReportConfig, records: list[Any]) -> tuple[list[TaskSpec], list[dict[str, Any]]]:
    """Tasks to run and skips with their reasons."""
    from specproof.proofs import catalogue, theorems

    tasks: list[TaskSpec] = []
    skipped: list[dict[str, Any]] = []
    if config.proofs:
        for entry in catalogue():
            params = (("drift", config.proof_drift), ("rlimit", config.rlimit))
            tasks.append(TaskSpec("proof", entry.name, params=params, cost=3.0 if config.proof_drift else 1.0))
        for theorem in theorems():
            tasks.append(TaskSpec("proof", theorem.name, params=(("rlimit", config.rlimit),), cost=1.0))
    inputs = whitebox_inputs(config.whitebox_vocabs, config.closeness, config.sweep_vocab, config.seed)
    large = [pair.name for pair in inputs if pair.vocab >= 65536]
    small = tuple(pair.name for pair in inputs if pair.vocab < 65536)
    for record in records:
        def skip(reason: str, dtype: str | None = None) -> None:
            skipped.append({"kind": record.contract, "implementation": record.name, "dtype": dtype, "reason": reason})

        if record.contract == "multidraft":
            skip("multi-draft contract: the report has no exact per-row law for it (see the proofs' "
                 "rrs-with-replacement)")
            continue
        if config.device not in record.devices:
            skip(f"the record does not run on {config.device}")
            continue
        if _extra_missing(record):
            skip(f"needs {record.needs_extra}, which is not installed here: {INSTALL_REPORT_EXTRA} "
                 f"(or '.[{record.needs_extra}]') to measure it")
            continue
        supported = {dtype_name(d) for d in record.dtypes}
        for dtype in config.dtypes:
            if dtype not in supported:
                skip("dtype not supported by the record", dtype)
                continue
            if record.compiled and dtype not in config.compiled_dtypes:
                skip(f"compiled record: compilation dominates its cost; this mode runs it in "
                     f"{', '.join(config.compiled_dtypes) or 'no dtype'}", dtype)
                continue
            if record.needs_extra and dtype not in config.adapter_dtypes:
                skip(f"third-party adapter (a per-row Python loop, about a minute per dtype): this mode runs "
                     f"it in {', '.join(config.adapter_dtypes) or 'no dtype'}", dtype)
                continue
            tasks.extend(_record_tasks(config, record, dtype, large, small))
    return tasks, skipped


def _record_tasks(config: ReportConfig, record: Any, dtype: str, large: list[str],
                  small: tuple[str, ...]) -> list[TaskSpec]:
    if record.contract == "whitebox":
        out = [TaskSpec("whitebox", record.name, dtype, "small inputs", (("inputs", small),), cost=2.0)]
        for name in large:
            vocab = int(name.rsplit("V", 1)[1])
            out.append(TaskSpec("whitebox", record.name, dtype, name, (("inputs", (name,)),),
                                cost=3.0 * vocab / 262144))
        return out
    if record.contract == "uniforms":
        cost = 12.0 if record.compiled else 1.5
        return [TaskSpec("grid", record.name, dtype, "small scenarios", cost=cost)]
    if record.contract == "batched":
        cost = 1.0 + 0.25 * config.samples / 1000
        cost *= 15.0 if record.needs_extra else 5.0 if record.compiled else 1.0
        if not record.expected_exact:
            cost /= 3.0
        params = (("large_vocab", config.large_vocab), ("samples", config.samples), ("seed", config.seed))
        return [TaskSpec("statistical", record.name, dtype, "default suite", params, cost=cost)]
    return []


# -- running -------------------------------------------------------------------------------------------

class ProgressBar:
    """Progress of a report's tasks, weighted by their cost: on a terminal the same tqdm bar as
    ``specproof check``'s; otherwise (a CI log) one plain line per 5%."""

    def __init__(self, total: float, tasks: int, enabled: bool = True, stream: Any = None):
        self.total, self.tasks, self.enabled = max(total, 1e-9), tasks, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.count, self.start, self.step = 0.0, 0, time.perf_counter(), -1
        self.bar = None
        if enabled and bool(getattr(self.stream, "isatty", lambda: False)()):
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc="specproof report", file=self.stream, dynamic_ncols=True,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]")

    def update(self, spec: TaskSpec, outcome: TaskOutcome | None = None) -> None:
        """``spec`` is done (with ``outcome``: what a campaign caches; the bar itself ignores it)."""
        self.done += spec.cost
        self.count += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.count}/{self.tasks} tasks, {spec.label[:50]}", refresh=False)
            self.bar.update(spec.cost)
            return
        fraction = min(1.0, self.done / self.total)
        if int(20 * fraction) > self.step or self.count == self.tasks:
            self.step = int(20 * fraction)
            elapsed = int(time.perf_counter() - self.start)
            self.stream.write(f"specproof report: {100 * fraction:3.0f}% {self.count}/{self.tasks} tasks "
                              f"{elapsed // 60}m{elapsed % 60:02d}s  {spec.label[:60]}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


_WORKER: dict[str, Any] = {}


def task_context(config: ReportConfig) -> dict[str, Any]:
    """What every task of one report shares: the device, the white-box inputs, the grid scenarios."""
    return {"device": config.device,
            "whitebox_inputs": whitebox_inputs(config.whitebox_vocabs, config.closeness, config.sweep_vocab,
                                               config.seed),
            "grid_scenarios": grid_scenarios(config.grid_scenario_limit)}


def _die_with_parent() -> None:
    """Linux: the kernel sends this worker SIGTERM when the report process dies, even by SIGKILL."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's own cleanup (_stop_workers) remains
        pass


def _worker_init(config: ReportConfig) -> None:
    import torch

    if sys.platform.startswith("linux"):
        _die_with_parent()
    torch.set_num_threads(1)
    _WORKER["context"] = task_context(config)


RECORDLESS = ("proof", "pipeline", TARGET_KIND)  # task kinds that measure no registry record


def run_one(spec: TaskSpec, record: Any, context: dict[str, Any]) -> TaskOutcome:
    """One task (``record``: the implementation measured, ``None`` for a proof, a pipeline or a target)."""
    if spec.kind == "pipeline":
        return run_pipeline_task(spec, context)
    if spec.kind == TARGET_KIND:
        return run_target_task(spec)
    return run_task(spec, record, context)


def _worker_run(spec: TaskSpec) -> TaskOutcome:
    import specproof.impls as impls

    record = None if spec.kind in RECORDLESS else impls.get(spec.name)
    return run_one(spec, record, _WORKER["context"])


def _stop_workers(pool: Any) -> None:
    """Terminate the pool's worker processes now (shutdown alone waits for running tasks: minutes)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    stopped: set[int] = set()
    for _ in range(3):  # a worker the pool was still spawning shows up after the first pass
        processes = [p for p in list((getattr(pool, "_processes", None) or {}).values()) if id(p) not in stopped]
        if not processes:
            return
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()  # SIGTERM ignored or blocked (inherited): SIGKILL cannot be
                process.join()
            stopped.add(id(process))


def _registry_names(records: list[Any]) -> set[str]:
    """The records that are the registry's own (worker processes can look them up by name)."""
    import specproof.impls as impls

    names = set()
    for record in records:
        try:
            if impls.get(record.name) is record:
                names.add(record.name)
        except KeyError:
            pass
    return names


def execute_tasks(config: ReportConfig, tasks: list[TaskSpec], records: list[Any],
                  progress: ProgressBar, engine: "ReportEngine") -> list[TaskOutcome]:
    """Run ``tasks`` on ``engine``; their outcomes in completion order (``progress.update`` after each)."""
    by_name = {r.name: r for r in records}
    ordered = sorted(tasks, key=lambda t: -t.cost)  # longest first: balanced workers
    registry = _registry_names(records)
    if engine.name == "ray":
        from specproof.harness.report.ray_run import execute_on_ray

        return execute_on_ray(config, ordered, by_name, registry, progress, address=engine.address,
                              workers=engine.workers)
    if config.jobs > 1 and len(tasks) > 1 and len(registry) == len(by_name):
        import concurrent.futures as futures
        import multiprocessing

        outcomes = []
        context = multiprocessing.get_context("spawn")  # no fork after torch threads started
        pool = futures.ProcessPoolExecutor(config.jobs, mp_context=context, initializer=_worker_init,
                                           initargs=(config,))
        try:
            pending = {pool.submit(_worker_run, spec): spec for spec in ordered}
            for done in futures.as_completed(pending):
                outcomes.append(done.result())
                progress.update(pending[done], outcomes[-1])
        except BaseException:  # SIGTERM (raised by the CLI's handler), Ctrl-C, a failing task
            _stop_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return outcomes
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        context = task_context(config)
        outcomes = []
        for spec in ordered:
            outcomes.append(run_one(spec, None if spec.kind in RECORDLESS else by_name[spec.name],
                                    context))
            progress.update(spec, outcomes[-1])
        return outcomes
    finally:
        torch.set_num_threads(threads)


@dataclass(frozen=True)
class ReportEngine:
    """Where the tasks run: ``local`` (``config.jobs`` worker processes) or ``ray`` (Ray tasks on a local
    Ray with ``workers`` CPUs, or on the cluster at ``address``; :mod:`.ray_run`)."""

    name: str = "local"
    address: str | None = None
    workers: int = 2

    def as_json(self) -> dict[str, Any]:
        return {"engine": self.name} if self.name == "local" else \
            {"engine": self.name, "address": self.address, "workers": self.workers}


def run_report(config: ReportConfig, *, records: list[Any] | None = None, progress: bool = True,
               stream: Any = None, argv: list[str] | None = None, engine: ReportEngine = ReportEngine(),
               targets: TargetPlan | None = None) -> dict[str, Any]:
    """Measure everything ``config`` asks for and return the ``results.json`` document (schema 2).

    ``records``: implementation records to measure instead of the registry's (tests pass degraded
    ones; locally they run in this process).  ``engine``: where the tasks run (:class:`ReportEngine`).
    ``targets``: the user's own verifiers, one check per target, dtype and device (:mod:`.targets`),
    beside the catalogue when ``config.catalogue`` (else alone)."""
    config = config.validated()
    start = time.perf_counter()
    chosen: list[Any] = []
    tasks: list[TaskSpec] = []
    skipped: list[dict[str, Any]] = []
    if config.catalogue:
        chosen = _select(config, records)
        tasks, skipped = plan(config, chosen)
        more_tasks, more_skipped = pipeline_tasks(config)
        tasks, skipped = tasks + more_tasks, skipped + more_skipped
    if targets is not None:
        targets = targets.validated()
        tasks = target_tasks(targets) + tasks
    bar = ProgressBar(sum(t.cost for t in tasks), len(tasks), progress, stream)
    try:
        outcomes = execute_tasks(config, tasks, chosen, bar, engine)
    finally:
        bar.close()
    rows: dict[str, Any] = {}
    timing: dict[str, float] = {}
    incomplete: list[dict[str, Any]] = []
    for outcome in outcomes:  # completion order: rows carry their own keys
        for row in outcome.rows:
            if row["key"] in rows:
                raise AssertionError(f"two rows with key {row['key']!r}")
            rows[row["key"]] = row
            timing[row["kind"]] = timing.get(row["kind"], 0.0) + row["seconds"]
        skipped.extend(outcome.skipped)
        incomplete.extend(outcome.incomplete)
    timing = {k: round(v, 2) for k, v in sorted(timing.items())}
    timing["wall"] = round(time.perf_counter() - start, 2)
    dtypes = list(config.dtypes)
    document = REPORT.envelope({
        "config": config.as_json() | ({"targets": targets.as_json()} if targets is not None else {}),
        "rows": dict(sorted(rows.items())),
        "zoo": zoo_verdicts(chosen, rows, skipped),
        "skipped": sorted(skipped, key=lambda s: (s["implementation"] or "", s["dtype"] or "", s["reason"])),
        "incomplete": sorted(incomplete, key=lambda s: (s["implementation"], s["dtype"] or "", s["input"])),
        "timing": timing,
    }, provenance(device=config.device, dtypes=dtypes, seeds=[config.seed],
                  extra={"command": "report", "argv": list(argv or []), "mode": config.mode,
                         **engine.as_json()})).to_json()
    document["summary"] = summarise(document)
    validate(document, "report")
    return document


# -- the zoo -------------------------------------------------------------------------------

_KIND_TEXT = {"statistical": "statistical check", "grid": "grid", "whitebox": "white-box"}


def zoo_verdicts(records: list[Any], rows: dict[str, Any], skipped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each known-bad record: which check flagged it (in which dtypes), and in which dtypes none did,
    with the detectable TV of the run there (``reason``; empty when caught in every measured dtype)."""
    out = []
    typed = [Row.from_json(r) for r in rows.values()]
    for record in records:
        if record.expected_exact:
            continue
        own = [r for r in typed if r.implementation == record.name]
        core = [r for r in typed if record.uniforms_core and r.implementation == record.uniforms_core]
        caught, reasons = [], []
        caught_dtypes: set[str] = set()
        for label, group in (("", own), (f" via its uniforms core {record.uniforms_core}", core)):
            for kind in ("statistical", "grid", "whitebox"):
                kind_rows = [r for r in group if r.kind == kind]
                flagged = [r for r in kind_rows if not r.passed]
                if flagged:
                    dtypes = sorted({r.dtype for r in flagged}, key=ALL_DTYPES.index)
                    caught_dtypes.update(dtypes)
                    verdicts = sorted({str(r.verdict) for r in flagged})
                    caught.append(f"{_KIND_TEXT[kind]}{label} ({', '.join(dtypes)}: "
                                  f"{len(flagged)}/{len(kind_rows)} rows, {', '.join(verdicts)})")
        measured = sorted({r.dtype for r in own + core}, key=ALL_DTYPES.index)
        for dtype in measured:
            if dtype not in caught_dtypes:
                reasons.append(_not_caught_reason(dtype, [r for r in own + core if r.dtype == dtype]))
        if not own and not core:
            reasons = ["not measured: " + s["reason"] for s in skipped if s["implementation"] == record.name][:1] \
                or ["not measured"]
        out.append({"implementation": record.name, "contract": record.contract, "bug": record.bug,
                    "mirrors": record.mirrors, "measured": bool(own or core), "caught": bool(caught),
                    "caught_by": caught, "reason": "; ".join(reasons)})
    return out


def _not_caught_reason(dtype: str, rows: list[Row]) -> str:
    """``not caught in D (detectable TV x)``: what the run in that dtype could have seen."""
    statistical = [r.detail["detectable_tv_certifiable"] for r in rows
                   if r.kind == "statistical" and "detectable_tv_certifiable" in r.detail]
    kinds = ", ".join(sorted({_KIND_TEXT[r.kind] for r in rows}))
    if statistical:
        return f"not caught in {dtype} (detectable TV {min(statistical):.3g}; {kinds})"
    return f"not caught in {dtype} ({kinds} within the derived tolerance)"
