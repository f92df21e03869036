"""Replay and reduce a FAIL: the rerun line, and the smallest failing case as a file and a pytest test.

Rerun.  Until its first finding a run with ``--fail-fast`` draws exactly the rows of the same run
without it (:mod:`.driver`, Order), and every row is a function of ``--seed`` and the depth flags
alone (:mod:`.seeding`), so ``specproof check TARGET --seed S --fail-fast`` with the run's depth,
dtype, device, contract and injection flags reproduces the first finding bit for bit.  Not under
``--time-budget`` (quotas set from the clock) or ``--engine ray`` with a different shard grid: the
line then says so.

Reduce.  A certain finding of the statistics keeps its first failing call (:class:`.diagnosis.FailingCall`:
the scenario's inputs and the target's generator seed).  :func:`save_failure` shrinks it: each failing
row alone, then the fewest leading rows, each rerun with the same generator seed, keeping the
smallest call that still emits a token the target rules out (the verifier's randomness for a row
may depend on the rows before it, so a single row is tried first and the prefix kept otherwise).  It
writes ``failure.pt`` (``draft_probs``, ``target_probs``, ``draft_token_ids``, ``generator_seed``, the
emitted tokens, the failing rows) and ``test_specproof_failure.py``, a plain pytest test that calls the
verifier on those inputs and asserts, with torch alone, that every emitted token has positive target
probability at its position and that the tokens before the last are the drafts.  It fails on the
buggy verifier and passes once it is fixed; it uses none of specproof's statistics.  Batched contract.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.diagnosis import FailingCall
from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV

__all__ = ["rerun_line", "target_name", "save_failure", "snippet", "round_violations", "SNIPPET_NAME", "DATA_NAME"]

SNIPPET_NAME = "test_specproof_failure.py"
DATA_NAME = "failure.pt"


def target_name(target: Callable[..., Any]) -> str | None:
    """``module:qualname`` of an importable function (None for a lambda, a local function, ``__main__``)."""
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def rerun_line(target: str | None, options: Any, adapter: str | None = None) -> str:
    """The command that reproduces this run's first finding bit for bit (module docstring)."""
    words = ["specproof", "check", target or "TARGET", "--seed", str(options.seed), "--fail-fast"]
    if adapter:
        words += ["--adapter", adapter]
    elif options.contract.name != "batched":
        words += ["--contract", options.contract.name]
    if options.dtype != "float32":
        words += ["--dtype", options.dtype]
    if options.device != "cpu":
        words += ["--device", str(options.device)]
    if options.samples is not None:
        words += ["--samples", str(options.samples)]
    elif options.level != "default":
        words += ["--thorough"] if options.level == "thorough" else ["--level", options.level]
    if options.max_detectable_tv != DEFAULT_MAX_DETECTABLE_TV:
        words += ["--max-detectable-tv", f"{options.max_detectable_tv:g}"]
    if options.max_drift is not None:
        words += ["--max-drift", f"{options.max_drift:g}"]
    if options.alpha != 1e-6:
        words += ["--alpha", f"{options.alpha:g}"]
    if not options.inject:
        words.append("--no-inject")
    if options.accept_rate is not None:
        words += ["--accept-rate", f"{options.accept_rate:g}"]
    if options.rule is not None:
        words += ["--rule", str(getattr(options.rule, "name", options.rule))]
    if options.vocab:
        words += ["--vocab", *map(str, options.vocab)]
    if options.siblings:
        words += ["--siblings", ",".join(options.siblings)]
    line = " ".join(shlex.quote(w) for w in words)
    if target is None:
        line += "   (TARGET: your verifier as package.module:function or path.py:function)"
    if options.time_budget is not None:
        line += ("   (NOT bit for bit: --time-budget sets the rows from the clock; rerun with --samples "
                 "to fix them)")
    return line


def round_violations(draft_ids: Any, target_probs: Any, emitted: Any) -> np.ndarray:
    """Per row, whether the round emitted a token of target probability 0 at its position or a token
    before the last that is not the draft (the certain outcomes; the snippet holds the same test)."""
    ids, probs, out = np.asarray(draft_ids), np.asarray(target_probs, dtype=np.float64), np.asarray(emitted)
    n, width = out.shape
    lengths = (out >= 0).sum(axis=1)
    bad = np.zeros(n, dtype=bool)
    for j in range(width):
        inside = j < lengths
        tokens = np.where(inside, out[:, j], 0)
        bad |= inside & (probs[np.arange(n), j, tokens] <= 0)
        if j < width - 1:
            bad |= (j < lengths - 1) & (out[:, j] != ids[:, j])
    return bad


