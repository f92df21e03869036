"""``specproof check TARGET``: is a verifier lossless?  A verdict with the power it had.

    specproof check TARGET [--thorough | --time-budget S | --samples N] [--fail-fast] [--dtype D]
                           [--device DEV] [--seed S] [--rule R] [--adapter A] [--contract C] [--json PATH]

TARGET is package.module:function or path/to/file.py:function, by default a batched verifier
verify(draft_probs [B,K,V], target_probs [B,K+1,V], draft_token_ids [B,K], generator) -> emitted
[B,K+1] (int64, -1 padded).  --adapter wraps a runtime's own layout (vllm-v1, vllm-v0, flashinfer,
transformers, sglang-tree); --contract tree / generate checks a tree verifier or a whole pipeline.
TARGET is imported and executed in this process with your user's rights: check only code you trust.
A path.py target's folder is put on sys.path, so it can import modules beside it.

What runs (a batched or tree verifier: the statistics first, up to as many rows as the
reproducibility pair and the injection cost, then those two, then the rest; --fail-fast stops at the
first finding, after the same rows; --contract generate runs the pair first and the injection
after all the statistics):
  1. RNG edge injection (CPU; --no-inject turns it off): the verifier runs with a known fraction of
     its torch.rand / rand_like / uniform_ / exponential_ draws replaced by values torch's generator
     really produces at its edges (0, the smallest and the largest value below 1).  A verifier that
     then emits a token of target probability 0 (e.g. accepting with `u <= p/q` when u == 0) FAILS
     with certainty, with the exact per-draw probability of that value (2^-24 for float32 rand).
  2. The statistical check: 14 scenarios with exactly known laws; every test may be read after
     every batch (e-processes, Ville's inequality), so rows go to the scenario where the evidence
     grows and a failing verifier is flagged as soon as the evidence is conclusive.  The first is a
     certainty probe: each position's target has its own tokens, so a target row read at the wrong
     position, a bonus from another row or an emitted rejected draft emits a probability-0 token (a
     certain FAIL); it gets the rows that see such a rate of 0.9 x --max-detectable-tv w.p. 0.99.
  3. Reproducibility: one batch twice with same-seeded generators; outputs that differ (the
     verifier draws from the global RNG, not from generator) FAIL.

Levels: the default gives each scenario the rows its hardest event needs to see a deviation of
total variation 0.9 x --max-detectable-tv (0.02 by default); about 0.9M rows, 12 s for
specproof.impls:canonical_ratio_race on an idle 2-core machine.  --thorough aims at a quarter of it (the probe aside, at least 200,000 rows per
scenario; for nightly runs).  --time-budget S spends S seconds instead, the whole check included, and
says what they could see; a tenth of it (at most 8 s) goes to the reproducibility pair and the
injection, whose passes shrink to fit it: those that do not fit are listed as NOT run.
--samples N fixes the rows per scenario (the certainty probe: at most the rows it needs for the bound).

Exit codes:
  0  PASS: no drift beyond the dtype's tolerance, and the run had the power to see a deviation of
     total variation --max-detectable-tv on a tested event with probability 0.99 (printed as
     "Detectable TV"); the family-wise probability of a false FAIL is at most --alpha (1e-6);
  1  FAIL: a finding - certain (a probability-0 emission, also under injection) or statistical
     (evidence past its threshold); a one-line diagnosis, then at most 10 findings (all in --json);
     or two same-seed runs of one batch differ (the verifier ignores its generator);
  3  UNDERPOWERED: nothing found, but the run could not see --max-detectable-tv (raise the level or
     the budget; bfloat16's tolerance alone can exceed any useful bound);
  4  INCONCLUSIVE (--engine ray): a shard of the rows failed for good (its retries spent); the
     reason is printed, nothing is concluded;
  2  usage error: bad arguments, target not found or wrong signature, a verifier that raises,
     calls sys.exit, or runs past --timeout, output that breaks the contract (shape, dtype, device,
     ids out of range, -1 holes).  Nothing is written.
Progress (one bar with percentage and ETA) goes to stderr.

Layer: harness.cli (level 5, the top); may import every harness room below it (report, bench,
drift, check, exact, files), proofs and impls.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import math
from typing import Any, Callable

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.claims.loading import load_object
from specproof.proofs.laws.step_rules import step_rules

from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT
from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import CHECK
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import check_engine, options

__all__ = ["add_parser", "load_verifier", "SCHEMA", "CONTRACTS"]

SCHEMA = CHECK.schema


def load_verifier(spec: str) -> Callable[..., Any]:
    """Resolve TARGET and check it can be called with the batched contract's four arguments."""
    fn = load_object(spec, "TARGET")
    if not callable(fn):
        raise SpecproofInputError("TARGET", f"{spec!r} is a {type(fn).__name__}, not a function",
                                  "name a function verify(draft_probs, target_probs, draft_token_ids, generator)")
    try:
        inspect.signature(fn).bind(None, None, None, None)
    except TypeError:
        raise SpecproofInputError(
            "TARGET", f"{spec!r} has signature {inspect.signature(fn)}, which cannot take the batched "
            "contract's four arguments", "accept (draft_probs, target_probs, draft_token_ids, generator)") from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    return fn


