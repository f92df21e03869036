"""The detectable-TV table of docs/scaling.md, from the engine's own power formula.

    python docs/scaling_table.py ROWS_PER_SECOND_PER_WORKER [--dtype float32] [--hours 1]
    python docs/scaling_table.py --driver [--samples 20000] [--workers 2]   # needs Ray

For W workers drawing ``rate`` rows/s each for ``hours``, the default check's 13 statistical scenarios
get ``N = W * rate * 3600 * hours / 13`` rows each (a --samples run; the certainty probe's few hundred
rows are left out); a scenario's detectable TV is
``tau + detectable_shift(p, N, ln(1/a) + ln 2, tau)`` on its hardest event (mean nearest 1/2), the
formula ``engine._Ledger.rows_for_tv`` plans quotas with; the check's is the worst scenario's.

``--driver``: a check of ``specproof.impls:canonical_ratio_race`` (no injection) on the local engine,
then on a local Ray (its start not timed), and the driver's own seconds (the run minus the time blocked on tasks), i.e. the rows/s one driver can fold.
"""

from __future__ import annotations

import argparse

from specproof.harness.check.stats.engine import LN2, _Ledger, alpha_shares
from specproof.harness.check.contracts.batched.families import build_families
from specproof.harness.check.contracts.batched.scenarios import default_suite
from specproof.harness.check.stats.statistics import detectable_shift
from specproof.harness.exact.tolerances import round_tolerance


class _Stream:  # what alpha_shares and _Ledger read of a stream (no verifier is called)
    def __init__(self, real, dtype):
        self.name, self.vocab, self.k = real.scenario.name, real.vocab, real.k
        self.families = build_families(real, None)
        self.tolerance = float(round_tolerance(dtype, real.vocab, real.k))


def detectable_tv(ledgers: list[_Ledger], rows: int) -> float:
    worst = 0.0
    for ledger in ledgers:
        where = ledger.hardest()
        if where is None:  # every event tested exactly (as _Ledger.detectable_tv)
            worst = max(worst, min(1.0, ledger.stream.tolerance))
            continue
        f, e = where
        up, down = ledger.sides[f]
        p = float(ledger.stream.families[f].expected[e])
        thr = float(min(up.log_threshold[e], down.log_threshold[e]))
        tau = ledger.stream.tolerance
        worst = max(worst, min(1.0, tau + detectable_shift(p, rows, thr + LN2, tau)))
    return worst


def driver(samples: int, workers: int) -> None:
    import time

    import specproof.impls as impls
    from specproof.harness.check.scale.ray_engine import RayEngine
    from specproof.harness.check.driver import check

    t0 = time.perf_counter()
    local = check(impls.canonical_ratio_race, samples=samples, inject=False, progress=False)
    print(f"local engine: {local.verdict.value}, {local.rows} rows in {time.perf_counter() - t0:.1f} s")
    with RayEngine(workers=workers, verify="specproof.impls:canonical_ratio_race") as engine:
        t0 = time.perf_counter()
        result = check(impls.canonical_ratio_race, samples=samples, inject=False, engine=engine, progress=False)
        run = time.perf_counter() - t0
    own = run - engine.waited
    print(f"ray, {workers} workers: {result.verdict.value}, {result.rows} rows in {run:.1f} s ({result.rows / run:.3g} rows/s), "
          f"{engine.pieces} tasks; driver busy {own:.1f} s = {1e6 * own / result.rows:.2f} us/row "
          f"(at most {result.rows / own:.3g} rows/s per driver)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rate", type=float, nargs="?", help="rows per second per worker")
    parser.add_argument("--driver", action="store_true", help="measure the driver's share on a local Ray")
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--alpha", type=float, default=1e-6)
    args = parser.parse_args()
    if args.driver:
        return driver(args.samples, args.workers)
    if args.rate is None:
        parser.error("give ROWS_PER_SECOND_PER_WORKER or --driver")
    streams = [_Stream(s.realise(args.dtype, "cpu"), args.dtype) for s in default_suite() if not s.certainty_probe]
    ledgers = [_Ledger(s, thr) for s, thr in zip(streams, alpha_shares(streams, args.alpha))]
    print(f"| workers | rows in {args.hours:g} h | rows per scenario | detectable TV ({args.dtype}) |")
    print("| ---: | ---: | ---: | ---: |")
    for workers in (1, 8, 64):
        total = int(workers * args.rate * 3600 * args.hours)
        per = total // len(streams)
        print(f"| {workers} | {total:.3g} | {per:.3g} | {detectable_tv(ledgers, per):.2e} |")


if __name__ == "__main__":
    main()
