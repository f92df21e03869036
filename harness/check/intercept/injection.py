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
to know every alias.  Reachable: eager ATen calls on CPU and CUDA tensors (``aten.rand``, ``rand_like``,
``uniform_``/``uniform`` on ``[0, 1)``, ``exponential_``/``exponential`` with rate 1), each with the edges
of its device's generator (:func:`specproof.harness.exact.edge_models.edge_model_for_device`: the CPU's
from :mod:`.rng_edges`, CUDA's Philox/curand ones from :mod:`.cuda_rng_edges`; CUDA's exponential has no
``zero`` edge, so that pass does not exist there).  Seen and counted but not injected (no exact edge
model here): ``randn``, ``randint``, ``bernoulli``, ``normal_``, ``randperm``, other ranges or rates,
other devices.  ``multinomial(w, 1)`` draws its exponential keys
inside the C++ kernel (unseen by the mode); kind ``"multinomial"`` (opt-in, not in the default
``kinds``) replays them from the saved generator state and injects their edges: an ``E = 0`` key at a
zero weight makes ``0/0 = NaN`` win, torch's own sampler defect, not the verifier's rule.  Not
reachable: draws inside ``torch.compile`` graphs (the mode sets the documented
``ignore_compile_internals``: compiled regions run compiled and unseen, their RNG is inductor's own;
without it dynamo refuses to compile under a user dispatch mode), custom C++/CUDA kernels, Triton kernels
compiled for a GPU, and numpy or Python ``random``.  Triton kernels run by Triton's CPU interpreter
(``TRITON_INTERPRET=1``) are reached through their primitives instead: each pass also runs under
:class:`~specproof.harness.triton_draws.interception.TritonEdgeInjection`, which records every ``tl.rand`` /
``tl.randn`` / ``tl.randint`` (and their ``4x`` forms, ``tl.philox``) call as a draw of kind ``"tl.rand"``,
``"tl.randn"`` or ``"tl.randint"`` and, in that kind's passes, writes the edges of Triton's own generator
(:mod:`specproof.harness.exact.triton_rng_edges`: ``tl.rand`` is 0 with probability ``2^-31``) into the same
fraction of its values.  A verifier with no injectable draw is reported as such.

Rates.  ``injected_rate = flagged rows / rows`` is exact for the run.  The real generator's rate has a
rigorous upper bound (:attr:`InjectionFinding.rate_bound`: the expected number of edge-valued draws per
round, by the union bound), the figure ``--accept-rate`` compares, and a first-order estimate: the
injected run is the real law with the edge's mass tilted from ``P`` to ``f' = f + (1 - f) P`` per entry,
so when a row fails through one entry equal to the edge, ``rate ~ injected_rate P / f'`` (biased by O(f)
where earlier injected entries change which entry is reached).  The exact rate of a uniforms-contract core
is :func:`specproof.harness.drift.grid.measure_grid`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.intercept.dispatch import DispatchMode
from specproof.harness.check.calls import Caller, ContractViolation, Deadline, VerifierError, resolve_device
from specproof.harness.check.contracts.prepared import PreparedScenario
from specproof.harness.check.seeding import SEED_LIMIT, generator, injection_seed
from specproof.harness.check.result import DEFAULT_TIMEOUT
from specproof.harness.exact.dtypes import DTYPES
from specproof.harness.exact.reference import fraction_string
from specproof.harness.exact.edge_models import EdgeModel, edge_model, edge_model_for_device
from specproof.harness.exact.rng_edges import DRAW_KINDS, EDGE_LABELS, EdgeValue
from specproof.harness.triton_draws.interception import PRIMITIVE_KINDS, TritonEdgeInjection, interpreting

TRITON_KINDS = {"tl.rand": "rand", "tl.randn": "randn", "tl.randint": "randint"}
"""The check's draw kinds for Triton's primitives under the interpreter -> the Triton model's kinds."""
DEFAULT_KINDS = DRAW_KINDS + tuple(TRITON_KINDS)  # what a check injects (multinomial is opt-in)
INJECTABLE_KINDS = DRAW_KINDS + ("multinomial",) + tuple(TRITON_KINDS)  # multinomial: its internal exponential keys
_GENERATOR_DEVICES = ("cpu", "cuda")  # torch generators with an edge model (harness.exact.edge_models)


