"""``specproof campaign FILE.toml``: a regression campaign (implementations x dtypes x devices x sampling
settings, proofs) run as one report, on the local engine or on Ray, resumable cell by cell.

The file (read with :mod:`tomllib`; every key is checked, an unknown one is a usage error)::

    [campaign]
    name = "nightly"               # required
    out = "nightly-report"         # the report folder, relative to the file (default: NAME-report)
    seed = 0
    jobs = 2                       # local worker processes (default: CPU count, at most 4)
    engine = "local"               # or "ray" (with workers = N, address = "HOST:PORT"); the CLI's flags win

    [budget]                       # optional; the defaults are specproof report's
    samples = 16000                # statistical rows per scenario
    pipeline_rows = 4000           # rows per scenario of a pipeline (default: the engine's quota)
    whitebox_vocabs = [256, 4096]
    grid_scenarios = 5

    [[matrix]]                     # one or more
    implementations = ["canonical-ratio-race", "resample-from-target"]
    dtypes = ["float32", "bfloat16"]            # default ["float32"]
    devices = ["cpu", "cuda"]                   # default ["cpu"]

    [[matrix]]                     # your own verifiers, checked as specproof check does
    targets = ["mypkg.spec:verify", "kernels/verify.py:verify"]   # a path relative to the file
    contract = "batched"                        # default batched, or the adapter's
    dtypes = ["float32", "float16", "bfloat16"]
    rule = "canonical"                          # and the check's contract options, as its flags: adapter;
    vocab = [151936]                            # batched rule, vocab; tree siblings; generate models,
                                                # new_tokens, sampling = [{temperature = 0.7}, ...] (a cell
                                                # per setting); another contract's option is a usage error

    [[matrix]]
    pipelines = ["canonical", "top-k-mismatch"]
    sampling = [{temperature = 1.0}, {temperature = 0.7, top_k = 3}]   # default: the pipeline suite

    [proofs]
    rules = ["canonical", "resample-from-target"]   # or "all"

A **cell** is one implementation in one dtype on one device, one target checked in one dtype on one
device under one set of contract options (its source hash: the sha256 of the target's file; ``[budget]
target_samples`` fixes its rows per scenario, else the check's default depth), one pipeline under one sampling setting on
one device, or one proof; its tasks are those ``specproof report`` plans for it.  A cell's key is the
sha256 of its definition, the budget, the seed, the specproof and torch versions, the device's model
(as the driver sees it) and the **source hash** of what it measures (the implementation's
``source_hash``, the pipeline's definition hash, the proofs package's sources).  When every task of a
cell has finished its rows are written to ``OUT.cells/KEY.json`` (atomically, next to the report
folder, which is published as a whole); a rerun loads the cells whose key is there instead of running
them, so an interrupted campaign resumes and an edited implementation is measured again.  A cell
whose device is not available (no CUDA here, or none in the Ray cluster) is listed as unavailable; a
cell with a task lost on Ray is incomplete and is not cached.  Either makes the campaign exit 4; an
unexpected row exits 1, as for ``specproof report``.

Rows of a device other than ``cpu`` carry `` @DEVICE`` in their input (keys stay unique across devices).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts import CONTRACT_OPTIONS
from specproof.harness.check.options import MAX_ROWS_PER_SCENARIO
from specproof.harness.exact.convert import dtype_name
from specproof.harness.exact.dtypes import DTYPE_NAMES
from specproof.harness.files.kinds import REPORT
from specproof.harness.files.provenance import atomic_write_text, provenance
from specproof.harness.report.analysis import summarise
from specproof.harness.report.plan import TaskOutcome, TaskSpec, plan
from specproof.harness.report.config import ReportConfig
from specproof.harness.report.execute import ProgressBar, ReportEngine, execute_tasks
from specproof.harness.report.zoo import zoo_verdicts
from specproof.harness.report.schema import bytes_hash, row_key, validate

__all__ = ["Campaign", "Cell", "load_campaign", "run_campaign", "CELL_SCHEMA"]

CELL_SCHEMA = 1
_SECTIONS = {"campaign": {"name", "out", "seed", "jobs", "engine", "workers", "address"},
             "budget": {"samples", "target_samples", "pipeline_rows", "whitebox_vocabs", "closeness", "sweep_vocab", "grid_scenarios",
                        "large_vocab", "rlimit", "proof_drift"},
             "matrix": {"implementations", "pipelines", "targets", "contract", "dtypes", "devices", "sampling",
                        "adapter", "rule", "vocab", "siblings", "models", "new_tokens"},
             "proofs": {"rules"}}
_SAMPLING_KEYS = {"temperature", "top_k", "top_p", "min_p"}
_TARGET_KEYS = ("contract", "adapter", "rule", "vocab", "siblings", "models", "new_tokens")
"""A [[matrix]] of targets' keys beyond targets, dtypes, devices and sampling: the check's own options, as
``specproof check`` takes them (``--contract``, ``--adapter``, ``--rule``, ...)."""
_KEY_TYPES = {"contract": (str, "a contract name", 'write e.g. contract = "tree"'),
              "adapter": (str, "an adapter name", 'write e.g. adapter = "vllm-v1"'),
              "rule": (str, "a rule name", 'write e.g. rule = "canonical"'),
              "vocab": ((int, list), "a vocabulary size or a list of them", "write e.g. vocab = [32000, 151936]"),
              "siblings": ((str, list), "a list of sibling modes", 'write e.g. siblings = ["topk"]'),
              "models": (str, "a model kind", 'write models = "table" or "transformers"'),
              "new_tokens": (int, "a whole number", "write e.g. new_tokens = 4")}


@dataclass(frozen=True)
class Cell:
    """One cell (module docstring): its tasks, its plan-time skips and the hash of what it measures."""

    kind: str  # implementation | pipeline | proof
    name: str
    dtype: str | None
    device: str
    sampling: Any  # harness.exact.sampling.Sampling or None
    source_hash: str
    tasks: tuple[TaskSpec, ...]
    skipped: tuple[dict[str, Any], ...] = ()
    budget: str = ""
    options: str = ""  # a target's adapter and contract options (report.targets.options_text)

    @property
    def label(self) -> str:
        parts = [self.kind, self.name, self.dtype or "", self.device if self.kind != "proof" else "",
                 self.sampling.describe() if self.sampling is not None else "",
                 f"[{self.options}]" if self.options else ""]
        return " ".join(p for p in parts if p)

    @property
    def key(self) -> str:
        text = json.dumps([self.label, self.source_hash, self.budget, _specproof_version(), _machine(self.device)],
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def _machine(device: str) -> tuple[str, str, str]:
    """What the measurement ran on, as this process sees it: the device's model and torch's version
    (a cell measured on another machine or torch is measured again); read once per device."""
    import torch

    from specproof.harness.files.provenance import device_name

    name = device_name(device) if device == "cpu" or torch.cuda.is_available() else device
    return (device, name, torch.__version__)


def _specproof_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("specproof")
    except PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class Campaign:
    """A loaded campaign file: its cells, the base report configuration, the output folder."""

    name: str
    path: Path
    file_hash: str
    out: Path
    config: ReportConfig
    cells: tuple[Cell, ...]
    engine: ReportEngine = ReportEngine()
    records: tuple[Any, ...] = field(default=())

    @property
    def cell_dir(self) -> Path:
        return self.out.with_name(self.out.name + ".cells")


def _bad(path: Path, where: str, problem: str, fix: str) -> SpecproofInputError:
    return SpecproofInputError(f"{path.name}: {where}", problem, fix)


def _names(path: Path, where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _bad(path, where, f"{value!r} is not a non-empty list of names", 'write e.g. ["float32"]')
    return list(dict.fromkeys(value))


def _checked(path: Path, where: str, table: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _bad(path, where, "is not a table", f"write [{where}] with keys {', '.join(sorted(allowed))}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _bad(path, where, f"unknown key(s) {', '.join(unknown)}", f"use {', '.join(sorted(allowed))}")
    return table


_CONFIG_FIELD = {"grid_scenarios": "grid_scenario_limit"}  # a budget key -> its ReportConfig field
_KIND = {"proof_drift": "bool", "whitebox_vocabs": "ints", "closeness": "numbers"}  # the rest: non-negative ints
MAX_VOCAB = 1 << 20  # 1,048,576 tokens: four times the largest real vocabulary (262,144), a few GiB of pairs at most
_LIMIT = {"samples": (MAX_ROWS_PER_SCENARIO, "rows per scenario"), "pipeline_rows": (MAX_ROWS_PER_SCENARIO, "rows per scenario"),
          "whitebox_vocabs": (MAX_VOCAB, "tokens"), "sweep_vocab": (MAX_VOCAB, "tokens"), "large_vocab": (MAX_VOCAB, "tokens")}
"""The sizes a campaign may ask for (``budget.key`` -> limit): larger ones are refused before any work."""


def _typed(path: Path, where: str, value: Any) -> Any:
    """``value`` checked for its key's kind (a usage error naming ``file: table.key`` otherwise)."""
    kind = _KIND.get(where.split(".", 1)[1], "int")
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:
        element = int if kind == "ints" else (int, float)
        ok = (isinstance(value, list) and bool(value)
              and all(isinstance(v, element) and not isinstance(v, bool) for v in value))
    if ok and where == "campaign.seed" and value >= 2 ** 63:
        ok = False
    if not ok:
        wanted = {"bool": "true or false", "int": "a non-negative integer", "ints": "a list of integers",
                  "numbers": "a list of numbers"}[kind]
        raise _bad(path, where, f"{value!r} is not {wanted}", f"write {wanted}")
    limit, unit = _LIMIT.get(where.split(".", 1)[1], (None, ""))
    if limit is not None and max(value if isinstance(value, list) else [value]) > limit:
        raise _bad(path, where, f"{max(value if isinstance(value, list) else [value]):,} {unit} is above the limit "
                   f"{limit:,}", f"write at most {limit:,}")
    if kind == "ints" and min(value) < 2:
        raise _bad(path, where, f"{min(value)} is not a vocabulary size", "write sizes of at least 2")
    return tuple(value) if isinstance(value, list) else value


