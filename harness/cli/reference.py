"""``specproof reference``: the exact reference of one verification step, from the command line."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import step_rules

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import REFERENCE
from specproof.harness.files.provenance import provenance
from specproof.harness.cli import options
from specproof.harness.exact.reference import exact_reference
from specproof.harness.exact.softmax import exact_softmax

__all__ = ["add_parser", "parse_vector", "run_reference"]

SCHEMA = REFERENCE.schema


_NPY_MAGIC = b"\x93NUMPY"
# Decimal exponents beyond Python's own 4,300-digit limit for integers: 10^E would take unbounded time.
MAX_DECIMAL_EXPONENT = 4300
_NUMBER = re.compile(r"[+-]?(\d[\d_]*\.?\d*|\.\d+)(?:[eE]([+-]?\d+))?(?:/[+-]?\d[\d_]*)?")


def _load_npy(text: str, argument: str) -> np.ndarray:
    path = Path(text)
    if path.is_dir():
        raise SpecproofInputError(argument, f"{text} is a directory, not an .npy file", "pass the path of a .npy file")
    if not path.is_file():
        raise SpecproofInputError(argument, f"file {text} does not exist", "pass an existing .npy file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(_NPY_MAGIC))
    except OSError as err:
        raise SpecproofInputError(argument, f"cannot read {text}: {err.strerror}", "pass a readable .npy file") \
            from None
    if magic != _NPY_MAGIC:
        what = ("is empty (0 bytes)" if not magic else "is a zip archive (an .npz?), not an .npy file"
                if magic.startswith(b"PK") else "is not a numpy .npy file")
        raise SpecproofInputError(argument, f"{text} {what}", "save one 1-D law with numpy.save(path, array)")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise SpecproofInputError(argument, f"cannot read {text}: {err}", "save it again with numpy.save") from None
    if arr.ndim != 1:
        raise SpecproofInputError(argument, f"{text} holds shape {arr.shape}", "save one 1-D law per file")
    if arr.size == 0:
        raise SpecproofInputError(argument, f"{text} holds an empty array", "save a law with at least one entry")
    if arr.dtype.kind == "f" and arr.dtype.name not in ("float16", "float32", "float64"):
        raise SpecproofInputError(argument, f"{text} holds {arr.dtype.name} values, a float format with no exact "
                                  "conversion here", "save it as float64 (arr.astype(np.float64)) if that is exact "
                                  "for your values, or as integer counts with --weights")
    return arr


def _parse_number(item: str, argument: str) -> Fraction:
    match = _NUMBER.fullmatch(item)
    if match is None:
        raise SpecproofInputError(argument, f"{item!r} is not a number", "write integers, decimals or fractions like 1/3")
    if match.group(2) is not None and abs(int(match.group(2))) > MAX_DECIMAL_EXPONENT:
        raise SpecproofInputError(argument, f"{item!r} has a decimal exponent beyond +-{MAX_DECIMAL_EXPONENT}",
                                  "rescale the values (with --weights any positive scale is normalised)")
    try:
        return Fraction(item)
    except (ValueError, ZeroDivisionError):
        raise SpecproofInputError(argument, f"{item!r} is not a number",
                                  "write integers, decimals or fractions like 1/3 (denominator not 0)") from None


def parse_vector(text: str | list[str], argument: str) -> Any:
    """A ``.npy`` path, or inline values read as exact decimals/fractions: ``"1/3,2/3"``, ``"[0.25 0.75]"``
    or several words (``--p 0.5 0.5``)."""
    words = [text] if isinstance(text, str) else list(text)
    if len(words) == 1 and words[0].strip().endswith(".npy"):
        return _load_npy(words[0].strip(), argument)
    if any(w.strip().endswith(".npy") for w in words):
        raise SpecproofInputError(argument, "mixes a .npy path with other values", "pass one .npy path or values")
    items = [t for w in words for t in re.split(r"[\s,\[\]]+", w.strip()) if t]
    if not items:
        raise SpecproofInputError(argument, "is empty", "pass values like '1/3,2/3' or a .npy path")
    return [_parse_number(item, argument) for item in items]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reference", help="exact reference of one verification step",
        description="Exact rational reference of one speculative-sampling verification step. "
                    "Inline values are read as exact decimals/fractions, given as separate words "
                    "(--p 0.5 0.5) or one comma/space list (--p 1/2,1/2 or --p '[0.5 0.5]'); a .npy file "
                    "keeps its dtype (integer arrays are exact counts, for --weights). With --logits the "
                    "logit span (max - min)/T is limited to about 11,433 (a smaller token's softmax is "
                    "below 2^-16494, 0 in every float format): drop masked tokens instead.")
    parser.add_argument("--p", required=True, nargs="+", metavar="P",
                        help="target law: a .npy path, or values as separate words (--p 0.5 0.5) or one "
                             "comma/space list (--p 1/2,1/2 or --p '[0.5 0.5]'); exact decimals and fractions")
    parser.add_argument("--q", required=True, nargs="+", metavar="Q", help="draft law, same forms as --p")
    parser.add_argument("--rule", default="canonical", choices=[r.name for r in step_rules()],
                        help="single-step rule (default canonical)")
    parser.add_argument("--logits", action="store_true",
                        help="--p/--q are logits: apply a certified softmax(logits / T) first")
    parser.add_argument("--temperature", default=None, help="temperature T for --logits (default 1)")
    parser.add_argument("--weights", action="store_true", help="normalise any positive vectors (counts)")
    parser.add_argument("--token", type=int, help="also print A(token) for this drafted token")
    parser.add_argument("--method", default="auto", choices=["auto", "fast", "plain"])
    options.add_json(parser, help="write every exact value to this JSON file")
    parser.set_defaults(handler=run_reference)


def run_reference(args: argparse.Namespace) -> int:
    npy = [w for words in (args.p, args.q) for w in (words if isinstance(words, list) else [words])
           if isinstance(w, str) and w.strip().endswith(".npy")]
    options.check_options(args, inputs=tuple(npy))  # --json before any work: a bad path never throws a result away
    p = parse_vector(args.p, "--p")
    q = parse_vector(args.q, "--q")
    softmax_info = None
    if args.temperature is not None and not args.logits:
        raise SpecproofInputError("--temperature", "given without --logits, where no softmax is applied",
                                  "add --logits (--p/--q are then logits), or drop --temperature")
    if args.logits:
        temperature = _parse_number((args.temperature or "1").strip(), "--temperature")
        sp, sq = exact_softmax(p, temperature, argument="--p"), exact_softmax(q, temperature, argument="--q")
        p, q = sp.probs, sq.probs
        softmax_info = {"p": sp.as_json(), "q": sq.as_json()}
    ref = exact_reference(p, q, rule=args.rule, weights=args.weights, method=args.method)
    token_line = None
    if args.token is not None:
        token_line = f"A(token {args.token})       {_show(ref.acceptance_of(args.token))}"
    lines = [
        f"rule                  {ref.rule}",
        f"vocabulary            {ref.vocab}",
        f"dtypes (p, q)         {ref.normalisation[0].dtype}, {ref.normalisation[1].dtype}",
        f"sum p - 1, sum q - 1  {_approx(ref.normalisation[0].deviation)}, {_approx(ref.normalisation[1].deviation)}",
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
        payload = {"reference": ref.as_json()}
        if softmax_info:
            payload["softmax"] = softmax_info
        write_envelope(args.json, REFERENCE, payload, provenance())
        lines.append(f"wrote {args.json}")
    print("\n".join(lines))
    return 0


def _approx(x: Fraction) -> str:
    """``x`` to 3 significant digits; beyond float range as a power of two."""
    try:
        return f"{float(x):.3g}"
    except OverflowError:
        return f"{'-' if x < 0 else ''}about 2^{abs(x.numerator).bit_length() - x.denominator.bit_length()}"


def _show(x: Fraction) -> str:
    """Float form, with the exact fraction when it is short (sizes checked before any conversion)."""
    short = max(abs(x.numerator), x.denominator).bit_length() <= 64
    return f"{float(x):.10g}" + (f"  ({x.numerator}/{x.denominator})" if short else "")
