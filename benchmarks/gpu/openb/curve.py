"""What a migration budget buys at 100 % arrived: the end-state curve (issue 42).

:func:`run_curve` replays a seed's workload with a start policy (ours online, FGD) up to the
end of the 100 % window and solves, from that end state, the best placement reachable with
at most ``K`` migrations for each budget of :data:`CURVE_BUDGETS`
(:mod:`placement.models.gpu.sim.openb.budget_curve`): a proven bound and a checked witness
per budget. :func:`curve_table` and :func:`plot_curve` are its table and figure.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from placement.benchmarks.gpu.openb.shared import OURS, trace_of
from placement.benchmarks.tables import rule

CURVE_BUDGETS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.10, None)
"""Budgets as fractions of the arrived pods (None: unlimited)."""
UNLIMITED_TIME_S = 900.0
"""Time limit of the configuration bound of the unlimited point (it converges well before)."""
CURVE_STARTS = (OURS, "FGD")
"""The policies whose end state the curve starts from (``--modes curve``)."""
CURVE_TIME_S = 300.0
"""Column generation time per budget (``--param curve_time=S``): the witness is valid
whenever it stops, and the bound is the configuration bound's (converged)."""


def budget_label(fraction: float | None) -> str:
    return "unlimited" if fraction is None else f"{fraction * 100:g} %"


