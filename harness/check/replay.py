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

A finding of the statistics without such a call (a statistical finding, or a certain one of the tree or
generate contract) gets a *fixed-row check* instead (:func:`fixed_row_snippet`): ``specproof.check`` of that
one scenario at ``N`` rows with the run's seed, dtype, device and band settings, ``N`` the scenario's rows
when the finding showed, rounded up (:func:`rounded_up`).  Alone in its check the scenario draws other
rows than it did among the suite (its stream number changes, :func:`.driver.stream_numbers`), so
:func:`save_failure` runs that check first, at ``N``, ``2 N`` and ``4 N`` rows, on the scenarios of the
findings that showed soonest, and writes the first one that FAILs: the test then FAILs on the same
verifier bit for bit (every row is a function of the seed), and a lossless verifier FAILs it with
probability at most ``alpha``.  Nothing is written when no such check FAILs, for findings of the RNG edge
injection or the reproducibility pair alone (the rerun line reproduces those), or for a scenario the run
was given that is not in its contract's default suite (the test names its scenario).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from specproof.errors import SpecproofInputError

from specproof.harness.check.contracts import get_contract
from specproof.harness.check.diagnosis import FailingCall
from specproof.harness.check.options import CI_MAX_DETECTABLE_TV, MAX_ROWS_PER_SCENARIO, MIN_ROWS
from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT

__all__ = ["rerun_line", "target_name", "save_failure", "snippet", "fixed_row_snippet", "fixed_row_settings",
           "rounded_up", "round_violations", "SNIPPET_NAME", "DATA_NAME", "REPLAY_FACTORS", "REPLAY_SCENARIOS"]

SNIPPET_NAME = "test_specproof_failure.py"
DATA_NAME = "failure.pt"
REPLAY_FACTORS = (1, 2, 4)  # a fixed-row check is tried at N, 2N, 4N rows (module docstring)
REPLAY_SCENARIOS = 3  # on the scenarios of the first findings, at most this many


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
    level_tv = CI_MAX_DETECTABLE_TV if options.samples is None and options.level == "ci" else DEFAULT_MAX_DETECTABLE_TV
    if options.max_detectable_tv != level_tv:  # --level ci states its own bound
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
    if options.scenarios is not None:
        line += ("   (NOT this run: its scenarios were given in Python (scenarios=); the command runs the "
                 "contract's default suite)")
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


def _load(target: str | None) -> str:
    """The lines of a generated test that bind ``verify`` to ``target`` (``module:function`` or
    ``path.py:function``; None: an import to replace)."""
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
    return load


def snippet(target: str | None, data: str = DATA_NAME) -> str:
    """The generated pytest test of a certain finding's failing call (module docstring): ``target`` is
    ``module:function`` (or None: the test then names where to put the verifier)."""
    load = _load(target)
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


