"""``specproof check TARGET --contract tree``: the tree / multi-draft contract's options and run.

TARGET is a function ``verify(parents, draft_probs, target_probs, node_tokens, generator) -> emitted``
(``harness/check/tree_contract.py`` states the tensors), or a runtime's function with
``--adapter sglang-tree``.  Exit codes as ``specproof check``: 0 PASS, 1 FAIL, 3 UNDERPOWERED, 2 usage
error (bad flags, a target of the wrong signature, a verifier that raises or breaks the output
contract).  Served by ``harness/cli/check.py`` (``--contract tree``), which owns the shared flags;
this module adds ``--siblings`` only and imports torch only once a check runs.

Layer: harness.cli (level 5, the top); may import every harness room below it, proofs and impls.
"""

from __future__ import annotations

import argparse
import inspect
import math
from typing import Any, Callable

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.claims.loading import load_object

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import CHECK
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options

__all__ = ["add_options", "run", "load_tree_verifier", "SCHEMES"]

SCHEMES = ("iid", "distinct", "topk")  # harness.check.tree_laws.SCHEMES (kept torch-free here; tested equal)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The tree contract's own flags (none of ``specproof check``'s shared ones)."""
    parser.add_argument("--siblings", default=",".join(SCHEMES), metavar="SCHEMES",
                        help="tree contract: sibling schemes to test, comma-separated from "
                             f"{', '.join(SCHEMES)} (default all: i.i.d., without replacement, top-k)")


def _schemes(text: str) -> tuple[str, ...]:
    chosen = tuple(s.strip() for s in str(text).split(",") if s.strip())
    bad = [s for s in chosen if s not in SCHEMES]
    if bad or not chosen:
        raise SpecproofInputError("--siblings", f"{text!r} names no scheme or unknown ones ({', '.join(bad)})",
                                  f"use a comma-separated subset of {', '.join(SCHEMES)}")
    return chosen


def load_tree_verifier(spec: str, adapter: str | None = None) -> Callable[..., Any]:
    """Resolve TARGET (wrapped by ``adapter`` when given) and check it takes the five tree arguments."""
    fn = load_object(spec, "TARGET")
    if not callable(fn):
        raise SpecproofInputError("TARGET", f"{spec!r} is a {type(fn).__name__}, not a function",
                                  "name a function verify(parents, draft_probs, target_probs, node_tokens, generator)")
    if adapter:
        from specproof.impls.adapters import get_adapter

        chosen = get_adapter(adapter)
        if chosen.contract != "tree":
            raise SpecproofInputError("--adapter", f"{adapter!r} serves the {chosen.contract} contract, not tree",
                                      "drop --contract tree, or use --adapter sglang-tree")
        return chosen.wrap(fn)
    try:
        inspect.signature(fn).bind(None, None, None, None, None)
    except TypeError:
        raise SpecproofInputError(
            "TARGET", f"{spec!r} has signature {inspect.signature(fn)}, which cannot take the tree contract's "
            "five arguments", "accept (parents, draft_probs, target_probs, node_tokens, generator), "
            "or pass --adapter for a runtime's layout") from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    return fn


def _check_numbers(args: argparse.Namespace) -> None:
    samples = getattr(args, "samples", None)
    if samples is not None and samples < 64:
        raise SpecproofInputError("--samples", f"{samples} is too few", "use at least 64 rows per scenario")
    for flag, value, ok, example in (
            ("--timeout", getattr(args, "timeout", None), lambda x: math.isfinite(x) and x > 0, "--timeout 120"),
            ("--alpha", getattr(args, "alpha", None), lambda x: math.isfinite(x) and 0 < x < 1, "--alpha 1e-6"),
            ("--max-detectable-tv", getattr(args, "max_detectable_tv", None),
             lambda x: math.isfinite(x) and 0 < x <= 1, "--max-detectable-tv 0.02"),
            ("--time-budget", getattr(args, "time_budget", None), lambda x: math.isfinite(x) and x > 0,
             "--time-budget 60")):
        if value is not None and not ok(value):
            raise SpecproofInputError(flag, f"{value} is out of range", f"pass e.g. {example}")
    if getattr(args, "rule", None):
        raise SpecproofInputError("--rule", "names a single-step rule, which the tree contract does not use",
                                  "drop --rule with --contract tree")


def run(args: argparse.Namespace) -> int:
    """Run the tree check for ``specproof check --contract tree``; returns the exit code."""
    _check_numbers(args)
    schemes = _schemes(getattr(args, "siblings", ",".join(SCHEMES)))
    options.check_options(args)  # the seed, then --json: before any work
    verify = load_tree_verifier(args.target, getattr(args, "adapter", None))
    from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT
    from specproof.harness.check.tree_runner import check_tree  # torch and the exact laws: only now
    from specproof.harness.check.tree_scenarios import default_tree_suite

    suite = [s for s in default_tree_suite() if s.scheme in schemes]
    try:
        result = check_tree(
            verify, dtype=getattr(args, "dtype", "float32"), device=getattr(args, "device", "cpu"),
            seed=getattr(args, "seed", 0), samples=getattr(args, "samples", None),
            level="thorough" if getattr(args, "thorough", False) else "default",
            alpha=getattr(args, "alpha", 1e-6), timeout=getattr(args, "timeout", DEFAULT_TIMEOUT),
            fail_fast=bool(getattr(args, "fail_fast", False)),
            max_detectable_tv=getattr(args, "max_detectable_tv", DEFAULT_MAX_DETECTABLE_TV) or DEFAULT_MAX_DETECTABLE_TV,
            time_budget=getattr(args, "time_budget", None), progress=not getattr(args, "quiet", False),
            inject=not getattr(args, "no_inject", False), scenarios=suite, hard_timeout=True)
    except SpecproofInputError as err:  # name the command-line flag rather than the API parameter
        flag = {"device": "--device", "dtype": "--dtype", "samples": "--samples"}.get(err.argument)
        if flag is None:
            raise
        raise SpecproofInputError(flag, err.problem, err.fix) from None
    print(result.summary())
    out = getattr(args, "json", None)
    if out:
        write_envelope(out, CHECK, {"target": args.target, "contract": "tree", "siblings": list(schemes),
                                    "result": result.as_json()},
                       provenance(device=result.device, dtypes=[result.dtype], seeds=[result.seed]))
        print(f"wrote {out}")
    return result.exit_code
