"""``specproof check TARGET``: run the statistical check on a batched-contract verifier.

    specproof check TARGET [--dtype D] [--device DEV] [--samples N] [--seed S] [--json PATH]

TARGET is package.module:function or path/to/file.py:function, a function
verify(draft_probs, target_probs, draft_token_ids, generator) -> emitted.  TARGET is imported and
executed in this process with your user's rights: check only code you trust.  A path.py target's
folder is put on sys.path, so it can import modules beside it.

Exit codes:
  0  PASS: no drift beyond the dtype's tolerance, and the run had the power to see a deviation of
     total variation --max-detectable-tv (default 0.05) on a tested event (probability 0.99);
  1  FAIL: drift found (a one-line diagnosis, then at most 10 findings; all of them in --json),
     or two same-seed runs of one batch differ (the verifier ignores its generator);
  3  UNDERPOWERED: nothing found, but the detectable TV exceeds --max-detectable-tv (raise
     --samples; bfloat16's tolerance alone can exceed any useful bound);
  2  usage error: bad arguments, target not found or wrong signature, a verifier that raises,
     calls sys.exit, or runs past --timeout, output that breaks the contract (shape, dtype, device,
     ids out of range, -1 holes).  Nothing is written.
Progress (one bar with percentage and ETA) goes to stderr.  At the default 200,000 rows per
scenario a float32 check of a built-in verifier takes about 3 minutes on a busy 2-core CPU (171 s
measured for specproof.impls:canonical_ratio_race; 205 s for a float16 run).

Layer: harness.cli (level 5, the top); may import every harness room below it (report, bench,
drift, check, exact, files), proofs and impls.
"""

from __future__ import annotations

import argparse
import inspect
import math
from typing import Any, Callable

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.claims.loading import load_object
from specproof.proofs.laws.step_rules import step_rules

from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_SAMPLES, DEFAULT_TIMEOUT
from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import CHECK
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options

__all__ = ["add_parser", "load_verifier", "SCHEMA"]

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


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check", help="statistically check a batched verifier against the exact reference",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:function or path/to/file.py:function")
    options.add_dtype(parser, help="float16, bfloat16, float32 (default) or float64")
    options.add_device(parser, help="cpu (default) or cuda")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                        help=f"verifier rows per scenario (default {DEFAULT_SAMPLES})")
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
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.samples < 64:
        raise SpecproofInputError("--samples", f"{args.samples} is too few", "use at least 64 rows per scenario")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise SpecproofInputError("--timeout", f"{args.timeout} is not a finite number of seconds > 0",
                                  f"pass seconds, e.g. --timeout {DEFAULT_TIMEOUT:g}")
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 1):
        raise SpecproofInputError("--alpha", f"{args.alpha} is not in (0, 1)", "pass e.g. --alpha 1e-6")
    if not (math.isfinite(args.max_detectable_tv) and 0 < args.max_detectable_tv <= 1):
        raise SpecproofInputError("--max-detectable-tv", f"{args.max_detectable_tv} is not in (0, 1]",
                                  f"pass e.g. --max-detectable-tv {DEFAULT_MAX_DETECTABLE_TV}")
    options.check_options(args)  # the seed, then --json: before any work
    from specproof.harness.check.runner import check_verifier  # torch and the exact laws: only once a check runs

    verify = load_verifier(args.target)
    try:
        result = check_verifier(verify, dtype=args.dtype, device=args.device, samples=args.samples,
                                seed=args.seed, alpha=args.alpha, rule=args.rule, timeout=args.timeout,
                                max_detectable_tv=args.max_detectable_tv, progress=not args.quiet,
                                hard_timeout=True)
    except SpecproofInputError as err:  # name the command-line flag rather than the API parameter
        flag = {"device": "--device", "dtype": "--dtype"}.get(err.argument)
        if flag is None:
            raise
        raise SpecproofInputError(flag, err.problem, err.fix) from None
    print(result.summary())
    if args.json:
        write_envelope(args.json, CHECK, {"target": args.target, "result": result.as_json()},
                       provenance(device=args.device, dtypes=[result.dtype], seeds=[args.seed]))
        print(f"wrote {args.json}")
    return result.exit_code
