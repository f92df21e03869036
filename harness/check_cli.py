"""``specproof check TARGET``: run the statistical check on a batched-contract verifier.

    specproof check TARGET [--dtype D] [--device DEV] [--samples N] [--seed S] [--json PATH]

TARGET is ``package.module:function`` or ``path/to/file.py:function``, a function
``verify(draft_probs, target_probs, draft_token_ids, generator) -> emitted``.  Exit 0 when no drift
beyond the dtype's tolerance is detected, 1 when it is (the findings are printed), 2 on usage errors:
target not found, wrong signature, a verifier that raises or hangs past ``--timeout``, output that
breaks the contract (shape, dtype, ids out of range, -1 holes).  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.loading import load_object
from specproof.proofs.rules import step_rules

from .check import DEFAULT_SAMPLES, check_verifier
from .provenance import provenance, write_json

__all__ = ["add_parser", "load_verifier", "SCHEMA"]

SCHEMA = 1


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
    parser.add_argument("--dtype", default="float32", help="float16, bfloat16, float32 (default) or float64")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                        help=f"verifier rows per scenario (default {DEFAULT_SAMPLES})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rule", choices=[r.name for r in step_rules()],
                        help="also require the emission law of this rule (default: lossless only)")
    parser.add_argument("--alpha", type=float, default=1e-6, help="family-wise false-alarm probability")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per verifier call")
    parser.add_argument("--json", type=Path, help="write the result (schema, provenance) to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.samples < 64:
        raise SpecproofInputError("--samples", f"{args.samples} is too few", "use at least 64 rows per scenario")
    if args.timeout <= 0:
        raise SpecproofInputError("--timeout", f"{args.timeout} is not positive", "pass seconds > 0")
    verify = load_verifier(args.target)

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"specproof check: {message}", file=sys.stderr, flush=True)

    result = check_verifier(verify, dtype=args.dtype, device=args.device, samples=args.samples,
                            seed=args.seed, alpha=args.alpha, rule=args.rule, timeout=args.timeout,
                            progress=progress)
    print(result.summary())
    if args.json:
        data = {"schema": SCHEMA, "kind": "check", "target": args.target,
                "provenance": provenance(device=args.device, dtypes=[result.dtype], seeds=[args.seed]),
                "result": result.as_json()}
        write_json(args.json, data)
        print(f"wrote {args.json}")
    return 0 if result.passed else 1