# the names of specproof.impls.adapters.ADAPTER_NAMES (importing impls imports torch, which the parser
# must not; tests/harness/cli/test_check_cli.py keeps the two equal)
ADAPTER_HELP = "vllm-v1, vllm-v0, flashinfer, transformers or sglang-tree"
CONTRACTS = {"batched": None, "tree": "specproof.harness.cli.check_tree",
             "generate": "specproof.harness.cli.check_generate"}  # contract -> the module that serves it


def _contract_module(name: str) -> Any:
    import importlib

    return importlib.import_module(CONTRACTS[name])


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check", help="check a verifier against the exact reference (RNG edge injection, anytime-valid statistics)",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:function or path/to/file.py:function")
    parser.add_argument("--contract", choices=sorted(CONTRACTS), default="batched",
                        help="what TARGET is: a batched verifier (default), a tree verifier, or a whole "
                             "generate pipeline")
    parser.add_argument("--adapter", metavar="NAME",
                        help=f"TARGET has this runtime's own signature and layout: {ADAPTER_HELP}; the "
                             "adapter converts (its contract follows)")
    options.add_dtype(parser, help="float16, bfloat16, float32 (default) or float64")
    options.add_device(parser, help="cpu (default) or cuda")
    depth = parser.add_mutually_exclusive_group()
    depth.add_argument("--thorough", action="store_true",
                       help="aim at a quarter of --max-detectable-tv, >= 200,000 rows per scenario (nightly)")
    depth.add_argument("--time-budget", type=float, metavar="SECONDS",
                       help="spend this many seconds in all; the verdict states the TV they could see, and "
                            "the injection passes it had no time for are listed as NOT run")
    depth.add_argument("--samples", type=int, help="fixed verifier rows per scenario")
    parser.add_argument("--fail-fast", action="store_true",
                        help="stop at the first finding (the run draws the same rows as without it until then)")
    parser.add_argument("--no-inject", action="store_true", help="skip the RNG edge injection")
    options.add_seed(parser)
    parser.add_argument("--rule", choices=[r.name for r in step_rules()],
                        help="also require the emission law of this rule (default: lossless only)")
    parser.add_argument("--alpha", type=float, default=1e-6, help="family-wise false-alarm probability")
    parser.add_argument("--max-detectable-tv", type=float, default=DEFAULT_MAX_DETECTABLE_TV,
                        help="the power a PASS must have: largest TV the run may be unable to see "
                             f"(default {DEFAULT_MAX_DETECTABLE_TV}); above it the verdict is UNDERPOWERED (exit 3)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds allowed per verifier call (default {DEFAULT_TIMEOUT:g})")
    options.add_json(parser, help="write the result (schema, provenance) to this file")
    options.add_quiet(parser)
    check_engine.add_options(parser)
    for name, module in CONTRACTS.items():
        if module is not None:
            try:
                _contract_module(name).add_options(parser)
            except ModuleNotFoundError:  # a contract whose module is not installed is refused at run time
                pass
    parser.set_defaults(handler=_run)


