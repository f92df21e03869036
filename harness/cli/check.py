"""``specproof check TARGET``: is a verifier lossless?  A verdict with the power it had.

    specproof check TARGET [--thorough | --time-budget S | --samples N] [--fail-fast] [--dtype D]
                           [--device DEV] [--seed S] [--rule R] [--adapter A] [--contract C] [--json PATH]

TARGET is package.module:function or path/to/file.py:function, by default a batched verifier
verify(draft_probs [B,K,V], target_probs [B,K+1,V], draft_token_ids [B,K], generator) -> emitted
[B,K+1] (int64, -1 padded).  --adapter wraps a runtime's own layout (vllm-v1, vllm-v0, flashinfer,
transformers, sglang-tree); --contract tree / generate checks a tree verifier
verify(parents, draft_probs, target_probs, node_tokens, generator) or a whole pipeline
generate(target, draft, prompt_ids, max_new_tokens, sampling, generator).  A flag of one contract
given to another (--rule, --siblings, --models, --temperature, --top-k, --top-p, --min-p,
--new-tokens) is a usage error.
TARGET is imported and executed with your user's rights: check only code you trust.  It runs in a
supervised child process (--in-process: in this one), so its os._exit, death by a signal, a hang past
--timeout, a lingering non-daemon thread or an os.chdir is exit 2 naming what it did.
A path.py target's folder is put on sys.path, so it can import modules beside it.

What runs, for every contract (the statistics first, up to as many rows as the reproducibility pair
and the injection cost, then those two, then the rest; --fail-fast stops at the first finding, after
the same rows):
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
  0  PASS: no drift beyond the band (derived from the precision the verifier is seen to use, the
     dtype's worst case when it cannot be seen, or --max-drift), and the run had the power to see a deviation of
     total variation --max-detectable-tv on a tested event with probability 0.99 (printed as
     "Detectable TV"); the family-wise probability of a false FAIL is at most --alpha (1e-6);
  1  FAIL: a finding - certain (a probability-0 emission, also under injection) or statistical
     (evidence past its threshold); a one-line diagnosis, then at most 10 findings (all in --json);
     or two same-seed runs of one batch differ (the verifier ignores its generator);
  3  UNDERPOWERED: nothing found, but the run could not see --max-detectable-tv (raise the level or
     the budget), or every scenario's band is at least the bound (state --max-drift, or a wider dtype);
     a scenario whose band alone reaches the bound is out of scope and named, not judged;
  4  INCONCLUSIVE (--engine ray, any contract): a shard of the rows failed for good (its retries
     spent); the reason is printed, nothing is concluded;
  2  usage error: bad arguments, target not found or wrong signature, a verifier that raises,
     calls sys.exit, or runs past --timeout, output that breaks the contract (shape, dtype, device,
     ids out of range, -1 holes).  Nothing is written.
Progress (one bar with percentage and ETA) goes to stderr.

"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from specproof.errors import SpecproofInputError
from specproof.harness.check.options import CI_MAX_DETECTABLE_TV, LEVEL_NAMES
from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT
from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import CHECK
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import check_engine, options

__all__ = ["add_parser", "SCHEMA"]

SCHEMA = CHECK.schema


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check", help="check a verifier or pipeline against the exact reference (RNG edge injection, "
                      "anytime-valid statistics)",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:function or path/to/file.py:function")
    options.add_contract_options(parser)
    options.add_dtype(parser, help="float16, bfloat16, float32 (default) or float64")
    options.add_device(parser, help="cpu (default) or cuda")
    depth = parser.add_mutually_exclusive_group()
    depth.add_argument("--thorough", action="store_true",
                       help="aim at a quarter of --max-detectable-tv, >= 200,000 rows per scenario (nightly)")
    depth.add_argument("--time-budget", type=float, metavar="SECONDS",
                       help="spend this many seconds in all; the verdict states the TV they could see, and "
                            "the injection passes it had no time for are listed as NOT run")
    depth.add_argument("--samples", type=int, help="fixed rows per scenario")
    depth.add_argument("--level", choices=LEVEL_NAMES, default=None,
                       help="ci: a test suite's preset (a few seconds for a plain torch verifier; states its "
                            f"detectable TV, {CI_MAX_DETECTABLE_TV:g} unless --max-detectable-tv says otherwise); "
                            "default; thorough (= --thorough)")
    parser.add_argument("--fail-fast", action="store_true",
                        help="stop at the first finding (the run draws the same rows as without it until then)")
    parser.add_argument("--collect-all", action="store_true",
                        help="run every scenario's quota after a finding (default: stop once the verdict is settled: "
                             "at a certain finding, or at twice the rows of the first statistical one)")
    parser.add_argument("--save-failure", metavar="DIR",
                        help="on a certain finding, write the smallest failing case to DIR: failure.pt (p, q, draft "
                             "ids, generator seed, emitted tokens) and test_specproof_failure.py, a plain pytest test "
                             "that fails on it without specproof's statistics")
    parser.add_argument("--no-inject", action="store_true", help="skip the RNG edge injection")
    parser.add_argument("--accept-rate", type=float, metavar="RATE",
                        help="accept certain rare-draw findings whose real-generator rate is at most RATE per "
                             "round (a rigorous bound; listed as accepted residues, not part of the verdict)")
    options.add_seed(parser)
    parser.add_argument("--alpha", type=float, default=1e-6, help="family-wise false-alarm probability")
    parser.add_argument("--max-detectable-tv", type=float, default=DEFAULT_MAX_DETECTABLE_TV,
                        help="the power a PASS must have: largest TV the run may be unable to see "
                             f"(default {DEFAULT_MAX_DETECTABLE_TV}); above it the verdict is UNDERPOWERED (exit 3)")
    parser.add_argument("--max-drift", type=float, default=None, metavar="TV",
                        help="the drift you accept: the null band in TV (PASS: no tested event deviates by more, "
                             "with the stated power); default: derived from the precision the verifier is "
                             "observed to use, else the dtype's worst case")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds allowed per call of TARGET (default {DEFAULT_TIMEOUT:g})")
    options.add_json(parser, help="write the result (schema, provenance) to this file")
    options.add_quiet(parser)
    parser.add_argument("--in-process", action="store_true",
                        help="run TARGET in this process, not in a supervised child: TARGET's os._exit, "
                             "lingering threads or os.chdir then act on the command itself (README: Supervision)")
    check_engine.add_options(parser)
    parser.set_defaults(handler=_run)


def _options(args: argparse.Namespace, contract: str) -> Any:
    """The check's options from the flags, validated once; errors name the flag."""
    from specproof.harness.check.options import CheckOptions

    chosen = dict(dtype=args.dtype, device=args.device, seed=args.seed, alpha=args.alpha, samples=args.samples,
                  time_budget=args.time_budget, max_detectable_tv=args.max_detectable_tv, timeout=args.timeout,
                  max_drift=args.max_drift, fail_fast=args.fail_fast, collect_all=args.collect_all,
                  inject=not args.no_inject, accept_rate=args.accept_rate, progress=not args.quiet, hard_timeout=True,
                  level=args.level or ("thorough" if args.thorough else "default"), **options.contract_options(args))
    try:
        return CheckOptions.build(contract, **chosen)
    except SpecproofInputError as err:  # name the command-line flag rather than the API parameter
        raise options.flagged(err, args) from None


