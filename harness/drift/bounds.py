"""The forward error analysis behind :func:`~specproof.harness.drift.whitebox.measure_whitebox`'s derived bounds.

Bounds (forward error analysis, standard model ``fl(x op y) = (x op y)(1 + th) + eta``).  Symbols:
``u`` the unit roundoff; ``u_op = u`` for float32/float64 and ``u + u32 (1 + u)`` for half types
(torch computes in float32 and rounds again); ``u_fn = u_out + 2 n u_acc (1 + u_out)`` for ``log``/``exp``
(``n`` ulp in the compute dtype: 1 on CPU, 2 on CUDA; ``u_out = u`` for half types, else 0); ``s_V = (1 + gamma_{V-1}(u_acc))
(1 + u_out) - 1`` for a float sum of ``V`` non-negative terms, any order; ``eps`` the smallest subnormal;
``sigma = max(|S_p - 1|, |S_q - 1|)``, ``rho = max(S_p/S_q, S_q/S_p) - 1``;
``Lambda = max (|ln p| + |ln q|)`` over tokens with ``p, q > 0`` (bounded by exponents, ``ln 2 <
0.69314718056``); ``N_i = p^_i + q^_i``; ``Z`` the exact rejection (= residual mass); ``R`` the exact
residual.  Per entry ``|f - e| <= B``:

* accept: ``B = min(1, r_A e + eps)``, ``r_A = (1 + rho) F - 1``, ``F = 1 + u_op`` for the ratio and
  product forms and ``(1 + u_fn) / (1 - Delta)``, ``Delta = (u_fn + u_op (1 + u_fn)) Lambda``, for the log
  form (infinite when ``Delta >= 1``; ``form="any"`` takes the largest ``F``);
* accepted_mass: ``B = min(r_M e + a_M, q^ (1 + sigma)(1 + u_op) + eps)`` (the cap: ``0 <= A_f <= 1``),
  ``r_M = (1 + sigma)(1 + r_A)(1 + u_op) - 1``, ``a_M = eps (1 + sigma)(1 + u_op) + eps/2``;
* rejection: ``B = u_op e + (1 + u_op) E_S``, ``E_S = (1 + s_V) sum B_M + s_V sum q^ A``;
* residual: with ``b_w = sigma + u_op (1 + sigma)``, ``E_Z = 2 b_w + s_V (Z + 2 b_w)``: if ``Z > E_Z``,
  ``B = [(1 + u_op) b_w N_i + R_i (E_Z + u_op Z)] / (Z - E_Z) + eps/2``, else ``B = 1 + u_op`` (vacuous:
  the exact residual is not determined at this precision; ``Z = 0`` has the all-zero convention);
* output: ``B = B_M + B_rej R_i + |rej_f| B_R + u_op |rej_f R_f| + u_op/(1 - u_op) |f| + eps/2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specproof.harness.exact.dtypes import DTYPES
from specproof.harness.exact.reference import ExactReference, fraction_string

__all__ = ["ErrorModel"]

_LN2_UPPER = Fraction(69314718056, 10**11)  # > ln 2


@dataclass(frozen=True)
class ErrorModel:
    """Constants of the forward error analysis (module docstring), exact rationals."""

    dtype: str
    form: str
    vocab: int
    u: Fraction
    u_op: Fraction
    u_fn: Fraction
    sum_error: Fraction
    subnormal: Fraction
    sigma: Fraction
    rho: Fraction
    log_span: Fraction

    @classmethod
    def build(cls, dtype: str, form: str, p: torch.Tensor, q: torch.Tensor, reference: ExactReference,
              device: torch.device) -> "ErrorModel":
        info = DTYPES[dtype]
        acc = DTYPES[info.accumulate]
        u, u_acc = info.unit_roundoff, acc.unit_roundoff
        u_out = u if info.accumulate != dtype else Fraction(0)
        u_op = u if info.accumulate == dtype else u + u_acc * (1 + u)
        fn_ulps = 2 if device.type == "cuda" else 1  # CUDA expf: 2 ulp; CPU SLEEF/libm log, exp: 1 ulp
        u_fn = u_out + 2 * fn_ulps * u_acc * (1 + u_out)
        vocab = p.shape[0]
        sum_error = (1 + acc.gamma(max(vocab - 1, 0))) * (1 + u_out) - 1
        s_p, s_q = (n.total for n in reference.normalisation)
        sigma = max(abs(s_p - 1), abs(s_q - 1))
        rho = max(s_p / s_q, s_q / s_p) - 1
        both = (p > 0) & (q > 0)
        span = 0
        if bool(both.any()):
            exps = [np.abs(np.frexp(t[both].double().numpy())[1]).astype(np.int64) + 1 for t in (p, q)]
            span = int((exps[0] + exps[1]).max())  # |ln x| <= (|e| + 1) ln 2 for x = m 2^e, m in [1/2, 1)
        return cls(dtype, form, vocab, u, u_op, u_fn, sum_error, info.smallest_subnormal, sigma, rho,
                   span * _LN2_UPPER)

    def accept_factor(self) -> Fraction | None:
        """``F``: the multiplicative error of ``A`` computed from unnormalised inputs (None: unbounded)."""
        plain = 1 + self.u_op
        if self.form in ("ratio", "product"):
            return plain
        delta = (self.u_fn + self.u_op * (1 + self.u_fn)) * self.log_span
        return None if delta >= 1 else max(plain, (1 + self.u_fn) / (1 - delta))

    def accept_relative(self) -> Fraction | None:
        """``r_A``; None when the log form's bound is vacuous (``Delta >= 1``)."""
        factor = self.accept_factor()
        return None if factor is None else (1 + self.rho) * factor - 1

    def mass_relative(self) -> Fraction | None:
        r_a = self.accept_relative()
        return None if r_a is None else (1 + self.sigma) * (1 + r_a) * (1 + self.u_op) - 1

    def mass_absolute(self) -> Fraction:
        return self.subnormal * (1 + self.sigma) * (1 + self.u_op) + self.subnormal / 2

    def residual_terms(self, z: Fraction) -> tuple[Fraction, Fraction, Fraction] | None:
        """``(relative, per unit of p^ + q^, absolute)`` of the residual bound; None when vacuous."""
        b_w = self.sigma + self.u_op * (1 + self.sigma)
        e_z = 2 * b_w + self.sum_error * (z + 2 * b_w)
        if z <= e_z:
            return None
        return ((e_z + self.u_op * z) / (z - e_z), (1 + self.u_op) * b_w / (z - e_z), self.subnormal / 2)

    def as_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "form": self.form, "u": fraction_string(self.u),
                "u_op": fraction_string(self.u_op), "u_fn": fraction_string(self.u_fn),
                "sum_error": float(self.sum_error), "subnormal": fraction_string(self.subnormal),
                "sigma": fraction_string(self.sigma), "rho": float(self.rho),
                "log_span": float(self.log_span)}
