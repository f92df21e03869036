"""Input validation shared by every implementation under test.

Each public verifier calls exactly one of :func:`check_round`, :func:`check_step` or
:func:`check_multidraft` before touching its inputs. Errors name the offending argument and say
how to fix it; shape and type problems raise ``TypeError``/``ValueError`` before any value check.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["SUPPORTED_DTYPES", "RoundShape", "check_round", "check_step", "check_multidraft"]

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DTYPE_NAMES = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)


@dataclass(frozen=True)
class RoundShape:
    """Sizes of one verification round: batch ``B``, drafts per row ``K``, vocabulary ``V``."""

    batch: int
    drafts: int
    vocab: int


def _require_tensor(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(value).__name__}. "
                        f"Fix: pass torch.as_tensor({name}).")
    return value


def _require_float(name: str, tensor: torch.Tensor) -> None:
    if tensor.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} has dtype {tensor.dtype}; supported dtypes are {_DTYPE_NAMES}. "
                        f"Fix: cast with {name}.to(<dtype under test>).")


def _require_ids(name: str, tensor: torch.Tensor) -> None:
    if tensor.dtype != torch.int64:
        raise TypeError(f"{name} has dtype {tensor.dtype}; token ids must be int64. "
                        f"Fix: pass {name}.long().")


def _require_same_device(reference_name: str, reference: torch.Tensor, **others: torch.Tensor) -> None:
    for name, tensor in others.items():
        if tensor.device != reference.device:
            raise ValueError(f"{name} is on {tensor.device} but {reference_name} is on "
                             f"{reference.device}; all inputs must share one device. "
                             f"Fix: move {name} with {name}.to({reference_name}.device).")


def _require_generator(generator: object, device: torch.device) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator; got {type(generator).__name__}. "
                        f"Fix: pass torch.Generator(device='{device.type}').manual_seed(seed).")
    if generator.device.type != device.type or (
        device.type == "cuda" and generator.device.index not in (None, device.index)
    ):
        raise ValueError(f"generator lives on {generator.device} but the probabilities are on "
                         f"{device}. Fix: create it with torch.Generator(device='{device}').")


def _first_index(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0].tolist())


def _check_law_values(name: str, probs: torch.Tensor) -> None:
    """Entries finite and >= 0 (NaN fails here), and every row has positive mass.

    Fast path: one ``aminmax`` pass (NaN propagates into it) and one row-max pass; the offending
    index is located only on failure.
    """
    lowest, highest = torch.aminmax(probs)
    if not (bool(lowest >= 0) and bool(highest < float("inf"))):
        bad = ~(torch.isfinite(probs) & (probs >= 0))
        where = _first_index(bad)
        raise ValueError(f"{name} must hold finite, non-negative probabilities; found "
                         f"{probs[where].item()} at index {where}. Fix the logits or softmax that "
                         f"produced {name} (NaN/inf usually comes from an overflowing logit).")
    empty = probs.amax(dim=-1) <= 0
    if bool(empty.any()):
        where = _first_index(empty)
        raise ValueError(f"{name} has a row with zero total mass at index {where}; every row must "
                         f"be a law with positive mass. Fix: drop that row or pass its real law.")


def _check_ids_in_range(name: str, ids: torch.Tensor, vocab: int) -> None:
    if ids.numel() == 0:
        return
    lowest, highest = torch.aminmax(ids)
    if bool(lowest < 0) or bool(highest >= vocab):
        out = (ids < 0) | (ids >= vocab)
        where = _first_index(out)
        raise ValueError(f"{name} must hold token ids in [0, {vocab}); found {ids[where].item()} "
                         f"at index {where} (-1 padding is an output convention, not an input). "
                         f"Fix: pass only drafted ids, one per draft position.")


def _check_uniforms(uniforms: object, probs: torch.Tensor, shape: tuple[int, ...]) -> None:
    uniforms = _require_tensor("uniforms", uniforms)
    if uniforms.dtype != probs.dtype:
        raise TypeError(f"uniforms has dtype {uniforms.dtype} but the probabilities are "
                        f"{probs.dtype}; the uniform-injection contract draws uniforms in the dtype "
                        f"under test. Fix: torch.rand({list(shape)}, dtype={probs.dtype}).")
    if tuple(uniforms.shape) != shape:
        raise ValueError(f"uniforms must have shape {list(shape)} (one acceptance uniform per draft "
                         f"plus one column for the final residual/bonus draw); got "
                         f"{list(uniforms.shape)}.")
    _require_same_device("draft_probs", probs, uniforms=uniforms)
    lowest, highest = torch.aminmax(uniforms)
    if not (bool(lowest >= 0) and bool(highest <= 1)):
        bad = ~((uniforms >= 0) & (uniforms <= 1))
        where = _first_index(bad)
        raise ValueError(f"uniforms must lie in [0, 1]; found {uniforms[where].item()} at index "
                         f"{where}. Fix: draw them with torch.rand.")


def _require_round_tensors(draft_probs: object, target_probs: object,
                           draft_token_ids: object) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tensors, float probabilities in one dtype, int64 ids: the checks every contract starts with."""
    draft_probs = _require_tensor("draft_probs", draft_probs)
    target_probs = _require_tensor("target_probs", target_probs)
    draft_token_ids = _require_tensor("draft_token_ids", draft_token_ids)
    _require_float("draft_probs", draft_probs)
    _require_float("target_probs", target_probs)
    if draft_probs.dtype != target_probs.dtype:
        raise TypeError(f"draft_probs is {draft_probs.dtype} but target_probs is "
                        f"{target_probs.dtype}; both sides must arrive in the dtype under test. "
                        f"Fix: cast one side, e.g. draft_probs.to(target_probs.dtype).")
    _require_ids("draft_token_ids", draft_token_ids)
    return draft_probs, target_probs, draft_token_ids