def _checked(args: argparse.Namespace, check_options: Any, hard_timeout: bool) -> tuple[Any, str]:
    """Import TARGET (under --timeout when supervised), run the one driver and, on a certain finding, save
    the smallest failing case (--save-failure; the target runs again there): ``(result, contract, note)``,
    the note saying why nothing was saved."""
    from specproof.harness.check.supervise import watch

    with check_engine.engine_for(args) as engine:
        from specproof.harness.check.driver import run_check  # torch and the exact laws: only once a check runs
        from specproof.harness.check.targets import load_target

        with watch(check_options.timeout, "the import of TARGET", interrupted=False):
            target, name = load_target(args.target, args.contract, args.adapter)
        try:
            result = run_check(target, check_options.with_(engine=engine, hard_timeout=hard_timeout))
        except SpecproofInputError as err:
            raise options.flagged(err, args) from None
    from specproof.harness.check.replay import rerun_line, save_failure

    result.rerun = rerun_line(args.target, check_options, args.adapter)
    unsaved = None
    if args.save_failure and result.flagged:
        with watch(check_options.timeout, "the replay of the failing call (--save-failure)", interrupted=False):
            saved = None if args.adapter else save_failure(result, target, args.save_failure, args.target, check_options)
        result.saved = [str(p) for p in saved or ()]
        if saved is None:
            unsaved = ("--save-failure: nothing written (" + ("the case is saved in the batched layout, not an "
                       "adapter's" if args.adapter else "no finding of the statistics that a check of one scenario reproduces; the "
                       "rerun line reproduces this FAIL") + ")")
    return result.settle(), name, unsaved


def _run(args: argparse.Namespace) -> int:
    from specproof.harness.check.targets import target_contract

    contract = target_contract(args.contract, args.adapter)
    options.check_options(args, inputs=(options.target_file(args.target),))  # the seed, then --json
    check_options = _options(args, contract)  # every other flag, before any work
    check_engine.check_options(args)
    # a local Ray starts in the background from here (check_engine.engine_for), while torch, the laws and
    # the target load; a usage error below waits for that start, then stops it, so a TARGET that does
    # not exist is refused first; SIGTERM stops the check as Ctrl-C does (exit 130, Ray stopped)
    if args.engine == "ray":
        from specproof.loading import locate_object

        locate_object(args.target, "TARGET")
    with options.sigterm_as_interrupt() if args.engine == "ray" or not args.in_process else contextlib.nullcontext():
        if args.in_process or args.engine == "ray":  # under Ray, TARGET runs in Ray's worker processes
            result, name, unsaved = _checked(args, check_options, hard_timeout=True)
        else:  # TARGET is imported and run in a supervised child: only its answer reaches this process
            from specproof.harness.check.supervise import supervised

            result, name, unsaved = supervised(lambda: _checked(args, check_options, hard_timeout=False),
                                               args.target)
    print(result.summary())
    if unsaved:
        print(unsaved)
    if args.json:
        write_envelope(args.json, CHECK, {"target": args.target, "adapter": args.adapter, "contract": name,
                                          "contract_options": check_options.contract_values(),
                                          "result": result.as_json()},
                       provenance(device=result.device, dtypes=[result.dtype], seeds=[args.seed]))
        print(f"wrote {args.json}")
    return result.exit_code