def run_curve(case: dict, config, data: Path) -> list[dict]:
    """The curve's rows (one per budget) of one (trace, seed, start policy) case."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.budget_curve import BudgetCurve
    from placement.models.gpu.sim.openb.offline_bound import window_end
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.replay import TUNE_RATIO, replay, workload

    trace, seed, start = case["trace"], int(case["seed"]), case["policy"]
    cluster, pods = trace_of(data, trace, case.get("pods_file"))
    total = cluster.total_gpu_milli
    workload_ss, _ = np.random.SeedSequence(seed).spawn(2)
    order = workload(pods, total, np.random.default_rng(workload_ss), TUNE_RATIO, "simulator")
    end = window_end(np.cumsum(pods.demand[order]), total, 100)
    arrived = order[:end]
    curve = replay(cluster, pods, make_any(start), seed, order=arrived)
    time_s = float(config.params.get("curve_time", CURVE_TIME_S))
    solver = BudgetCurve(cluster, pods, arrived, curve.node, curve.gpus)
    rows = []
    t0 = time.perf_counter()
    # the configuration bound stops once converged (a minute or two): never cut it short
    unlimited = solver.unlimited(time_limit_s=max(time_s, UNLIMITED_TIME_S))
    seconds = {None: time.perf_counter() - t0}
    points = {}
    best = None
    for fraction in CURVE_BUDGETS:
        if fraction is None:
            points[None] = unlimited
            continue
        t0 = time.perf_counter()
        budget = int(fraction * len(arrived))
        point = solver.at(0) if budget == 0 else solver.keep_or_reset(budget, time_limit_s=time_s)
        # more budget never hurts: the unlimited point's bound holds at every budget, and a
        # smaller budget's checked witness is a witness here too
        point.bound_milli = min(point.bound_milli, unlimited.bound_milli)
        if best is not None and not best.errors and (point.witness_milli or 0) < best.witness_milli:
            point.witness, point.witness_milli = best.witness, best.witness_milli
            point.witness_moves = best.witness_moves
            point.witness_placed_failed = best.witness_placed_failed
            point.errors = []
            point.method = f"the witness of K = {best.budget} (none better found)"
        if point.witness_milli is not None and not point.errors:
            best = point
        points[fraction] = point
        seconds[fraction] = time.perf_counter() - t0
    for fraction, point in points.items():
        budget = point.budget if fraction is not None else len(arrived)
        rows.append(
            {
                "kind": "curve",
                "trace": trace,
                "seed": seed,
                "start": start,
                "budget": budget_label(fraction),
                "budget_pods": budget,
                "arrived_pods": int(end),
                "groups": len(solver.groups),
                "start_unalloc": round((total - solver.start_milli) / 1000, 2),
                "bound_unalloc": round((total - point.bound_milli) / 1000, 2),
                "witness_unalloc": (
                    ""
                    if point.witness_milli is None
                    else round((total - point.witness_milli) / 1000, 2)
                ),
                "master_unalloc": round((total - point.master_milli) / 1000, 3),
                "moves": "" if point.witness_moves is None else point.witness_moves,
                "failed_placed": (
                    "" if point.witness_placed_failed is None else point.witness_placed_failed
                ),
                "proved": point.proved,
                "iterations": point.iterations,
                "columns": point.columns,
                "invalid": 1 if point.errors else 0,
                "errors": "; ".join(point.errors[:3]),
                "method": point.method,
                "seconds": round(seconds[fraction], 1),
            }
        )
    return rows


def curve_table(rows: list[dict]) -> list[str]:
    """Per trace, seed and start: the bound and the witness at each budget."""
    mine = [r for r in rows if r.get("kind") == "curve"]
    if not mine:
        return []
    lines = [
        "## What a migration budget buys at 100 % arrived (the end-state curve)",
        "",
        "From the end state of a start policy (the last arrival of the 100 % window), the best "
        "placement reachable with at most K migrations (a migrated pod moves to any node and "
        "GPU where it fits; pods that failed may be placed; every placed pod stays placed; "
        "`models/gpu/sim/openb/budget_curve.py`, formulation in docs/formulations/gpu.md). "
        "`bound`: no reachable placement leaves fewer GPUs unallocated -- the configuration "
        "bound over the packings that hold every placed pod, valid at every K (more budget "
        "never hurts), and at K = 0 the end state itself (no failed pod fits it alone). "
        "`witness`: a placement that reaches the figure, re-checked from an empty cluster, its "
        "migrations counted from the two placements: at K > 0 from the keep-or-reset "
        "restriction (each node keeps all its pods or is packed anew) by column generation "
        "within the stated time, unlimited from the configuration bound's packing laid onto "
        "the nodes with the fewest migrations found (keep-or-reset when that layout leaves a "
        "CPU-only pod out; column `witness from`). The optimum lies between bound and "
        "witness. Unallocated GPUs at the end of the window (within 1 GPU of the "
        "discretised figures of the other tables).",
        "",
        "| trace | seed | start | start unallocated | budget | K (pods) | bound | witness | "
        "gap (GPUs) | migrations used | failed pods placed | witness from | CG rounds | "
        "seconds | invalid |",
        rule(15),
    ]
    for r in mine:
        witness = r["witness_unalloc"]
        gap = "" if witness == "" else f"{float(witness) - float(r['bound_unalloc']):.2f}"
        lines.append(
            f"| {r['trace']} | {r['seed']} | {r['start']} | {r['start_unalloc']} | "
            f"{r['budget']} | {r['budget_pods']} | {r['bound_unalloc']} | {witness} | {gap} | "
            f"{r['moves']} | {r['failed_placed']} | {r['method']} | {r['iterations']} | "
            f"{r['seconds']} | "
            f"{r['invalid']} |"
        )
    lines.append("")
    return lines


def plot_curve(rows: list[dict], path: Path, command: str = "") -> None:
    """K (share of arrived pods migrated) vs unallocated GPUs: bound and witness per start."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    mine = [r for r in rows if r.get("kind") == "curve"]
    if not mine:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    keys = list(dict.fromkeys((r["trace"], r["seed"], r["start"]) for r in mine))
    for i, key in enumerate(keys):
        pts = [r for r in mine if (r["trace"], r["seed"], r["start"]) == key]
        x = [r["budget_pods"] / r["arrived_pods"] * 100 for r in pts]
        x = [v if v > 0 else 0.1 for v in x]  # K = 0 drawn at 0.1 % on the log axis
        ax.plot(x, [r["bound_unalloc"] for r in pts], "--", color=f"C{i}", lw=1)
        wit = [math.nan if r["witness_unalloc"] == "" else r["witness_unalloc"] for r in pts]
        ax.plot(x, wit, "o-", color=f"C{i}", label=f"{key[0]} seed {key[1]} from {key[2]}")
    ax.set_xscale("log")
    ax.set_xlabel("migration budget K (% of arrived pods; unlimited at 100 %, K = 0 at 0.1 %)")
    ax.set_ylabel("unallocated GPUs at 100 % arrived")
    ax.set_title("witness (solid) and bound (dashed) per budget")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    if command:
        fig.text(0.005, 0.005, command, fontsize=6, color="grey")
    fig.savefig(path, dpi=110)
    plt.close(fig)