def check_round(draft_probs: object, target_probs: object, draft_token_ids: object, *,
                generator: object = None, uniforms: object = None,
                needs_generator: bool = True) -> RoundShape:
    """Validate a batched round: ``draft_probs [B,K,V]``, ``target_probs [B,K+1,V]``, ids ``[B,K]``.

    With ``uniforms`` given (uniform-injection contract) it must be ``[B, K+1]`` in the dtype of the
    probabilities; otherwise a ``torch.Generator`` on the probabilities' device is required unless
    ``needs_generator`` is false (deterministic rules such as greedy accept ``None``).
    """
    draft_probs, target_probs, draft_token_ids = _require_round_tensors(draft_probs, target_probs,
                                                                        draft_token_ids)
    if draft_probs.dim() != 3:
        raise ValueError(f"draft_probs must have shape [B, K, V]; got {list(draft_probs.shape)}. "
                         f"Fix: for one draft per row use draft_probs.unsqueeze(1).")
    batch, drafts, vocab = draft_probs.shape
    if batch < 1 or drafts < 1 or vocab < 1:
        raise ValueError(f"draft_probs has shape {list(draft_probs.shape)}; B, K and V must all be "
                         f"at least 1 (K = 0 is plain sampling from target_probs).")
    if tuple(target_probs.shape) != (batch, drafts + 1, vocab):
        raise ValueError(f"target_probs must have shape [B, K+1, V] = {[batch, drafts + 1, vocab]} "
                         f"(row K is the bonus position); got {list(target_probs.shape)}. "
                         f"Fix: pass the target law at every draft position plus the bonus row.")
    if tuple(draft_token_ids.shape) != (batch, drafts):
        raise ValueError(f"draft_token_ids must have shape [B, K] = {[batch, drafts]}; got "
                         f"{list(draft_token_ids.shape)}.")
    _require_same_device("draft_probs", draft_probs, target_probs=target_probs,
                         draft_token_ids=draft_token_ids)
    if uniforms is not None:
        _check_uniforms(uniforms, draft_probs, (batch, drafts + 1))
    elif needs_generator or generator is not None:
        _require_generator(generator, draft_probs.device)
    _check_ids_in_range("draft_token_ids", draft_token_ids, vocab)
    _check_law_values("draft_probs", draft_probs)
    _check_law_values("target_probs", target_probs)
    return RoundShape(batch, drafts, vocab)


def check_step(p: object, q: object) -> None:
    """Validate a white-box step: target ``p`` and draft ``q`` of equal shape ``[V]`` or ``[B, V]``."""
    p = _require_tensor("p", p)
    q = _require_tensor("q", q)
    _require_float("p", p)
    _require_float("q", q)
    if p.dtype != q.dtype:
        raise TypeError(f"p is {p.dtype} but q is {q.dtype}; pass both in the dtype under test.")
    if p.dim() not in (1, 2) or p.shape[-1] < 1:
        raise ValueError(f"p must have shape [V] or [B, V]; got {list(p.shape)}.")
    if p.shape != q.shape:
        raise ValueError(f"q must have the shape of p {list(p.shape)}; got {list(q.shape)}.")
    _require_same_device("p", p, q=q)
    _check_law_values("p", p)
    _check_law_values("q", q)


def check_multidraft(draft_probs: object, target_probs: object, draft_token_ids: object,
                     generator: object) -> RoundShape:
    """Validate one multi-draft position: ``draft_probs [B,V]``, ``target_probs [B,V]``, ids ``[B,n]``.

    The returned shape reports the sibling count ``n`` as ``drafts``.
    """
    draft_probs, target_probs, draft_token_ids = _require_round_tensors(draft_probs, target_probs,
                                                                        draft_token_ids)
    if draft_probs.dim() != 2:
        raise ValueError(f"draft_probs must have shape [B, V] (the one law all siblings were drawn "
                         f"from); got {list(draft_probs.shape)}.")
    batch, vocab = draft_probs.shape
    if tuple(target_probs.shape) != (batch, vocab):
        raise ValueError(f"target_probs must have shape [B, V] = {[batch, vocab]}; got "
                         f"{list(target_probs.shape)}.")
    if draft_token_ids.dim() != 2 or draft_token_ids.shape[0] != batch or draft_token_ids.shape[1] < 1:
        raise ValueError(f"draft_token_ids must have shape [B, n] with n >= 1 siblings; got "
                         f"{list(draft_token_ids.shape)}.")
    if batch < 1 or vocab < 1:
        raise ValueError(f"draft_probs has shape {list(draft_probs.shape)}; B and V must be >= 1.")
    _require_same_device("draft_probs", draft_probs, target_probs=target_probs,
                         draft_token_ids=draft_token_ids)
    _require_generator(generator, draft_probs.device)
    _check_ids_in_range("draft_token_ids", draft_token_ids, vocab)
    _check_law_values("draft_probs", draft_probs)
    _check_law_values("target_probs", target_probs)
    return RoundShape(batch, int(draft_token_ids.shape[1]), vocab)
