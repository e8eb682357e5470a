"""Offline bounds at 100 % arrived: the configuration LP and the never-refusing bound.

:func:`config_bound_row` runs the configuration bound
(:mod:`placement.models.gpu.sim.openb.config_bound`) on a seed's arrivals beside the class LP
bound, with its witness packing; :func:`bound_table` is its table in the report.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from placement.benchmarks.gpu.openb.shared import lp_bound, mean_of, trace_of
from placement.benchmarks.tables import rule

CONFIG_BOUND_TIME_S = 900.0
"""Time limit of the configuration bound's column generation per seed (the bound is valid
whenever it stops; it usually converges well before)."""
CONFIG_BOUND_GAP_MILLI = 50.0
"""Stop the column generation once the Lagrangian bound is within this of the master LP
(0.05 GPU: below the table's rounding)."""
CONFIG_BOUND_STARTS = ("FGD+BF-tie", "FGD", "BestFit")
"""Policies whose replay of the arrived pods (in arrival order) give the first columns."""
CONFIG_BOUND_MODES = {
    "bound:config": ("config_bound", "configuration bound"),
    "bound:never-refusing": ("forced_bound", "never-refusing bound"),
}
"""``--modes`` word -> (mode, policy) of the two configuration-LP bounds."""


def config_bound_row(
    data: Path,
    trace: str,
    pods_file: str | None,
    order: np.ndarray,
    seed: int,
    never_refusing: bool = False,
) -> dict:
    """The configuration bound (:mod:`placement.models.gpu.sim.openb.config_bound`) at the last
    arrival of the 100 % window, beside the class LP bound at the same arrivals, and the
    witness packing (``placements``, re-checked by :func:`run_openb`). ``never_refusing``:
    the bound over the packings that hold the arrivals every never-refusing policy holds
    (:func:`~placement.models.gpu.sim.openb.config_bound.forced_prefix` of the start replays)."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.config_bound import ConfigBound, forced_prefix
    from placement.models.gpu.sim.openb.offline_bound import window_end
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.replay import replay

    cluster, pods = trace_of(data, trace, pods_file)
    total = cluster.total_gpu_milli
    end = window_end(np.cumsum(pods.demand[order]), total, 100)
    arrived = order[:end]
    starts, nodes = [], []
    for policy in CONFIG_BOUND_STARTS:
        curve = replay(cluster, pods, make_any(policy), seed, order=arrived)
        nodes.append(curve.node)
        starts.append(
            [(int(arrived[i]), int(n), curve.gpus[i]) for i, n in enumerate(curve.node) if n >= 0]
        )
    forced = forced_prefix(arrived, nodes) if never_refusing else np.zeros(0, dtype=np.int64)
    result = ConfigBound(cluster, pods).at(
        arrived,
        time_limit_s=CONFIG_BOUND_TIME_S,
        start=starts,
        stop_gap_milli=CONFIG_BOUND_GAP_MILLI,
        forced=forced,
    )
    lp = lp_bound(data, trace, pods_file).at(arrived)
    gpus = total // 1000
    curve = np.full(131, math.nan)
    curve[100] = result.bound_milli / total * 100
    witness = result.witness
    return {
        "policy": "never-refusing bound" if never_refusing else "configuration bound",
        "forced_pods": len(forced),
        "forced_arrived_pct": (
            round(float(pods.demand[forced].sum()) / total * 100, 2) if len(forced) else 0.0
        ),
        "alloc_at_100": round(result.bound_milli / total * 100, 4),
        "unalloc_gpus_at_100": round((total - result.bound_milli) / 1000, 2),
        "lp_bound_unalloc_at_100": round((total - lp) / 1000, 2),
        "witness_unalloc_at_100": (
            "" if result.witness_milli is None else round((total - result.witness_milli) / 1000, 2)
        ),
        "config_converged": result.converged,
        "config_iterations": result.iterations,
        "config_columns": result.columns,
        "config_master_unalloc": round((total - result.master_milli) / 1000, 3),
        # the witness's own check (it also fails a witness that drops a forced pod);
        # run_openb adds the from-scratch check of its placement
        "invalid": 1 if result.witness_errors else 0,
        "pods": int(end),
        "total_gpus": gpus,
        "curve": curve,
        "placements": (
            [p for p, _, _ in witness],
            [(i, node, gpus_) for i, (_, node, gpus_) in enumerate(witness)],
        ),
    }


def bound_table(rows: list[dict]) -> list[str]:
    """Per trace and seed: the class LP bound, the configuration bound and its witness (the
    offline optimum lies between the last two), unallocated GPUs at 100 % arrived."""
    mine = [r for r in rows if r["mode"] in ("config_bound", "forced_bound")]
    if not mine:
        return []
    lines = [
        "## Offline bounds on the unallocated GPUs at 100 % arrived",
        "",
        "No policy -- online, batch, with any migrations -- leaves fewer GPUs unallocated "
        "than the configuration bound (`models/gpu/sim/openb/config_bound.py`, formulation in "
        "docs/formulations/gpu.md). The never-refusing bound is the same LP over the "
        "packings that also hold the arrivals of the longest prefix a start replay holds "
        "wholly (`forced`: pods, and their share of the cluster's GPUs): no policy that "
        "places every arriving pod that fits after some re-packing (any migration) leaves "
        "fewer. The witness is a packing of the same arrived pods, re-checked from scratch "
        "(holding the forced ones): the optimum of each problem lies between it and its "
        "bound. Targets are judged on the default trace only.",
        "",
        "| trace | seed | bound | forced | class LP bound | bound (unallocated GPUs) | "
        "witness packing | target <= 200 | CG iterations (bound to master LP) | columns | "
        "seconds |",
        rule(11),
    ]
    for r in mine:
        bound = float(r["unallocated_gpus_at_100"])
        refusing = r["mode"] == "config_bound"
        target = ""
        if r["trace"] == "default":
            target = (
                ("**proved impossible**" if refusing else "**impossible never refusing**")
                if bound > 200
                else f"not excluded ({200 - bound:.1f} GPUs of room)"
            )
        forced = (
            "-" if refusing else f"{r.get('forced_pods', '')} ({r.get('forced_arrived_pct', '')} %)"
        )
        lines.append(
            f"| {r['trace']} | {r['seed']} | {'configuration' if refusing else 'never refusing'}"
            f" | {forced} | {float(r['lp_bound_unalloc_at_100']):.2f} | "
            f"{bound:.2f} | {r['witness_unalloc_at_100']} | {target} | "
            f"{r['config_iterations']} "
            f"({float(r['config_master_unalloc']) - bound:.3f} GPU) | {r['config_columns']} | "
            f"{r['seconds']} |"
        )
    for trace in dict.fromkeys(r["trace"] for r in mine):
        for mode in ("config_bound", "forced_bound"):
            group = [r for r in mine if r["trace"] == trace and r["mode"] == mode]
            if len(group) > 1:
                lines.append(
                    f"| {trace} | mean of {len(group)} | "
                    f"{'configuration' if mode == 'config_bound' else 'never refusing'} | | "
                    f"{mean_of(group, 'lp_bound_unalloc_at_100'):.2f} | "
                    f"{mean_of(group, 'unallocated_gpus_at_100'):.2f} | "
                    f"{mean_of(group, 'witness_unalloc_at_100'):.2f} | | | | |"
                )
    lines.append("")
    return lines
