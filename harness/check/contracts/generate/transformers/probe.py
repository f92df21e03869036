"""White-box probes of transformers' assisted generation: what does verification actually receive?

:func:`probe_assisted_generation` runs ``target.generate(..., assistant_model=draft)`` through the
``generate``-contract adapter (``impls.adapters.transformers_generate``) while recording

* every ``_speculative_sampling(candidate_input_ids, candidate_logits, K, new_logits)`` call (the
  module attribute ``transformers.generation.utils._speculative_sampling`` is wrapped for the run);
* every ``torch.multinomial`` input (the drafter's sampling draws and the verifier's correction draw);

and answers, per round and drafted position ``i`` with context ``c_i`` = ``candidate_input_ids[:, :cur+i]``:

1. *q is the sampled law*: the drafter's multinomial input at position ``i`` is bit for bit
   ``softmax(candidate_logits[:, i])``, the ``q`` that ``_speculative_sampling`` computes.
2. *processing once or twice*: ``candidate_logits[:, i]`` against ``apply_sampling`` applied once and
   twice to the draft's uncached logits after ``c_i`` (finite entries' largest difference; the masks);
   ``new_logits[:, i]`` against the target's, processed once.
3. *contexts*: the drafter's logits match its uncached logits on the target's context ``c_i`` (within
   the float bound), and each round's ``candidate_input_ids[:, :cur]`` is the prompt plus every token
   emitted so far (the round starts from the corrected prefix).

A difference is called a match when it is within ``delta / T`` (once) or ``delta / T^2`` (twice), with
``delta`` the draft's or target's cached-vs-uncached bound (:mod:`.pipeline_transformers_bound`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch

from specproof.harness.check.contracts.generate.transformers.bound import logit_error_bound
from specproof.harness.exact.sampling import Sampling, apply_sampling

__all__ = ["ProbeReport", "probe_assisted_generation"]


@dataclass
class ProbeReport:
    """Counts over every drafted position of every round (module docstring)."""

    rounds: int = 0
    positions: int = 0
    draft_lengths: list[int] = field(default_factory=list)
    q_is_sampled_law: int = 0  # multinomial input == softmax(candidate_logits), bitwise
    q_once: int = 0  # candidate logits == processed once (within delta / T)
    q_twice: int = 0  # == processed twice (within delta / T^2)
    q_masks_once: int = 0  # same -inf pattern as processed once
    p_once: int = 0  # target logits handed to verification == processed once
    context_ok: int = 0  # drafter's context is the target's (its logits match its uncached ones there)
    rounds_from_emitted: int = 0  # a round's context is the prompt + all tokens emitted before it
    worst_once: float = 0.0
    worst_twice: float = 0.0
    worst_target: float = 0.0

    def summary(self) -> str:
        n, r = self.positions, self.rounds
        return (f"{r} rounds, {n} drafted positions (K per round: {sorted(set(self.draft_lengths))}); "
                f"q == sampled law bitwise: {self.q_is_sampled_law}/{n}; draft logits processed once: "
                f"{self.q_once}/{n} (worst {self.worst_once:.3g}), twice: {self.q_twice}/{n} "
                f"(worst {self.worst_twice:.3g}); masks as once: {self.q_masks_once}/{n}; target processed "
                f"once: {self.p_once}/{n + r} (worst {self.worst_target:.3g}); drafter context == target "
                f"context: {self.context_ok}/{n}; rounds starting at the emitted prefix: {self.rounds_from_emitted}/{r}")


def _difference(a: torch.Tensor, b: torch.Tensor) -> tuple[float, bool]:
    """Largest difference on entries finite in both, and whether the ``-inf`` patterns agree."""
    same_mask = bool((torch.isinf(a) == torch.isinf(b)).all())
    finite = torch.isfinite(a) & torch.isfinite(b)
    worst = float((a[finite].double() - b[finite].double()).abs().max()) if bool(finite.any()) else 0.0
    return worst, same_mask


@contextlib.contextmanager
def _recording():
    import transformers.generation.utils as utils

    calls, draws = [], []
    verify, multinomial = utils._speculative_sampling, torch.multinomial

    def spy_verify(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kwargs):
        calls.append((candidate_input_ids.clone(), candidate_logits.clone(), int(candidate_length),
                      new_logits.clone(), len(draws)))
        return verify(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kwargs)

    def spy_multinomial(probs, *args, **kwargs):
        draws.append(probs.detach().clone())
        return multinomial(probs, *args, **kwargs)

    utils._speculative_sampling, torch.multinomial = spy_verify, spy_multinomial
    try:
        yield calls, draws
    finally:
        utils._speculative_sampling, torch.multinomial = verify, multinomial


@torch.no_grad()
def probe_assisted_generation(target: Any, draft: Any, prompt: tuple[int, ...], sampling: Sampling,
                              new_tokens: int, rows: int = 8, seed: int = 0, generate: Any = None) -> ProbeReport:
    """Run ``rows`` rows of transformers' assisted generation and check them (module docstring)."""
    from specproof.impls.adapters.transformers_generate import transformers_generate

    generate = generate or transformers_generate
    report = ProbeReport()
    t = float(sampling.temperature)
    prompt_ids = torch.tensor([list(prompt)], dtype=torch.int64)
    for row in range(rows):
        with _recording() as (calls, draws):
            out = generate(target, draft, prompt_ids, new_tokens, sampling, torch.Generator().manual_seed(seed + row))
        emitted = list(prompt) + out[0].tolist()
        for ids, q_logits, k, p_logits, draws_before in calls:
            report.rounds += 1
            report.draft_lengths.append(k)
            cur = ids.shape[1] - k
            report.rounds_from_emitted += int(ids[0, :cur].tolist() == emitted[:cur])
            delta_d = logit_error_bound(draft, ids, "float32")[0]
            delta_t = logit_error_bound(target, ids, "float32")[0]
            d_raw = draft(ids, use_cache=False).logits[0, cur - 1:cur - 1 + k].float()
            t_raw = target(ids, use_cache=False).logits[0, cur - 1:cur + k].float()
            once, twice = apply_sampling(d_raw, sampling), apply_sampling(apply_sampling(d_raw, sampling), sampling)
            target_once = apply_sampling(t_raw, sampling)
            sampled = draws[draws_before - k:draws_before] if draws_before >= k else []
            for i in range(k):
                report.positions += 1
                q = q_logits[0, i]
                if len(sampled) == k:
                    report.q_is_sampled_law += int(torch.equal(sampled[i].reshape(-1), q.softmax(-1)))
                w1, m1 = _difference(q, once[i])
                w2, _ = _difference(q, twice[i])
                report.worst_once, report.worst_twice = max(report.worst_once, w1), max(report.worst_twice, w2)
                report.q_once += int(m1 and w1 <= delta_d / t)
                report.q_twice += int(w2 <= delta_d / t ** 2)
                report.q_masks_once += int(m1)
                report.context_ok += int(min(w1, w2) <= delta_d / min(t, t * t))
            for i in range(k + 1):
                wt, mt = _difference(p_logits[0, i], target_once[i])
                report.worst_target = max(report.worst_target, wt)
                report.p_once += int(mt and wt <= delta_t / t)
    return report


def main() -> None:
    """``python -m specproof.harness.check.contracts.generate.transformers.probe``: the probes on the suite's
    settings, with a prompt free of the pad id and with the suite's prompt (which contains it)."""
    from specproof.harness.check.contracts.generate.transformers.suite import TransformersPair, transformers_suite
    from specproof.impls.adapters.transformers_generate import make_transformers_generate

    for prompt in ((5, 11, 3), TransformersPair().prompt):
        target, draft = TransformersPair(prompt=prompt).build("float32", "cpu", 4)
        for scenario in transformers_suite():
            for label, fn in (("defaults", None), ("K=2, no confidence stop", make_transformers_generate(2, 0.0))):
                report = probe_assisted_generation(target, draft, prompt, scenario.sampling, scenario.new_tokens,
                                                   rows=20, generate=fn)
                print(f"prompt {prompt}, {scenario.sampling.describe()}, {label}: {report.summary()}")


if __name__ == "__main__":
    main()
