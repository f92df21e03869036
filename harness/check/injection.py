"""RNG boundary injection: black-box certainty for rare-draw bugs (``u == 0`` accepting ``p(x) = 0``).

A verifier that draws its own randomness (batched contract) is run under
:class:`EdgeInjection`, a :class:`torch.utils._python_dispatch.TorchDispatchMode`.  After each random
ATen op runs for real (so the generator advances exactly as without injection), a known fraction
``f`` of its output entries, chosen by the harness's own seeded generator (``P = num/den`` exactly,
via ``randint(den) < num``), is overwritten with one edge value of :mod:`.rng_edges`: a value the real
CPU generator produces for that dtype, with its exact per-draw probability.  Any emitted token of
target probability 0, emitted tokens that are not the drafts, a broken output contract, or an
exception, under an injected value, is then a certain finding: the real generator reaches the same
state with probability at least ``P(value)`` per draw, and re-running the pass reproduces it.

Why a dispatch mode, not ``TorchFunctionMode``: the dispatch mode sees the ATen ops whatever the
Python spelling (``torch.rand``, ``rand_like``, ``Tensor.uniform_``, ``empty(..).exponential_``, the
``out=`` forms, ``torch.distributions``, ``F.gumbel_softmax``'s ``exponential_`` inside a composite op)
and hands over the output tensor to edit; a function mode sees only Python-level calls and would have
to know every alias.  Reachable: eager ATen calls on CPU tensors (``aten.rand``, ``rand_like``,
``uniform_``/``uniform`` on ``[0, 1)``, ``exponential_``/``exponential`` with rate 1).  Seen and counted
but not injected (no exact edge model here): ``randn``, ``randint``, ``bernoulli``, ``normal_``,
``randperm``, other ranges or rates, CUDA tensors.  ``multinomial(w, 1)`` draws its exponential keys
inside the C++ kernel (unseen by the mode); kind ``"multinomial"`` (opt-in, not in the default
``kinds``) replays them from the saved generator state and injects their edges: an ``E = 0`` key at a
zero weight makes ``0/0 = NaN`` win, torch's own sampler defect, not the verifier's rule.  Not
reachable: draws inside ``torch.compile`` graphs (the mode sets the documented
``ignore_compile_internals``: compiled regions run compiled and unseen, their RNG is inductor's own;
without it dynamo refuses to compile under a user dispatch mode), custom C++/CUDA/Triton kernels, and
numpy or Python ``random``.  A verifier with no injectable draw is reported as such.

Rates.  ``injected_rate = flagged rows / rows`` is exact for the run.  The real generator's rate is
given to first order only: the injected run is the real law with the edge's mass tilted from ``P`` to
``f' = f + (1 - f) P`` per entry, so when a row fails through one entry equal to the edge,
``rate ~ injected_rate P / f'`` (biased by O(f) where earlier injected entries change which entry is
reached).  The exact rate of a uniforms-contract core is :func:`specproof.harness.drift.grid.measure_grid`.

Layer: harness.check (2); imports proofs, harness.exact and harness.check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from specproof.proofs.errors import SpecproofInputError

from specproof.harness.check.events import impossible_rows
from specproof.harness.check.calls import (ContractViolation, Deadline, VerifierCaller, VerifierError,
                                           check_timeout, resolve_device)
from specproof.harness.check.result import DEFAULT_TIMEOUT
from specproof.harness.exact.dtypes import DTYPES, dtype_name
from specproof.harness.exact.reference import fraction_string
from specproof.harness.exact.rng_edges import DRAW_KINDS, EDGE_LABELS, EdgeValue, edge_values

INJECTABLE_KINDS = DRAW_KINDS + ("multinomial",)  # multinomial: edges of its internal exponential keys
_LABELS = {**EDGE_LABELS, "multinomial": EDGE_LABELS["exponential"]}
from specproof.harness.check.scenarios import Realisation, Scenario, default_suite

__all__ = ["EdgeInjection", "INJECTABLE_KINDS", "DrawRecord", "InjectionFinding", "InjectionResult", "inject_check",
           "zero_target_scenarios", "DEFAULT_FRACTION", "DEFAULT_ROWS", "kinds_drawn", "not_run_text"]

DEFAULT_FRACTION = Fraction(1, 16)
DEFAULT_ROWS = 2048
_ATEN = torch.ops.aten


def _ops(*names: str) -> set:
    return {getattr(_ATEN, n) for n in names if hasattr(_ATEN, n)}


_UNIFORM = _ops("rand", "rand_like", "uniform_", "uniform")
_EXPONENTIAL = _ops("exponential_", "exponential")
_OTHER = _ops("randn", "randn_like", "randint", "randint_like", "bernoulli", "bernoulli_",
              "normal", "normal_", "randperm", "random_", "poisson", "cauchy_", "log_normal_", "geometric_",
              "binomial", "_standard_gamma", "_sample_dirichlet", "native_dropout", "rrelu_with_noise")


@dataclass
class DrawRecord:
    """One random ATen call seen under the mode; ``kind`` None when it is not injectable (``reason``)."""

    op: str
    kind: str | None
    dtype: str
    device: str
    entries: int
    reason: str | None = None
    injected: int = 0
    edge: EdgeValue | None = None


def _argument(args: tuple, kwargs: dict, position: int, name: str, default: float) -> float:
    return float(kwargs[name]) if name in kwargs else (float(args[position]) if len(args) > position else default)


def _classify(packet: Any, args: tuple, kwargs: dict, out: Any) -> tuple[str | None, str | None]:
    """``(kind, None)`` for an injectable draw, ``(None, reason)`` for another random op, else both None."""
    if packet in _OTHER:
        return None, "no edge model for this distribution"
    if packet not in _UNIFORM and packet not in _EXPONENTIAL:
        return None, None
    if not isinstance(out, torch.Tensor) or str(out.dtype).replace("torch.", "") not in DTYPES:
        return None, "output dtype not modelled"
    if out.device.type != "cpu":
        return None, f"{out.device.type} generator not modelled (CPU only)"
    if packet in _UNIFORM:
        low, high = _argument(args, kwargs, 1, "from", 0.0), _argument(args, kwargs, 2, "to", 1.0)
        if packet in _ops("uniform_", "uniform") and (low, high) != (0.0, 1.0):
            return None, f"uniform on [{low:g}, {high:g}), only [0, 1) is modelled"
        return "uniform", None
    if _argument(args, kwargs, 1, "lambd", 1.0) != 1.0:
        return None, "exponential rate != 1 not modelled"
    return "exponential", None


class EdgeInjection(TorchDispatchMode):
    """Records every random ATen call; with ``kind``/``label``, writes that edge into a fraction of
    the entries of each injectable ``kind`` draw (module docstring)."""

    def __init__(self, kind: str | None = None, label: str | None = None,
                 fraction: Fraction = DEFAULT_FRACTION, seed: int = 0):
        super().__init__()
        self.kind, self.label, self.fraction = kind, label, Fraction(fraction)
        self.mask_generator = torch.Generator().manual_seed(seed % (2**63))
        self.records: list[DrawRecord] = []

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """torch.compile regions run compiled, unseen (their RNG is inductor's): documented hook."""
        return True

    def _mask(self, shape: tuple[int, ...]) -> torch.Tensor:
        """Entries to overwrite: each with probability exactly ``num/den`` (the harness's own generator)."""
        num, den = self.fraction.numerator, self.fraction.denominator
        return torch.randint(0, den, tuple(shape), generator=self.mask_generator) < num

    def _multinomial(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``torch.multinomial(w, 1)`` on CPU is ``argmax(w / E)``, ``E = exponential_`` in ``w``'s dtype from
        the same generator: ``E`` is replayed from the saved generator state and the race checked against
        the real result before edges are written into ``E`` (kind ``"multinomial"``)."""
        w = args[0]
        samples = int(kwargs.get("num_samples", args[1] if len(args) > 1 else 1))
        dtype = str(w.dtype).replace("torch.", "")
        modelled = w.device.type == "cpu" and samples == 1 and dtype in DTYPES and w.dim() in (1, 2)
        source = kwargs.get("generator") or torch.random.default_generator
        state = source.get_state() if modelled else None
        out = func(*args, **kwargs)
        record = DrawRecord("aten.multinomial", "multinomial" if modelled else None, dtype, str(w.device), w.numel(),
                            None if modelled else "only one sample from CPU weights is modelled")
        if modelled and self.kind == "multinomial" and w.numel():
            replay = torch.Generator()
            replay.set_state(state)
            keys = torch.empty_like(w).exponential_(generator=replay)
            if not torch.equal((w / keys).argmax(-1, keepdim=True), out):
                record.kind, record.reason = None, "the replayed race differs from torch.multinomial"
            else:
                edge = next(e for e in edge_values("exponential", dtype) if e.label == self.label)
                mask = self._mask(tuple(keys.shape))
                keys.masked_fill_(mask, float(edge.value))
                out.copy_((w / keys).argmax(-1, keepdim=True))  # torch's own steps: div, then argmax
                record.injected, record.edge = int(mask.sum()), edge
        self.records.append(record)
        return out

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func.overloadpacket is _ATEN.multinomial:
            return self._multinomial(func, args, kwargs)
        out = func(*args, **kwargs)  # the real draw: the generator advances as it would without the mode
        kind, reason = _classify(func.overloadpacket, args, kwargs, out)
        if kind is None and reason is None:
            return out
        dtype = str(getattr(out, "dtype", "")).replace("torch.", "")
        device = str(getattr(out, "device", "?"))
        record = DrawRecord(str(func.overloadpacket), kind, dtype, device,
                            out.numel() if isinstance(out, torch.Tensor) else 0, reason)
        if kind is not None and kind == self.kind and out.numel():
            edge = next(e for e in edge_values(kind, dtype) if e.label == self.label)
            mask = self._mask(tuple(out.shape))
            out.masked_fill_(mask, float(edge.value))  # exact: the value is in the dtype
            record.injected, record.edge = int(mask.sum()), edge
        self.records.append(record)
        return out


@dataclass(frozen=True)
class InjectionFinding:
    """A certain, reproducible failure under one injected edge (``edges``: one per dtype injected)."""

    scenario: str
    problem: str
    kind: str | None
    label: str | None
    edges: tuple[EdgeValue, ...]
    fraction: Fraction
    rows: int
    flagged_rows: int
    reproducible: bool
    example: str

    @property
    def injected_rate(self) -> Fraction:
        return Fraction(self.flagged_rows, self.rows)

    @property
    def estimated_rate(self) -> Fraction | None:
        """First-order rate on the real generator, ``injected_rate P / (f + (1 - f) P)`` (one dtype)."""
        if len(self.edges) != 1 or not self.flagged_rows or self.problem == _CONTRACT:
            return None
        p = self.edges[0].probability
        return self.injected_rate * p / (self.fraction + (1 - self.fraction) * p)

    def describe(self) -> str:
        if self.kind is None:
            head = f"{self.scenario}: {self.problem} without injection ({self.flagged_rows}/{self.rows} rows)"
        else:
            est = self.estimated_rate
            draw = ("an exponential key inside torch.multinomial (torch's own sampler, not the verifier's rule)"
                    if self.kind == "multinomial" else f"a {self.kind} draw")
            head = (f"{self.scenario}: {self.problem} when {draw} is {self.label} "
                    f"({'; '.join(e.describe() for e in self.edges)}); {self.flagged_rows}/{self.rows} rows "
                    f"with {fraction_string(self.fraction)} of entries injected")
            if est is not None:
                head += f"; real-generator rate ~ {float(est):.3g} per round (first order)"
        return head + ("; reproducible" if self.reproducible else "; NOT reproducible") + f"; e.g. {self.example}"

    def as_json(self) -> dict[str, Any]:
        est = self.estimated_rate
        return {"scenario": self.scenario, "problem": self.problem, "kind": self.kind, "label": self.label,
                "edges": [e.as_json() for e in self.edges], "fraction": fraction_string(self.fraction),
                "rows": self.rows, "flagged_rows": self.flagged_rows,
                "injected_rate": fraction_string(self.injected_rate),
                "estimated_rate": None if est is None else fraction_string(est),
                "reproducible": self.reproducible, "example": self.example}


@dataclass(frozen=True)
class InjectionResult:
    """``verdict``: ``"flagged"``, ``"not-flagged"``, ``"incomplete"`` (not flagged, but passes were
    skipped to end by a time budget's deadline: ``not_run``) or ``"no-interceptable-randomness"``."""

    verdict: str
    dtype: str
    device: str
    seed: int
    rows: int
    fraction: Fraction
    scenarios: tuple[str, ...]
    draws: tuple[DrawRecord, ...] = field(repr=False)
    findings: tuple[InjectionFinding, ...]
    passes: int
    edges_tried: tuple[EdgeValue, ...] = field(repr=False)
    verifier_rows: int = 0  # every row the verifier was called with (passes, and the reruns a finding needs)
    not_run: tuple[str, ...] = ()  # passes skipped: they did not fit before the deadline

    @property
    def flagged(self) -> bool:
        return self.verdict == "flagged"

    def draw_summary(self) -> list[str]:
        """Distinct random ops of the baseline runs: op, dtype, injectable or why not."""
        seen: dict[tuple, int] = {}
        for r in self.draws:
            key = (r.op, r.dtype, r.device, r.kind, r.reason)
            seen[key] = seen.get(key, 0) + r.entries
        return [f"{op} {dt} on {dev}: {n} entries, " + (f"injectable as {kind}" if kind else f"not injected ({why})")
                for (op, dt, dev, kind, why), n in seen.items()]

    def summary(self) -> str:
        lines = [f"RNG edge injection ({self.dtype}, {self.device}, seed {self.seed}, {self.rows} rows x "
                 f"{len(self.scenarios)} scenarios, {fraction_string(self.fraction)} of entries, "
                 f"{self.passes} passes): {self.verdict}"]
        if self.verdict == "no-interceptable-randomness":
            lines.append("the verifier made no draw that can be injected (torch.rand/rand_like/uniform_/"
                         "exponential_ on CPU); its rare-draw behaviour was NOT tested")
        lines += [f"  draw: {d}" for d in self.draw_summary()]
        lines += [f"  FINDING {f.describe()}" for f in self.findings[:10]]
        if self.verdict in ("not-flagged", "incomplete") and self.edges_tried:
            lines.append(f"  no injected edge ({len(self.edges_tried)} values) made it emit a probability-0 "
                         "token or break the contract")
        if self.not_run:
            lines.append("  " + not_run_text(self.not_run))
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {"kind": "rng-injection", "verdict": self.verdict, "dtype": self.dtype, "device": self.device,
                "seed": self.seed, "rows": self.rows, "fraction": fraction_string(self.fraction),
                "scenarios": list(self.scenarios), "passes": self.passes, "verifier_rows": self.verifier_rows,
                "not_run": list(self.not_run),
                "draws": self.draw_summary(),
                "findings": [f.as_json() for f in self.findings],
                "edges_tried": [e.as_json() for e in self.edges_tried]}


def kinds_drawn(records: Any, kinds: tuple[str, ...]) -> list[str]:
    """The kinds of ``kinds`` among the recorded draws, in ``INJECTABLE_KINDS`` order (uniform first:
    under a deadline the passes that catch the u == 0 family run first)."""
    return [k for k in INJECTABLE_KINDS if k in kinds and any(r.kind == k for r in records)]


def not_run_text(not_run: list[str] | tuple[str, ...]) -> str:
    """How every check says which injection passes a time budget's deadline skipped."""
    return (f"{len(not_run)} passes NOT run (they did not fit in the injection's share of the time budget; a larger "
            f"--time-budget runs them): {'; '.join(not_run)}")


def zero_target_scenarios(dtype: str = "float32") -> list[Scenario]:
    """Default-suite scenarios (small vocabularies) with a draftable token of target probability 0."""
    chosen = []
    for scenario in default_suite(large_vocab=0):
        real = scenario.realise(dtype)
        if bool(((real.target[: real.k] == 0) & (real.draft > 0)).any()):
            chosen.append(scenario)
    return chosen


def _fraction(value: Any) -> Fraction:
    try:
        f = Fraction(value)
    except (TypeError, ValueError):
        f = None
    if isinstance(value, bool) or f is None or not 0 < f <= 1 or f.denominator > 2**62:
        raise SpecproofInputError("fraction", f"{value!r} is not a number in (0, 1] with denominator <= 2^62",
                                  "pass e.g. Fraction(1, 16)")
    return f


class _Run:
    """One scenario's batch: baseline and injected passes with the same generator and global seed."""

    def __init__(self, call: VerifierCaller, real: Realisation, drafts: torch.Tensor, seed: int):
        self.call, self.real, self.drafts, self.seed = call, real, drafts, seed

    def __call__(self, mode: EdgeInjection) -> torch.Tensor:
        with torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(self.seed)  # a global-RNG verifier reproduces too
            with mode:
                return self.call(self.real, self.drafts, self.seed)


def _counts(out: torch.Tensor, drafts: torch.Tensor, real: Realisation) -> tuple[int, int]:
    """(rows with a probability-0 token, rows whose leading tokens are not the drafts): ``events.impossible_rows``."""
    zero_token, mismatch = impossible_rows(out, drafts, real)[:2]
    return zero_token, mismatch


def _flagged_rows(run: _Run, out: torch.Tensor, rows: list[int], problem: int) -> list[int]:
    """The rows among ``rows`` that show ``problem`` (``events.impossible_rows`` one row at a time)."""
    return [r for r in rows if _counts(out[r:r + 1], run.drafts[r:r + 1], run.real)[problem]]


def _describe_row(run: _Run, out: torch.Tensor, base: torch.Tensor, row: int) -> str:
    return f"drafts {run.drafts[row].tolist()} -> emitted {out[row].tolist()} (baseline {base[row].tolist()})"


_CONTRACT = "broke the contract or raised"
_PROBLEMS = ("emitted a token of target probability 0 at its prefix",
             "emitted tokens before the last that are not the drafted ones")


def _scenario_findings(run: _Run, base: torch.Tensor, kinds: tuple[str, ...], fraction: Fraction, seed: int,
                       records: list[DrawRecord], deadline: Deadline | None,
                       not_run: list[str]) -> tuple[list[InjectionFinding], int, list[EdgeValue]]:
    name, rows = run.real.scenario.name, run.drafts.shape[0]
    findings: list[InjectionFinding] = []
    unaided = _counts(base, run.drafts, run.real)
    for problem, count in enumerate(unaided):
        if count:
            first = _flagged_rows(run, base, list(range(rows)), problem)[0]
            findings.append(InjectionFinding(name, _PROBLEMS[problem], None, None, (), Fraction(0), rows, count,
                                             bool((run(EdgeInjection()) == base).all()),
                                             _describe_row(run, base, base, first)))
    passes, tried = 0, []
    for kind in kinds_drawn(records, kinds):
        for label in _LABELS[kind]:
            if deadline is not None and not deadline.fits(rows):
                not_run.append(f"{name}: {kind} edge '{label}'")
                continue
            passes += 1

            def injected() -> tuple[EdgeInjection, torch.Tensor | str]:
                mode = EdgeInjection(kind, label, fraction, seed)
                try:
                    return mode, run(mode)
                except (ContractViolation, VerifierError) as error:
                    return mode, str(error)

            mode, out = injected()
            edges = tuple({(e.kind, e.dtype, e.label): e for r in mode.records if (e := r.edge)}.values())
            tried += [e for e in edges if e not in tried]
            if isinstance(out, str):
                findings.append(InjectionFinding(name, _CONTRACT, kind, label, edges,
                                                 fraction, rows, rows, injected()[1] == out, out))
                continue
            # rows the injection changed that now fail and did not fail unaided (the baseline)
            changed = torch.nonzero((out != base).any(dim=1)).squeeze(1).tolist()
            if not any(_counts(out[changed], run.drafts[changed], run.real)):
                continue
            new = [_flagged_rows(run, out, changed, p) for p in range(len(_PROBLEMS))]
            new = [sorted(set(rs) - set(_flagged_rows(run, base, rs, p))) if not unaided[p] else []
                   for p, rs in enumerate(new)]  # a problem seen unaided needs no rare draw to explain it
            if not any(new):
                continue
            again = injected()[1]  # the same pass again: a finding must reproduce
            repro = isinstance(again, torch.Tensor) and bool((again == out).all())
            for problem, flagged in enumerate(new):
                if flagged:
                    findings.append(InjectionFinding(name, _PROBLEMS[problem], kind, label, edges, fraction, rows,
                                                     len(flagged), repro, _describe_row(run, out, base, flagged[0])))
    return findings, passes, tried


def inject_check(verify: Callable[..., Any], *, dtype: Any = "float32", device: str = "cpu", seed: int = 0,
                 rows: int = DEFAULT_ROWS, fraction: Any = DEFAULT_FRACTION,
                 scenarios: list[Scenario] | None = None, kinds: tuple[str, ...] = DRAW_KINDS,
                 timeout: float | None = DEFAULT_TIMEOUT, fail_fast: bool = False,
                 deadline: Deadline | None = None) -> InjectionResult:
    """Run a batched-contract ``verify`` under edge injection on scenarios with target zeros.

    Per scenario: one baseline pass (records the draws), then per injectable kind seen and per edge
    label one pass injecting that edge into ``fraction`` of the entries; a pass that fails is run
    again and must give the same output (``reproducible``).  Only rows that fail under injection and
    not in the baseline are credited to the edge; a problem the baseline shows is reported unaided.
    ``scenarios`` default :func:`zero_target_scenarios`; ``rows`` per scenario.  A contract violation
    or exception in the baseline pass is a usage error (raised); under injection it is a finding.
    ``fail_fast``: stop after the first scenario with a finding (``scenarios`` then lists those run).
    ``deadline`` (:class:`.calls.Deadline`): a pass that would end past it is skipped and listed in
    ``not_run`` (verdict ``"incomplete"`` when nothing was found)."""
    name = dtype_name(dtype)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise SpecproofInputError("seed", f"{seed!r} is not an integer in [0, 2^63)", "pass e.g. 0")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise SpecproofInputError("rows", f"{rows!r} is not a positive integer", f"pass e.g. {DEFAULT_ROWS}")
    bad = [k for k in kinds if k not in INJECTABLE_KINDS]
    if bad or not kinds:
        raise SpecproofInputError("kinds", f"unknown or no draw kinds ({bad or list(kinds)!r})",
                                  f"use a non-empty subset of {INJECTABLE_KINDS}")
    frac = _fraction(fraction)
    check_timeout(timeout)
    torch_device = resolve_device(device)
    edge_values("uniform", name, str(torch_device))  # refuses devices without an edge model
    suite = list(scenarios) if scenarios is not None else zero_target_scenarios(name)
    if not suite:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario with target zeros")
    call = VerifierCaller(verify, torch_device, timeout, False)
    findings, records, tried, passes, not_run = [], [], [], 0, []
    for index, scenario in enumerate(suite):
        if deadline is not None and not deadline.fits(rows):
            not_run.append(f"{scenario.name}: its baseline and edge passes")
            continue
        real = scenario.realise(name, str(torch_device))
        call_seed = (seed * 1_000_003 + index) % (2**63)
        drafts = real.sample_drafts(rows, torch.Generator().manual_seed(call_seed))
        run = _Run(call, real, drafts, call_seed)
        baseline = EdgeInjection()
        base = run(baseline)
        records += baseline.records
        more, n, edges = _scenario_findings(run, base, kinds, frac, call_seed, baseline.records, deadline, not_run)
        findings += more
        passes += n + 1
        tried += [e for e in edges if e not in tried]
        if findings and fail_fast:  # certain already: the other scenarios cannot undo it
            suite = suite[: index + 1]
            break
    if findings:
        verdict = "flagged"
    elif not_run:
        verdict = "incomplete"
    elif not any(r.kind in kinds for r in records):
        verdict = "no-interceptable-randomness"
    else:
        verdict = "not-flagged"
    return InjectionResult(verdict, name, str(torch_device), seed, rows, frac, tuple(s.name for s in suite),
                           tuple(records), tuple(findings), passes, tuple(tried), call.rows, tuple(not_run))

