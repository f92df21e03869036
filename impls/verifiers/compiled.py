"""``torch.compile`` (inductor) variants of the canonical inverse-CDF round.

The compiled unit is the deterministic uniform-injection core; validation and the uniform draw run
eagerly, so the batched wrappers consume the generator exactly like their eager twins and differ only
in what inductor generates for the core. Compilation happens on the first call for each kind of input
(seconds on CPU), with ``fullgraph=True`` (a graph break or an exhausted recompile limit raises
instead of silently running eager) and ``dynamic=True`` (see :class:`LazyCompiled`).

Relation to eager, measured on CPU with torch 2.13 (tests/impls/test_impls_compiled.py):

- float32 and float64: bit-for-bit equal to eager.
- float16 and bfloat16: inductor evaluates the acceptance test's intermediates (``p/q``, ``u*q``,
  ``log u + log q``) in float32 and does not round them back to the dtype, so decisions near the
  threshold differ from eager. The compiled round equals the eager round whose acceptance test runs
  on float32-upcast operands; the inverse-CDF draw is bit-for-bit equal. The log form can also
  differ by an ulp of inductor's vectorised ``log`` from eager's float32 ``log``, which flips exact
  ties. Compiling with ``options={"emulate_precision_casts": True}`` restores bit-for-bit agreement
  for the ratio form (the tests show it).
"""

from __future__ import annotations

import types
from typing import Callable

import torch

from specproof.impls.contract import check_round
from specproof.impls.kernels.acceptance import accept_log, accept_product, accept_ratio
from specproof.impls.verifiers.canonical import inverse_cdf_round, round_uniforms

__all__ = [
    "canonical_ratio_uniforms_compiled", "canonical_product_uniforms_compiled",
    "canonical_log_uniforms_compiled", "canonical_ratio_invcdf_compiled",
    "canonical_product_invcdf_compiled", "canonical_log_invcdf_compiled", "LazyCompiled",
]


class LazyCompiled:
    """``torch.compile(fn, fullgraph=True, dynamic=True, **options)``, one graph family per input kind.

    Dynamo keys its cache on the function's code object and allows 8 recompiles before it gives up
    (with ``fullgraph=True`` it raises ``FailOnRecompileLimitHit``). Dtypes, devices and size-1 axes
    each force a recompile, so a sweep over 4 dtypes x 2 devices x (K == 1 or not) would hit the
    limit. Each input kind (dtypes, devices, which axes have size 1) therefore gets its own copy of
    ``fn``'s code object, compiled on first use; within a kind, ``dynamic=True`` covers all sizes.
    """

    def __init__(self, fn: Callable, **compile_options):
        self.fn = fn
        self.compile_options = compile_options
        self._compiled: dict[tuple, Callable] = {}

    def __call__(self, *args):
        kind = tuple((a.dtype, a.device, tuple(size == 1 for size in a.shape))
                     for a in args if isinstance(a, torch.Tensor))
        compiled = self._compiled.get(kind)
        if compiled is None:
            fresh = types.FunctionType(self.fn.__code__.replace(), self.fn.__globals__,
                                       self.fn.__name__, self.fn.__defaults__, self.fn.__closure__)
            compiled = torch.compile(fresh, fullgraph=True, dynamic=True, **self.compile_options)
            self._compiled[kind] = compiled
        return compiled(*args)


# One top-level function per acceptance form, so each form's graphs are cached separately.
def _ratio_core(draft_probs, target_probs, draft_token_ids, uniforms):
    return inverse_cdf_round(accept_ratio, draft_probs, target_probs, draft_token_ids, uniforms)


def _product_core(draft_probs, target_probs, draft_token_ids, uniforms):
    return inverse_cdf_round(accept_product, draft_probs, target_probs, draft_token_ids, uniforms)


def _log_core(draft_probs, target_probs, draft_token_ids, uniforms):
    return inverse_cdf_round(accept_log, draft_probs, target_probs, draft_token_ids, uniforms)


_RATIO = LazyCompiled(_ratio_core)
_PRODUCT = LazyCompiled(_product_core)
_LOG = LazyCompiled(_log_core)


def canonical_ratio_uniforms_compiled(draft_probs, target_probs, draft_token_ids, uniforms):
    """Compiled uniform-injection core, acceptance ``u < p/q``."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return _RATIO(draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_product_uniforms_compiled(draft_probs, target_probs, draft_token_ids, uniforms):
    """Compiled uniform-injection core, acceptance ``u*q < p``."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return _PRODUCT(draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_log_uniforms_compiled(draft_probs, target_probs, draft_token_ids, uniforms):
    """Compiled uniform-injection core, acceptance ``log u + log q < log p``."""
    check_round(draft_probs, target_probs, draft_token_ids, uniforms=uniforms)
    return _LOG(draft_probs, target_probs, draft_token_ids, uniforms)


def canonical_ratio_invcdf_compiled(draft_probs, target_probs, draft_token_ids, generator):
    """Eager ``torch.rand((B, K+1))`` uniforms, then the compiled ``u < p/q`` core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _RATIO(draft_probs, target_probs, draft_token_ids, round_uniforms(draft_probs, generator))


def canonical_product_invcdf_compiled(draft_probs, target_probs, draft_token_ids, generator):
    """Eager ``torch.rand((B, K+1))`` uniforms, then the compiled ``u*q < p`` core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _PRODUCT(draft_probs, target_probs, draft_token_ids,
                    round_uniforms(draft_probs, generator))


def canonical_log_invcdf_compiled(draft_probs, target_probs, draft_token_ids, generator):
    """Eager ``torch.rand((B, K+1))`` uniforms, then the compiled log-space core."""
    check_round(draft_probs, target_probs, draft_token_ids, generator=generator)
    return _LOG(draft_probs, target_probs, draft_token_ids, round_uniforms(draft_probs, generator))