def _validate(args: argparse.Namespace) -> None:
    if args.samples is not None and args.samples < 64:
        raise SpecproofInputError("--samples", f"{args.samples} is too few", "use at least 64 rows per scenario")
    if args.time_budget is not None and not (math.isfinite(args.time_budget) and args.time_budget > 0):
        raise SpecproofInputError("--time-budget", f"{args.time_budget} is not a positive number of seconds",
                                  "pass e.g. --time-budget 60")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise SpecproofInputError("--timeout", f"{args.timeout} is not a finite number of seconds > 0",
                                  f"pass seconds, e.g. --timeout {DEFAULT_TIMEOUT:g}")
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 1):
        raise SpecproofInputError("--alpha", f"{args.alpha} is not in (0, 1)", "pass e.g. --alpha 1e-6")
    if not (math.isfinite(args.max_detectable_tv) and 0 < args.max_detectable_tv <= 1):
        raise SpecproofInputError("--max-detectable-tv", f"{args.max_detectable_tv} is not in (0, 1]",
                                  f"pass e.g. --max-detectable-tv {DEFAULT_MAX_DETECTABLE_TV}")
    options.check_options(args)  # the seed, then --json: before any work
    check_engine.check_options(args)


def _run(args: argparse.Namespace) -> int:
    _validate(args)
    if args.adapter is not None:
        from specproof.impls.adapters import get_adapter

        adapter = get_adapter(args.adapter)
        if adapter.contract != args.contract and args.contract != "batched":
            raise SpecproofInputError("--adapter", f"{args.adapter} serves the {adapter.contract} contract, "
                                      f"not {args.contract}", f"drop --contract or use --contract {adapter.contract}")
        args.contract = adapter.contract
        check_engine.check_options(args)
    if args.contract != "batched":
        try:
            module = _contract_module(args.contract)
        except ModuleNotFoundError:
            raise SpecproofInputError("--contract", f"the {args.contract} contract is not available in this "
                                      "installation", "use --contract batched") from None
        return module.run(args)
    # a local Ray starts in the background from here (check_engine.engine_for), while torch, the laws and
    # the verifier load; a usage error below waits for that start, then stops it, so a TARGET that does
    # not exist is refused first; SIGTERM stops the check as Ctrl-C does (exit 130, Ray stopped)
    if args.engine == "ray":
        from specproof.proofs.claims.loading import locate_object

        locate_object(args.target, "TARGET")
    with options.sigterm_as_interrupt() if args.engine == "ray" else contextlib.nullcontext(), \
            check_engine.engine_for(args) as engine:
        from specproof.harness.check.runner import check_verifier  # torch and the exact laws: only once a check runs

        if args.adapter is not None:
            verify = adapter.wrap(load_object(args.target, "TARGET"))
        else:
            verify = load_verifier(args.target)
        try:
            result = check_verifier(verify, dtype=args.dtype, device=args.device, samples=args.samples,
                                    seed=args.seed, alpha=args.alpha, rule=args.rule, timeout=args.timeout,
                                    max_detectable_tv=args.max_detectable_tv, progress=not args.quiet,
                                    hard_timeout=True, level="thorough" if args.thorough else "default",
                                    time_budget=args.time_budget, fail_fast=args.fail_fast,
                                    inject=not args.no_inject, engine=engine)
        except SpecproofInputError as err:  # name the command-line flag rather than the API parameter
            flag = {"device": "--device", "dtype": "--dtype"}.get(err.argument)
            if flag is None:
                raise
            raise SpecproofInputError(flag, err.problem, err.fix) from None
    print(result.summary())
    if args.json:
        write_envelope(args.json, CHECK, {"target": args.target, "adapter": args.adapter, "result": result.as_json()},
                       provenance(device=args.device, dtypes=[result.dtype], seeds=[args.seed]))
        print(f"wrote {args.json}")
    return result.exit_code
