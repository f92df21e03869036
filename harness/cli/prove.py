"""``specproof prove``: prove or refute verifier rules and write certificates.

    specproof prove --all [--json PATH]
    specproof prove --rule canonical --rule path/to/my_rules.py:my_rule [--json PATH]

Prints a header, then one line per rule (name, claim, verdict, scope, whether it is the expected
one, time, TV when refuted, method), the witness of a REFUTED rule (p, q, produced law, TV), each
assumption a verdict rests on, a user rule's traced graph with ``--show-trace``, and, with ``--all``, the
theorems T1-T7.  ``--json`` writes ``{"schema": 1, "kind": "prove", "provenance": ..., "results": [...],
"theorems": [...], "summary": ...}`` atomically; exact values are ``"num/den"`` strings; every result carries
``scope`` and ``assumptions``.  Exit 0 when every rule got its expected verdict (an ``exact`` claim
expects PROVED: BOUNDED counts only with ``--accept-bounded``; every theorem PROVED), 1 otherwise, 2
on a usage error (nothing is written then).  Each rule runs in a child process stopped after
``--timeout`` seconds (INCONCLUSIVE).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from specproof.proofs import DEFAULT_RLIMIT, ProofResult, SpecproofInputError, Verdict
from specproof.proofs.engine.results import DEFAULT_TIMEOUT

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import PROVE
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options

__all__ = ["add_parser", "run", "SCHEMA"]

SCHEMA = PROVE.schema

EPILOG = """\
user rules: write acceptance(ar, p, q) and residual_weight(ar, p, q) with Arith operations only
(ar.minimum, ar.safe_div, ar.relu, ...), wrap them in specproof.proofs.StepRule(name=..., claim="exact"
or "not-exact", description=..., acceptance=..., residual_weight=...) in a .py file, then
  specproof prove --rule path/to/file.py:variable_name
The file is imported, and each rule function called exactly once, in a child process under --timeout;
the calls are recorded as a graph that every engine evaluates (--show-trace prints it: what is
proved). The rule's values are opaque: len, iteration, bool(), Python arithmetic and comparisons raise
a usage error naming the Arith method to use; divide only with ar.safe_div(a, b, default); ar.one and
ar.zero are properties. Its name must be printable, single-line and unlike any catalogue rule's.
verdicts: PROVED = machine-checked for every vocabulary size n (under the assumptions printed below
it, if any); BOUNDED = checked only for the sizes in its scope, never counted as PROVED; REFUTED =
an exact witness (a point where the law differs, or where A is not in [0, 1] or w < 0: "not a
sampling rule"); INCONCLUSIVE = nothing settled (solver limit, time budget), with the reason.
exit codes: 0 every verdict as expected (exact -> PROVED; not-exact -> REFUTED; BOUNDED is expected
for an exact claim only with --accept-bounded), 1 some verdict unexpected, 2 usage error (also any
error raised inside a user rule).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "prove", help="prove verifier rules exact or refute them with exact counterexamples",
        description="Prove each rule's claim (exact -> PROVED, not-exact -> REFUTED with a counterexample).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every catalogue rule and the theorems T1-T7")
    parser.add_argument("--rule", action="append", default=[], metavar="RULE",
                        help="a catalogue rule name or PATH.py:NAME (repeatable)")
    options.add_json(parser, help="write the certificates to PATH (atomically; missing folders are created)",
                     create_folders=True)
    parser.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT,
                        help=f"z3 resource limit per check (deterministic; default {DEFAULT_RLIMIT})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time budget per rule; on expiry it is INCONCLUSIVE (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--accept-bounded", action="store_true",
                        help="count BOUNDED as the expected verdict of an exact claim (exit 0)")
    parser.add_argument("--no-drift", action="store_true", help="skip the worst-case drift of refuted rules")
    parser.add_argument("--show-trace", action="store_true",
                        help="print each user rule's traced graph (what is proved) before its verdict")
    parser.set_defaults(handler=run)
    return parser


HEADER = (f"{'rule':<40} {'claim':<9} {'verdict':<12} {'scope':<28} {'status':<16} {'time':>8}  "
          f"{'TV':<10} method")


def _as_expected(result: ProofResult, accept_bounded: bool) -> bool:
    return result.ok or (accept_bounded and result.expected == Verdict.PROVED and result.verdict == Verdict.BOUNDED)


