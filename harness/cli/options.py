"""The options several commands share, declared once: ``--json``, ``--out``, ``--quiet``, ``--device``,
``--dtype``, ``--seed``, and the check contracts' own (:func:`add_contract_options`: ``--contract``,
``--adapter`` and each contract's flags, the same for ``check`` and ``report``); and their checks,
written once (:func:`check_options`).

A command adds an option with ``add_*``; each output option records itself on the parser (its
destination, its flag, whether it names a file or a folder), so :func:`check_options` checks every
output path the command was given, with
:func:`specproof.harness.files.provenance.check_output_path`, and the seed range, before the command
measures or writes anything.  A bad value raises
:class:`~specproof.errors.SpecproofInputError` naming the flag and the fix (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from specproof.harness.files.provenance import check_output_path, resolve_output
from specproof.errors import SpecproofInputError

__all__ = ["add_json", "add_out", "add_quiet", "add_device", "add_dtype", "add_seed", "check_options", "sigterm_as_interrupt",
           "SEED_LIMIT", "DEVICES", "add_contract_options", "contract_options", "given_contract_flags", "CHECK_FLAGS",
           "CONTRACT_FLAGS", "flagged"]

DEVICES = ("cpu", "cuda")
"""``--device`` choices where a command restricts them: :data:`specproof.impls.registry.DEVICES` (not
imported: that module loads torch, and ``--help`` must not); a test keeps the two equal."""

SEED_LIMIT = 2 ** 63
"""Seeds are integers in ``[0, 2^63)`` (a ``torch.Generator`` seed)."""

_OUTPUTS = "_specproof_outputs"  # parser default: ((dest, flag, what), ...) of the declared output paths
_SEEDS = "_specproof_seeds"  # parser default: the seed destinations to range-check


def _record(parser: argparse.ArgumentParser, key: str, entry: Any) -> None:
    parser.set_defaults(**{key: (*(parser.get_default(key) or ()), entry)})


def add_json(parser: argparse.ArgumentParser, help: str, *, create_folders: bool = False) -> None:
    """``--json PATH``: a file the command writes (atomically); checked before the run.

    ``create_folders``: the writer creates missing folders above the file, so only the nearest
    existing one must be a writable folder."""
    parser.add_argument("--json", type=Path, metavar="PATH", help=help)
    _record(parser, _OUTPUTS, ("json", "--json", "file, folders created" if create_folders else "file"))


def add_out(parser: argparse.ArgumentParser, *, help: str, default: Path | None, folder: bool,
            metavar: str | None = None) -> None:
    """``--out``: the folder (``folder=True``) or file the command writes; checked before the run."""
    parser.add_argument("--out", type=Path, default=default, metavar=metavar or ("DIR" if folder else "PATH"),
                        help=help)
    _record(parser, _OUTPUTS, ("out", "--out", "folder" if folder else "file"))


def add_quiet(parser: argparse.ArgumentParser, help: str = "no progress on stderr") -> None:
    parser.add_argument("--quiet", action="store_true", help=help)


def add_device(parser: argparse.ArgumentParser, *, help: str, choices: tuple[str, ...] | None = None) -> None:
    """``--device`` (default ``cpu``); without ``choices`` the command validates it (e.g. ``cuda:1``)."""
    parser.add_argument("--device", default="cpu", choices=choices, help=help)


def add_dtype(parser: argparse.ArgumentParser, *, help: str, many: bool = False) -> None:
    """``--dtype D`` (default float32), or ``--dtypes D [D ...]`` (default: the command's own set)."""
    if many:
        parser.add_argument("--dtypes", nargs="+", metavar="D", help=help)
    else:
        parser.add_argument("--dtype", default="float32", help=help)


def add_seed(parser: argparse.ArgumentParser, help: str = "integer in [0, 2^63) (default 0)") -> None:
    parser.add_argument("--seed", type=int, default=0, help=help)
    _record(parser, _SEEDS, "seed")


def _rule_names() -> list[str]:
    from specproof.proofs.laws.step_rules import step_rules

    return [r.name for r in step_rules()]


def _sibling_help() -> str:
    from specproof.proofs.laws.tree import SIBLING_MODES

    return (f"sibling modes to judge, comma-separated from {', '.join(SIBLING_MODES)} (default: the modes the "
            "--adapter declares, e.g. sglang-tree: topk; else all)")


def _model_kinds() -> tuple[str, ...]:
    from specproof.harness.check.options import GENERATE_MODELS

    return GENERATE_MODELS


CONTRACT_FLAGS: dict[str, dict[str, Any]] = {
    "--rule": dict(choices=_rule_names, help="also require the emission law of this rule (default: lossless only)"),
    "--vocab": dict(nargs="+", metavar="V", help="vocabulary sizes of the statistical tiled scenarios, one per size "
                    "(e.g. 151936; at most 2^24): judge your runtime's V (default: the tiled rows at V = 151936 "
                    "as a certainty probe, impossible outcomes only)"),
    "--siblings": dict(metavar="MODES", help=_sibling_help),
    "--models": dict(choices=_model_kinds, help="table models (default) or tiny transformers Llama models"),
    "--temperature": dict(type=float, help="sampling temperature (> 0) for every model pair"),
    "--top-k": dict(type=int, help="top-k (0: off)"),
    "--top-p": dict(type=float, help="top-p in (0, 1] (1.0: off)"),
    "--min-p": dict(type=float, help="min-p in [0, 1] (0: off)"),
    "--new-tokens": dict(type=int, metavar="N", help="new tokens per row (default per scenario, 5 for tables; the "
                         "exact law enumerates V^N <= 65,536 sequences)"),
}
"""How each contract's flag parses (callable ``choices`` and ``help`` are read when a parser is built; its contract and option: :data:`specproof.harness.check.contracts.CONTRACTS`,
whose ``options`` name the flags; a flag named there and missing here fails every parser's construction)."""

CHECK_FLAGS = {"samples": "--samples", "device": "--device", "dtype": "--dtype", "seed": "--seed", "alpha": "--alpha",
               "timeout": "--timeout", "time_budget": "--time-budget", "max_detectable_tv": "--max-detectable-tv",
               "accept_rate": "--accept-rate", "max_drift": "--max-drift", "contract": "--contract",
               "temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p", "min_p": "--min-p",
               "rule": "--rule", "vocab": "--vocab", "siblings": "--siblings", "models": "--models",
               "new_tokens": "--new-tokens", "sampling": "--temperature/--top-k/--top-p/--min-p"}
"""Each option of :class:`~specproof.harness.check.options.CheckOptions` (and of ``Sampling``) and the flag that
sets it: a usage error of the options names the flag (:func:`flagged`)."""

_SAMPLING_FLAGS = ("temperature", "top_k", "top_p", "min_p")


def add_contract_options(parser: argparse.ArgumentParser, *, what: str = "TARGET") -> None:
    """``--contract``, ``--adapter`` and, in one group per contract, each contract's own flags (:data:`CONTRACT_FLAGS`,
    in the order of the contract records).  ``check`` and ``report`` both add them here, so the two accept the
    same flags with the same meaning; :func:`contract_options` reads them back."""
    from specproof.harness.check.contracts import CONTRACTS

    parser.add_argument("--contract", choices=list(CONTRACTS), default=None,
                        help=f"what {what} is: " + "; ".join(f"{c.name}: {c.description}" for c in CONTRACTS.values())
                             + " (default batched, or the adapter's)")
    parser.add_argument("--adapter", metavar="NAME",
                        help=f"{what} has this runtime's own signature and layout (README: Runtime layouts; an "
                             "unknown name lists them); the adapter converts, and its contract follows")
    for contract in CONTRACTS.values():
        group = parser.add_argument_group(f"{contract.name} contract")
        for flags in contract.options.values():
            for flag in flags.split("/"):
                spec = {key: value() if callable(value) and key in ("choices", "help") else value
                        for key, value in CONTRACT_FLAGS[flag].items()}
                group.add_argument(flag, **spec)


def given_contract_flags(args: argparse.Namespace) -> list[str]:
    """The contract flags (and ``--contract``, ``--adapter``) given on the command line, in table order."""
    given = [flag for flag in ("--contract", "--adapter") if getattr(args, flag[2:]) is not None]
    return given + [flag for flag in CONTRACT_FLAGS if getattr(args, flag[2:].replace("-", "_")) is not None]


def _sampling(args: argparse.Namespace) -> Any:
    values = {name: getattr(args, name) for name in _SAMPLING_FLAGS}
    if all(v is None for v in values.values()):
        return None
    from specproof.harness.exact.sampling import Sampling

    if values["top_k"] is not None and values["top_k"] < 0:
        raise SpecproofInputError("--top-k", f"{values['top_k']} is negative", "pass k >= 1, or 0 for off")
    return Sampling.from_runtime(1.0 if values["temperature"] is None else values["temperature"],
                                 values["top_k"], values["top_p"], values["min_p"])


def contract_options(args: argparse.Namespace) -> dict[str, Any]:
    """The contract options the flags of :func:`add_contract_options` give, as
    :class:`~specproof.harness.check.options.CheckOptions` keywords (None: not given; the sampling flags make one
    ``sampling``); validate them with ``CheckOptions.build`` (a flag of another contract is refused there)."""
    try:
        sampling = _sampling(args)
    except SpecproofInputError as err:
        raise flagged(err) from None
    return {"rule": args.rule, "vocab": args.vocab, "siblings": args.siblings, "models": args.models,
            "sampling": sampling, "new_tokens": args.new_tokens}


def flagged(err: SpecproofInputError, args: argparse.Namespace | None = None) -> SpecproofInputError:
    """``err`` naming the command-line flag (:data:`CHECK_FLAGS`) instead of the API's option name; for the
    sampling, the sampling flags ``args`` gives (``--temperature``)."""
    flag = CHECK_FLAGS.get(err.argument, err.argument)
    if err.argument == "sampling" and args is not None:
        flag = "/".join(f"--{name.replace('_', '-')}" for name in _SAMPLING_FLAGS
                        if getattr(args, name, None) is not None) or flag
    return type(err)(flag, err.problem, err.fix, err.detail)


def check_options(args: argparse.Namespace, inputs: tuple[Any, ...] = (), **paths: Path | None) -> None:
    """Check the shared options ``args`` carries: the seed range, then every output path, which is made
    absolute in ``args`` before any user code runs (a target that changes the working directory cannot
    move it) and refused when it is one of the command's ``inputs`` (files it reads) or a folder.

    ``paths`` overrides an output's value by destination (``out=...`` when the command resolves a
    default itself, e.g. ``reports/<device>``)."""
    for dest in getattr(args, _SEEDS, ()):
        seed = getattr(args, dest)
        if not 0 <= seed < SEED_LIMIT:
            raise SpecproofInputError(f"--{dest}", f"{seed} is not in [0, 2^63)", f"pass e.g. --{dest} 0")
    for dest, flag, what in getattr(args, _OUTPUTS, ()):
        path = paths.get(dest, getattr(args, dest))
        if path is None:
            continue
        if what == "file, folders created" and not Path(path).parent.exists():
            check_output_path(Path(path).parent, flag, folder=True)  # the writer creates it; no input is in it
            resolved = Path(path).resolve()
        else:
            resolved = resolve_output(path, flag, [i for i in inputs if i], folder=what == "folder")
        if dest not in paths:
            setattr(args, dest, str(resolved))


def target_file(target: str) -> str | None:
    """The file a ``path.py:function`` TARGET names (None for ``package.module:function``)."""
    where, sep, _ = str(target).rpartition(":")
    return where if sep and where.endswith(".py") else None


@contextlib.contextmanager
def sigterm_as_interrupt() -> Any:
    """SIGTERM raised as ``KeyboardInterrupt`` inside the block (the main thread only: signal handlers
    live there), so a killed command stops its workers and keeps the previous report, as Ctrl-C does."""
    import signal
    import threading

    def terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
