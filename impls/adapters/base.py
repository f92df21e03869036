"""What every runtime adapter is: a named converter from a runtime's verifier signature to a contract.

An :class:`Adapter` knows one runtime's layout. ``adapter.wrap(fn)`` checks ``fn``'s signature with
:mod:`inspect` against the forms the adapter follows (:class:`SignatureForm`: the leading positional
parameter names, in order) and returns a function in the adapter's contract:

- ``"batched"``: ``verify(draft_probs [B,K,V], target_probs [B,K+1,V], draft_token_ids [B,K],
  generator) -> emitted [B,K+1]`` int64 padded with ``-1`` (:mod:`specproof.impls.registry`);
- ``"tree"``: ``verify(parents [N], draft_probs [B,N,V], target_probs [B,N+1,V], node_tokens [B,N],
  generator) -> emitted [B,D+1]`` (the tree contract of ``harness/check/contracts/tree/signature.py``).

A signature that matches none of the forms raises ``SpecproofInputError("--adapter", problem, fix)``,
which the CLI turns into exit 2. Names are compared, not only counts: passing a batched ``verify`` to
``--adapter vllm-v1`` is refused before any call. ``functools.partial`` objects and callable objects
(an ``nn.Module`` instance: its ``forward``) are inspected through :func:`inspect.signature`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from specproof.errors import SpecproofInputError

__all__ = ["Adapter", "SignatureForm", "derived_seeds", "int64_output"]

SEED_HIGH = 2**63 - 1


@dataclass(frozen=True)
class SignatureForm:
    """One accepted spelling of the runtime's verifier: ``label`` (the version it belongs to), the
    leading positional parameter names ``params`` and parameters ``keywords`` that must exist too;
    ``fn`` may have more parameters only with defaults."""

    label: str
    params: tuple[str, ...]
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Adapter:
    """A runtime layout behind a specproof contract.

    ``name``: the ``--adapter`` value; ``contract``: ``"batched"`` or ``"tree"``; ``runtime``: the
    runtime, the version range followed and which side its letters mean; ``randomness``: how the
    harness generator becomes the runtime's randomness; ``forms``: the signatures accepted;
    ``build(fn, form)``: the contract function around a checked ``fn``; ``sibling_modes`` (tree): the
    ways the runtime draws a node's siblings (``"topk"``, ``"distinct"``, ``"iid"``), judged by default.
    """

    name: str
    contract: str
    runtime: str
    randomness: str
    forms: tuple[SignatureForm, ...]
    build: Callable[[Callable, SignatureForm], Callable] = field(repr=False)
    sibling_modes: tuple[str, ...] = ()

    def form_of(self, fn: Callable) -> SignatureForm:
        """The first form ``fn``'s signature matches; ``SpecproofInputError`` naming ``--adapter`` if none."""
        if not callable(fn):
            raise SpecproofInputError("--adapter", f"{self.name} needs a callable, got {type(fn).__name__}",
                                      "pass the runtime's verifier function (module:function)")
        try:
            signature = _signature(fn)
        except (TypeError, ValueError) as error:
            raise SpecproofInputError("--adapter", f"the signature of {_describe(fn)} cannot be read "
                                      f"({error})", f"wrap it in a Python function with the "
                                      f"{self.name} signature {self.forms[0].params}") from None
        names = _positional_names(signature)
        required = _required_names(signature)
        for form in self.forms:
            if (tuple(names[:len(form.params)]) == form.params and set(required) <= set(form.params)
                    and set(form.keywords) <= set(signature.parameters)):
                return form
        expected = "; or ".join(f"({', '.join(f.params + tuple(k + '=' for k in f.keywords))}) [{f.label}]"
                                for f in self.forms)
        raise SpecproofInputError(
            "--adapter", f"{_describe(fn)} has signature {signature}, which is not the {self.runtime} "
            f"verifier signature {self.name} expects: {expected}",
            f"pass a function with that signature, or pick the adapter of its runtime "
            f"(--adapter list: see specproof.impls.adapters.ADAPTER_NAMES), or drop --adapter for a "
            f"function already in the {self.contract} contract")

    def wrap(self, fn: Callable) -> Callable:
        """``fn`` (checked) behind the adapter's contract; the wrapper keeps ``fn`` as ``.runtime_fn``."""
        form = self.form_of(fn)
        wrapped = self.build(fn, form)
        wrapped.runtime_fn = fn
        wrapped.adapter = self.name
        if self.sibling_modes:  # the check's default --siblings (CheckOptions.for_target)
            wrapped.contract_defaults = {"siblings": self.sibling_modes}
        wrapped.__name__ = f"{self.name.replace('-', '_')}_adapted_{getattr(fn, '__name__', 'verifier')}"
        wrapped.__doc__ = f"{_describe(fn)} through the {self.name} adapter ({self.contract} contract)."
        return wrapped


def _signature(fn: Callable) -> inspect.Signature:
    """``fn``'s signature; for an object called through ``(*args, **kwargs)`` that has a ``forward``
    (an ``nn.Module``), the signature of its ``forward``."""
    signature = inspect.signature(fn)
    variadic = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    forward = getattr(fn, "forward", None)
    if callable(forward) and {p.kind for p in signature.parameters.values()} <= variadic:
        return inspect.signature(forward)
    return signature


def _describe(fn: Callable) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module else name


def _positional_names(signature: inspect.Signature) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in signature.parameters.values() if p.kind in kinds]


def _required_names(signature: inspect.Signature) -> list[str]:
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in signature.parameters.values()
            if p.default is inspect.Parameter.empty and p.kind not in variadic]


def derived_seeds(generator, count: int, device) -> list[int]:
    """``count`` 63-bit seeds drawn from the harness ``generator`` (one ``randint`` call): the per-request
    generators of a runtime are then a deterministic function of the harness generator's state."""
    import torch

    return torch.randint(0, SEED_HIGH, (count,), generator=generator, device=device).tolist()


def int64_output(result):
    """The runtime's emitted tokens as int64: the first element of a tuple result (FlashInfer returns
    counters beside them), cast when it is a tensor; anything else is left for the contract check."""
    import torch

    output = result[0] if isinstance(result, (tuple, list)) else result
    return output.to(torch.int64) if isinstance(output, torch.Tensor) else output
