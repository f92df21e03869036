"""Tiny real transformers causal LMs for the ``generate`` contract (``models="transformers"``).

:class:`TransformersPair` implements :class:`~.pipeline_contract.ModelPair`.  ``build`` returns two
``transformers.LlamaForCausalLM`` (a Llama-style config: RMSNorm, RoPE, grouped-query attention,
SwiGLU; vocabulary ``V = 16``, hidden 16, 1 layer, 2 query heads of dim 8, 1 KV head, MLP 32,
eager attention), built locally from the config with no download, weights drawn from a seeded
``torch.Generator`` (the global RNG is untouched), in the dtype and on the device under test:

* embeddings ``N(0, 1)``; every linear ``[out, in]`` ``N(0, 1/in)`` times :data:`WEIGHT_SCALES`: ``lm_head``
  2 (logits within about 7: laws neither flat nor one-hot over 16 tokens), ``q``/``k`` 0.3 (soft
  attention that averages the prefix: the law after the same last token moves by about 0.07 in total
  variation with the earlier tokens), ``v``/``o`` 0.7, MLP 0.2.  Depth 1 and these scales keep the
  rigorous cached-vs-uncached bound small (about ``1e-3`` on a logit; two layers at full scale give
  a vacuous ``> 1``: the bound pays ``|W|``, not ``W``, at every layer);
* the draft is a different model: the target's weights plus independent noise of relative size
  :data:`DRAFT_NOISE` (correlated, so several drafts per round are often accepted).

``config``: ``bos_token_id = 0``, ``eos_token_id = 1``, ``pad_token_id = 2`` (``generate`` accepts
them; pass ``eos_token_id=None`` to ``generate`` so rows never stop).  Each model has ``vocab_size``
and ``max_length`` (``L + N + MAX_DRAFT + 1``; RoPE has no hard position limit, so longer inputs
also run).  A call returns transformers' output object (``.logits [B, T, V]``).

Reference law: :meth:`TransformersPair.reference_logits` runs an *uncached* forward on every prefix
(prompt + new tokens), in the dtype under test, and the harness converts those logits exactly.
``generate`` computes the same logits with a KV cache; :mod:`.pipeline_transformers_bound` bounds the
difference by ``delta`` (a first-order running error analysis from the unit roundoff, the model's
width and depth, its weights and the forward's own values; measured differences are about 500 times
smaller, e.g. ``1.9e-6`` against ``1.06e-3`` for the default seed).
:meth:`extra_tolerance` turns it into total variation: a logit shift of at most ``delta`` becomes at
most ``delta_T = delta / T + 2 u max|l| / T`` after temperature (the float32 rounding of ``T`` and of
the division), each kept probability moves by a factor in ``exp(+-2 delta_T)`` (masks unchanged:
:func:`check_margins`), so one token's law moves by at most ``1 - exp(-2 delta_T) <= 2 delta_T`` in
total variation, and ``N`` tokens by at most ``2 N delta_T`` (subadditivity along the chain).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Hashable, Sequence

import torch

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts.generate.signature import MAX_DRAFT
from specproof.harness.check.contracts.generate.transformers.bound import logit_error_bound
from specproof.harness.exact.convert import to_exact
from specproof.harness.exact.dtypes import dtype_info, dtype_name, torch_dtype
from specproof.harness.exact.sampling import Sampling, shifted_margin
from specproof.harness.exact.softmax import exact_softmax

__all__ = ["TransformersPair", "transformers_suite", "DEFAULT_NEW_TOKENS", "tiny_llama", "check_margins",
           "LLAMA_SHAPE", "WEIGHT_SCALES", "DRAFT_NOISE", "MIN_TEMPERATURE"]

LLAMA_SHAPE = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
               "num_key_value_heads": 1, "head_dim": 8}
# std multipliers by weight name (module docstring): soft attention that mixes the prefix, a weak MLP
WEIGHT_SCALES = {"q_proj": 0.3, "k_proj": 0.3, "v_proj": 0.7, "o_proj": 0.7, "mlp.": 0.2, "lm_head": 2.0}
DRAFT_NOISE = 0.6
OFFSUPPORT_NOISE = 3.0  # the off-support scenario's draft: at the prompt all its top-3 mass is outside the target's
DEFAULT_NEW_TOKENS = 4  # 16^4 = 65,536 sequences: the exact enumeration's limit
MIN_TEMPERATURE = 0.25  # extra_tolerance without a sampling record covers every T >= this
_BATCH = 512


def _transformers():
    try:
        import transformers
    except ImportError as error:
        raise SpecproofInputError("--models", "transformers models need Hugging Face transformers",
                                  "pip install specproof[transformers], or use --models table") from error
    return transformers


def _draw(shape: Sequence[int], std: float, generator: torch.Generator) -> torch.Tensor:
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float64) * std


@torch.no_grad()
def tiny_llama(vocab: int, max_length: int, seed: int, dtype: str = "float32", device: str = "cpu", *,
               noise_seed: int | None = None, noise: float = 0.0) -> Any:
    """A seeded ``LlamaForCausalLM`` (module docstring); ``noise_seed``/``noise`` perturb its weights
    by ``noise`` times an independent draw of the same law (the draft)."""
    transformers = _transformers()
    config = transformers.LlamaConfig(vocab_size=vocab, max_position_embeddings=max(64, max_length),
                                      tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, pad_token_id=2,
                                      rms_norm_eps=1e-6, attn_implementation="eager", **LLAMA_SHAPE)
    with torch.random.fork_rng(devices=[]):  # transformers' own init draws from the global RNG
        model = transformers.LlamaForCausalLM(config)
    base = torch.Generator().manual_seed(seed)
    extra = torch.Generator().manual_seed(noise_seed) if noise_seed is not None else None
    for name, param in sorted(model.named_parameters()):
        if name.endswith("norm.weight"):
            param.fill_(1.0)
            continue
        fan_in = param.shape[1]
        std = 1.0 if "embed_tokens" in name else 1.0 / math.sqrt(fan_in)
        std *= math.prod(m for part, m in WEIGHT_SCALES.items() if part in name)
        value = _draw(param.shape, std, base)
        if extra is not None:
            value = value + noise * _draw(param.shape, std, extra)
        param.copy_(value)
    model = model.to(device=device, dtype=torch_dtype(dtype)).eval()
    model.max_length = max_length
    return model


def check_margins(logits: Any, sampling: Sampling, delta: Fraction, dtype: str) -> None:
    """Refuse (``SpecproofInputError``) when a logit shift of ``delta`` (after temperature: ``delta_T``)
    plus the float margin (:func:`~specproof.harness.exact.sampling.shifted_margin`) could change a
    top-k, top-p or min-p decision on this row of logits; then the cached and uncached laws have the
    same support and the ratio bound of the module docstring holds."""
    values = to_exact(list(logits), "logits")
    vocab = len(values)
    t = to_exact(sampling.temperature)
    shift = _scaled_shift(values, t, delta, dtype)
    rho = shifted_margin(dtype, vocab, shift)  # relative moves of the probabilities

    def refuse(what: str) -> SpecproofInputError:
        return SpecproofInputError("sampling", f"{what}, within the cached-vs-uncached logit bound {float(delta):.3g}",
                                   "choose a threshold away from this model's boundaries (or another seed)")

    keep = [True] * vocab
    if sampling.top_k is not None and sampling.top_k < vocab:
        ordered = sorted(values, reverse=True)
        kth, nxt = ordered[sampling.top_k - 1], ordered[sampling.top_k]
        if (kth - nxt) / t <= 2 * shift:  # a tie too: a shift may break it either way
            raise refuse(f"top_k={sampling.top_k}: the k-th and next logits differ by {float(kth - nxt):.3g}")
        keep = [v >= kth for v in values]
    probs = exact_softmax(values, sampling.temperature).probs.fractions()
    if sampling.top_p is not None:
        kept = sum((p for p, k in zip(probs, keep) if k), Fraction(0))
        order = sorted((i for i in range(vocab) if keep[i]), key=lambda i: (-probs[i], i))
        top_p, before = to_exact(sampling.top_p), Fraction(0)
        for rank, i in enumerate(order):
            if before != 0 and abs(before - top_p) <= rho:
                raise refuse(f"top_p={sampling.top_p:g}: the mass before token {i} is {float(before):.6g}")
            share = probs[i] / kept
            if before < top_p <= before + share and rank + 1 < len(order):
                j = order[rank + 1]
                if probs[i] - probs[j] <= 2 * rho * probs[i]:
                    raise refuse(f"top_p={sampling.top_p:g}: tokens {i} and {j} straddle the boundary")
            if before < top_p:
                keep_set = set(order[:rank + 1])
            before += share
        keep = [i in keep_set for i in range(vocab)]
    if sampling.min_p is not None:
        top = max(p for p, k in zip(probs, keep) if k)
        min_p = to_exact(sampling.min_p)
        for i in range(vocab):
            if keep[i] and probs[i] != top and abs(probs[i] / top - min_p) <= 3 * rho * min_p:
                raise refuse(f"min_p={sampling.min_p:g}: token {i}'s ratio to the top is {float(probs[i] / top):.6g}")


def _scaled_shift(values: Sequence[Fraction], t: Fraction, delta: Fraction, dtype: str) -> Fraction:
    """``delta_T = delta / T + 2 u max|l| / T`` (module docstring)."""
    u = dtype_info(dtype).unit_roundoff
    return (delta + 2 * u * max(abs(v) for v in values)) / t


class TransformersPair:
    """The transformers :class:`~.pipeline_contract.ModelPair` (module docstring)."""

    name = "transformers-llama"

    def __init__(self, vocab: int = 16, prompt: tuple[int, ...] = (5, 11, 2), seed: int = 20261201,
                 draft_seed: int = 20261202, sampling: Sampling | None = None, draft_noise: float = DRAFT_NOISE):
        if vocab < 4 or any(not 0 <= i < vocab for i in prompt) or not prompt:
            raise SpecproofInputError("prompt", f"{prompt!r} is not a non-empty prompt of ids in [0, {vocab})",
                                      "pass ids of the vocabulary")
        self.vocab, self.prompt, self.seed, self.draft_seed = vocab, tuple(prompt), seed, draft_seed
        self.draft_noise = draft_noise
        self.sampling = sampling  # bound: reference_logits checks the margins, extra_tolerance uses its T
        self._delta: float | None = None
        self._max_logit = 0.0
        self._built: tuple[Any, str] | None = None  # (target, dtype) of the last build

    def build(self, dtype: str, device: str, new_tokens: int) -> tuple[Any, Any]:
        """``(target, draft)``: two tiny Llamas with different weights (module docstring)."""
        dtype = dtype_name(dtype)
        max_length = len(self.prompt) + new_tokens + MAX_DRAFT + 1
        target = tiny_llama(self.vocab, max_length, self.seed, dtype, device)
        draft = tiny_llama(self.vocab, max_length, self.seed, dtype, device, noise_seed=self.draft_seed,
                           noise=self.draft_noise)
        self._built, self._delta, self._max_logit = (target, dtype), None, 0.0
        return target, draft

    def law_key(self, prefix: tuple[int, ...]) -> Hashable:
        return tuple(prefix)

    @torch.no_grad()
    def reference_logits(self, target: Any, prefixes: Sequence[tuple[int, ...]]) -> torch.Tensor:
        """Uncached next-token logits after ``prompt + prefix`` for each prefix: ``[n, V]`` on the CPU in
        the model's dtype, one forward per length (batches of 512).  Also bounds the cached-vs-uncached
        difference on the longest prefixes (every column of a prefix is a shorter prefix)."""
        device = next(target.parameters()).device
        out = torch.empty((len(prefixes), self.vocab), dtype=next(target.parameters()).dtype)
        by_length: dict[int, list[int]] = {}
        for index, prefix in enumerate(prefixes):
            by_length.setdefault(len(prefix), []).append(index)
        for indices in by_length.values():
            for start in range(0, len(indices), _BATCH):
                chunk = indices[start:start + _BATCH]
                ids = torch.tensor([self.prompt + tuple(prefixes[i]) for i in chunk], device=device)
                out[chunk] = target(ids, use_cache=False).logits[:, -1].cpu()
        if not bool(torch.isfinite(out).all()):
            raise SpecproofInputError("--models", "the transformers target produced non-finite logits",
                                      "use float32 or float64 for transformers models")
        self._bound(target, prefixes)
        if self.sampling is not None:
            for row in out:
                self.check_margins(row, self.sampling, self._built[1] if self._built else "float32")
        return out

    def _bound(self, target: Any, prefixes: Sequence[tuple[int, ...]]) -> None:
        dtype = self._built[1] if self._built is not None else dtype_name(next(target.parameters()).dtype)
        inner = {tuple(p[:j]) for p in prefixes for j in range(len(p))}
        longest = sorted({tuple(p) for p in prefixes} - inner)
        by_length: dict[int, list[tuple[int, ...]]] = {}
        for p in longest:
            by_length.setdefault(len(p), []).append(p)
        for group in by_length.values():
            for start in range(0, len(group), _BATCH):
                ids = torch.tensor([self.prompt + p for p in group[start:start + _BATCH]])
                delta, top = logit_error_bound(target, ids, dtype)
                self._delta = max(self._delta or 0.0, delta)
                self._max_logit = max(self._max_logit, top)

    def logit_bound(self) -> Fraction:
        """``delta`` of :mod:`.pipeline_transformers_bound` over the prefixes of ``reference_logits``."""
        if self._delta is None:
            raise RuntimeError("TransformersPair.logit_bound needs reference_logits() first")
        return Fraction(self._delta)

    def extra_tolerance(self, dtype: str, new_tokens: int, sampling: Sampling | None = None,
                        arithmetic: str | None = None) -> Fraction:
        """``2 N delta_T`` (module docstring), the temperature's rounding at ``arithmetic`` (default
        ``dtype``); without ``sampling`` the bound for ``T = MIN_TEMPERATURE``."""
        sampling = sampling or self.sampling
        t = to_exact(sampling.temperature if sampling is not None else MIN_TEMPERATURE)
        shift = _scaled_shift([to_exact(self._max_logit)], t, self.logit_bound(), dtype_name(arithmetic or dtype))
        return min(Fraction(1), 2 * new_tokens * shift)

    def check_margins(self, logits: Any, sampling: Sampling, dtype: str) -> None:
        """:func:`check_margins` with this target's ``delta`` (refuses ``T < MIN_TEMPERATURE`` without it)."""
        if sampling.temperature < MIN_TEMPERATURE:
            raise SpecproofInputError("--temperature", f"{sampling.temperature:g} is below {MIN_TEMPERATURE:g}",
                                      f"use --temperature >= {MIN_TEMPERATURE:g} with --models transformers")
        check_margins(logits, sampling, self.logit_bound(), dtype_name(dtype))


