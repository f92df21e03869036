"""Benchmark: the exact reference's fast path against the plain per-element Fraction path.

Both interpret the same rule (:func:`specproof.proofs.step_law`) on the same float32 inputs in the
same run; the fast path is timed best-of-``repeats`` (after one warm-up), the plain path once (it
takes seconds).  Their outputs are compared exactly.  ``specproof bench --only reference`` writes the
figures as JSON (schema, provenance) under ``reports/``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from specproof.harness.files.envelope import write_envelope
from specproof.harness.files.kinds import BENCH_REFERENCE
from specproof.harness.files.provenance import check_output_path, provenance
from specproof.harness.exact.reference import exact_reference

__all__ = ["bench_exact_reference", "add_parser", "DEFAULT_VOCABS"]

SCHEMA = BENCH_REFERENCE.schema
DEFAULT_VOCABS = (4096, 32768, 131072, 262144)


def _inputs(vocab: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Dirichlet(0.3) target and draft in float32: long tails, tiny entries, realistic spread."""
    rng = np.random.default_rng(seed)
    alpha = np.full(vocab, 0.3)
    return rng.dirichlet(alpha).astype(np.float32), rng.dirichlet(alpha).astype(np.float32)


def _same(a: Any, b: Any) -> bool:
    fields = ("target", "accept", "accepted_mass", "residual", "output")
    return a.rejection == b.rejection and all(
        all(x == y for x, y in zip(getattr(a, f), getattr(b, f))) for f in fields)


def bench_exact_reference(vocabs: tuple[int, ...] = DEFAULT_VOCABS, *, repeats: int = 5, seed: int = 0,
                          verify: bool = True) -> dict[str, Any]:
    """Time fast vs plain exact reference per vocabulary size; fit ``time ~ V^k`` for each path."""
    rows = []
    for vocab in vocabs:
        p, q = _inputs(vocab, seed)
        exact_reference(p, q, method="fast")  # warm-up
        fast_times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fast = exact_reference(p, q, method="fast")
            fast_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        plain = exact_reference(p, q, method="plain")
        plain_time = time.perf_counter() - start
        agree = _same(fast, plain) if verify else None
        rows.append({
            "vocab": vocab,
            "fast_seconds": min(fast_times),
            "fast_seconds_median": float(np.median(fast_times)),
            "plain_seconds": plain_time,
            "speedup": plain_time / min(fast_times),
            "outputs_agree_exactly": agree,
            "output_equals_target": fast.output_equals_target,
        })
        del fast, plain
    result: dict[str, Any] = {"rows": rows}
    if len(rows) >= 2:
        xs = np.log([r["vocab"] for r in rows])
        for key in ("fast_seconds", "plain_seconds"):
            ys = np.log([r[key] for r in rows])
            result[f"{key}_exponent"] = float(np.polyfit(xs, ys, 1)[0])
    return result


def _run(args: argparse.Namespace) -> int:
    from specproof.errors import SpecproofInputError

    if any(v < 2 for v in args.vocab):
        raise SpecproofInputError("--vocab", "sizes must be at least 2", "pass sizes like 4096 262144")
    if args.repeats < 1:
        raise SpecproofInputError("--repeats", f"{args.repeats} < 1", "pass at least 1")
    check_output_path(args.out, "--out")
    result = bench_exact_reference(tuple(args.vocab), repeats=args.repeats, seed=args.seed)
    print(f"{'V':>8} {'fast s':>9} {'plain s':>9} {'speedup':>8}  agree")
    for row in result["rows"]:
        print(f"{row['vocab']:>8} {row['fast_seconds']:>9.4f} {row['plain_seconds']:>9.3f} "
              f"{row['speedup']:>7.1f}x  {row['outputs_agree_exactly']}")
    for key in ("fast_seconds_exponent", "plain_seconds_exponent"):
        if key in result and math.isfinite(result[key]):
            print(f"{key.replace('_', ' ')}: time ~ V^{result[key]:.2f}")
    write_envelope(args.out, BENCH_REFERENCE, {"result": result},
                   provenance(seeds=[args.seed], dtypes=["float32"]))
    print(f"wrote {args.out}")
    return 0
