"""Whole speculative-decoding pipelines behind the ``generate`` contract: the exact canonical pipeline,
its lossless variants, and one mutant per bug class reported in the runtimes' trackers.

:data:`PIPELINES` lists them (and transformers' real assisted generation) with what each is expected
to be: ``lossless`` (samples from the processed target in real arithmetic) or not, the bug and the
public report a mutant mirrors (the modules' docstrings say more).  :meth:`PipelineRecord.load` imports
the function, so this package imports without torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from specproof.impls.adapters.transformers_release import accepts_ratio_ties

__all__ = ["PipelineRecord", "PIPELINES", "get_pipeline"]


@dataclass(frozen=True)
class PipelineRecord:
    """One pipeline: ``target`` is ``module:attribute`` of its ``generate`` function; ``models`` the
    model pair it runs with (``table`` or ``transformers``); ``needs_extra`` the pip extra it needs."""

    name: str
    target: str
    lossless: bool
    description: str
    bug: str | None = None
    mirrors: str | None = None
    models: str = "table"
    needs_extra: str | None = None

    def load(self) -> Callable[..., Any]:
        module, attribute = self.target.split(":")
        return getattr(importlib.import_module(module), attribute)


_P = "specproof.impls.pipelines."

PIPELINES: tuple[PipelineRecord, ...] = (
    PipelineRecord("canonical", _P + "canonical:canonical_generate", True,
                   "canonical speculative sampling on processed laws, K = 2 per round"),
    PipelineRecord("onehot", _P + "variants:onehot_generate", True,
                   "verification treats each sampled draft as one-hot, consistently",
                   mirrors="vllm-project/vllm#40149 (the consistent one-hot view: lossless)"),
    PipelineRecord("misaligned-drafter", _P + "variants:misaligned_drafter_generate", True,
                   "the drafter reads the previous column; verification is handed that same law",
                   mirrors="lablup/mlxcel#994 (a draft cache rewound too far: lossless when consistent)"),
    PipelineRecord("varying-k", _P + "variants:varying_k_generate", True, "K uniform on 1..4 per round"),
    *(PipelineRecord(name, _P + "mutants:" + attribute, False, description, bug=bug, mirrors=mirrors)
      for name, attribute, description, bug, mirrors in (
          ("raw-q", "raw_q_generate", "drafts from the processed draft law",
           "verification handed the raw softmax of the draft logits", "huggingface/transformers#47932"),
          ("bf16-draft", "bf16_draft_generate", "drafts from a bfloat16 softmax",
           "drafts sampled in bfloat16, verification handed the float32 q", "deepseek-ai/DeepSpec#31"),
          ("default-target", "default_target_generate", "drafts processed",
           "target probabilities with default parameters (T = 1, no filter)", "vllm-project/vllm#10198"),
          ("bonus-only-min-p", "bonus_only_generate", "min-p on the bonus row only",
           "min-p honoured for the bonus token only", "vllm-project/vllm#42744"),
          ("mixed-residual", "mixed_residual_generate", "two views of one draft",
           "accepts with the real q, residual max(0, p - e_x) as if q were one-hot",
           "vllm-project/vllm#40149 (the one-hot view, mixed here with the real q)"),
          ("stale-context", "stale_context_generate", "round bookkeeping",
           "the next round reads the rejected draft where the correction was emitted",
           "ml-explore/mlx-lm#1109; openvinotoolkit/openvino.genai#4190"),
          ("shifted-q", "shifted_q_generate", "round bookkeeping",
           "draft i sampled from column n-1+i, verification handed the law of column n+i",
           "issue 14's round-bookkeeping class (no single public report located)"),
          ("accept-le", "accept_le_generate", "acceptance u <= p/q",
           "u == 0 accepts a processed-away draft (2^-24 per test in float32)",
           "transformers _speculative_sampling before 5.25.0 (r <= p/q); vllm-project/vllm-ascend#13766"))),
    PipelineRecord("transformers-assisted", "specproof.impls.adapters.transformers_generate:transformers_generate",
                   not accepts_ratio_ties(), "transformers' generate(assistant_model=...) on tiny seeded Llama models"
                   " (lossless from release 5.25.0, which accepts with r < p/q)",
                   bug="acceptance r <= p/q (transformers before 5.25.0): r == 0 accepts a draft the processed "
                       "target removed" if accepts_ratio_ties() else None,
                   mirrors="transformers.generation.utils (assisted generation) itself",
                   models="transformers", needs_extra="transformers"),
)


def get_pipeline(name: str) -> PipelineRecord:
    for record in PIPELINES:
        if record.name == name:
            return record
    raise KeyError(f"no pipeline {name!r}; known: {', '.join(r.name for r in PIPELINES)}")