def _labels(model: EdgeModel, kind: str) -> tuple[str, ...]:
    """The edge labels of ``kind`` draws under ``model`` (a multinomial's keys are exponential draws; Triton's
    primitives have their own generator's, whatever the device)."""
    if kind in TRITON_KINDS:
        return edge_model("triton").labels[TRITON_KINDS[kind]]
    return model.labels["exponential" if kind == "multinomial" else kind]


def _edge(device: Any, kind: str, dtype: str, label: str) -> EdgeValue | None:
    """The ``label`` edge of ``kind`` draws in ``dtype`` on ``device``'s generator; None where that
    generator has no such edge (CUDA's exponential never returns 0)."""
    model = edge_model_for_device(device)
    kind = "exponential" if kind == "multinomial" else kind
    return next((e for e in model.edge_values(kind, dtype) if e.label == label), None)

__all__ = ["EdgeInjection", "PassInterception", "INJECTABLE_KINDS", "DEFAULT_KINDS", "TRITON_KINDS", "DrawRecord",
           "InjectionFinding", "InjectionResult", "inject_check", "run_injection", "DEFAULT_FRACTION", "DEFAULT_ROWS",
           "kinds_drawn", "not_run_text", "scenario_passes"]

DEFAULT_FRACTION = Fraction(1, 16)
_CONTRACT = "broke the contract or raised"
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
    if out.device.type not in _GENERATOR_DEVICES:
        return None, f"{out.device.type} generator not modelled (CPU and CUDA only)"
    if packet in _UNIFORM:
        low, high = _argument(args, kwargs, 1, "from", 0.0), _argument(args, kwargs, 2, "to", 1.0)
        if packet in _ops("uniform_", "uniform") and (low, high) != (0.0, 1.0):
            return None, f"uniform on [{low:g}, {high:g}), only [0, 1) is modelled"
        return "uniform", None
    if _argument(args, kwargs, 1, "lambd", 1.0) != 1.0:
        return None, "exponential rate != 1 not modelled"
    return "exponential", None


class EdgeInjection(DispatchMode):
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
        modelled = w.device.type in _GENERATOR_DEVICES and samples == 1 and dtype in DTYPES and w.dim() in (1, 2)
        source = kwargs.get("generator") or (torch.cuda.default_generators[w.device.index or 0]
                                             if w.device.type == "cuda" else torch.random.default_generator)
        state = source.get_state() if modelled else None
        out = func(*args, **kwargs)
        record = DrawRecord("aten.multinomial", "multinomial" if modelled else None, dtype, str(w.device), w.numel(),
                            None if modelled else "only one sample from CPU or CUDA weights is modelled")
        edge = _edge(w.device, "multinomial", dtype, self.label) if modelled and self.kind == "multinomial" else None
        if edge is not None and w.numel():
            replay = torch.Generator(device=w.device)
            replay.set_state(state)
            keys = torch.empty_like(w).exponential_(generator=replay)
            if not torch.equal((w / keys).argmax(-1, keepdim=True), out):
                record.kind, record.reason = None, "the replayed race differs from torch.multinomial"
            else:
                mask = self._mask(tuple(keys.shape)).to(keys.device)
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
        edge = _edge(out.device, kind, dtype, self.label) if kind is not None and kind == self.kind else None
        if edge is not None and out.numel():
            mask = self._mask(tuple(out.shape)).to(out.device)
            out.masked_fill_(mask, float(edge.value))  # exact: the value is in the dtype
            record.injected, record.edge = int(mask.sum()), edge
        self.records.append(record)
        return out


def _triton_record(call: Any) -> DrawRecord:
    """A Triton primitive call as a draw record (device: the interpreter, on the CPU)."""
    kind = PRIMITIVE_KINDS[call.primitive]
    return DrawRecord(f"tl.{call.primitive}", f"tl.{kind}", "uint32" if kind == "randint" else "float32",
                      "triton-interpreter", call.values, injected=call.replaced,
                      edge=call.edge if call.replaced else None)