def _exact(value: Any) -> str:
    """An exact law as text: ``(1/2, 1/2)``; a multi-token law ``{(0, 1): 1/4, ...}``; at most 12 entries."""
    if isinstance(value, dict):
        items = [f"{tuple(k) if isinstance(k, tuple) else k}: {v}" for k, v in list(value.items())[:12]]
        return "{" + ", ".join(items) + (", ..." if len(value) > 12 else "") + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value[:12]) + (", ..." if len(value) > 12 else "") + ")"
    return str(value)


def _lines(result: ProofResult, accept_bounded: bool) -> list[str]:
    tv = f"TV={result.tv}" if result.tv is not None else "-"
    if _as_expected(result, accept_bounded):
        status = "ok" if result.ok else "ok (bounded)"
    else:
        status = f"EXPECTED {result.expected.value}"
    scope = result.scope or result.n
    lines = [f"{result.rule:<40} {result.claim:<9} {result.verdict.value:<12} {scope:<28} {status:<16} "
             f"{result.seconds:7.2f}s  {tv:<10} {result.method}"]
    lines += [f"    assumes: {a.statement} [{a.source}]" for a in result.assumptions]
    witness = result.counterexample
    if result.verdict == Verdict.REFUTED and witness is not None:
        lines.append(f"    witness: p = {_exact(witness.p)}, q = {_exact(witness.q)}, produced law = "
                     f"{_exact(witness.output)}, TV = {witness.tv}")
        if "not_a_sampling_rule" in witness.extra:
            lines.append(f"    not a sampling rule: {witness.extra['not_a_sampling_rule']} (law and TV of the "
                         "clamped rule)")
    if result.verdict not in (Verdict.PROVED, Verdict.REFUTED) and result.reason:
        lines.append(f"    reason: {result.reason}")
    return lines


def run(args: argparse.Namespace) -> int:
    from specproof.proofs import Settings, prove_entry, prove_theorem, resolve_rule
    from specproof.proofs import catalogue, theorems

    if not args.all and not args.rule:
        raise SpecproofInputError("prove", "no rule selected", "pass --all or --rule NAME (or PATH.py:NAME)")
    if args.rlimit < 1:
        raise SpecproofInputError("--rlimit", f"{args.rlimit} is not positive", "pass a positive resource limit")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise SpecproofInputError("--timeout", f"{args.timeout} is not a positive finite number of seconds",
                                  f"pass e.g. --timeout {DEFAULT_TIMEOUT:g}")
    options.check_options(args, inputs=tuple(options.target_file(spec) for spec in (args.rule or ())))
    json_path = args.json
    entries = list(catalogue()) if args.all else []
    seen = {e.name for e in entries}
    for spec in args.rule:  # resolve every rule before proving anything: usage errors come first
        entry = resolve_rule(spec, args.timeout)
        if entry.name not in seen:
            entries.append(entry)
            seen.add(entry.name)
    settings = Settings(rlimit=args.rlimit, drift=not args.no_drift, timeout=args.timeout)
    start = time.perf_counter()
    results: list[ProofResult] = []
    print(HEADER, flush=True)
    for entry in entries:
        if args.show_trace and entry.trace is not None:
            print(f"trace of {entry.name} (every engine evaluates this graph, not the rule's code):")
            print("\n".join(f"    {line}" for line in entry.trace.show().splitlines()), flush=True)
        result = prove_entry(entry, settings)
        results.append(result)
        print("\n".join(_lines(result, args.accept_bounded)), flush=True)
    theorem_results: list[ProofResult] = []
    if args.all:
        for theorem in theorems():
            result = prove_theorem(theorem, rlimit=args.rlimit)
            theorem_results.append(result)
            print("\n".join(_lines(result, args.accept_bounded)), flush=True)
    seconds = time.perf_counter() - start
    unexpected = [r.rule for r in results + theorem_results if not _as_expected(r, args.accept_bounded)]
    counts = {v.value: sum(r.verdict == v for r in results + theorem_results) for v in Verdict}
    summary = {"rules": len(results), "theorems": len(theorem_results), "unexpected": unexpected,
               "verdicts": counts, "accept_bounded": args.accept_bounded, "seconds": round(seconds, 3)}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    if unexpected:
        print(f"{len(unexpected)} unexpected verdict(s): {', '.join(unexpected)} ({tally}; {seconds:.1f}s)")
    else:
        print(f"{len(results)} rule(s), {len(theorem_results)} theorem(s): every verdict as expected "
              f"({tally}; {seconds:.1f}s)")
    if json_path is not None:
        write_envelope(json_path, PROVE, {
            "results": [r.as_json() for r in results],
            "theorems": [r.as_json() for r in theorem_results],
            "summary": summary,
        }, provenance(extra={"command": "prove", "argv": sys.argv[1:]}))
    return 1 if unexpected else 0
