"""``specproof report --engine ray``: the report's task plan run as Ray tasks.

Each planned task (:class:`~.plan.TaskSpec`: one implementation in one dtype and input, one proof, one
pipeline) is one Ray task with ``num_cpus=1`` (and a share of a GPU on a CUDA report) in a worker that
holds one torch thread, as the local pool's workers do; every row is a function of its task and the
seed only, so ``results.json`` has the local engine's rows apart from timing and provenance (measured:
``docs/scaling.md``).  Outcomes reach the driver in completion order; rows carry their own keys, and
:func:`~.run.run_report` assembles and validates the document exactly as locally, then the CLI publishes
it atomically (the previous report or the new one, never a mix).

Faults.  A task whose worker dies is retried (Ray's ``max_retries``, 3).  A task that fails for good
(retries spent, a node lost, an exception escaping the task: the code under test's own exceptions are
already ``error`` rows) yields no rows but an *incomplete* entry with the reason: the report lists it,
the records it would have measured count as not measured (never as passed, never as caught), and
``specproof report`` exits 4.  Ctrl-C or SIGTERM cancels every submitted task (``force``), stops a Ray
the command started, and publishes nothing.
"""

from __future__ import annotations

from typing import Any

from specproof.errors import SpecproofInputError

from specproof.harness.check.scale.ray_engine import MAX_RETRIES
from specproof.harness.check.scale.ray_start import start_ray
from specproof.harness.report.plan import TaskOutcome, TaskSpec

__all__ = ["execute_on_ray", "run_report_task", "lost_task"]

_WORKER: dict[Any, Any] = {}


def run_report_task(config: Any, spec: TaskSpec, record: Any) -> TaskOutcome:
    """One task in a Ray worker: one torch thread, the report's inputs built once per worker and config;
    ``record`` is ``None`` for a registry record (looked up by name), a proof, a pipeline or a target."""
    import torch

    from specproof.harness.report.execute import RECORDLESS, run_one, task_context

    torch.set_num_threads(1)
    context = _WORKER.get(config)
    if context is None:
        _WORKER.clear()
        context = _WORKER[config] = task_context(config)
    if record is None and spec.kind not in RECORDLESS:
        import specproof.impls as impls

        record = impls.get(spec.name)
    return run_one(spec, record, context)


def lost_task(spec: TaskSpec, reason: str) -> TaskOutcome:
    """A task that failed for good: no rows, a skip (so its record counts as not measured) and an
    incomplete entry (so the report says so and exits 4)."""
    entry = {"kind": spec.kind, "implementation": spec.name, "dtype": spec.dtype, "input": spec.input,
             "reason": reason}
    return TaskOutcome(skipped=[{"kind": spec.kind, "implementation": spec.name, "dtype": spec.dtype,
                                 "reason": f"incomplete: {reason}"}], incomplete=[entry])


def _gpu_share(ray: Any, workers: int) -> float:
    gpus = float(ray.cluster_resources().get("GPU", 0.0))
    if gpus <= 0:
        raise SpecproofInputError("--device", "cuda with --engine ray, but the Ray cluster has no GPU",
                                  "join a cluster with GPUs (--address) or use --device cpu")
    return min(1.0, gpus / workers)


def execute_on_ray(config: Any, ordered: list[TaskSpec], records: dict[str, Any], registry: set[str],
                   progress: Any, *, address: str | None, workers: int,
                   max_retries: int = MAX_RETRIES) -> list[TaskOutcome]:
    """Run ``ordered`` (longest first) as Ray tasks and return their outcomes in completion order.
    ``records``: the report's records by name; those in ``registry`` are looked up by name on the
    workers, the others are shipped (they must pickle; a Ray the command starts gives its workers this
    process's ``sys.path``)."""
    from specproof.harness.report.execute import RECORDLESS  # execute imports this module inside a function

    ray, started = start_ray(address, workers, python_path=True)
    try:
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": max_retries, "retry_exceptions": False}
        if config.device == "cuda":
            options["num_gpus"] = _gpu_share(ray, workers)
        task = ray.remote(run_report_task).options(**options)
        config_ref = ray.put(config)
        pending: dict[Any, TaskSpec] = {}
        outcomes: list[TaskOutcome] = []
        try:
            for spec in ordered:
                shipped = None if spec.kind in RECORDLESS or spec.name in registry else records[spec.name]
                pending[task.remote(config_ref, spec, shipped)] = spec
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                spec = pending.pop(done[0])
                try:
                    outcome = ray.get(done[0])
                except ray.exceptions.RayError as err:
                    text = str(err).strip().splitlines()
                    outcome = lost_task(spec, f"the Ray task failed for good ({max_retries} retries spent): "
                                              f"{type(err).__name__}{': ' + text[0][:200] if text else ''}")
                outcomes.append(outcome)
                progress.update(spec, outcome)
        except BaseException:  # Ctrl-C, SIGTERM (raised by the CLI's handler): stop the cluster's work
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return outcomes
    finally:
        if started:
            ray.shutdown()