class PassInterception:
    """One pass's interception: :class:`EdgeInjection` for torch's draws and, when Triton runs in its CPU
    interpreter (:func:`~specproof.harness.triton_draws.interception.interpreting`), Triton's primitives;
    ``kind``/``label`` name the one edge the pass writes (a torch kind or one of :data:`TRITON_KINDS`)."""

    def __init__(self, kind: str | None = None, label: str | None = None,
                 fraction: Fraction = DEFAULT_FRACTION, seed: int = 0):
        triton_kind = TRITON_KINDS.get(kind) if kind is not None else None
        self.torch = EdgeInjection(None if triton_kind else kind, None if triton_kind else label, fraction, seed)
        self.triton = TritonEdgeInjection({triton_kind: label} if triton_kind else {}, fraction,
                                          seed % (2**63)) if interpreting() else None

    def __enter__(self) -> "PassInterception":
        if self.triton is not None:
            self.triton.__enter__()
        try:
            self.torch.__enter__()
        except BaseException:
            if self.triton is not None:
                self.triton.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.torch.__exit__(*exc)
        finally:
            if self.triton is not None:
                self.triton.__exit__(*exc)

    @property
    def records(self) -> list[DrawRecord]:
        """Torch's draws, Triton's primitive calls, and one record per launched Triton kernel that builds
        randomness from integer hashes (not injectable: its rare draws are NOT tested)."""
        if self.triton is None:
            return self.torch.records
        hashed = [DrawRecord(f"Triton kernel {k.kernel}", None, "", "triton-interpreter", 0,
                             "randomness built from integer hashes, which no interception reaches: its rare draws "
                             f"are NOT tested ({'; '.join(k.hash_signs)})") for k in self.triton.hash_sources()]
        return self.torch.records + [_triton_record(c) for c in self.triton.calls] + hashed


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
    draws: tuple[int, ...] = ()  # per edge: the ``kind`` draws in its dtype the scenario's baseline pass made

    @property
    def rate_bound(self) -> Fraction | None:
        """An upper bound on this failure's rate per round (row) on the real generator, or None (unknown).

        The finding fails only where a draw holds the injected edge (the baseline, same inputs and
        generator state, does not fail), so on the real generator the failure needs at least one of the
        round's ``kind`` draws to equal an edge: by the union bound its rate is at most the expected number
        of edge-valued draws per round, ``sum_e (draws_e / rows) P(e)``, averaged over the scenario's rows.
        What it bounds is the failure *through these edge values*; a failure at other values is the
        statistical test's to find.  Unknown (None) for a failure seen without injection."""
        if self.kind is None or len(self.draws) != len(self.edges) or not self.edges:
            return None
        return sum((Fraction(n, self.rows) * e.probability for n, e in zip(self.draws, self.edges)), Fraction(0))

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
                    if self.kind == "multinomial" else f"a {self.kind} draw" + (
                        " (Triton's generator, under TRITON_INTERPRET=1)" if self.kind in TRITON_KINDS else ""))
            head = (f"{self.scenario}: {self.problem} when {draw} is {self.label} "
                    f"({'; '.join(e.describe() for e in self.edges)}); {self.flagged_rows}/{self.rows} rows "
                    f"with {fraction_string(self.fraction)} of entries injected")
            bound = self.rate_bound
            if bound is not None:
                head += f"; real-generator rate at most {float(bound):.3g} per round" + (
                    f" (~ {float(est):.3g} to first order)" if est is not None else "")
        return head + ("; reproducible" if self.reproducible else "; NOT reproducible") + f"; e.g. {self.example}"

    def as_json(self) -> dict[str, Any]:
        est = self.estimated_rate
        return {"scenario": self.scenario, "problem": self.problem, "kind": self.kind, "label": self.label,
                "edges": [e.as_json() for e in self.edges], "fraction": fraction_string(self.fraction),
                "rows": self.rows, "flagged_rows": self.flagged_rows,
                "injected_rate": fraction_string(self.injected_rate),
                "estimated_rate": None if est is None else fraction_string(est),
                "rate_bound": None if self.rate_bound is None else fraction_string(self.rate_bound),
                "draws": list(self.draws), "reproducible": self.reproducible, "example": self.example}


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
        return [(f"{op} {dt} on {dev}: {n} entries, " if dt else f"{op} on {dev}: ")  # no dtype: not a draw op
                + (f"injectable as {kind}" if kind else f"not injected ({why})")
                for (op, dt, dev, kind, why), n in seen.items()]

    def summary(self) -> str:
        lines = [f"RNG edge injection ({self.dtype}, {self.device}, seed {self.seed}, {self.rows} rows x "
                 f"{len(self.scenarios)} scenarios, {fraction_string(self.fraction)} of entries, "
                 f"{self.passes} passes): {self.verdict}"]
        if self.verdict == "no-interceptable-randomness":
            lines.append("the verifier made no draw that can be injected (torch.rand/rand_like/uniform_/"
                         "exponential_ on CPU or CUDA, tl.rand/tl.randn/tl.randint under TRITON_INTERPRET=1); its "
                         "rare-draw behaviour was NOT tested")
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
                # each distinct random op seen, structured (the diagnosis reads which dtype each draw had)
                "draw_records": [{"op": op, "dtype": dt, "device": dev} for op, dt, dev in
                                 sorted({(r.op, r.dtype, r.device) for r in self.draws})],
                "findings": [f.as_json() for f in self.findings],
                "edges_tried": [e.as_json() for e in self.edges_tried]}


