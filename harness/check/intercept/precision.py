"""Observed precision: which dtypes a verifier draws and rounds in, seen on one probe call per scenario.

:class:`PrecisionProbe` is a :class:`~torch.utils._python_dispatch.TorchDispatchMode` (the dispatch level
the RNG injection uses, :mod:`.injection`): every ATen op the verifier runs passes through it, whatever
its Python spelling.  It records

* *draws*: the output dtype of every uniform or exponential draw (``torch.rand``, ``uniform_``,
  ``exponential_``, ...), and the weights' dtype of ``torch.multinomial`` (on CPU an exponential race
  drawn and divided in that dtype);
* *roundings*: the output dtype of every floating-point op that may round.  An op is exact only when it
  is listed in :data:`EXACT_OPS` (copies, views, indexing, comparisons, ``max``/``min``/``relu``/``clamp``,
  sorting, fills) or is a conversion to a dtype at least as precise as its input; every other op with
  a floating output (an op not known here included) is counted as rounding in its output dtype.

The verifier's arithmetic is *unobservable*, and the band falls back to the worst case of
:mod:`specproof.harness.exact.tolerances` (saying why), when the probe sees no uniform or exponential
draw, a random op with no grid model (``randn``, ``bernoulli``, ...), an op outside the ``aten``/``prims``
namespaces (a custom or Triton kernel registered as an op), or a call into ``torch.compile``'s runtime,
inductor or Triton (a Python profile hook on the probe call sees their frames: a compiled region runs
unseen by the mode, ``ignore_compile_internals``): dynamo compiling a frame, a compiled graph's runner, inductor's generated code,
AOT-autograd's runtime wrappers, Triton's ``JITFunction``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import torch

from specproof.harness.check.intercept.dispatch import DispatchMode
from specproof.harness.check.intercept.injection import _EXPONENTIAL, _OTHER, _UNIFORM, _ops
from specproof.harness.exact.dtypes import DTYPES, dtype_info
from specproof.harness.check.seeding import SEED_LIMIT, generator, probe_seed
from specproof.harness.exact.tolerances import (BAND_DERIVED, BAND_USER, BAND_WORST, DERIVED_ASSUMPTIONS,
                                                Precision)

__all__ = ["PrecisionProbe", "Observation", "EXACT_OPS", "observe", "coarsest", "Band", "choose_band", "PROBE_ROWS"]

PROBE_ROWS = 1  # rows of the one probe call per scenario: a vectorised kernel runs the same ops on 1 row as on
# many, and every probe row is a verifier call outside the statistics (a 0.1 s/row verifier under a 5 s
# --time-budget spent 11 s probing 14 scenarios at 8 rows)

EXACT_OPS = _ops(
    "view", "_unsafe_view", "reshape", "expand", "squeeze", "unsqueeze", "permute", "transpose", "t", "select",
    "slice", "narrow", "index", "index_select", "gather", "scatter", "scatter_", "index_put", "index_put_", "cat",
    "stack", "clone", "detach", "alias", "lift_fresh", "where", "masked_fill", "masked_fill_", "lt", "le", "gt",
    "ge", "eq", "ne", "argmax", "argmin", "max", "min", "amax", "amin", "maximum", "minimum", "clamp",
    "clamp_min", "clamp_max", "clamp_", "relu", "relu_", "abs", "neg", "flip", "full", "full_like", "zeros",
    "zeros_like", "ones", "ones_like", "empty", "empty_like", "empty_strided", "fill_", "fill", "zero_", "any",
    "all", "searchsorted", "sort", "topk", "scalar_tensor", "new_full", "new_zeros", "new_ones", "new_empty",
    "expand_as", "view_as", "split", "split_with_sizes", "unbind", "chunk", "roll", "repeat", "tile", "sign",
    "floor", "ceil", "trunc", "round", "nonzero", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_not", "_local_scalar_dense", "item", "unfold",
    "as_strided", "contiguous", "cumprod_backward", "constant_pad_nd", "diagonal", "tril", "triu")
_CONVERSIONS = _ops("_to_copy", "to", "copy_", "copy", "_to_dtype")


def _name(dtype: Any) -> str | None:
    name = str(dtype).replace("torch.", "")
    return name if name in DTYPES else None


def coarsest(names: Sequence[str], default: str) -> str:
    """The least precise of ``names`` (``default`` when empty)."""
    return max(names, key=lambda n: dtype_info(n).unit_roundoff) if names else default


@dataclass
class Observation:
    """What one or more probe calls showed: dtypes drawn in and rounded in, and why (if so) the
    verifier's arithmetic could not be seen."""

    draws: set[str] = field(default_factory=set)
    roundings: set[str] = field(default_factory=set)
    unobservable: list[str] = field(default_factory=list)

    def merge(self, other: "Observation") -> None:
        self.draws |= other.draws
        self.roundings |= other.roundings
        self.unobservable += [r for r in other.unobservable if r not in self.unobservable]

    @property
    def observable(self) -> bool:
        return not self.unobservable and bool(self.draws)

    def reason(self) -> str:
        """Why the worst case is used ('' when the arithmetic was observed)."""
        if self.unobservable:
            return "; ".join(self.unobservable)
        return "" if self.draws else "no uniform or exponential draw was seen (a compiled graph or custom kernel?)"

    def precision(self, inputs: str) -> Precision | None:
        """The :class:`Precision` of a verifier given ``inputs`` in that dtype (None when unobservable)."""
        if not self.observable:
            return None
        return Precision(coarsest(sorted(self.draws), inputs), coarsest(sorted(self.roundings), "float64"), Fraction(0))

    def describe(self) -> str:
        if not self.observable:
            return f"not observed ({self.reason()})"
        rounds = ", ".join(sorted(self.roundings, key=lambda n: dtype_info(n).unit_roundoff)) or "nothing"
        return f"draws in {', '.join(sorted(self.draws))}; rounds in {rounds}"


