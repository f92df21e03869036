"""What ``specproof report`` measures: :class:`ReportConfig` (the budgets of the catalogue's rows, the
``default`` and ``--quick`` presets, validated once) and the optional modules rendering needs
(:func:`check_dependencies`, refused before the run).

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
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from typing import Any

from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import dtype_name
from specproof.harness.exact.dtypes import DTYPE_NAMES

__all__ = ["ReportConfig", "check_dependencies", "RENDER_DEPENDENCIES", "INSTALL_REPORT_EXTRA", "ALL_DTYPES"]

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



def check_dependencies(modules: tuple[str, ...] = RENDER_DEPENDENCIES) -> None:
    """Refuse the run before it starts when a module rendering needs is missing (a usage error)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SpecproofInputError("report", f"needs {', '.join(missing)} to render, which is not installed",
                                  f"install the report extra: {INSTALL_REPORT_EXTRA}")
