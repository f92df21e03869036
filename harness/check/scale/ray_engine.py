"""``--engine ray``: the rows of one check sharded over Ray tasks; the engine reads the merged counts.

The seam is the stream (:mod:`.engine`): :class:`ShardedStream` wraps one :class:`~.driver.Stream` of any contract
and its ``draw(n)`` splits the rows ``[o, o + n)`` of its scenario (``o`` = rows drawn so far) at the
multiples of ``shard_rows``; each piece ``[a, b)`` is a Ray task that rebuilds the stream in the worker
from a picklable :class:`ShardSpec` (TARGET string or the callable, scenario, the check's options) and runs the verifier on ``b - a`` fresh rows whose drafts come from a generator seeded by
``(seed, scenario index, a)`` and whose verifier generators are seeded by ``a`` as in the local stream.
So the rows are a function of the seed and of the engine's draw sizes only, never of ``--workers``,
of the scheduling, or of the order in which pieces finish; the counts are integers summed in float64
(exact below 2^53), so the merged :class:`~.engine.RowBatch` does not depend on the merging order.
:func:`~.engine.run_streams` is unchanged: its theorem (any allocation, any stopping, Ville) applies to
the merged counts as to local ones, because each stream's rows are still read in order from one
i.i.d. sequence.  The rows differ from the local engine's (another draft seeding), not their law.
While the driver folds a batch, the pieces of the stream's next draw of the same size are already
submitted (enough to keep every worker busy); one is used only when the engine asks for exactly that
``(start, rows)``, so what is read never depends on what was guessed; unread ones finish unread
(:meth:`RayEngine.discard`).

Faults.  A task whose worker dies is retried (``max_retries``, Ray's own option).  A piece that still
fails (retries spent, node lost, an unexpected exception) raises :class:`ShardFailure`; the check's
verdict is then ``inconclusive`` with the reason, never ``pass``: its rows are missing, and dropping
them could select the rows the engine reads.  The verifier's own errors (it raises, breaks the
contract, runs past ``timeout``, or hangs a piece past its calls' limits) are the same
:class:`~.calls.VerifierError` / :class:`~.calls.ContractViolation` a local check raises (exit 2).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.stats.engine import MAX_BATCH, RowBatch
from specproof.harness.check.scale.ray_start import RayStart

__all__ = ["RayEngine", "ShardSpec", "ShardedStream", "ShardFailure", "shard_plan", "merge_batches", "SHARD_ROWS"]

SHARD_ROWS = MAX_BATCH  # the row grid of the pieces (fixed: the rows do not depend on --workers), the engine's
# largest draw, so that a full draw starting on the grid is one task; measured (docs/scaling.md): 1,024-row
# pieces cost a quarter more wall than 4,096, and 4,096 took 28.1 s where 8,192 took 26.4 s (5.2M rows, 2 cores)
MAX_RETRIES = 3  # Ray task retries after a worker's death
SHARD_TIMEOUT_MARGIN = 120.0  # seconds beyond the per-call limits before a piece counts as hung


class ShardFailure(RuntimeError):
    """A piece of a check failed for good: the check is inconclusive (never a pass)."""


def shard_plan(offset: int, rows: int, shard_rows: int = SHARD_ROWS) -> list[tuple[int, int]]:
    """``(start, rows)`` of the pieces of ``[offset, offset + rows)`` cut at the multiples of ``shard_rows``."""
    pieces, a, end = [], offset, offset + rows
    while a < end:
        b = min(end, (a // shard_rows + 1) * shard_rows)
        pieces.append((a, b - a))
        a = b
    return pieces


def merge_batches(batches: Sequence[RowBatch]) -> RowBatch:
    """The sum of the pieces' counts (exact: integer counts in float64), impossible rows, first positions."""
    counts = [np.sum([b.counts[f] for b in batches], axis=0) for f in range(len(batches[0].counts))]
    impossible: dict[str, int] = {}
    first: dict[str, int] = {}
    for b in batches:
        for label, n in b.impossible.items():
            impossible[label] = impossible.get(label, 0) + int(n)
        for label, pos in b.first_position.items():
            if pos:
                first[label] = min(first.get(label, pos), pos)
    return RowBatch(sum(b.rows for b in batches), counts, impossible, first)


