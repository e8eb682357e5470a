"""Homogeneous chains: the DP's time at 1,000 layers x 64 devices (and other sizes), its
optimum checked against a MILP proof where one finishes.

    python benchmarks/partition_chain.py [--sizes 1000x64,...] [--seeds 1,2,3]

Writes docs/benchmarks/partition-chain.{md,csv}.
"""

from __future__ import annotations

import argparse
import statistics
import time

from partition_common import load_average, run_exact, write_table

from placement.models.partition import check
from placement.models.partition.dp import solve_dp
from placement.models.partition.generate import generate
from placement.models.partition.greedy import bisection
from placement.models.partition.milp import MilpEncoding
from placement.models.partition.tables import build_tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x64,1000x16,4000x64")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--fills", default="0.6,0.05", help="model memory / device memory")
    parser.add_argument("--milp-time-limit", type=float, default=60.0)
    args = parser.parse_args()
    rows = []
    for size in args.sizes.split(","):
        n, d = (int(x) for x in size.split("x"))
        for seed, fill in (
            (int(s), float(f)) for f in args.fills.split(",") for s in args.seeds.split(",")
        ):
            inst = generate(n, d, seed, memory_fill=fill)
            dp_times, total_times = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                tables = build_tables(inst)
                sol = bisection(inst, tables)
                upper = None if sol is None else int(round(check(inst, sol).objective * 1e6))
                t1 = time.perf_counter()
                result = solve_dp(inst, upper, tables=tables)
                t2 = time.perf_counter()
                dp_times.append(t2 - t1)
                total_times.append(t2 - t0)
            unpruned_ms = "over the table limit"
            try:
                t0 = time.perf_counter()
                plain = solve_dp(inst)
                unpruned_ms = f"{(time.perf_counter() - t0) * 1000:.0f}"
                assert plain.exact and result.objective_ns == plain.objective_ns
            except ValueError:
                pass  # the band without the bound exceeds MAX_BAND_CELLS
            assert result.exact and result.solution is not None
            optimum = check(inst, result.solution).objective
            greedy = check(inst, sol).objective if sol is not None else None
            outcome, wall, ctx = run_exact(
                MilpEncoding(use_dp=False), inst, args.milp_time_limit, incumbent=sol
            )
            best = ctx.best_report.objective if ctx.best_report else None
            milp = (
                "proved equal"
                if outcome.proven_optimal and best == optimum
                else (f"{outcome.stop_reason.value}, best {best}")
            )
            rows.append(
                [
                    n,
                    d,
                    seed,
                    fill,
                    f"{optimum:.4f}",
                    f"{statistics.median(dp_times) * 1000:.1f}",
                    f"{statistics.median(total_times) * 1000:.1f}",
                    unpruned_ms,
                    "-" if greedy is None else f"{greedy:.4f}",
                    milp,
                    f"{wall:.1f}",
                    load_average(),
                ]
            )
    header = [
        "layers",
        "devices",
        "seed",
        "memory fill",
        "optimum step (ms)",
        "DP (ms, median of 5)",
        "tables + bisection bound + DP (ms)",
        "DP without the bound (ms)",
        "bisection greedy (ms)",
        "MILP-HiGHS on its own",
        "MILP (s)",
        "load avg",
    ]
    notes = """
Synthetic chains from `placement generate partition --layers N --devices D --seed S`
(training pipeline; one device type, A100-like; model memory 60 % or 5 % of the devices'
memory (`--memory-fill`: at 5 % memory hardly limits a stage, only the bound does); every
device on its own node, so one link speed and the DP is exact). "DP" is `solve_dp` given the
tables and the bisection greedy's objective as the pruning bound (median of 5 runs); the next
column adds building the tables and running the greedy; "without the bound" is the DP alone
with memory pruning only (one run). The MILP column runs the stage-path encoding on its own
(no DP; the bisection split as incumbent; 1 thread) and says whether it proved the DP's
optimum. Wall-clock on a shared 2-core machine; `load avg` is the 1-minute load.
"""
    write_table(
        "partition-chain",
        "Partition: the DP on homogeneous chains",
        f"python benchmarks/partition_chain.py --sizes {args.sizes} --seeds {args.seeds} "
        f"--fills {args.fills} --milp-time-limit {args.milp_time_limit:g}",
        header,
        rows,
        notes,
    )


if __name__ == "__main__":
    main()
