"""The plan of ``specproof report``: the tasks it runs (:class:`TaskSpec`, one implementation in one dtype
and input, one proof, one pipeline or one check of a target; their :class:`TaskOutcome`), the inputs they
measure on (white-box pairs, grid scenarios) and :func:`plan`, which turns a :class:`~.config.ReportConfig` and
the chosen records (:func:`select_records`) into tasks and skips with their reasons.  Running them is
:mod:`.execute`'s; measuring one is :mod:`.measure`'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import dtype_name
from specproof.harness.report.config import INSTALL_REPORT_EXTRA, ReportConfig
from specproof.harness.report.schema import bytes_hash

__all__ = ["TaskSpec", "TaskOutcome", "WhiteboxInput", "whitebox_inputs", "grid_scenarios", "plan", "select_records"]


@dataclass(frozen=True)
class TaskSpec:
    """What to measure: ``kind``, the record or rule ``name``, ``dtype`` and ``input``; ``params`` are
    the budget (samples, seed, ...) as sorted pairs so the spec pickles to worker processes."""

    kind: str
    name: str
    dtype: str | None = None
    input: str = ""
    params: tuple[tuple[str, Any], ...] = ()
    cost: float = 1.0

    @property
    def label(self) -> str:
        return " ".join(x for x in (self.kind, self.name, self.dtype or "", self.input) if x)

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)


@dataclass
class TaskOutcome:
    """A task's rows and skips; ``incomplete``: why it has none (a task lost for good on Ray)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    incomplete: list[dict[str, Any]] = field(default_factory=list)


# -- inputs --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WhiteboxInput:
    """One white-box input pair (float64 laws, rounded to the dtype by the measurement)."""

    name: str
    description: str
    p: np.ndarray = field(repr=False)
    q: np.ndarray = field(repr=False)

    @property
    def vocab(self) -> int:
        return int(self.p.shape[0])

    @property
    def digest(self) -> str:
        return bytes_hash([self.name, self.p.tobytes(), self.q.tobytes()])


def whitebox_inputs(vocabs: tuple[int, ...], closeness: tuple[float, ...], sweep_vocab: int,
                    seed: int) -> list[WhiteboxInput]:
    """Dirichlet(0.5) pairs per vocabulary; a sweep of ``q = c p + (1 - c) r`` (``TV(p, q)`` from about
    0.6 down to ``1e-3``) at ``sweep_vocab``; ``p == q`` with half the tokens exactly 0 (the exact
    rejection is 0: any float residual mass lands on tokens the target forbids)."""
    out = []
    for vocab in vocabs:
        rng = np.random.default_rng([seed, vocab])
        p, q = rng.dirichlet(np.full(vocab, 0.5)), rng.dirichlet(np.full(vocab, 0.5))
        out.append(WhiteboxInput(f"dirichlet-V{vocab}", f"independent Dirichlet(0.5) p, q, V={vocab}", p, q))
    rng = np.random.default_rng([seed, sweep_vocab, 1])
    p, r = rng.dirichlet(np.full(sweep_vocab, 0.5)), rng.dirichlet(np.full(sweep_vocab, 0.5))
    for c in closeness:
        out.append(WhiteboxInput(f"closeness-{c:g}-V{sweep_vocab}",
                                 f"q = {c:g} p + {1 - c:g} r, Dirichlet(0.5) p and r, V={sweep_vocab}",
                                 p, c * p + (1 - c) * r))
    rng = np.random.default_rng([seed, 1024, 2])
    p = rng.dirichlet(np.full(1024, 0.5))
    p[rng.permutation(1024)[:512]] = 0.0
    p /= p.sum()
    out.append(WhiteboxInput("identical-with-zeros-V1024", "p == q, 512 of 1,024 tokens exactly 0", p, p.copy()))
    return out


def grid_scenarios(limit: int | None = None) -> list[Any]:
    """Small scenarios of the default suite for the exact grid law (``V^(K+1) <= MAX_SEQUENCES``), without the
    unnormalised one: the grid verdict compares with the law of the renormalised rows, which a
    verifier fed an unnormalised target does not claim to produce (the white-box bounds cover that);
    without the certainty probe: its bug classes (position mix-ups) are certain findings of the
    statistical check, and first in the suite it would push a statistical scenario past ``limit``."""
    from specproof.proofs.laws.sequences import MAX_SEQUENCES
    from specproof.harness.check.contracts.batched.scenarios import default_suite

    chosen = [s for s in default_suite(large_vocab=0)
              if s.vocab ** (s.k + 1) <= MAX_SEQUENCES and "unnormalised" not in s.tags and not s.certainty_probe]
    return chosen[:limit] if limit else chosen


# -- planning --------------------------------------------------------------------------------------------

def select_records(config: ReportConfig, records: list[Any] | None) -> list[Any]:
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
