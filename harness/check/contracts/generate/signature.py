"""The ``generate`` contract: a whole speculative-decoding pipeline (drafting, processing, verification).

    generate(target, draft, prompt_ids, max_new_tokens, sampling, generator) -> LongTensor [B, max_new_tokens]

* ``target``, ``draft``: ``torch.nn.Module`` s built by the harness, each with ``vocab_size`` (``V``, the
  same for both) and ``max_length`` (the largest ``T`` it accepts, at least
  ``L + max_new_tokens + MAX_DRAFT + 1``: any ``K <= MAX_DRAFT`` drafts fit).
  - table models (``models="table"``, :mod:`.pipeline_models`): ``model(input_ids)`` with ``input_ids``
    LongTensor ``[B, T]``, ``1 <= T <= max_length``, ids in ``[0, V)``, on the device under test, returns
    next-token logits ``[B, T, V]`` as a tensor in the dtype under test: column ``t`` is the law of the
    token after column ``t``.  Causal and indexed by column, with no attention mask or position ids:
    every row starts at the prompt's first token and there is no left padding.  Rows of different
    lengths may share one call with any ids after their end (column ``t`` never reads later columns).
  - transformers models (``models="transformers"``): real ``transformers.PreTrainedModel`` causal LMs; a
    call returns transformers' output object (``.logits``), so an adapter can hand them to ``generate``.
* ``prompt_ids``: LongTensor ``[B, L]``, ``L >= 1``, on the device under test (one prompt per scenario,
  repeated over the rows).
* ``max_new_tokens``: ``N``, an int.  ``sampling``: :class:`specproof.harness.Sampling`
  (:mod:`specproof.harness.exact.sampling`: its processing is the reference's).
* ``generator``: a ``torch.Generator`` on the device under test; ALL randomness must come from it.
* Returns exactly ``N`` new tokens per row (the prompt excluded): ``[B, N]`` int64, ids in ``[0, V)``.

The reference: the ``N`` tokens must follow the target's processed law, token by token,
``P(s) = prod_j apply_sampling(target(prompt + s_<j))[s_j]``, computed exactly (:mod:`specproof.proofs.laws.generate`).

Violations (a usage error, exit 2, with the fix named): wrong shape, dtype or ids of the output, an
exception, a call past the time limit, and a model called with a wrong shape, dtype, length or ids.  A
model records its violation in ``model.specproof_violations`` before raising, so a pipeline that
swallows the model's exception is refused all the same (:func:`call_generate`).

Model providers implement :class:`ModelPair` (tables here; tiny transformers models elsewhere).
"""

from __future__ import annotations

import inspect
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Hashable, Protocol, Sequence

from specproof.errors import SpecproofInputError

from specproof.harness.check.calls import ContractViolation, VerifierError, call_verifier, readable_copy

if TYPE_CHECKING:
    import torch

    from specproof.harness.exact.sampling import Sampling

__all__ = ["GENERATE_SIGNATURE", "MAX_DRAFT", "ModelPair", "validate_generate_output", "call_generate",
           "check_generate_signature", "take_violations", "record_violation"]

GENERATE_SIGNATURE = "generate(target, draft, prompt_ids, max_new_tokens, sampling, generator)"
MAX_DRAFT = 8  # drafts per round the models' max_length leaves room for
_FIX = f"make {GENERATE_SIGNATURE} return LongTensor [B, max_new_tokens] (specproof.harness.check.contracts.generate.signature)"


class ModelPair(Protocol):
    """A target/draft pair whose target law the harness can compute at every prefix.

    ``name``; ``vocab`` (``V``); ``prompt`` (``L >= 1`` ids).  ``build(dtype, device, new_tokens)`` returns
    ``(target, draft)`` modules as the contract states.  ``law_key(prefix)``: prefixes (new tokens after
    the prompt) with equal keys have the same next-token logits (tables: position and class of the
    last token; transformers: the prefix itself).  ``reference_logits(target, prefixes)``: the target's
    next-token logits after ``prompt + prefix`` for each prefix, as the built model computes them in
    the dtype under test (a float tensor ``[n, V]`` or rows of exact values): converted exactly by the
    harness.  ``extra_tolerance(dtype, new_tokens, sampling, arithmetic)``: total variation a correct
    pipeline may add beyond the softmax and verification arithmetic of :func:`.families.pipeline_tolerance`, under
    ``sampling`` with its arithmetic rounding at ``arithmetic`` (tables: the temperature's rounding, 0 at
    ``T = 1``; transformers: that and cached vs uncached forwards), derived, never tuned."""

    name: str
    vocab: int
    prompt: tuple[int, ...]

    def build(self, dtype: str, device: str, new_tokens: int) -> tuple[Any, Any]: ...

    def law_key(self, prefix: tuple[int, ...]) -> Hashable: ...

    def reference_logits(self, target: Any, prefixes: Sequence[tuple[int, ...]]) -> Any: ...

    def extra_tolerance(self, dtype: str, new_tokens: int, sampling: Any = None,
                        arithmetic: str | None = None) -> Fraction: ...