class PrecisionProbe(DispatchMode):
    """Records the dtypes of draws and roundings (module docstring); changes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = Observation()

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True  # compiled regions run unseen; their outputs are then not "produced" (module docstring)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func.overloadpacket
        namespace = getattr(func, "namespace", "aten")
        if namespace not in ("aten", "prims"):
            self._unseen(f"custom op {namespace}::{packet.__name__} (its arithmetic is not observable)")
            return out
        if packet in _UNIFORM or packet in _EXPONENTIAL:
            name = _name(getattr(out, "dtype", None))
            if name is None:
                self._unseen(f"draw {packet} in an unmodelled dtype")
            else:
                self.seen.draws.add(name)
            return out
        if packet is torch.ops.aten.multinomial:
            name = _name(args[0].dtype)
            if name is None:
                self._unseen("multinomial of unmodelled weights")
            else:
                self.seen.draws.add(name)
                self.seen.roundings.add(name)  # w / E in the weights' dtype
            return out
        if packet in _OTHER:
            self._unseen(f"random op {packet} has no uniform-grid model")
            return out
        if packet in EXACT_OPS or not isinstance(out, torch.Tensor):
            return out
        name = _name(out.dtype)
        if name is None:
            return out
        if packet in _CONVERSIONS:
            source = next((a for a in (args[1] if packet in _ops("copy_") and len(args) > 1 else args[0],)
                           if isinstance(a, torch.Tensor)), None)
            src = _name(source.dtype) if source is not None else None
            if src is not None and dtype_info(name).unit_roundoff <= dtype_info(src).unit_roundoff:
                return out  # widening (or same-dtype) conversion: exact
            if src is None and source is not None:  # from an integer or bool tensor: exact when small
                return out
        self.seen.roundings.add(name)
        return out

    def _unseen(self, reason: str) -> None:
        if reason not in self.seen.unobservable:
            self.seen.unobservable.append(reason)


# frames that run a compiled graph or a Triton kernel (not the imports and wrappers dispatch modes also touch)
_COMPILED = ((os.path.join("torch", "_dynamo", "convert_frame.py"), "_compile"),
             (os.path.join("torch", "_inductor", "output_code.py"), "__call__"), ("torchinductor_", "call"),
             (os.path.join("_aot_autograd", "runtime_wrappers.py"), "runtime_wrapper"),
             (os.path.join("triton", "runtime", "jit.py"), "run"))


def _give_back_profiler(previous: Any) -> None:
    """Restore the profiler that ran before the probe's hook: a Python hook through ``sys.setprofile``; a C
    profiler (``cProfile.Profile``, which ``sys.getprofile`` returns but ``sys.setprofile`` cannot take) by
    enabling it again (the probed call itself goes unprofiled)."""
    if previous is None or callable(previous):
        sys.setprofile(previous)
    else:
        sys.setprofile(None)
        previous.enable()


def observe(call: Any) -> tuple[Observation, Any]:
    """Run ``call()`` under a :class:`PrecisionProbe` and a profile hook; ``(observation, output)``.  A frame of
    ``torch.compile``'s runtime, inductor or Triton marks the arithmetic unobservable."""
    probe = PrecisionProbe()
    compiled: list[str] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and not compiled and any(part in code.co_filename and code.co_name == name
                                                    for part, name in _COMPILED):
            compiled.append(frame.f_code.co_filename)
            sys.setprofile(None)  # decided: the rest of the call (a compilation, say) runs unhooked

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        with probe:
            out = call()
    finally:
        _give_back_profiler(previous)
    if compiled:
        probe._unseen("a torch.compile / inductor / Triton region ran (its arithmetic is not observable)")
    return probe.seen, out


