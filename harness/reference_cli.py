"""``specproof reference``: the exact reference of one verification step, from the command line."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from specproof.proofs.errors import SpecproofInputError
from specproof.proofs.rules import step_rules

from .provenance import provenance, write_json
from .reference import exact_reference
from .softmax import exact_softmax

__all__ = ["add_parser", "parse_vector", "run_reference"]

SCHEMA = 1


def parse_vector(text: str, argument: str) -> Any:
    """A ``.npy`` path, or inline values ``"1/3, 2/3"`` / ``"[0.25 0.75]"`` read as exact decimals."""
    if text.endswith(".npy"):
        path = Path(text)
        if not path.is_file():
            raise SpecproofInputError(argument, f"file {text} does not exist", "pass an existing .npy file")
        try:
            arr = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise SpecproofInputError(argument, f"cannot read {text}: {err}", "pass a numpy .npy file") from None
        if arr.ndim != 1:
            raise SpecproofInputError(argument, f"{text} holds shape {arr.shape}", "save one 1-D law per file")
        return arr
    items = [t for t in re.split(r"[\s,\[\]]+", text.strip()) if t]
    if not items:
        raise SpecproofInputError(argument, "is empty", "pass values like '1/3,2/3' or a .npy path")
    values = []
    for item in items:
        try:
            values.append(Fraction(item))
        except (ValueError, ZeroDivisionError):
            raise SpecproofInputError(argument, f"{item!r} is not a number",
                                      "write integers, decimals or fractions like 1/3") from None
    return values


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reference", help="exact reference of one verification step",
        description="Exact rational reference of one speculative-sampling verification step. "
                    "Inline values are read as exact decimals/fractions; .npy files keep their dtype.")
    parser.add_argument("--p", required=True, help="target law: .npy path or inline values")
    parser.add_argument("--q", required=True, help="draft law: .npy path or inline values")
    parser.add_argument("--rule", default="canonical", choices=[r.name for r in step_rules()],
                        help="single-step rule (default canonical)")
    parser.add_argument("--logits", action="store_true",
                        help="--p/--q are logits: apply a certified softmax(logits / T) first")
    parser.add_argument("--temperature", default="1", help="temperature T for --logits (default 1)")
    parser.add_argument("--weights", action="store_true", help="normalise any positive vectors (counts)")
    parser.add_argument("--token", type=int, help="also print A(token) for this drafted token")
    parser.add_argument("--method", default="auto", choices=["auto", "fast", "plain"])
    parser.add_argument("--json", type=Path, help="write every exact value to this JSON file")
    parser.set_defaults(handler=run_reference)


def run_reference(args: argparse.Namespace) -> int:
    p = parse_vector(args.p, "--p")
    q = parse_vector(args.q, "--q")
    softmax_info = None
    if args.logits:
        try:
            temperature = Fraction(args.temperature)
        except (ValueError, ZeroDivisionError):
            raise SpecproofInputError("--temperature", f"{args.temperature!r} is not a number",
                                      "pass a positive number") from None
        sp, sq = exact_softmax(p, temperature), exact_softmax(q, temperature)
        p, q = sp.probs, sq.probs
        softmax_info = {"p": sp.as_json(), "q": sq.as_json()}
    ref = exact_reference(p, q, rule=args.rule, weights=args.weights, method=args.method)
    token_line = None
    if args.token is not None:
        token_line = f"A(token {args.token})       {ref.acceptance_of(args.token)}"
    lines = [
        f"rule                  {ref.rule}",
        f"vocabulary            {ref.vocab}",
        f"dtypes (p, q)         {ref.normalisation[0].dtype}, {ref.normalisation[1].dtype}",
        f"sum p - 1, sum q - 1  {float(ref.normalisation[0].deviation):.3g}, "
        f"{float(ref.normalisation[1].deviation):.3g}",
        f"rejection probability {_show(ref.rejection)}",
        f"TV(p, q)              {_show(ref.tv_target_draft)}",
        f"expected acceptance   {_show(ref.acceptance_rate)}",
        f"output == target      {'yes (exact)' if ref.output_equals_target else 'NO'}",
    ]
    if not ref.output_equals_target:
        lines.append(f"TV(output, target)    {_show(ref.tv_output_target())}")
    if token_line:
        lines.append(token_line)
    if args.json:
        data = {"schema": SCHEMA, "kind": "reference", "provenance": provenance(), "reference": ref.as_json()}
        if softmax_info:
            data["softmax"] = softmax_info
        write_json(args.json, data)
        lines.append(f"wrote {args.json}")
    print("\n".join(lines))
    return 0


def _show(x: Fraction) -> str:
    text = f"{x.numerator}/{x.denominator}"
    return f"{float(x):.10g}" + (f"  ({text})" if len(text) <= 40 else "")