def record_violation(model: Any, violation: ContractViolation) -> ContractViolation:
    """Keep ``violation`` on the model (``specproof_violations``) and return it, for raising."""
    found = model.__dict__.setdefault("specproof_violations", [])
    found.append(violation)
    return violation


def take_violations(*models: Any) -> list[ContractViolation]:
    """The violations the models recorded since the last call (cleared)."""
    out: list[ContractViolation] = []
    for model in models:
        found = getattr(model, "specproof_violations", None)
        if found:
            out += found
            found.clear()
    return out


def check_generate_signature(fn: Any, argument: str = "TARGET") -> Callable[..., Any]:
    """``fn`` must be callable with the contract's six arguments."""
    if not callable(fn):
        raise SpecproofInputError(argument, f"{fn!r} is a {type(fn).__name__}, not a function",
                                  f"name a function {GENERATE_SIGNATURE}")
    try:
        inspect.signature(fn).bind(None, None, None, None, None, None)
    except TypeError:
        raise SpecproofInputError(argument, f"has signature {inspect.signature(fn)}, which cannot take the "
                                  "generate contract's six arguments", f"accept {GENERATE_SIGNATURE}") from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    return fn


def validate_generate_output(out: Any, batch: int, new_tokens: int, vocab: int, scenario: str) -> "torch.Tensor":
    """``[B, N]`` int64, ids in ``[0, V)``, readable on the CPU; returns the CPU copy."""
    import torch

    def bad(problem: str, fix: str = _FIX) -> ContractViolation:
        return ContractViolation("generate", f"on scenario '{scenario}' the output {problem}", fix)

    if not isinstance(out, torch.Tensor):
        raise bad(f"is a {type(out).__name__}, not a tensor")
    if tuple(out.shape) != (batch, new_tokens):
        raise bad(f"has shape {tuple(out.shape)}, expected {(batch, new_tokens)} (only the new tokens, "
                  "exactly max_new_tokens per row)", "drop the prompt and return exactly max_new_tokens per row")
    if out.dtype != torch.int64:
        raise bad(f"has dtype {out.dtype}", "return int64 token ids (LongTensor)")
    out = readable_copy(out, bad)
    if bool(((out < 0) | (out >= vocab)).any()):
        raise bad(f"has ids outside [0, {vocab})", "return token ids of the models' vocabulary (no padding)")
    return out


def call_generate(generate: Callable[..., Any], target: Any, draft: Any, prompt_ids: "torch.Tensor",
                  new_tokens: int, sampling: "Sampling", generator: Any, *, timeout: float | None,
                  scenario: str, hard_exit: bool = False) -> tuple["torch.Tensor", float]:
    """Run ``generate`` under the time limit; ``(validated CPU output, seconds)``.  Every failure of the
    user's code is a :class:`VerifierError` or :class:`ContractViolation` naming the fix."""
    take_violations(target, draft)
    args = (target, draft, prompt_ids.clone(), new_tokens, sampling, generator)
    t0 = time.perf_counter()
    try:
        out = call_verifier(generate, args, timeout, scenario, hard_exit)
    except ContractViolation:
        raise
    except VerifierError as err:
        found = take_violations(target, draft)
        if found:  # a model refused its input; that is the first thing to fix
            raise found[0] from None
        fix = err.fix if err.problem.startswith("did not return") else \
            f"make generate accept the generate contract's inputs: {GENERATE_SIGNATURE}"
        raise VerifierError("generate", err.problem, fix, err.detail) from None
    seconds = time.perf_counter() - t0
    found = take_violations(target, draft)
    if found:
        raise found[0]
    return validate_generate_output(out, prompt_ids.shape[0], new_tokens, _vocab(target), scenario), seconds


def _vocab(model: Any) -> int:
    return int(getattr(model, "vocab_size", None) or model.config.vocab_size)