@dataclass(frozen=True)
class Band:
    """Which null band a check used: ``basis`` one of the three of :mod:`~specproof.harness.exact.tolerances`
    (derived from observed precision, worst case, stated by the user), what was seen or why, and the
    assumptions the derived band rests on."""

    basis: str
    detail: str
    assumptions: tuple[str, ...] = ()

    def line(self) -> str:
        return f"band: {self.basis} ({self.detail})"

    def as_json(self) -> dict[str, Any]:
        return {"basis": self.basis, "detail": self.detail, "assumptions": list(self.assumptions)}


def choose_band(prepared: Sequence[Any], caller: Any, options: Any) -> Band:
    """Set every prepared scenario's ``tolerance``: ``options.max_drift`` when given (the user's band);
    else one probe call of :data:`PROBE_ROWS` rows per scenario under :func:`observe` (global RNG restored)
    and, when the arithmetic was observed, the smaller of the worst case and the derived band
    (``band_for``, :func:`~specproof.harness.exact.tolerances.composed_tolerance`); else the worst case, said.
    The derived band's assumptions are :data:`~specproof.harness.exact.tolerances.DERIVED_ASSUMPTIONS` and
    each contract's own (the prepared scenarios' ``band_assumptions``: the rule its inputs' term is
    computed for), each printed once.  With the derived band, a scenario whose exact law depends on the
    target's arithmetic (an ``arithmetic`` attribute: generate's float margins) gets the observed one,
    under the same assumptions; with the worst case or the user's band it keeps its dtype's."""
    if options.max_drift is not None:
        for p in prepared:
            p.tolerance = float(options.max_drift)
        return Band(BAND_USER, f"--max-drift {options.max_drift:g}: no tested event may deviate by more")
    seen = Observation()
    for number, p in enumerate(prepared):
        seed = probe_seed(options.seed, number)
        batch = p.sample(min(PROBE_ROWS, p.max_call_rows), generator(seed))
        with torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(seed % SEED_LIMIT)
            found, _ = observe(lambda: caller(p, batch, seed))
        seen.merge(found)
    if not seen.observable:
        return Band(BAND_WORST, f"{seen.reason()}: every draw and sum assumed in {options.dtype}")
    precision = seen.precision(options.dtype)
    bands = [p.band_for(precision) for p in prepared]
    refused = next((p for p, b in zip(prepared, bands) if b is None), None)
    if refused is not None:
        return Band(BAND_WORST, f"{seen.describe()}, but {refused.no_band_reason(precision)}: "
                                f"every draw and sum assumed in {options.dtype}")
    for p, band in zip(prepared, bands):
        p.tolerance = band
        if hasattr(p, "arithmetic"):
            p.arithmetic = precision.arithmetic
    own = [a for p in prepared for a in p.band_assumptions]
    return Band(BAND_DERIVED, seen.describe(), DERIVED_ASSUMPTIONS + tuple(dict.fromkeys(own)))