def load_campaign(path: str | Path, engine: ReportEngine | None = None) -> Campaign:
    """Read and check ``path`` and plan its cells (a usage error names the file, table and key).
    ``engine``: the CLI's engine, overriding the file's."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise SpecproofInputError("FILE", f"{str(path)!r} does not exist", "pass the path of a campaign .toml") from None
    except IsADirectoryError:
        raise SpecproofInputError("FILE", f"{str(path)!r} is a directory", "pass the path of a campaign .toml file "
                                  "inside it") from None
    except PermissionError:
        raise SpecproofInputError("FILE", f"{str(path)!r} cannot be read (permission denied)",
                                  "pass a campaign .toml you can read") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise SpecproofInputError("FILE", f"{str(path)!r} is not valid TOML ({err})", "fix the syntax") from None
    _checked(path, "top level", data, set(_SECTIONS))
    head = _checked(path, "campaign", data.get("campaign"), _SECTIONS["campaign"])
    name = head.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _bad(path, "campaign.name", f"{name!r} is not a name", 'write name = "nightly"')
    out_name = head.get("out", f"{name}-report")
    if not isinstance(out_name, str) or not out_name:
        raise _bad(path, "campaign.out", f"{out_name!r} is not a folder", 'write out = "nightly-report"')
    out = Path(os.path.normpath(path.parent / out_name))
    budget = _checked(path, "budget", data.get("budget", {}), _SECTIONS["budget"])
    overrides: dict[str, Any] = {"proofs": False}
    given = [(f"campaign.{k}", k, head[k]) for k in ("seed", "jobs") if k in head]
    given += [(f"budget.{k}", _CONFIG_FIELD.get(k, k), v) for k, v in budget.items() if k != "target_samples"]
    target_samples = _typed(path, "budget.target_samples", budget["target_samples"]) \
        if "target_samples" in budget else None
    for where, field_name, value in given:
        overrides[field_name] = _typed(path, where, value)
    try:
        config = ReportConfig.for_mode("default", **overrides)
        config = replace(config, mode="campaign").validated()
    except (TypeError, SpecproofInputError) as err:
        raise _bad(path, "budget", str(err), "fix the value named") from None
    if engine is None:
        engine = ReportEngine(head.get("engine", "local"), head.get("address"), head.get("workers", 2))
        if engine.name not in ("local", "ray"):
            raise _bad(path, "campaign.engine", f"{engine.name!r} is not an engine", 'write "local" or "ray"')
        if isinstance(engine.workers, bool) or not isinstance(engine.workers, int) or engine.workers < 1:
            raise _bad(path, "campaign.workers", f"{engine.workers!r} is not a positive integer", "write e.g. 2")
        if engine.address is not None and not isinstance(engine.address, str):
            raise _bad(path, "campaign.address", f"{engine.address!r} is not an address", 'write "HOST:6379"')
    matrices = data.get("matrix", [])
    if not isinstance(matrices, list) or not (matrices or "proofs" in data):
        raise _bad(path, "matrix", "no [[matrix]] table and no [proofs] table", "add a [[matrix]] with implementations")
    cells: list[Cell] = []
    records: dict[str, Any] = {}
    for i, matrix in enumerate(matrices):
        cells += _matrix_cells(path, f"matrix[{i}]", _checked(path, f"matrix[{i}]", matrix, _SECTIONS["matrix"]),
                               config, records, target_samples)
    if "proofs" in data:
        cells += _proof_cells(path, _checked(path, "proofs", data["proofs"], _SECTIONS["proofs"]), config)
    unique = list({c.label: c for c in cells}.values())
    return Campaign(name, path, bytes_hash([raw]), out, config, tuple(unique), engine, tuple(records.values()))


def _budget(config: ReportConfig) -> str:
    data = config.as_json()
    for key in ("mode", "device", "dtypes", "implementations", "jobs", "pipelines", "proofs"):
        data.pop(key, None)
    return json.dumps(data, sort_keys=True)


def _matrix_cells(path: Path, where: str, matrix: dict[str, Any], config: ReportConfig,
                  records: dict[str, Any], target_samples: int | None = None) -> list[Cell]:
    import specproof.impls as impls

    devices = _names(path, f"{where}.devices", matrix.get("devices", ["cpu"]))
    for device in devices:
        if device not in ("cpu", "cuda"):
            raise _bad(path, f"{where}.devices", f"unknown device {device!r}", "use cpu or cuda")
    try:
        dtypes = [dtype_name(d) for d in _names(path, f"{where}.dtypes", matrix.get("dtypes", ["float32"]))]
    except SpecproofInputError as err:
        raise _bad(path, f"{where}.dtypes", err.problem, f"use some of {', '.join(DTYPE_NAMES)}") from None
    if sum(k in matrix for k in ("implementations", "pipelines", "targets")) != 1:
        raise _bad(path, where, "needs exactly one of implementations, pipelines and targets",
                   "split it into several [[matrix]]")
    for key in _TARGET_KEYS:
        if key in matrix and "targets" not in matrix:
            raise _bad(path, f"{where}.{key}", "applies to targets", "move it to a [[matrix]] of targets")
    budget = _budget(config)
    cells = []
    if "targets" in matrix:
        return _target_cells(path, where, matrix, dtypes, devices, config, target_samples, budget)
    if "implementations" in matrix:
        if "sampling" in matrix:
            raise _bad(path, f"{where}.sampling", "applies to pipelines (implementations take p and q as given)",
                       "move the sampling settings to a [[matrix]] of pipelines")
        for name in _names(path, f"{where}.implementations", matrix["implementations"]):
            try:
                record = impls.get(name)
            except KeyError as err:
                raise _bad(path, f"{where}.implementations", str(err.args[0]), "use names from specproof.impls") from None
            records[name] = record
            for dtype in dtypes:
                for device in devices:
                    cell_config = replace(config, dtypes=(dtype,), device=device, compiled_dtypes=(dtype,),
                                          adapter_dtypes=(dtype,))
                    tasks, skipped = plan(cell_config, [record])
                    cells.append(Cell("implementation", name, dtype, device, None, record.source_hash or "",
                                      tuple(tasks), tuple(skipped), budget))
        return cells
    if dtypes != ["float32"]:
        raise _bad(path, f"{where}.dtypes", "pipelines run in float32 in a report", "drop dtypes from this [[matrix]]")
    settings = matrix.get("sampling")
    samplings = [None] if settings is None else [_sampling(path, f"{where}.sampling[{j}]", s)
                                                 for j, s in enumerate(settings if isinstance(settings, list) else [settings])]
    for name in _names(path, f"{where}.pipelines", matrix["pipelines"]):
        cells += _pipeline_cells(path, where, name, samplings, devices, config, budget)
    return cells


def _target_cells(path: Path, where: str, matrix: dict[str, Any], dtypes: list[str], devices: list[str],
                  config: ReportConfig, samples: int | None, budget: str) -> list[Cell]:
    """One cell per target, dtype, device and sampling setting, checked under the matrix's contract options
    (validated once by ``CheckOptions.build``, as ``specproof check`` validates its flags: an option of another
    contract is a usage error naming ``file: matrix[i].key``); each target imported now (a wrong one is a usage
    error naming the file and key) for its source hash.  A ``path.py:fn`` target is relative to the file."""
    from specproof.harness.check.targets import load_target
    from specproof.harness.report.targets import TargetPlan, source_hash, target_tasks

    chosen: dict[str, Any] = {}
    for key in _TARGET_KEYS:
        if key in matrix:
            kind, what, fix = _KEY_TYPES[key]
            value = matrix[key]
            if isinstance(value, bool) or not isinstance(value, kind):
                raise _bad(path, f"{where}.{key}", f"{value!r} is not {what}", fix)
            chosen[key] = tuple(value) if isinstance(value, list) else value
    contract, adapter = chosen.pop("contract", None), chosen.pop("adapter", None)
    settings = matrix.get("sampling")
    samplings = [None] if settings is None else [_sampling(path, f"{where}.sampling[{j}]", s)
                                                 for j, s in enumerate(settings if isinstance(settings, list)
                                                                       else [settings])]
    plans = []
    for j, sampling in enumerate(samplings):
        options = tuple(chosen.items()) + ((("sampling", sampling),) if sampling is not None else ())
        try:
            plans.append(TargetPlan(("-",), contract, tuple(dtypes), tuple(devices), config.seed, samples,
                                    adapter=adapter, options=options).validated())
        except SpecproofInputError as err:  # named as the file names it: matrix[i].KEY
            key = err.argument.removeprefix("--")
            named = ("budget.target_samples" if key == "samples" else
                     f"{where}.sampling[{j}]" if key in _SAMPLING_KEYS | {"sampling"} else f"{where}.{key}")
            fix = err.fix.replace("drop --contract", "drop contract").replace("use --contract ", "write contract = ")
            if "applies to the" in err.problem:  # another contract's option
                fix = f'drop {key} from this [[matrix]], or write contract = "{CONTRACT_OPTIONS[key]}"'
            raise _bad(path, named, err.problem, fix) from None
    cells = []
    for name in _names(path, f"{where}.targets", matrix["targets"]):
        where_file, sep, function = name.rpartition(":")
        spec = f"{os.path.normpath(path.parent / where_file)}:{function}" if sep and where_file.endswith(".py") \
            and not Path(where_file).is_absolute() else name
        try:
            fn, _ = load_target(spec, plans[0].contract, adapter)
        except SpecproofInputError as err:
            raise _bad(path, f"{where}.targets", f"{name}: {err.problem}", err.fix) from None
        digest = source_hash(fn) or bytes_hash([spec])
        for plan in plans:
            for task in target_tasks(replace(plan, targets=(spec,))):
                cells.append(Cell("target", spec, task.dtype, task.param("device"), None, digest, (task,), (),
                                  budget + json.dumps({"target_samples": samples}), plan.options_text()))
    return cells


def _sampling(path: Path, where: str, table: Any) -> Any:
    from specproof.harness.exact.sampling import Sampling

    table = _checked(path, where, table, _SAMPLING_KEYS)
    try:
        return Sampling.from_runtime(**table)
    except (TypeError, SpecproofInputError) as err:
        raise _bad(path, where, str(err), "temperature > 0, top_k >= 1, 0 < top_p <= 1, 0 <= min_p <= 1") from None


def _pipeline_cells(path: Path, where: str, name: str, samplings: list[Any], devices: list[str],
                    config: ReportConfig, budget: str) -> list[Cell]:
    from specproof.harness.check.contracts.generate.families import pipeline_law
    from specproof.harness.report.pipelines import PIPELINE_DTYPE, pipeline_scenarios, pipeline_task
    from specproof.harness.report.schema import definition_hash
    from specproof.impls.pipelines import get_pipeline

    try:
        record = get_pipeline(name)
    except (KeyError, SpecproofInputError) as err:
        raise _bad(path, f"{where}.pipelines", str(err), "use names from specproof.impls.pipelines") from None
    cells = []
    for sampling in samplings:
        if sampling is not None and record.models == "table":  # refuse a setting on a float boundary now
            for s in pipeline_scenarios(record, sampling):
                target, _ = s.pair.build(PIPELINE_DTYPE, "cpu", s.new_tokens)
                try:
                    pipeline_law(s.pair, target, s.sampling, s.new_tokens, PIPELINE_DTYPE)
                except SpecproofInputError as err:
                    raise _bad(path, f"{where}.sampling", f"{sampling.describe()} on '{s.name}': {err.problem}",
                               err.fix) from None
        tasks, skipped = (pipeline_task(record, config, sampling),), ()
        if record.needs_extra and importlib.util.find_spec(record.needs_extra) is None:  # as the report does
            tasks, skipped = (), ({"kind": "pipeline", "implementation": name, "dtype": PIPELINE_DTYPE,
                                   "reason": f"needs {record.needs_extra}, which is not installed here: pip install "
                                             f"'specproof[{record.needs_extra}]' to measure it"},)
        source = definition_hash(record.name, record.load()) if tasks else bytes_hash([record.target])
        cells += [Cell("pipeline", name, PIPELINE_DTYPE, device, sampling, source, tasks, skipped, budget)
                  for device in devices]
    return cells


def _proof_cells(path: Path, table: dict[str, Any], config: ReportConfig) -> list[Cell]:
    from specproof.proofs import catalogue, theorems

    rules = table.get("rules", "all")
    known = [e.name for e in catalogue()] + [t.name for t in theorems()]
    names = known if rules == "all" else _names(path, "proofs.rules", rules)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise _bad(path, "proofs.rules", f"unknown proof(s) {', '.join(unknown)}", f'use "all" or names from {", ".join(known)}')
    proofs_root = Path(__file__).resolve().parents[2] / "proofs"
    sources = bytes_hash([p.read_bytes() for p in sorted(proofs_root.rglob("*.py"))])
    catalogue_names = {e.name for e in catalogue()}
    budget = _budget(config)
    cells = []
    for name in names:
        params = (("drift", config.proof_drift), ("rlimit", config.rlimit)) if name in catalogue_names \
            else (("rlimit", config.rlimit),)
        cells.append(Cell("proof", name, None, "cpu", None, sources, (TaskSpec("proof", name, params=params),), (), budget))
    return cells


# -- running -------------------------------------------------------------------------------------------

def _read_cell(cell_dir: Path, cell: Cell) -> dict[str, Any] | None:
    """The cached outcome of ``cell`` (None: not there, or unreadable: it is run again)."""
    try:
        data = json.loads((cell_dir / f"{cell.key}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != CELL_SCHEMA or data.get("key") != cell.key:
        return None
    return data


class _CellProgress(ProgressBar):
    """The report's progress bar that also writes a cell to the cache once all its tasks are done."""

    def __init__(self, campaign: Campaign, cells: list[Cell], outcomes: dict[str, list[TaskOutcome]], **kw: Any):
        super().__init__(sum(t.cost for c in cells for t in c.tasks), sum(len(c.tasks) for c in cells), **kw)
        self.campaign, self.outcomes = campaign, outcomes
        self.by_spec = {(t, c.device): c for c in cells for t in c.tasks}  # equal specs on two devices
        self.device = "cpu"  # the device of the group being run
        self.started = {c.key: time.perf_counter() for c in cells}

    def update(self, spec: TaskSpec, outcome: TaskOutcome | None = None) -> None:
        self._cache(spec, outcome)  # first: an interrupt raised while drawing the bar keeps the cell
        super().update(spec, outcome)

    def _cache(self, spec: TaskSpec, outcome: TaskOutcome | None) -> None:
        cell = self.by_spec[(spec, self.device)]
        done = self.outcomes.setdefault(cell.key, [])
        done.append(outcome if outcome is not None else TaskOutcome())
        if len(done) == len(cell.tasks) and not any(o.incomplete for o in done):
            record = {"schema": CELL_SCHEMA, "key": cell.key, "cell": cell.label, "source_hash": cell.source_hash,
                      "seconds": round(time.perf_counter() - self.started[cell.key], 2),
                      "rows": [r for o in done for r in o.rows], "skipped": [s for o in done for s in o.skipped]}
            self.campaign.cell_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.campaign.cell_dir / f"{cell.key}.json", json.dumps(record, allow_nan=False))


