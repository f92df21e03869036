"""Probe of ``torch.multinomial`` on its own: how often does it pick a token of weight exactly 0?

A correct sampler never does.  Rows: ``TABLE_ROWS`` fixed Dirichlet(0.1) laws over ``V`` tokens rounded
to the dtype (rounding leaves exact zeros, as a float16 softmax of a peaked model does), used in turn;
each row's ``max(0, p - q)`` residual is drawn too, as a verifier's correction does.  The count is
exact (a picked weight is compared with 0); the rate is count / rows.

    python -m specproof.impls.sampler_probe --rows 1000000 --dtype float16

Measured (torch 2.13.0 CPU, seed 0, V=1000): in float16, 9 zero-weight picks in 1,000,000 target
rows and 14 in 1,000,000 residual rows; 0 and 0 in bfloat16 and float32.  This is why the registry
labels the ``*-multinomial`` implementations inexact in float16 on CPU (impls/records.py).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

__all__ = ["zero_weight_picks", "TABLE_ROWS", "MULTINOMIAL_FLOAT16_DEFECT"]

TABLE_ROWS = 32
# the registry's reason (impls/records.py) and the check's note on a probability-0 finding
MULTINOMIAL_FLOAT16_DEFECT = (
    "torch.multinomial float16 CPU picks zero-weight tokens (measured 9 and 14 per 1,000,000 target "
    "and residual rows at V=1000, torch 2.13.0; reproduce: python -m specproof.impls.sampler_probe "
    "--rows 1000000)")


def zero_weight_picks(dtype: torch.dtype, rows: int, *, vocab: int = 1000, seed: int = 0,
                      device: str = "cpu", chunk: int = 8192) -> tuple[int, int]:
    """``(picks of weight 0 from target rows, from residual rows)`` over ``rows`` draws each."""
    rng = np.random.default_rng(seed)
    p = torch.tensor(rng.dirichlet(np.full(vocab, 0.1), TABLE_ROWS)).to(dtype).to(device)
    q = torch.tensor(rng.dirichlet(np.full(vocab, 0.1), TABLE_ROWS)).to(dtype).to(device)
    residual = torch.relu(p - q)
    keep = (residual > 0).any(-1)
    residual = residual[keep]
    generator = torch.Generator(device=device).manual_seed(seed)
    counts = [0, 0]
    done = 0
    while done < rows:
        n = min(chunk, rows - done)
        for slot, table in enumerate((p, residual)):
            index = torch.arange(done, done + n, device=device) % table.shape[0]
            weights = table[index]
            pick = torch.multinomial(weights, 1, generator=generator)
            counts[slot] += int((weights.gather(1, pick) == 0).sum())
        done += n
    return counts[0], counts[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32", "float64"])
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    target, residual = zero_weight_picks(getattr(torch, args.dtype), args.rows, vocab=args.vocab, seed=args.seed)
    print(f"torch {torch.__version__} {args.dtype} CPU, V={args.vocab}: zero-weight picks: "
          f"{target} / {args.rows} target rows, {residual} / {args.rows} residual rows")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
