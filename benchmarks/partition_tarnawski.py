"""Tarnawski et al. layer graphs: the optimum of every workload, proved by the DP and by
CP-SAT and MILP (HiGHS) on their own, beside PipeDream's planner and the greedies.

    python benchmarks/partition_tarnawski.py [--time-limit 10]

Writes docs/benchmarks/partition-tarnawski.{md,csv}.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from partition_common import SHARED, load_average, run_exact, write_table

from placement.models.partition import check
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.dp import solve_dp
from placement.models.partition.greedy import bisection, petals, pipedream
from placement.models.partition.milp import MilpEncoding
from placement.models.partition.tarnawski import load_tarnawski


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args()
    folder = SHARED / "tarnawski-layergraphs"
    if not folder.is_dir():
        sys.exit(f"public benchmark data not found at {folder}")
    rows = []
    for path in sorted(folder.glob("*.json")):
        inst = load_tarnawski(path)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            dp = solve_dp(inst)
            times.append(time.perf_counter() - t0)
        assert dp.exact and dp.solution is not None
        optimum = check(inst, dp.solution).objective
        start = bisection(inst)
        proofs = []
        for encoding in (CpSatEncoding(use_dp=False), MilpEncoding(use_dp=False)):
            outcome, wall, ctx = run_exact(encoding, inst, args.time_limit, incumbent=start)
            best = ctx.best_report.objective if ctx.best_report else None
            agrees = outcome.proven_optimal and best is not None and abs(best - optimum) < 1e-9
            proofs.append((agrees, wall, outcome.stop_reason.value))
        cold, cold_wall, cold_ctx = run_exact(MilpEncoding(use_dp=False), inst, args.time_limit)
        cold_best = cold_ctx.best_report.objective if cold_ctx.best_report else None
        cold_ok = cold.proven_optimal and cold_best is not None and abs(cold_best - optimum) < 1e-9
        heuristics = {}
        for name, fn in (("pipedream", pipedream), ("bisection", bisection), ("petals", petals)):
            sol = fn(inst)
            heuristics[name] = check(inst, sol).objective if sol is not None else None
        rows.append(
            [
                path.stem,
                len(inst.layers),
                _ms(optimum),
                f"{statistics.median(times) * 1000:.1f}",
                "yes" if proofs[0][0] else f"no ({proofs[0][2]})",
                f"{proofs[0][1]:.2f}",
                "yes" if proofs[1][0] else f"no ({proofs[1][2]})",
                f"{proofs[1][1]:.2f}",
                ("yes" if cold_ok else f"no ({cold.stop_reason.value})") + f", {cold_wall:.2f}",
                _ms(heuristics["pipedream"]),
                _ms(heuristics["bisection"]),
                _ms(heuristics["petals"]),
                load_average(),
            ]
        )
    header = [
        "workload",
        "layers (colour classes)",
        "optimum max-load (ms)",
        "DP (ms, median of 5)",
        "CP-SAT proves it",
        "CP-SAT (s)",
        "MILP-HiGHS proves it",
        "MILP-HiGHS (s)",
        "MILP-HiGHS from scratch: proves it, s",
        "PipeDream-style DP (ms)",
        "bisection greedy (ms)",
        "Petals-style greedy (ms)",
        "load avg",
    ]
    notes = f"""
Each of the 8 layer graphs of Tarnawski et al. (NeurIPS 2020), read from
`../shared/benchmarks/partition/tarnawski-layergraphs` with `placement import tarnawski`:
6 accelerators of 16 GiB, contiguous splits of the colour classes' topological order, the
max-load objective (time per sample of the most loaded accelerator, its layers plus the
transfers it sends or receives). The optimum is the DP's; "proves it" means the encoding,
run on its own (no DP; the bisection greedy's split as incumbent, as the portfolio would
give it; time limit {args.time_limit:g} s, 1 thread) returned a solver proof whose solution
the checker scores at exactly the DP's value. "From scratch": the same without any
incumbent (its first round finds a path, the next ones improve and prove). PipeDream-style: PipeDream's planner (transfers
overlap compute), its split scored by our checker. Times are wall-clock on a shared 2-core
machine; `load avg` is the 1-minute load when the row finished.
"""
    write_table(
        "partition-tarnawski",
        "Partition: Tarnawski et al. layer graphs",
        "python benchmarks/partition_tarnawski.py --time-limit " + f"{args.time_limit:g}",
        header,
        rows,
        notes,
    )


if __name__ == "__main__":
    main()