@dataclass(frozen=True)
class ShardSpec:
    """Everything a worker needs to rebuild one stream: picklable (``verify`` is a TARGET string, with its
    ``adapter``, or a callable that pickles; ``options`` the check's, without the engine or progress)."""

    verify: str | Callable[..., Any]
    adapter: str | None
    scenario: Any  # one scenario of the contract's suite
    index: int
    options: Any  # harness.check.options.CheckOptions
    device: str
    sys_path: tuple[str, ...] = ()
    check_id: str = ""  # one per sharded check: the key of the worker's cache


_WORKER_STREAMS: dict[tuple[str, int], Any] = {}


def _worker_stream(spec: ShardSpec) -> Any:
    """The spec's stream in this worker (built once per worker; the spec kept alive with it)."""
    hit = _WORKER_STREAMS.get((spec.check_id, spec.index))
    if hit is not None:
        return hit
    import torch  # noqa: F401  (the worker's first torch import)
    from specproof.harness.check.calls import Caller, resolve_device
    from specproof.harness.check.driver import Stream

    for entry in spec.sys_path:
        if entry not in sys.path and os.path.isdir(entry):
            sys.path.append(entry)
    verify = spec.verify
    if isinstance(verify, str):
        from specproof.harness.check.targets import load_target

        verify, _ = load_target(verify, spec.options.contract.name, spec.adapter)
    device = resolve_device(spec.device)
    options = spec.options
    prepared = options.contract.implementation().prepare(spec.scenario, options, device)
    stream = Stream(spec.index, prepared, Caller(verify, device, options.timeout, False), options.seed,
                    options.batch_size)
    if len(_WORKER_STREAMS) > 64:
        _WORKER_STREAMS.clear()
    _WORKER_STREAMS[(spec.check_id, spec.index)] = stream
    return stream


def run_piece(spec: ShardSpec, start: int, rows: int) -> tuple[str, Any, float]:
    """Rows ``[start, start + rows)`` of the spec's scenario: ``("ok", RowBatch, verifier seconds)``, or
    ``("input-error", (class name, argument, problem, fix), 0)`` for the verifier's own failures."""
    from specproof.harness.check.calls import ContractViolation, VerifierError
    from specproof.harness.check.seeding import generator, shard_seed

    try:
        stream = _worker_stream(spec)
        stream.input_gen = generator(shard_seed(spec.options.seed, spec.index, start))
        stream.rows = start  # the target's generators are seeded by the absolute row offset
        before = stream.caller.seconds
        batch = stream.draw(rows)
        return "ok", batch, stream.caller.seconds - before
    except SpecproofInputError as err:
        kind = {VerifierError: "VerifierError", ContractViolation: "ContractViolation"}.get(type(err),
                                                                                            "SpecproofInputError")
        return "input-error", (kind, err.argument, err.problem, err.fix), 0.0


def _input_error(payload: tuple[str, str, str, str]) -> SpecproofInputError:
    from specproof.harness.check.calls import ContractViolation, VerifierError

    kind, argument, problem, fix = payload
    cls = {"VerifierError": VerifierError, "ContractViolation": ContractViolation}.get(kind, SpecproofInputError)
    return cls(argument, problem, fix)