def _run(target: Callable[..., Any], draft: Any, target_probs: Any, ids: Any, seed: int) -> np.ndarray:
    import torch

    from specproof.harness.check.seeding import generator

    out = target(draft.clone(), target_probs.clone(), ids.clone(), generator(seed, draft.device))
    return torch.as_tensor(out).cpu().numpy()


def _smallest(target: Callable[..., Any], call: FailingCall) -> tuple[Any, Any, Any, np.ndarray]:
    """The smallest rows of ``call`` that still fail when rerun with its generator seed."""
    draft, target_probs, ids, _ = call.inputs()
    candidates = [[int(r)] for r in call.rows[:8]] + [list(range(int(r) + 1)) for r in call.rows[:1]]
    candidates.append(list(range(int(draft.shape[0]))))
    for rows in candidates:
        pick = list(rows)
        out = _run(target, draft[pick], target_probs[pick], ids[pick], call.seed)
        if round_violations(ids[pick].cpu(), target_probs[pick].double().cpu(), out).any():
            return draft[pick], target_probs[pick], ids[pick], out
    raise SpecproofInputError("save_failure", f"the failing call on scenario '{call.scenario}' no longer fails "
                              "when rerun with its seed: the verifier is not a function of its inputs and generator",
                              "make the verifier draw only from its generator argument")


def snippet(target: str | None, data: str = DATA_NAME) -> str:
    """The generated pytest test (module docstring): ``target`` is ``module:function`` (or None: the test
    then names where to put the verifier)."""
    if target is not None and ":" in target:
        module, name = target.split(":", 1)
        if module.endswith(".py"):
            module = str(Path(module).resolve())
            load = (f"import importlib.util, sys\n_spec = importlib.util.spec_from_file_location('verifier_under_test', "
                    f"{module!r})\n_mod = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mod)\n"
                    f"verify = _mod.{name}")
        else:
            load = f"from {module} import {name.split('.')[0]} as verify" if "." not in name else \
                f"import {module} as _mod\nverify = _mod.{name}"
    else:
        load = "from my_runtime import verify  # your verifier: replace this import"
    return f'''"""A failing case specproof saved: the verifier emits a token the target rules out.

Generated by specproof --save-failure.  Plain torch: no statistics; it fails while the bug is there and
passes once it is fixed.  Inputs: {data} beside this file.
"""

from pathlib import Path

import torch

{load}

CASE = torch.load(Path(__file__).with_name({data!r}))


def test_emits_only_tokens_the_target_allows():
    draft_probs, target_probs, draft_ids = CASE["draft_probs"], CASE["target_probs"], CASE["draft_token_ids"]
    generator = torch.Generator(device=draft_probs.device).manual_seed(CASE["generator_seed"])
    emitted = verify(draft_probs.clone(), target_probs.clone(), draft_ids.clone(), generator).cpu()
    for row in range(emitted.shape[0]):
        tokens = [int(t) for t in emitted[row] if t >= 0]
        for j, token in enumerate(tokens):
            assert float(target_probs[row, j, token]) > 0, (
                f"row {{row}}: token {{token}} at position {{j + 1}} has target probability 0; "
                f"drafts {{draft_ids[row].tolist()}}, emitted {{emitted[row].tolist()}}")
            if j < len(tokens) - 1:
                assert token == int(draft_ids[row, j]), (
                    f"row {{row}}: position {{j + 1}} emits {{token}}, not the draft {{int(draft_ids[row, j])}}, "
                    f"and the round goes on; emitted {{emitted[row].tolist()}}")
'''


def save_failure(result: Any, target: Callable[..., Any], directory: str | Path,
                 target_spec: str | None = None) -> list[Path] | None:
    """Write the smallest failing case of ``result``'s first certain finding under ``directory``
    (module docstring); None when the run kept no failing call (a statistical finding, another
    contract, or an injection finding: the rerun line reproduces those)."""
    import torch

    calls: Sequence[FailingCall] = [c for c in result.failing_calls if c.prepared.__class__.__name__ ==
                                    "BatchedScenario"]
    if not calls:
        return None
    call = min(calls, key=lambda c: c.stream_row)
    draft, target_probs, ids, out = _smallest(target, call)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / DATA_NAME
    torch.save({"draft_probs": draft.cpu(), "target_probs": target_probs.cpu(), "draft_token_ids": ids.cpu(),
                "generator_seed": int(call.seed), "emitted": torch.as_tensor(out),
                "failing_rows": np.flatnonzero(round_violations(ids.cpu(), target_probs.double().cpu(), out)).tolist(),
                "scenario": call.scenario, "finding": call.label, "check_seed": int(result.seed)}, data)
    test = folder / SNIPPET_NAME
    test.write_text(snippet(target_spec or target_name(target)))
    return [data, test]
