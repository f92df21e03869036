"""Running a report's tasks: on the local engine (``jobs`` spawned worker processes, each with one torch
thread so float reductions are reproducible run to run, stopped with the report on SIGTERM or Ctrl-C) or on
Ray (:mod:`.ray_run`), with one progress bar weighted by the tasks' cost (:class:`ProgressBar`: tqdm on a
terminal, a line per 5% in a CI log).  :class:`ReportEngine` says where; :func:`run_one` runs one task."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from specproof.harness.report.config import ReportConfig
from specproof.harness.report.measure import run_task
from specproof.harness.report.pipelines import run_pipeline_task
from specproof.harness.report.plan import TaskOutcome, TaskSpec, grid_scenarios, whitebox_inputs
from specproof.harness.report.targets import TARGET_KIND, run_target_task

__all__ = ["ProgressBar", "ReportEngine", "execute_tasks", "run_one", "task_context", "RECORDLESS"]


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