def scenario_passes(edge_labels: Sequence[str] | None = None) -> int:
    """The passes one scenario takes for a target drawing uniforms and exponentials: its baseline and one per
    edge label of each kind, only those of ``edge_labels`` where the scenario declares them (a zero-site
    ladder: ``("zero",)``)."""
    return 1 + sum(1 for kind in DRAW_KINDS for label in EDGE_LABELS[kind]
                   if edge_labels is None or label in edge_labels)


def kinds_drawn(records: Any, kinds: tuple[str, ...]) -> list[str]:
    """The kinds of ``kinds`` among the recorded draws, in ``INJECTABLE_KINDS`` order (uniform first:
    under a deadline the passes that catch the u == 0 family run first)."""
    return [k for k in INJECTABLE_KINDS if k in kinds and any(r.kind == k for r in records)]


def not_run_text(not_run: list[str] | tuple[str, ...]) -> str:
    """How every check says which injection passes a time budget's deadline skipped."""
    return (f"{len(not_run)} passes NOT run (they did not fit in the injection's share of the time budget; a larger "
            f"--time-budget runs them): {'; '.join(not_run)}")


def _fraction(value: Any) -> Fraction:
    try:
        f = Fraction(value)
    except (TypeError, ValueError):
        f = None
    if isinstance(value, bool) or f is None or not 0 < f <= 1 or f.denominator > 2**62:
        raise SpecproofInputError("fraction", f"{value!r} is not a number in (0, 1] with denominator <= 2^62",
                                  "pass e.g. Fraction(1, 16)")
    return f


class _Pass:
    """One scenario's batch: the baseline and every injected pass run on the same inputs with the same
    target generator and global RNG seed (so a global-RNG target reproduces too)."""

    def __init__(self, caller: Caller, subject: PreparedScenario, batch: Any, seed: int):
        self.caller, self.subject, self.batch, self.seed = caller, subject, batch, seed
        self.rows = subject.batch_rows(batch)

    def __call__(self, mode: PassInterception) -> Any:
        device = self.caller.device
        cuda = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.random.default_generator.manual_seed(self.seed % SEED_LIMIT)
            if cuda:
                torch.cuda.manual_seed(self.seed % SEED_LIMIT)
            with mode:
                return self.caller(self.subject, self.batch, self.seed)

    def flagged(self, out: Any) -> dict[str, np.ndarray]:
        """Per impossible label, the rows of ``out`` that show it."""
        return {label: np.asarray(first) > 0 for label, first in self.subject.impossible(self.batch, out).items()}

    def example(self, out: Any, base: Any, row: int) -> str:
        return f"{self.subject.describe_row(self.batch, out, row)} (baseline {np.asarray(base)[row].tolist()})"