def rounded_up(rows: int) -> int:
    """``rows`` rounded up to two significant digits, at least ``MIN_ROWS`` and at most the rows a
    check accepts per scenario: 353 -> 360, 1588 -> 1600, 4 -> 64."""
    rows = max(int(rows), MIN_ROWS)
    step = 10 ** max(len(str(rows)) - 2, 0)
    return min(-(-rows // step) * step, MAX_ROWS_PER_SCENARIO)


def fixed_row_settings(options: Any) -> dict[str, Any]:
    """The run's settings that a fixed-row check of one of its scenarios keeps (module docstring): what
    decides its rows (seed, dtype, device), its band and threshold, and which suite holds the scenario;
    plain values, so that the generated test can spell them."""
    out: dict[str, Any] = {"dtype": options.dtype, "device": str(options.device), "seed": options.seed}
    if options.alpha != 1e-6:
        out["alpha"] = options.alpha
    if options.max_detectable_tv != DEFAULT_MAX_DETECTABLE_TV:
        out["max_detectable_tv"] = options.max_detectable_tv
    if options.max_drift is not None:
        out["max_drift"] = options.max_drift
    if options.timeout != DEFAULT_TIMEOUT:
        out["timeout"] = options.timeout
    if options.rule is not None:
        out["rule"] = str(getattr(options.rule, "name", options.rule))
    for name in ("vocab", "siblings", "models", "sampling", "new_tokens"):
        if getattr(options, name) is not None:
            out[name] = getattr(options, name)
    return out


def _default_scenario(contract: str, name: str, settings: dict[str, Any]) -> Any:
    """The scenario named ``name`` in the contract's default suite under ``settings`` (None: not there),
    looked up as the generated test looks it up."""
    from specproof.harness.check.options import CheckOptions

    suite = get_contract(contract).implementation().default_suite(CheckOptions.build(contract, **settings))
    return next((s for s in suite if s.name == name), None)


def _fixed_row_check(target: Callable[..., Any], contract: str, scenario: Any, rows: int,
                     settings: dict[str, Any]) -> Any:
    """The check the generated test runs (:func:`fixed_row_snippet`), in this process."""
    from specproof.harness.check.driver import check

    return check(target, contract, scenarios=[scenario], samples=rows, fail_fast=True, inject=False,
                 progress=False, **settings)


def fixed_row_snippet(target: str | None, contract: str, scenario: str, rows: int, settings: dict[str, Any],
                      finding: str = "") -> str:
    """The generated pytest test of a finding without a failing call (module docstring): ``specproof.check``
    of ``scenario`` alone at ``rows`` rows under ``settings`` (:func:`fixed_row_settings`); ``finding``:
    the run's finding, quoted in a comment."""
    imports = "import specproof" + ("\nfrom specproof.harness import Sampling" if "sampling" in settings else "")
    quoted = "".join(f"#   {line}\n" for line in finding.splitlines())
    quoted = f"# the run's finding on this scenario:\n{quoted}\n" if quoted else ""
    return f'''"""A failing case specproof saved: a check of one scenario at a fixed number of rows.

Generated by specproof --save-failure.  specproof.check of scenario {scenario!r} alone at {rows} rows,
with the run's seed, dtype and device: the same rows on every run, so it FAILs while the bug is there
and passes (no finding) once it is fixed; a lossless verifier fails it with probability at most
alpha ({settings.get("alpha", 1e-6):g}).  The finding of the run it comes from is quoted below.
"""

{imports}

{_load(target)}

{quoted}CONTRACT = {contract!r}
SCENARIO = {scenario!r}
ROWS = {rows}
SETTINGS = {settings!r}


def test_no_finding_on_the_scenario_that_failed():
    options = specproof.CheckOptions.build(CONTRACT, **SETTINGS)
    suite = specproof.CONTRACTS[CONTRACT].implementation().default_suite(options)
    scenario = next(s for s in suite if s.name == SCENARIO)
    result = specproof.check(verify, CONTRACT, scenarios=[scenario], samples=ROWS, fail_fast=True, inject=False,
                             progress=False, **SETTINGS)
    assert not result.flagged, result.summary(more=None)
'''


def _save_fixed_rows(result: Any, target: Callable[..., Any], folder: Path, target_spec: str | None,
                     options: Any) -> list[Path] | None:
    """The fixed-row check of the first scenario, among those whose findings showed soonest, that FAILs
    at N, 2N or 4N rows, written as a test (module docstring); None when none does."""
    first: dict[str, Any] = {}  # scenario -> its finding that showed after the fewest rows
    vocab = {report.name: report.vocab for report in result.scenarios}
    for report in result.scenarios:
        for finding in report.findings:
            if report.name not in first or finding.rows < first[report.name].rows:
                first[report.name] = finding
    settings = fixed_row_settings(options)
    contract = options.contract.name
    given = {s.name: s for s in options.scenarios or ()}
    for name in sorted(first, key=lambda n: (first[n].rows, vocab[n]))[:REPLAY_SCENARIOS]:  # fewest rows, smallest V
        scenario = _default_scenario(contract, name, settings)
        if scenario is None or (given and given.get(name) is not scenario):
            continue  # a scenario the run was given: the test could not name it
        for factor in REPLAY_FACTORS:
            rows = min(rounded_up(first[name].rows) * factor, MAX_ROWS_PER_SCENARIO)
            if _fixed_row_check(target, contract, scenario, rows, settings).flagged:
                folder.mkdir(parents=True, exist_ok=True)
                test = folder / SNIPPET_NAME
                test.write_text(fixed_row_snippet(target_spec or target_name(target), contract, name, rows,
                                                  settings, first[name].line()))
                return [test]
    return None


def save_failure(result: Any, target: Callable[..., Any], directory: str | Path,
                 target_spec: str | None = None, options: Any = None) -> list[Path] | None:
    """Write the smallest failing case of ``result`` under ``directory`` (module docstring): a certain
    finding's failing call as ``failure.pt`` and a plain torch test; else, given the run's ``options``
    (:class:`.options.CheckOptions`), a fixed-row check of one scenario as a test.  None when nothing
    reproduces it that way (findings of the injection or the reproducibility pair alone: the rerun
    line reproduces those)."""
    import torch

    calls: Sequence[FailingCall] = [c for c in result.failing_calls if c.prepared.__class__.__name__ ==
                                    "BatchedScenario"]
    if not calls:
        return None if options is None else _save_fixed_rows(result, target, Path(directory), target_spec, options)
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
