"""``specproof prove``: prove or refute verifier rules and write certificates.

    specproof prove --all [--json PATH]
    specproof prove --rule canonical --rule path/to/my_rules.py:my_rule [--json PATH]

Prints one line per rule (name, claim, verdict, whether it is the expected one, time, TV when
refuted, method) and, with ``--all``, the theorems T1-T7.  ``--json`` writes
``{"schema": 1, "provenance": ..., "results": [...], "theorems": [...], "summary": ...}`` atomically;
exact values are ``"num/den"`` strings.  Exit 0 when every rule got its expected verdict (and every
theorem is PROVED), 1 otherwise, 2 on a usage error (nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from specproof.proofs import DEFAULT_RLIMIT, ProofResult, SpecproofInputError

from .provenance import provenance, write_json

__all__ = ["add_parser", "run", "SCHEMA"]

SCHEMA = 1

EPILOG = """\
user rules: write acceptance(ar, p, q) and residual_weight(ar, p, q) with Arith operations only
(ar.minimum, ar.safe_div, ar.relu, ...), wrap them in specproof.proofs.StepRule(name=..., claim="exact"
or "not-exact", description=..., acceptance=..., residual_weight=...) in a .py file, then
  specproof prove --rule path/to/file.py:variable_name
exit codes: 0 every verdict as expected, 1 some verdict unexpected, 2 usage error.
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "prove", help="prove verifier rules exact or refute them with exact counterexamples",
        description="Prove each rule's claim (exact -> PROVED, not-exact -> REFUTED with a counterexample).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every catalogue rule and the theorems T1-T7")
    parser.add_argument("--rule", action="append", default=[], metavar="RULE",
                        help="a catalogue rule name or PATH.py:NAME (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="write the certificates to PATH (atomically)")
    parser.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT,
                        help=f"z3 resource limit per check (deterministic; default {DEFAULT_RLIMIT})")
    parser.add_argument("--no-drift", action="store_true", help="skip the worst-case drift of refuted rules")
    parser.set_defaults(handler=run)
    return parser


def _line(result: ProofResult) -> str:
    tv = f"TV={result.tv}" if result.tv is not None else "-"
    status = "ok" if result.ok else f"EXPECTED {result.expected.value}"
    return (f"{result.rule:<40} {result.claim:<9} {result.verdict.value:<12} {status:<16} "
            f"{result.seconds:7.2f}s  {tv:<10} {result.method}")


def _check_json_path(path_text: str | None) -> Path | None:
    if path_text is None:
        return None
    path = Path(path_text)
    if path.is_dir():
        raise SpecproofInputError("--json", f"{path_text!r} is a directory", "give a file path, e.g. proofs.json")
    parent = path.parent if str(path.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise SpecproofInputError("--json", f"{existing} is not a directory", "give a path inside a directory")
    return path


def run(args: argparse.Namespace) -> int:
    from specproof.proofs import Settings, catalogue, prove_theorem, resolve_rule, theorems

    if not args.all and not args.rule:
        raise SpecproofInputError("prove", "no rule selected", "pass --all or --rule NAME (or PATH.py:NAME)")
    if args.rlimit < 1:
        raise SpecproofInputError("--rlimit", f"{args.rlimit} is not positive", "pass a positive resource limit")
    json_path = _check_json_path(args.json)
    entries = list(catalogue()) if args.all else []
    seen = {e.name for e in entries}
    for spec in args.rule:  # resolve every rule before proving anything: usage errors come first
        entry = resolve_rule(spec)
        if entry.name not in seen:
            entries.append(entry)
            seen.add(entry.name)
    settings = Settings(rlimit=args.rlimit, drift=not args.no_drift)
    start = time.perf_counter()
    results: list[ProofResult] = []
    for entry in entries:
        result = entry.prove(settings)
        results.append(result)
        print(_line(result), flush=True)
    theorem_results: list[ProofResult] = []
    if args.all:
        for theorem in theorems():
            result = prove_theorem(theorem, rlimit=args.rlimit)
            theorem_results.append(result)
            print(_line(result), flush=True)
    seconds = time.perf_counter() - start
    unexpected = [r.rule for r in results + theorem_results if not r.ok]
    summary = {"rules": len(results), "theorems": len(theorem_results), "unexpected": unexpected,
               "seconds": round(seconds, 3)}
    if unexpected:
        print(f"{len(unexpected)} unexpected verdict(s): {', '.join(unexpected)} ({seconds:.1f}s)")
    else:
        print(f"{len(results)} rule(s), {len(theorem_results)} theorem(s): every verdict as expected "
              f"({seconds:.1f}s)")
    if json_path is not None:
        write_json(json_path, {
            "schema": SCHEMA,
            "provenance": provenance(extra={"command": "prove", "argv": sys.argv[1:]}),
            "results": [r.as_json() for r in results],
            "theorems": [r.as_json() for r in theorem_results],
            "summary": summary,
        })
    return 1 if unexpected else 0