def _scenario_findings(run: _Pass, base: Any, kinds: tuple[str, ...], fraction: Fraction, records: list[DrawRecord],
                       deadline: Deadline | None,
                       not_run: list[str]) -> tuple[list[InjectionFinding], int, list[EdgeValue]]:
    """The baseline's own impossible rows (unaided findings), then one pass per kind drawn and edge label:
    rows the injection changed that now show an impossible outcome the baseline did not."""
    name, rows = run.subject.name, run.rows
    findings: list[InjectionFinding] = []
    unaided = run.flagged(base)
    for problem, rows_flagged in unaided.items():
        if rows_flagged.any():
            first = int(np.flatnonzero(rows_flagged)[0])
            same = bool((np.asarray(run(PassInterception())) == np.asarray(base)).all())
            findings.append(InjectionFinding(name, problem, None, None, (), Fraction(0), rows, int(rows_flagged.sum()),
                                             same, run.example(base, base, first)))
    passes, tried = 0, []
    restricted = getattr(run.subject, "edge_labels", None)  # a scenario built for one edge runs only its passes
    for kind in kinds_drawn(records, kinds):
        for label in _labels(edge_model_for_device(run.caller.device), kind):
            if restricted is not None and label not in restricted:
                continue
            if deadline is not None and not deadline.fits(rows):
                not_run.append(f"{name}: {kind} edge '{label}'")
                continue
            passes += 1

            def injected() -> tuple[PassInterception, Any]:
                mode = PassInterception(kind, label, fraction, run.seed)
                try:
                    return mode, run(mode)
                except (ContractViolation, VerifierError) as error:
                    return mode, str(error)

            mode, out = injected()
            edges = tuple({(e.kind, e.dtype, e.label): e for r in mode.records if (e := r.edge)}.values())
            tried += [e for e in edges if e not in tried]
            # the baseline's draws of this kind in each edge's dtype: the rate bound's union (rate_bound)
            draws = tuple(sum(r.entries for r in records if r.kind == kind and r.dtype == e.dtype) for e in edges)
            if isinstance(out, str):
                findings.append(InjectionFinding(name, _CONTRACT, kind, label, edges,
                                                 fraction, rows, rows, injected()[1] == out, out, draws))
                continue
            # rows the injection changed that now fail and did not fail unaided (the baseline); a problem
            # the baseline shows needs no rare draw to explain it
            changed = (np.asarray(out) != np.asarray(base)).any(axis=1)
            now = run.flagged(out)
            new = {p: changed & now[p] & ~unaided[p] if not unaided[p].any() else np.zeros(rows, dtype=bool)
                   for p in now}
            if not any(v.any() for v in new.values()):
                continue
            again = injected()[1]  # the same pass again: a finding must reproduce
            repro = not isinstance(again, str) and bool((np.asarray(again) == np.asarray(out)).all())
            for problem, flagged in new.items():
                if flagged.any():
                    first = int(np.flatnonzero(flagged)[0])
                    findings.append(InjectionFinding(name, problem, kind, label, edges, fraction, rows,
                                                     int(flagged.sum()), repro, run.example(out, base, first), draws))
    return findings, passes, tried


