"""Whether the Coq development in ``proofs/coq`` is built, and which of specproof's claims it proves.

The development (Coq 8.16, Mathematical Components 1.15) proves the theorems over any real field and the
vocabulary ``'I_n`` for every ``n`` (and every ``K`` for rounds); ``make -C proofs/coq`` builds it.  A
claim counts as *kernel-checked* only when every ``.vo`` file is newer than its source and
``Print Assumptions`` reports the Coq theorem closed under the global context (no ``Admitted``, no
axiom).  The answer is computed once per process (one ``coqc`` run, about 5 s, with a time limit).

* :data:`KERNEL_THEOREMS` - specproof's claim or stated step -> the Coq theorem that proves it;
* :func:`kernel_status` - built or not (and why), the Coq version, the closed theorems;
* :func:`kernel_obligation` - the obligation that replaces a stated step when its theorem is closed.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from specproof.proofs.engine.results import Basis, Obligation, Verdict

__all__ = ["COQ_DIR", "KERNEL_THEOREMS", "KernelStatus", "kernel_status", "kernel_obligation", "kernel_fallback"]

COQ_DIR = Path(__file__).resolve().parents[1] / "coq"
COQ_TIME_LIMIT_S = 120

KERNEL_THEOREMS: dict[str, str] = {
    # theorems of proofs.claims.theorems
    "T1": "Specproof.Step.T1_pointwise_split",
    "T3": "Specproof.Step.T3_step_exact",
    "T5": "Specproof.Round.T5_round_exact",
    "T6": "Specproof.Step.greedy_emits_argmax",
    # stated steps (assumption obligations) that a Coq theorem proves
    "T5 induction on K (round decomposition)": "Specproof.Round.T5_round_exact",
    "T6 rank facts": "Specproof.Step.greedy_emits_argmax",
    "RRS level step (without replacement)": "Specproof.Recursive.rrs_without_replacement_exact",
    "B induction structure": "Specproof.Block.block_exact",
}
"""Claim or assumption name -> fully qualified Coq theorem."""


@dataclass(frozen=True)
class KernelStatus:
    built: bool
    reason: str  # why not built (empty when built)
    version: str  # "Coq 8.16.1", or "" without coqc
    closed: frozenset[str]  # theorems Print Assumptions reports closed


def _sources() -> list[Path]:
    lines = (COQ_DIR / "_CoqProject").read_text().split()
    return [COQ_DIR / name for name in lines if name.endswith(".v")]


@functools.lru_cache(maxsize=1)
def kernel_status() -> KernelStatus:
    """Built or not, and which theorems are closed (computed once per process)."""
    coqc = shutil.which("coqc")
    if coqc is None:
        return KernelStatus(False, "coqc is not installed (apt-get install coq libcoq-mathcomp-ssreflect "
                            "libcoq-mathcomp-algebra)", "", frozenset())
    try:
        out = subprocess.run([coqc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return KernelStatus(False, f"coqc --version failed: {exc}", "", frozenset())
    found = re.search(r"version (\d+\.\d+(?:\.\d+)?)", out)
    version = f"Coq {found.group(1)}" if found else "Coq (unknown version)"
    for source in _sources():
        vo = source.with_suffix(".vo")
        if not vo.exists() or vo.stat().st_mtime < source.stat().st_mtime:
            return KernelStatus(False, f"{vo.name} is missing or older than its source (make -C {COQ_DIR})",
                                version, frozenset())
    names = sorted(set(KERNEL_THEOREMS.values()))
    script = "".join(f"From Specproof Require {name.split('.')[1]}.\n" for name in names)
    script += "".join(f'Print Assumptions {name}.\n' for name in names)
    with tempfile.TemporaryDirectory() as tmp:
        check = Path(tmp) / "check_assumptions.v"
        check.write_text(script)
        try:
            run = subprocess.run([coqc, "-w", "none", "-R", str(COQ_DIR), "Specproof", str(check)],
                                 capture_output=True, text=True, timeout=COQ_TIME_LIMIT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return KernelStatus(False, f"coqc on the development failed: {exc}", version, frozenset())
    if run.returncode != 0:
        return KernelStatus(False, f"coqc on the development exited {run.returncode}: "
                            f"{run.stderr.strip()[-300:]}", version, frozenset())
    answers = re.split(r"\n(?=Closed under the global context|Axioms:)", "\n" + run.stdout)[1:]
    closed = frozenset(name for name, answer in zip(names, answers)
                       if answer.startswith("Closed under the global context"))
    return KernelStatus(True, "", version, closed)


def kernel_obligation(name: str, statement: str) -> Obligation | None:
    """The kernel-checked obligation for claim or stated step ``name``, or None when it has no Coq
    theorem or the development is not built (the caller then keeps today's evidence)."""
    theorem = KERNEL_THEOREMS.get(name)
    if theorem is None:
        return None
    start = time.perf_counter()
    status = kernel_status()
    if theorem not in status.closed:
        return None
    method = f"kernel-checked ({status.version}, {theorem})"
    return Obligation(f"{name} (Coq)", statement, Verdict.PROVED, method, time.perf_counter() - start,
                      f"proved in {COQ_DIR.name}/ for every n (and every K), no axiom", Basis.MACHINE,
                      theorem)


def kernel_fallback(name: str) -> tuple[str, ...]:
    """A note for claim ``name`` when it has a Coq theorem that is not available here (empty otherwise):
    the verdict then rests on today's evidence, and says so."""
    theorem = KERNEL_THEOREMS.get(name)
    if theorem is None or theorem in kernel_status().closed:
        return ()
    why = kernel_status().reason or f"{theorem} is not closed under the global context"
    return (f"not kernel-checked ({why}): today's evidence stands",)
