"""``specproof check TARGET --contract generate``: a whole speculative-decoding pipeline's options and run.

TARGET is ``generate(target, draft, prompt_ids, max_new_tokens, sampling, generator) -> [B, N]``
(``harness/check/pipeline_contract.py`` states the contract), or a runtime's function with an
``--adapter`` of the generate contract.  Flags of this contract only:

* ``--models table|transformers``: table models (default; exact lookups) or tiny seeded Llama models
  that ``transformers``' own ``generate(assistant_model=...)`` accepts;
* ``--temperature T``, ``--top-k K`` (0: off), ``--top-p P`` (1.0: off), ``--min-p M`` (0: off): run
  every model pair of the suite under this one setting instead of the suite's own settings;
* ``--new-tokens N``: tokens per row (the exact law enumerates ``V^N <= 65,536`` sequences).

Exit codes as ``specproof check``: 0 PASS, 1 FAIL, 3 UNDERPOWERED, 2 usage error (bad flags, a target
of the wrong signature, a pipeline that raises, hangs or breaks the contract, a model called wrongly).
Imports torch only once a check runs.

Layer: harness.cli (level 5, the top); may import every harness room below it, proofs and impls.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.claims.loading import load_object

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import CHECK
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options

__all__ = ["add_options", "run", "load_generate", "MODELS"]

MODELS = ("table", "transformers")
_FLAGS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p", "min_p": "--min-p",
          "new_tokens": "--new-tokens", "sampling": "--temperature/--top-k/--top-p/--min-p",
          "device": "--device", "dtype": "--dtype", "rows": "--samples"}


def add_options(parser: argparse.ArgumentParser) -> None:
    """The generate contract's own flags (none of ``specproof check``'s shared ones)."""
    parser.add_argument("--models", choices=MODELS, default="table",
                        help="generate contract: table models (default) or tiny transformers Llama models")
    parser.add_argument("--temperature", type=float, help="generate contract: sampling temperature (> 0)")
    parser.add_argument("--top-k", type=int, help="generate contract: top-k (0 or unset: off)")
    parser.add_argument("--top-p", type=float, help="generate contract: top-p in (0, 1] (1.0 or unset: off)")
    parser.add_argument("--min-p", type=float, help="generate contract: min-p in [0, 1] (0 or unset: off)")
    parser.add_argument("--new-tokens", type=int, metavar="N",
                        help="generate contract: new tokens per row (default per scenario, 5 for tables)")


def load_generate(spec: str, adapter: str | None = None) -> Callable[..., Any]:
    """Resolve TARGET (wrapped by ``adapter`` when given) and check it takes the six generate arguments."""
    from specproof.harness.check.pipeline_contract import check_generate_signature

    fn = load_object(spec, "TARGET")
    if adapter:
        from specproof.impls.adapters import get_adapter

        chosen = get_adapter(adapter)
        if chosen.contract != "generate":
            raise SpecproofInputError("--adapter", f"{adapter!r} serves the {chosen.contract} contract, not generate",
                                      "drop --contract generate, or use an adapter of the generate contract")
        fn = chosen.wrap(fn)
    return check_generate_signature(fn, "TARGET")


def _sampling(args: argparse.Namespace) -> Any:
    values = {name: getattr(args, name, None) for name in ("temperature", "top_k", "top_p", "min_p")}
    if all(v is None for v in values.values()):
        return None
    from specproof.harness.exact.sampling import Sampling

    if values["top_k"] is not None and values["top_k"] < 0:
        raise SpecproofInputError("--top-k", f"{values['top_k']} is negative", "pass k >= 1, or 0 for off")
    return Sampling.from_runtime(1.0 if values["temperature"] is None else values["temperature"],
                                 values["top_k"], values["top_p"], values["min_p"])


def _suite(args: argparse.Namespace, sampling: Any) -> list[Any]:
    new_tokens = getattr(args, "new_tokens", None)
    if new_tokens is not None and new_tokens < 1:
        raise SpecproofInputError("--new-tokens", f"{new_tokens} is not >= 1", "pass e.g. --new-tokens 5")
    if getattr(args, "models", "table") == "transformers":
        try:
            from specproof.harness.check.pipeline_transformers import transformers_suite

            return transformers_suite(sampling, new_tokens)
        except ModuleNotFoundError as err:
            raise SpecproofInputError("--models", f"transformers models need the transformers package ({err})",
                                      "pip install specproof[transformers], or use --models table") from None
    from specproof.harness.check.pipeline_scenarios import pipeline_suite, with_sampling

    return with_sampling(pipeline_suite(), sampling, new_tokens)


def run(args: argparse.Namespace) -> int:
    """Run the pipeline check for ``specproof check --contract generate``; returns the exit code."""
    if getattr(args, "rule", None):
        raise SpecproofInputError("--rule", "names a single-step rule, which the generate contract does not use",
                                  "drop --rule with --contract generate")
    options.check_options(args)  # the seed, then --json: before any work
    sampling = None
    try:
        sampling = _sampling(args)
        generate = load_generate(args.target, getattr(args, "adapter", None))
        from specproof.harness.check.pipeline_check import check_generate  # torch and the exact laws: only now
        from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT

        suite = _suite(args, sampling)
        result = check_generate(
            generate, scenarios=suite, dtype=getattr(args, "dtype", "float32"), device=getattr(args, "device", "cpu"),
            seed=getattr(args, "seed", 0), rows=getattr(args, "samples", None),
            level="thorough" if getattr(args, "thorough", False) else "default",
            alpha=getattr(args, "alpha", 1e-6), timeout=getattr(args, "timeout", DEFAULT_TIMEOUT),
            fail_fast=bool(getattr(args, "fail_fast", False)),
            max_detectable_tv=getattr(args, "max_detectable_tv", None) or DEFAULT_MAX_DETECTABLE_TV,
            time_budget=getattr(args, "time_budget", None), progress=not getattr(args, "quiet", False),
            inject=not getattr(args, "no_inject", False), hard_timeout=True)
    except SpecproofInputError as err:  # name the command-line flag rather than the API parameter
        flag = _FLAGS.get(err.argument)
        if err.argument == "sampling" and sampling is None:  # the suite's own settings: the dtype decides
            flag = "--dtype"
        if flag is None:
            raise
        raise type(err)(flag, err.problem, err.fix) from None
    print(result.summary())
    out = getattr(args, "json", None)
    if out:
        write_envelope(out, CHECK, {"target": args.target, "contract": "generate",
                                    "models": getattr(args, "models", "table"),
                                    "sampling": None if sampling is None else sampling.describe(),
                                    "result": result.as_json()},
                       provenance(device=result.device, dtypes=[result.dtype], seeds=[result.seed]))
        print(f"wrote {out}")
    return result.exit_code
