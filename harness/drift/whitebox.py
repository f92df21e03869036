"""Deterministic drift of a white-box verifier step: :func:`measure_whitebox`.

A white-box step (``specproof.impls.verifiers.whitebox``) maps target ``p`` and draft ``q`` in a float dtype to the
float quantities of one canonical step: ``accept``, ``accepted_mass``, ``rejection``, ``residual`` and the
implied ``output`` law.  Each is compared with the exact reference.

Inputs.  ``p`` and ``q`` are rounded to the dtype as a runtime receives them: exact rationals by one
correct rounding (:func:`round_to_dtype`, ties to even), float arrays and tensors by torch's conversion.
The exact reference is :func:`~specproof.harness.exact_reference` of the ROUNDED values, each
renormalised exactly (``p^ = p / S_p``, ``q^ = q / S_q``), so input rounding is not counted as drift;
the float code sees the unnormalised rounded rows, so the normalisation mismatch ``S_p, S_q != 1``
is (and is allowed for in the bounds below).

Errors, exactly.  Float results are converted with the one exact conversion
(:func:`~specproof.harness.exact.convert.dyadic_array`) and subtracted from the exact values in big-integer
arithmetic, vectorised over numpy object arrays: ``D = f - e`` exactly.  Reported floats are single
correct roundings of exact rationals (Python ``int / int`` rounds correctly): ``|f - e|``,
``|f - e| / |e|`` and the ULP error ``|f - e| / ulp(e)`` with

    ulp(e) = 2^(max(E, e_norm) - t + 1),   E = floor(log2 |e|) (exact),  e_norm = min_exponent + t - 1,

``t`` the precision: the spacing of the dtype in the exact value's binade; below the smallest normal and
at ``e = 0`` it is ``2^min_exponent``, the subnormal spacing.  Maxima are exact rationals.  KL is the
one float64 quantity (a logarithm): ``sum p^ (d - log1p d)`` with ``d`` the exact relative deviation
rounded once, a series below ``|d| < 1e-4``: relative accuracy about 1e-9.

Bounds: :mod:`.drift_bounds` (forward error analysis, per field).  The check is evaluated in float64 from correctly rounded terms and widened by ``2^-40`` relative (the
float64 evaluation of the bound formula), far below any dtype's ulp.  Independently of any tolerance,
every field must be exactly 0 where the exact target is 0 (``impossible_mass``): every correct formula
keeps that in floats (``min(p, q)``, ``p/q``, ``exp(-inf)``, ``relu(0 - q)`` are exact zeros).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import torch

from specproof.verdicts import DriftVerdict
from specproof.errors import SpecproofInputError

from specproof.harness.exact.convert import dyadic_array, is_exact_input, round_to_dtype, to_exact
from specproof.harness.exact.dtypes import DTYPES, DtypeInfo, dtype_name
from specproof.harness.drift.bounds import ErrorModel
from specproof.proofs.arith.fast import DVec, QVec
from specproof.harness.exact.reference import ExactReference, ExactVector, exact_reference, fraction_string
from specproof.harness.files.json_numbers import number_word
from specproof.harness.files.kinds import WHITEBOX_DRIFT

__all__ = ["FORMS", "FIELDS", "ErrorModel", "FieldDrift", "LawDrift", "DriftResult", "measure_whitebox",
           "round_to_dtype", "ulp_histogram_edges"]

FORMS = ("any", "ratio", "product", "log")
FIELDS = ("accept", "accepted_mass", "rejection", "residual", "output")
SCHEMA = WHITEBOX_DRIFT.schema
_BOUND_SLACK = 1 + 2.0**-40
_HIST_UPPER = [2.0**j for j in range(-1, 21)] + [math.inf]  # ULP-error bins (0, 1/2], (1/2, 1], ...


def ulp_histogram_edges() -> list[float]:
    """Upper edges of the ULP-error histogram bins after the "exactly 0" bin: 1/2, 1, 2, ..., 2^20, inf."""
    return list(_HIST_UPPER)


# -- exact differences -----------------------------------------------------------------------------

def _exact_arrays(vec: ExactVector | Fraction) -> tuple[np.ndarray, Any]:
    """Numerators (object array) and denominator (int or object array) of an exact vector or scalar."""
    if isinstance(vec, Fraction):
        return np.array([vec.numerator], dtype=object), vec.denominator
    store = vec.store  # the reference's own storage: DVec/QVec on the fast path
    if isinstance(store, (DVec, QVec)):
        return store.num, store.den
    values = list(vec)
    return (np.array([v.numerator for v in values], dtype=object),
            np.array([v.denominator for v in values], dtype=object))


@dataclass(frozen=True)
class _Floats:
    """A float result as exact dyadics ``num / scale`` (non-finite entries zeroed and flagged)."""

    num: np.ndarray
    scale: int
    values: np.ndarray  # float64 (exact widening)
    finite: np.ndarray

    @classmethod
    def of(cls, tensor: torch.Tensor, vocab: int, name: str) -> "_Floats":
        if not isinstance(tensor, torch.Tensor) or not tensor.dtype.is_floating_point:
            raise SpecproofInputError("step_fn", f"returned {name} that is not a float tensor",
                                      "return a StepLaw of float tensors")
        values = tensor.detach().to(device="cpu", dtype=torch.float64).reshape(-1).numpy()
        if values.shape[0] != vocab:
            raise SpecproofInputError("step_fn", f"returned {name} with {values.shape[0]} entries, "
                                      f"expected {vocab}", "return fields shaped like p (rejection: a scalar)")
        finite = np.isfinite(values)
        clean = np.where(finite, values, 0.0)
        nums, exponent, _ = dyadic_array(clean, name)
        if exponent >= 0:
            return cls(nums * (1 << exponent), 1, values, finite)
        return cls(nums, 1 << -exponent, values, finite)

    def total(self) -> Fraction:
        return Fraction(int(self.num.sum()), self.scale)


def _to_float(num: np.ndarray, den: Any) -> np.ndarray:
    """Correctly rounded float64 of ``num / den`` elementwise (``int / int`` rounds correctly)."""
    return (num / den).astype(np.float64) if num.shape[0] else np.zeros(0)


def _times(r: float, values: np.ndarray) -> np.ndarray:
    """``r * values`` with ``inf * 0 = 0`` (a vacuous relative bound leaves exact zeros at zero)."""
    if not math.isinf(r):
        return r * values
    with np.errstate(invalid="ignore"):
        return np.where(values == 0, 0.0, r * values)


def _floor_log2(num: np.ndarray, den: Any, approx: np.ndarray) -> np.ndarray:
    """Exact ``floor(log2(num/den))`` for positive entries, from the rounded value ``approx``."""
    mantissa, exponent = np.frexp(approx)
    guess = exponent.astype(np.int64) - 1
    edge = np.flatnonzero(mantissa == 0.5)  # a power of two: the exact value may lie just below it
    if edge.size:
        g = guess[edge]
        dens = den[edge] if isinstance(den, np.ndarray) else np.full(edge.size, den, dtype=object)
        lhs = num[edge] << np.maximum(0, -g).astype(object)
        rhs = dens << np.maximum(0, g).astype(object)
        guess[edge] = g - (lhs < rhs).astype(np.int64)
    return guess


def _histogram(ulp: np.ndarray, zero: np.ndarray) -> list[dict[str, Any]]:
    bins = [{"upper": 0.0, "count": int(zero.sum())}]
    positive = ulp[~zero]
    index = np.searchsorted(np.array(_HIST_UPPER), positive, side="left")
    counts = np.bincount(index, minlength=len(_HIST_UPPER))
    bins += [{"upper": number_word(edge), "count": int(c)} for edge, c in zip(_HIST_UPPER, counts)]
    return bins


@dataclass(frozen=True)
class FieldDrift:
    """Drift of one field: exact maxima, ULP errors, the derived bound and its check."""

    name: str
    size: int
    max_abs_error: Fraction
    worst_index: int
    max_rel_error: float
    max_ulp_error: float
    bound_at_worst: float
    violations: int
    nonfinite: int
    impossible_mass: Fraction
    bound_terms: dict[str, float | str]
    ulp_histogram: list[dict[str, Any]] = field(repr=False)
    zero_mismatches: int = 0  # entries where exactly one of the float and the exact value is 0
    max_ulp_error_same_support: float = 0.0  # the ULP error over the other entries

    @property
    def within_tolerance(self) -> bool:
        return self.violations == 0 and self.nonfinite == 0 and self.impossible_mass == 0

    def ulp_text(self) -> str:
        """The max ULP error in words: a zero-vs-non-zero entry is no rounding error (its "ULP error"
        is the value over the smallest subnormal, up to ~1e308) and is counted apart."""
        if not self.zero_mismatches:
            return f"{self.max_ulp_error:.3g}"
        return f"zero vs non-zero ({self.zero_mismatches}); {self.max_ulp_error_same_support:.3g} elsewhere"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "within_tolerance": self.within_tolerance,
                "max_abs_error": fraction_string(self.max_abs_error),
                "max_abs_error_float": float(self.max_abs_error), "worst_index": self.worst_index,
                "max_rel_error": number_word(self.max_rel_error),
                "max_ulp_error": number_word(self.max_ulp_error),
                "bound_at_worst": number_word(self.bound_at_worst), "violations": self.violations,
                "nonfinite": self.nonfinite, "impossible_mass": fraction_string(self.impossible_mass),
                "zero_mismatches": self.zero_mismatches,
                "max_ulp_error_same_support": number_word(self.max_ulp_error_same_support),
                "bound": self.bound_terms, "ulp_histogram": self.ulp_histogram}


def _field_drift(name: str, floats: _Floats, exact: tuple[np.ndarray, Any], info: DtypeInfo,
                 bound: np.ndarray, impossible: np.ndarray, bound_terms: dict[str, Any]) -> FieldDrift:
    e_num, e_den = exact
    diff = np.abs(floats.num * e_den - e_num * floats.scale)
    denom = e_den * floats.scale
    abs_err = _to_float(diff, denom)
    abs_err[~floats.finite] = math.inf
    e_abs = np.abs(e_num)
    zero = e_abs == 0
    rel = np.zeros(abs_err.shape[0])
    nz = ~zero
    rel[nz] = _to_float(diff[nz], e_abs[nz] * floats.scale)
    rel[zero & (diff != 0)] = math.inf
    rel[~floats.finite] = math.inf
    ulp_exp = np.full(abs_err.shape[0], info.min_exponent, dtype=np.int64)
    if nz.any():
        dens = e_den[nz] if isinstance(e_den, np.ndarray) else e_den
        approx = _to_float(e_abs[nz], dens)
        e_norm = info.min_exponent + info.precision - 1
        ulp_exp[nz] = np.maximum(_floor_log2(e_abs[nz], dens, approx), e_norm) - (info.precision - 1)
    with np.errstate(over="ignore"):
        ulp = np.ldexp(abs_err, -ulp_exp)  # exact scaling of a correctly rounded value
    violations = int(((abs_err > bound * _BOUND_SLACK) & floats.finite).sum())
    worst = int(np.argmax(abs_err)) if abs_err.shape[0] else 0
    ties = np.flatnonzero(abs_err == abs_err[worst]) if floats.finite.all() else np.array([worst])
    exact_err = max(Fraction(int(diff[i]), int(denom[i] if isinstance(denom, np.ndarray) else denom))
                    for i in ties)
    imp = Fraction(int(np.abs(floats.num[impossible]).sum()), floats.scale) if impossible.any() else Fraction(0)
    mismatch = floats.finite & (zero != (floats.num == 0).astype(bool))
    return FieldDrift(name, int(abs_err.shape[0]), exact_err, worst, float(rel.max(initial=0.0)),
                      float(ulp.max(initial=0.0)), float(bound[worst]), violations,
                      int((~floats.finite).sum()), imp, bound_terms, _histogram(ulp, diff == 0),
                      int(mismatch.sum()), float(ulp[~mismatch].max(initial=0.0)))


# -- the implied output law --------------------------------------------------------------------------

def _kl(target: tuple[np.ndarray, int], out: _Floats) -> float:
    """``KL(p^ || o / sum o)`` in float64 (``inf`` when the float law drops a target token)."""
    t_num, t_den = target
    positive = t_num != 0
    if bool((positive & (out.num <= 0)).any()) or not out.finite.all():
        return math.inf
    o_total = int(out.num.sum())
    t = t_num[positive]
    o = out.num[positive]
    dev = _to_float(o * t_den - t * o_total, t * o_total)  # o'/p^ - 1, exact then rounded once
    weights = _to_float(t, t_den)
    small = np.abs(dev) < 1e-4
    terms = np.where(small, dev**2 / 2 - dev**3 / 3 + dev**4 / 4,
                     dev - np.log1p(np.where(small, 0.0, dev)))
    return float(np.sum(weights * terms))


@dataclass(frozen=True)
class LawDrift:
    """The implied output law against the exact target, and where mass is lost."""

    tv: Fraction
    tv_bound: float
    max_error: Fraction
    kl: float
    lost_mass: Fraction
    lost_tokens: int
    acceptance_rate_error: Fraction
    residual_lost_mass: Fraction
    residual_vanished: bool

    @property
    def within_tolerance(self) -> bool:
        return float(self.tv) <= self.tv_bound * _BOUND_SLACK and not self.residual_vanished

    def as_json(self) -> dict[str, Any]:
        return {"tv": fraction_string(self.tv), "tv_float": float(self.tv), "tv_bound": number_word(self.tv_bound),
                "within_tolerance": self.within_tolerance, "max_error": fraction_string(self.max_error),
                "max_error_float": float(self.max_error), "kl": number_word(self.kl),
                "lost_mass": fraction_string(self.lost_mass), "lost_tokens": self.lost_tokens,
                "acceptance_rate_error": fraction_string(self.acceptance_rate_error),
                "acceptance_rate_error_float": float(self.acceptance_rate_error),
                "residual_lost_mass": fraction_string(self.residual_lost_mass),
                "residual_vanished": self.residual_vanished}


@dataclass(frozen=True)
class DriftResult:
    """White-box drift of one implementation on one input pair in one dtype."""

    implementation: str
    dtype: str
    device: str
    vocab: int
    model: ErrorModel
    fields: dict[str, FieldDrift]
    law: LawDrift
    reference: ExactReference = field(repr=False)
    elapsed_s: float = 0.0

    @property
    def within_tolerance(self) -> bool:
        return all(f.within_tolerance for f in self.fields.values()) and self.law.within_tolerance

    @property
    def verdict(self) -> DriftVerdict:
        """``within-tolerance`` or ``beyond-tolerance`` (the vocabulary's :class:`DriftVerdict`)."""
        return DriftVerdict.WITHIN if self.within_tolerance else DriftVerdict.BEYOND

    def failing_fields(self) -> list[str]:
        return [name for name, f in self.fields.items() if not f.within_tolerance]

    def summary(self) -> str:
        """A few lines: verdict, output-law TV against its bound, per-field errors (floats, 3 digits)."""
        law = self.law
        lines = [f"{self.implementation} {self.dtype} on {self.device}, V={self.vocab:,}: "
                 + ("within tolerance" if self.within_tolerance else
                    "BEYOND TOLERANCE (" + ", ".join(self.failing_fields() or ["output law"]) + ")"),
                 f"  TV(output, target) {float(law.tv):.3g} (derived bound {law.tv_bound:.3g}); mass lost "
                 f"{float(law.lost_mass):.3g}; acceptance-rate error {float(law.acceptance_rate_error):.3g}"]
        lines += [f"  {name:<13} max abs error {float(f.max_abs_error):.3g} (bound {f.bound_at_worst:.3g}), "
                  f"max ULP {f.ulp_text()}" + (f", impossible mass {float(f.impossible_mass):.3g}"
                                               if f.impossible_mass else "") for name, f in self.fields.items()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"DriftResult({self.implementation!r}, {self.dtype}, V={self.vocab}, tv={float(self.law.tv):.3g}, "
                f"within_tolerance={self.within_tolerance}; .summary() for the figures)")

    def as_json(self) -> dict[str, Any]:
        return WHITEBOX_DRIFT.envelope({
            "implementation": self.implementation, "dtype": self.dtype, "device": self.device, "vocab": self.vocab,
            "within_tolerance": self.within_tolerance, "failing_fields": self.failing_fields(),
            "error_model": self.model.as_json(), "inputs": [n.as_json() for n in self.reference.normalisation],
            "fields": {name: f.as_json() for name, f in self.fields.items()},
            "law": self.law.as_json(), "elapsed_s": self.elapsed_s}).to_json()


# -- the measurement ---------------------------------------------------------------------------------

def _resolve_step(step_fn: Any) -> tuple[Callable, str]:
    if getattr(step_fn, "contract", None) is not None and hasattr(step_fn, "fn"):
        if step_fn.contract != "whitebox":
            raise SpecproofInputError("step_fn", f"record {step_fn.name!r} has contract {step_fn.contract!r}",
                                      "pass a 'whitebox' record or a function (p, q) -> StepLaw")
        return step_fn.fn, step_fn.name
    if not callable(step_fn):
        raise SpecproofInputError("step_fn", f"{type(step_fn).__name__} is not callable",
                                  "pass a function (p, q) -> StepLaw or a whitebox record")
    return step_fn, getattr(step_fn, "__name__", type(step_fn).__name__)


def measure_whitebox(step_fn: Any, p: Any, q: Any, *, dtype: Any, device: str = "cpu",
                     form: str = "any") -> DriftResult:
    """Drift of ``step_fn(p, q) -> StepLaw`` against the exact law of the rounded, renormalised inputs.

    ``step_fn``: a white-box function or a ``contract="whitebox"`` record; ``p``, ``q``: 1-D laws (exact
    rationals, float lists, arrays or tensors); ``form``: which acceptance formula the bounds assume
    (``"ratio"``, ``"product"``, ``"log"`` or ``"any"``, the loosest).  Raises
    :class:`~specproof.proofs.SpecproofInputError` naming the bad argument.
    """
    start = time.perf_counter()
    fn, name = _resolve_step(step_fn)
    if form not in FORMS:
        raise SpecproofInputError("form", f"unknown form {form!r}", f"use one of {', '.join(FORMS)}")
    dtype = dtype_name(dtype)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise SpecproofInputError("device", f"{device!r} is not a torch device", "use 'cpu' or 'cuda'") from None
    for argument, x in (("p", p), ("q", q)):
        if is_exact_input(x) and isinstance(x, (list, tuple)) and sum(to_exact(list(x), argument)) != 1:
            raise SpecproofInputError(argument, "exact entries do not sum to 1", "pass a normalised law")
    p_t, q_t = round_to_dtype(p, dtype, "p"), round_to_dtype(q, dtype, "q")
    if p_t.shape != q_t.shape:
        raise SpecproofInputError("q", f"length {q_t.shape[0]} differs from p's length {p_t.shape[0]}",
                                  "pass p and q over the same vocabulary")
    reference = exact_reference(p_t, q_t)
    law = fn(p_t.to(dev), q_t.to(dev))
    vocab = p_t.shape[0]
    floats = {}
    for fname in FIELDS:
        if not hasattr(law, fname):
            raise SpecproofInputError("step_fn", f"returned {type(law).__name__} without field {fname!r}",
                                      "return a specproof.impls.StepLaw")
        floats[fname] = _Floats.of(getattr(law, fname), 1 if fname == "rejection" else vocab, fname)
    model = ErrorModel.build(dtype, form, p_t, q_t, reference, dev)
    fields, bounds = _fields(model, reference, floats, DTYPES[dtype])
    law_drift = _law(reference, floats, bounds["output"])
    return DriftResult(name, dtype, str(dev), vocab, model, fields, law_drift, reference,
                       time.perf_counter() - start)


def _fields(model: ErrorModel, ref: ExactReference, floats: dict[str, _Floats],
            info: DtypeInfo) -> tuple[dict[str, FieldDrift], dict[str, np.ndarray]]:
    exact = {name: _exact_arrays(ref.rejection if name == "rejection" else getattr(ref, name))
             for name in FIELDS}
    e64 = {name: np.abs(_to_float(*exact[name])) for name in FIELDS}
    t_num, t_den = _exact_arrays(ref.target)
    impossible = t_num == 0
    norm = _to_float(t_num, t_den) + _to_float(*_exact_arrays(ref.draft))
    eps = float(model.subnormal)
    r_a, r_m, a_m = model.accept_relative(), model.mass_relative(), float(model.mass_absolute())
    r_a = math.inf if r_a is None else float(r_a)
    r_m = math.inf if r_m is None else float(r_m)
    u_op, sigma = float(model.u_op), float(model.sigma)
    z = ref.rejection
    residual_terms = model.residual_terms(z)
    rej_f = abs(float(floats["rejection"].values[0])) if floats["rejection"].finite.all() else math.inf
    mass_cap = _to_float(*_exact_arrays(ref.draft)) * (1 + sigma) * (1 + u_op) + eps  # 0 <= A_f <= 1
    mass = np.minimum(_times(r_m, e64["accepted_mass"]) + a_m, mass_cap)
    sum_error = float(model.sum_error)
    e_s = float(mass.sum()) * (1 + sum_error) + sum_error * float(ref.acceptance_rate)
    b_rej = u_op * float(abs(z)) + (1 + u_op) * e_s
    bounds = {
        "accept": np.minimum(_times(r_a, e64["accept"]) + eps, 1.0),
        "accepted_mass": mass,
        "rejection": np.array([b_rej]),
    }
    if residual_terms is None:
        bounds["residual"] = np.full(model.vocab, 1 + u_op)
    else:
        rel, per_norm, absolute = (float(x) for x in residual_terms)
        bounds["residual"] = rel * e64["residual"] + per_norm * norm + absolute
    r_f = np.abs(np.where(floats["residual"].finite, floats["residual"].values, 0.0))
    o_f = np.abs(np.where(floats["output"].finite, floats["output"].values, 0.0))
    bounds["output"] = (bounds["accepted_mass"] + b_rej * e64["residual"] + rej_f * bounds["residual"]
                        + u_op * rej_f * r_f + u_op / (1 - u_op) * o_f + eps / 2)
    terms = {
        "accept": {"relative": number_word(r_a), "absolute": eps, "cap": 1.0},
        "accepted_mass": {"relative": number_word(r_m), "absolute": a_m,
                          "cap": "q^ (1 + sigma)(1 + u_op) + eps"},
        "rejection": {"relative": u_op, "absolute": (1 + u_op) * e_s},
        "residual": ({"vacuous": "exact residual mass within the bound's own error", "absolute": 1 + u_op}
                     if residual_terms is None else
                     {"relative": float(residual_terms[0]), "per_p_plus_q": float(residual_terms[1]),
                      "absolute": float(residual_terms[2])}),
        "output": {"composed": "B_M + B_rej R + |rej_f| B_R + u_op |rej_f R_f| + u_op/(1-u_op) |f| + eps/2"},
    }
    out = {}
    for name in FIELDS:
        mask = np.zeros(1, dtype=bool) if name == "rejection" else impossible
        out[name] = _field_drift(name, floats[name], exact[name], info, bounds[name], mask, terms[name])
    return out, bounds


def _masked_sum(num: np.ndarray, den: Any, mask: np.ndarray) -> Fraction:
    """Exact ``sum(num[mask] / den[mask])``."""
    if not mask.any():
        return Fraction(0)
    if isinstance(den, np.ndarray):
        return sum((Fraction(int(n), int(d)) for n, d in zip(num[mask], den[mask])), Fraction(0))
    return Fraction(int(num[mask].sum()), den)


def _law(ref: ExactReference, floats: dict[str, _Floats], output_bound: np.ndarray) -> LawDrift:
    t_num, t_den = _exact_arrays(ref.target)
    out = floats["output"]
    diff = np.abs(out.num * t_den - t_num * out.scale)
    denom = t_den * out.scale
    if isinstance(denom, np.ndarray):
        tv = sum((Fraction(int(a), int(b)) for a, b in zip(diff, denom)), Fraction(0)) / 2
        max_error = max(Fraction(int(a), int(b)) for a, b in zip(diff, denom))
    else:
        tv = Fraction(int(diff.sum()), 2 * denom)
        max_error = Fraction(int(diff.max()), denom)
    lost = (t_num != 0) & (out.num == 0)
    lost_mass = _masked_sum(t_num, t_den, lost)
    rate_error = floats["accepted_mass"].total() - ref.acceptance_rate
    r_num, r_den = _exact_arrays(ref.residual)
    r_float = floats["residual"]
    residual_lost = _masked_sum(r_num, r_den, (r_num != 0) & (r_float.num == 0))
    vanished = ref.residual_mass > 0 and not bool((r_float.num != 0).any())
    tv_bound = float(np.sum(output_bound)) / 2 if out.finite.all() else 0.0
    kl = _kl((t_num, t_den), out) if not isinstance(t_den, np.ndarray) else math.nan
    return LawDrift(tv, tv_bound, max_error, kl, lost_mass, int(lost.sum()), rate_error, residual_lost, vanished)