def transformers_suite(sampling: Sampling | None = None, new_tokens: int | None = None) -> list[Any]:
    """Scenarios with the tiny Llama pair, each pair bound to its sampling: plain ``T = 1`` with
    ``N = 4``, and ``T = 0.7`` with top-k 3 and ``N = 3`` (over 16^3 sequences every top-3 boundary of
    this seed is more than ``2 delta_T`` away; with ``N = 4`` some of the 4,369 prefixes come closer,
    which :func:`check_margins` refuses, for every ``k``), with the default draft and with a draft
    that proposes processed-away tokens (where RNG edge injection can see ``u = 0`` accept them).  With ``sampling`` / ``new_tokens`` (the CLI's
    flags): one scenario (refused if a decision lies within the margin)."""
    from specproof.harness.check.contracts.generate.scenarios import PipelineScenario

    settings = [("T1", Sampling(1.0), new_tokens or DEFAULT_NEW_TOKENS, "transformers Llama pair, T = 1"),
                ("T0.7-topk3", Sampling(0.7, top_k=3), new_tokens or 3, "transformers Llama pair, T = 0.7, top-k 3"),
                ("T0.7-topk3-offsupport", Sampling(0.7, top_k=3), new_tokens or 3,
                 "T = 0.7, top-k 3, a draft nearly independent of the target (noise 3): its drafts are "
                 "often tokens the target's top-3 removes")]
    if sampling is not None:
        settings = [(sampling.describe(), sampling, new_tokens or DEFAULT_NEW_TOKENS,
                     f"transformers Llama pair, {sampling.describe()}")]
    return [PipelineScenario(f"hf-{label} (N={n})", TransformersPair(sampling=chosen, draft_noise=(
        OFFSUPPORT_NOISE if label.endswith("offsupport") else DRAFT_NOISE)), chosen, n, text,
        ("transformers", "zeros") if chosen.top_k or chosen.top_p or chosen.min_p else ("transformers",))
        for label, chosen, n, text in settings]