def _available(device: str, engine: ReportEngine) -> str | None:
    """Why ``device`` cannot run here (None: it can; a Ray engine's GPUs are checked when it starts)."""
    if device == "cuda" and engine.name == "local":
        import torch

        if not torch.cuda.is_available():
            return "no CUDA device on this machine (run it where one is, or on a Ray cluster with GPUs)"
    return None


def _on_device(row: dict[str, Any], device: str) -> dict[str, Any]:
    if device == "cpu" or row["kind"] in ("proof", "check"):  # a check row's input names its device
        return row
    row = dict(row, input=f"{row['input']} @{device}")
    return dict(row, key=row_key(row))


def run_campaign(campaign: Campaign, *, progress: bool = True, stream: Any = None,
                 argv: list[str] | None = None) -> dict[str, Any]:
    """Run the cells not in the cache (grouped by device, on the campaign's engine) and return the
    report document with its ``campaign`` section (module docstring)."""
    start = time.perf_counter()
    outcomes: dict[str, list[TaskOutcome]] = {}
    status: dict[str, str] = {}
    cached: dict[str, dict[str, Any]] = {}
    for cell in campaign.cells:
        hit = _read_cell(campaign.cell_dir, cell)
        if hit is not None:
            cached[cell.key], status[cell.key] = hit, "cached"
    pending = [c for c in campaign.cells if c.key not in cached]
    unavailable: dict[str, str] = {}
    bar_options = {"enabled": progress, "stream": stream}
    bar = _CellProgress(campaign, [c for c in pending if c.tasks], outcomes, **bar_options)
    try:
        for device in dict.fromkeys(c.device for c in pending):
            group = [c for c in pending if c.device == device and c.tasks]
            reason = _available(device, campaign.engine)
            if reason is None and group:
                config = replace(campaign.config, device=device)
                tasks = [t for c in group for t in c.tasks]
                bar.device = device
                try:
                    execute_tasks(config, tasks, list(campaign.records), bar, campaign.engine)
                except SpecproofInputError as err:
                    if device == "cpu" or err.argument != "--device":
                        raise
                    reason = err.problem  # a Ray cluster without GPUs: known before any task ran
            if reason is not None:
                for c in group:
                    unavailable[c.key] = reason
    finally:
        bar.close()
    rows: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    incomplete: list[dict[str, Any]] = []
    cells_json = []
    for cell in campaign.cells:
        if cell.key in cached:
            cell_rows, cell_skips, seconds = cached[cell.key]["rows"], cached[cell.key]["skipped"], None
        else:
            done = outcomes.get(cell.key, [])
            cell_rows = [r for o in done for r in o.rows]
            cell_skips = list(cell.skipped) + [s for o in done for s in o.skipped]
            incomplete += [i for o in done for i in o.incomplete]
            status[cell.key] = ("unavailable" if cell.key in unavailable else
                                "incomplete" if any(o.incomplete for o in done) else "ran")
            seconds = round(sum(r.get("seconds", 0.0) for r in cell_rows), 2)
        placed = [_on_device(r, cell.device) for r in cell_rows]
        for row in placed:
            if row["key"] in rows:
                raise SpecproofInputError(str(campaign.path.name), f"two cells produce the row {row['key']!r}",
                                          "remove the duplicate from the matrices")
            rows[row["key"]] = row
        skipped += cell_skips
        if cell.key in unavailable:
            incomplete.append({"kind": cell.kind, "implementation": cell.name, "dtype": cell.dtype,
                               "input": cell.device, "reason": f"unavailable: {unavailable[cell.key]}"})
        cells_json.append({"cell": cell.label, "key": cell.key, "kind": cell.kind, "name": cell.name,
                           "dtype": cell.dtype, "device": cell.device,
                           "sampling": cell.sampling.describe() if cell.sampling is not None else None,
                           "options": cell.options or None,
                           "source_hash": cell.source_hash, "status": status[cell.key],
                           "rows": sorted(r["key"] for r in placed), "seconds": seconds,
                           "reason": unavailable.get(cell.key)})
    ran_devices = sorted({c["device"] for c in cells_json if c["status"] in ("ran", "cached") and c["kind"] != "proof"})
    dtypes = sorted({c.dtype for c in campaign.cells if c.dtype}, key=DTYPE_NAMES.index)
    config = dict(campaign.config.as_json(), dtypes=dtypes, devices=ran_devices or ["cpu"])
    document = REPORT.envelope({
        "config": config,
        "rows": dict(sorted(rows.items())),
        "zoo": zoo_verdicts(list(campaign.records), rows, skipped),
        "skipped": sorted(skipped, key=lambda s: (s["implementation"] or "", s["dtype"] or "", s["reason"])),
        "incomplete": sorted(incomplete, key=lambda s: (s["implementation"], s["dtype"] or "", s["input"])),
        "timing": {"wall": round(time.perf_counter() - start, 2)},
        "campaign": {"name": campaign.name, "file": str(campaign.path), "file_hash": campaign.file_hash,
                     "cell_dir": str(campaign.cell_dir), "cells": cells_json,
                     "counts": {s: sum(1 for c in cells_json if c["status"] == s)
                                for s in ("ran", "cached", "unavailable", "incomplete")}},
    }, provenance(device="cuda" if ran_devices == ["cuda"] else "cpu", dtypes=dtypes, seeds=[campaign.config.seed],
                  extra={"command": "campaign", "argv": list(argv or []), "mode": "campaign",
                         **campaign.engine.as_json()})).to_json()
    document["summary"] = summarise(document)
    validate(document, "campaign")
    return document