class ShardedStream:
    """A :class:`~.driver.Stream` whose rows are drawn by Ray tasks (module docstring)."""

    def __init__(self, stream: Any, spec_ref: Any, engine: "RayEngine"):
        self.local, self.spec_ref, self.engine = stream, spec_ref, engine
        self.name, self.vocab, self.k = stream.name, stream.vocab, stream.k
        self.families, self.tolerance = stream.families, stream.tolerance
        self.notes, self.impossible_labels = stream.notes, stream.impossible_labels
        self.certainty_probe = getattr(stream, "certainty_probe", False)
        self.offset = 0
        self.ahead: dict[tuple[int, int], Any] = {}  # (start, rows) -> the ref of a piece submitted ahead

    def draw(self, rows: int) -> RowBatch:
        """Rows ``[offset, offset + rows)``: their pieces (those submitted ahead reused when they are the
        very same ``(start, rows)``), then the next ``rows`` submitted ahead so the workers compute while
        the driver folds; a piece's counts depend on its ``(start, rows)`` only, so reuse changes nothing."""
        engine = self.engine
        pieces = shard_plan(self.offset, rows, engine.shard_rows)
        refs = [self.ahead.pop(p, None) for p in pieces]
        fresh = iter(engine.submit(self.spec_ref, [p for p, r in zip(pieces, refs) if r is None]))
        refs = [r if r is not None else next(fresh) for r in refs]
        self.offset += rows
        stale = [p for p in self.ahead if p[0] < self.offset]  # the guess was another size: never read
        engine.discard([self.ahead.pop(p) for p in stale])
        if engine.prefetch and rows >= engine.shard_rows:
            # draws of whole pieces: enough of the same size ahead to keep every worker busy (their cuts fall on
            # the grid, so a doubled next draw reuses them too); smaller draws (screening, the first
            # doublings) change size every time, and a piece guessed for them would be computed for nothing
            depth = max(1, -(-engine.workers * engine.shard_rows // rows) - 1)
            planned = [p for d in range(depth) for p in shard_plan(self.offset + d * rows, rows, engine.shard_rows)]
            ahead = [p for p in planned if p not in self.ahead]
            self.ahead.update(zip(ahead, engine.submit(self.spec_ref, ahead)))
        batches, seconds = engine.collect(refs, pieces, self.name)
        self.local.caller.seconds += seconds  # the check's target time includes the workers'
        self.local.caller.rows += rows
        return merge_batches(batches)

    def empty_report(self) -> Any:
        return self.local.empty_report()


class RayEngine:
    """Ray for one check: started with ``num_cpus=workers`` and stopped by the context when no
    ``address`` is given, else joined (and left running).  ``verify``: the TARGET string (and
    ``adapter``) the workers import, or ``None`` to ship the check's callable itself (it must pickle)."""

    def __init__(self, *, address: str | None = None, workers: int = 2, verify: str | None = None,
                 adapter: str | None = None, shard_rows: int = SHARD_ROWS, max_retries: int = MAX_RETRIES,
                 prefetch: bool = True, start: RayStart | None = None):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise SpecproofInputError("--workers", f"{workers!r} is not a positive integer", "pass e.g. --workers 2")
        if shard_rows < 1:
            raise SpecproofInputError("shard_rows", f"{shard_rows} < 1", f"use e.g. {SHARD_ROWS}")
        self.address, self.workers, self.verify, self.adapter = address, workers, verify, adapter
        self.shard_rows, self.max_retries = shard_rows, max_retries
        self.ray: Any = None
        self.task: Any = None
        self.num_gpus = 0.0
        self.timeout: float | None = None  # the check's per-call limit (set by shard)
        self.pieces = 0  # tasks submitted
        self.waited = 0.0  # seconds the driver spent blocked on tasks (the rest of a run is the driver's)
        self.prefetch = prefetch
        self.outstanding: set[Any] = set()  # refs submitted ahead and not yet read
        self._start: RayStart | None = start  # begun by the caller (before its torch import), or by __enter__

    def __enter__(self) -> "RayEngine":
        """Join a cluster now, or start a local Ray in the background (:class:`.ray_start.RayStart`:
        its start overlaps the driver's work before the first row); :meth:`shard` waits for it."""
        if self._start is None:
            self._start = RayStart(self.address, self.workers).begin()
        return self

    def _ready(self) -> None:
        if self.task is None:
            if self._start is None:
                raise RuntimeError("RayEngine used outside its context (use `with RayEngine(...) as engine`)")
            self.ray = self._start.ready()
            self.task = self.ray.remote(run_piece)

    def __exit__(self, *exc: Any) -> None:
        self.release()
        if self._start is not None:
            self._start.stop()  # waits for a start still under way: no Ray is left behind
            self._start = None
        self.task = None

    def shard(self, streams: Sequence[Any], verify: Callable[..., Any], options: Any) -> list[ShardedStream]:
        """One :class:`ShardedStream` per stream of a check of any contract (its specs put in Ray's store once)."""
        self._ready()
        device = str(streams[0].prepared.device)
        if device.startswith("cuda"):
            gpus = float(self.ray.cluster_resources().get("GPU", 0.0))
            if gpus <= 0:
                raise SpecproofInputError("--device", "cuda with --engine ray, but the Ray cluster has no GPU",
                                          "join a cluster with GPUs (--address) or use --device cpu")
            self.num_gpus = min(1.0, gpus / self.workers)
        self.timeout = options.timeout
        worker_options = options.with_(engine=None, progress=None, scenarios=None, hard_timeout=False,
                                       rule=getattr(options.rule, "name", options.rule))
        target = self.verify if self.verify is not None else verify
        paths = (os.getcwd(),) + tuple(p for p in sys.path if p and os.path.isdir(p))
        check_id = uuid.uuid4().hex
        out = []
        for s in streams:
            spec = ShardSpec(target, self.adapter, s.prepared.scenario, s.index, worker_options, device, paths,
                             check_id)
            out.append(ShardedStream(s, self.ray.put(spec), self))
        return out

    def submit(self, spec_ref: Any, pieces: list[tuple[int, int]]) -> list[Any]:
        """One task per piece (retried on a worker's death); their refs, in order."""
        self._ready()
        options: dict[str, Any] = {"max_retries": self.max_retries, "retry_exceptions": False, "num_cpus": 1}
        if self.num_gpus:
            options["num_gpus"] = self.num_gpus
        refs = [self.task.options(**options).remote(spec_ref, a, n) for a, n in pieces]
        self.pieces += len(refs)
        self.outstanding.update(refs)
        return refs

    def discard(self, refs: list[Any]) -> None:
        """Forget pieces submitted ahead that will not be read.  They are left to finish, not cancelled:
        a cancel that races a task's completion aborts the driver in Ray (``Check failed: it !=
        submissible_tasks_.end()``, ray-project/ray#54798; seen here with Ray 2.60), and a piece is at
        most ``shard_rows`` rows of work."""
        self.outstanding.difference_update(refs)

    def release(self) -> None:
        """Forget every piece still outstanding (the check is over: what was submitted ahead is unread)."""
        self.outstanding.clear()

    def run_pieces(self, spec_ref: Any, pieces: list[tuple[int, int]], name: str) -> tuple[list[RowBatch], float]:
        """Run the pieces as tasks (retried on a worker's death), in the order given."""
        return self.collect(self.submit(spec_ref, pieces), pieces, name)

    def collect(self, refs: list[Any], pieces: list[tuple[int, int]], name: str) -> tuple[list[RowBatch], float]:
        """The pieces' batches and verifier seconds, read in order; on Ctrl-C every outstanding piece is
        cancelled (force), on any other failure they are forgotten."""
        ray = self.ray
        self.outstanding.difference_update(refs)
        per_call = (self.timeout or 0.0) + 5.0
        batches, seconds = [], 0.0
        t0 = time.perf_counter()
        try:
            for ref, (a, n) in zip(refs, pieces):
                calls = -(-n // 16)  # at most one call per 16 rows (the stream's smallest chunk)
                try:
                    status, payload, spent = ray.get(ref, timeout=calls * per_call + SHARD_TIMEOUT_MARGIN
                                                     if self.timeout else None)
                except ray.exceptions.GetTimeoutError:  # a verifier that ignored the worker's alarm
                    from specproof.harness.check.calls import VerifierError

                    ray.cancel(ref, force=True)  # hung, not completing: its worker is ended (no race)

                    raise VerifierError("verify", f"did not return on a Ray worker within {calls} x {per_call:g} s "
                                        f"+ {SHARD_TIMEOUT_MARGIN:g} s (rows {a}..{a + n} of scenario '{name}')",
                                        "fix the hang or raise the time limit (--timeout)") from None
                except ray.exceptions.RayError as err:
                    text = str(err).strip().splitlines()
                    raise ShardFailure(f"the shard of rows {a}..{a + n} of scenario '{name}' failed for good "
                                       f"({self.max_retries} retries spent): {type(err).__name__}"
                                       f"{': ' + text[0] if text else ''}") from None
                if status != "ok":
                    raise _input_error(payload)
                batches.append(payload)
                seconds += spent
        except BaseException as err:
            # Ctrl-C: end the pieces now (force kills their workers); any other failure ends the check and
            # leaves the pieces to finish unread (a cancel can abort the driver: discard)
            if isinstance(err, KeyboardInterrupt):
                for ref in list(refs) + list(self.outstanding):
                    ray.cancel(ref, force=True)
            self.outstanding.clear()
            raise
        finally:
            self.waited += time.perf_counter() - t0
        return batches, seconds