def run_injection(subjects: Sequence[PreparedScenario], caller: Caller, *, dtype: str, seed: int, rows: int,
                  fraction: Any = DEFAULT_FRACTION, kinds: tuple[str, ...] = DEFAULT_KINDS, fail_fast: bool = False,
                  deadline: Deadline | None = None) -> InjectionResult:
    """The RNG edge injection on prepared scenarios of any contract (module docstring).

    Per scenario (inputs, target generator and global RNG seeded :func:`..seeding.injection_seed`): one
    baseline pass (records the draws), then per injectable kind seen and per edge label (those of the
    scenario's ``edge_labels`` where it declares them) one pass injecting that edge into ``fraction`` of
    the entries; a pass that fails is run again and must give
    the same output (``reproducible``).  Only rows that fail under injection and not in the baseline are
    credited to the edge; a problem the baseline shows is reported unaided.  A contract violation or an
    exception in the baseline pass is a usage error (raised); under injection it is a finding.
    ``fail_fast``: stop after the first scenario with a finding.  ``deadline``: a pass that would end
    past it is skipped and listed in ``not_run`` (verdict ``"incomplete"`` when nothing was found)."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise SpecproofInputError("rows", f"{rows!r} is not a positive integer", f"pass e.g. {DEFAULT_ROWS}")
    bad = [k for k in kinds if k not in INJECTABLE_KINDS]
    if bad or not kinds:
        raise SpecproofInputError("kinds", f"unknown or no draw kinds ({bad or list(kinds)!r})",
                                  f"use a non-empty subset of {INJECTABLE_KINDS}")
    frac = _fraction(fraction)
    if not subjects:
        raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario with target zeros")
    edge_model_for_device(caller.device)  # refuses devices without an edge model
    findings, records, tried, passes, not_run, ran = [], [], [], 0, [], []
    before = caller.rows
    for index, subject in enumerate(subjects):
        if deadline is not None and not deadline.fits(rows):
            not_run.append(f"{subject.name}: its baseline and edge passes")
            continue
        pass_seed = injection_seed(seed, index)
        run = _Pass(caller, subject, subject.sample(rows, generator(pass_seed)), pass_seed)
        baseline = PassInterception()
        base = run(baseline)
        drawn = baseline.records  # read once: it reads the launched Triton kernels' sources
        records += drawn
        more, n, edges = _scenario_findings(run, base, kinds, frac, drawn, deadline, not_run)
        findings += more
        passes += n + 1
        ran.append(subject.name)
        tried += [e for e in edges if e not in tried]
        if findings and fail_fast:  # certain already: the other scenarios cannot undo it
            break
    if findings:
        verdict = "flagged"
    elif not_run:
        verdict = "incomplete"
    elif not any(r.kind in kinds for r in records):
        verdict = "no-interceptable-randomness"
    else:
        verdict = "not-flagged"
    names = tuple(ran) if findings and fail_fast else tuple(s.name for s in subjects)
    return InjectionResult(verdict, dtype, str(caller.device), seed, rows, frac, names, tuple(records),
                           tuple(findings), passes, tuple(tried), caller.rows - before, tuple(not_run))


def inject_check(target: Callable[..., Any], *, contract: str = "batched", dtype: Any = "float32",
                 device: str = "cpu", seed: int = 0, rows: int = DEFAULT_ROWS, fraction: Any = DEFAULT_FRACTION,
                 scenarios: list[Any] | None = None, kinds: tuple[str, ...] = DEFAULT_KINDS,
                 timeout: float | None = DEFAULT_TIMEOUT, fail_fast: bool = False,
                 deadline: Deadline | None = None, **contract_options: Any) -> InjectionResult:
    """The RNG edge injection alone on ``target`` (:func:`run_injection`): on ``scenarios`` of the
    contract (default: the contract's injection scenarios of its default suite)."""
    from specproof.harness.check.options import CheckOptions

    options = CheckOptions.build(contract, dtype=dtype, device=device, seed=seed, timeout=timeout,
                                 **contract_options)
    impl = options.contract.implementation()
    torch_device = resolve_device(device)
    edge_model_for_device(torch_device)  # refuses devices without an edge model
    if scenarios is not None:
        subjects = [impl.prepare(s, options, torch_device) for s in scenarios]
    else:
        subjects = impl.injection_scenarios([impl.prepare(s, options, torch_device)
                                             for s in impl.default_suite(options)], options, torch_device)
    return run_injection(subjects, Caller(target, torch_device, options.timeout, False), dtype=options.dtype,
                         seed=seed, rows=rows, fraction=fraction, kinds=kinds, fail_fast=fail_fast, deadline=deadline)
