"""The latency of one re-optimization cycle on the whole cluster, within a wall-time budget.

:func:`run_latency` times consolidation cycles
(:func:`placement.models.gpu.sim.openb.defrag.budgeted_consolidation`) on the seed's
placement at 100 % arrived, beside the whole cluster's bound; :func:`latency_table` reports
them.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from placement.benchmarks.gpu.openb.shared import OURS, mean_of, percentile, trace_of
from placement.benchmarks.tables import rule

LATENCY_LIMITS = (0.2, 1.0, 5.0)
"""Wall-time budgets of the latency cases (s): a whole cycle, build and check included."""
LATENCY_CYCLES = 10
LATENCY_SOURCES = 64
"""Candidate source nodes of a latency cycle (the budget picks a prefix of them)."""


def run_latency(case: dict[str, Any], config: Any, data: Path) -> list[dict[str, Any]]:
    """Consolidation cycles within a wall-time budget
    (:func:`placement.models.gpu.sim.openb.defrag.budgeted_consolidation`: a greedy over the
    whole cluster, then CP-SAT over a neighbourhood) on the whole cluster holding the seed's
    placement at 100 % arrived (our online policy): source nodes from the
    most fragmented ones (the ranking shifted by 8 nodes per cycle), as many as the budget
    affords, unlimited migration budget, at each budget of :data:`LATENCY_LIMITS`; every
    answer checked. The gain is compared with the bound for the whole cluster
    (:func:`~placement.models.gpu.sim.openb.defrag.cluster_bound`) and with CP-SAT's bound on
    the cycle's own neighbourhood."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from ortools.sat.python import cp_model  # noqa: F401  (loaded before the clock starts)

    from placement.models.gpu.sim.openb.defrag_bound import cluster_bound
    from placement.models.gpu.sim.openb.defrag_cycle import (
        Book,
        _fragmented,
        budgeted_consolidation,
    )
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.replay import TraceState, replay

    cluster, pods = trace_of(data, case["trace"], case.get("pods_file"))
    curve = replay(cluster, pods, make_any(OURS), case["seed"])
    last = int(np.searchsorted(curve.arrived, cluster.total_gpu_milli, side="right"))
    order = np.asarray(curve.order[:last], dtype=np.int64)
    state = TraceState(cluster)
    book = Book(len(order), cluster.n)
    for a in range(len(order)):
        if curve.node[a] >= 0:
            state.place(pods, int(order[a]), int(curve.node[a]), list(curve.gpus[a]))
            book.put(a, int(curve.node[a]), tuple(curve.gpus[a]))
    t0 = time.perf_counter()
    bound = cluster_bound(state, pods, order, book)
    bound_ms = (time.perf_counter() - t0) * 1e3
    cycles = 3 if config.quick else LATENCY_CYCLES
    limits = (0.2,) if config.quick else LATENCY_LIMITS
    ranked = _fragmented(state, LATENCY_SOURCES + 8 * cycles)
    rows = []
    for limit in limits:
        runs = [
            budgeted_consolidation(
                state, pods, order, book, ranked[8 * c :], limit, seed=case["seed"] + c
            )
            for c in range(cycles)
        ]
        total = [r.total_seconds for r in runs]
        solved = [r for r in runs if r.outcome.status != "no_solution"]
        gains = [r.gain for r in runs]
        moves = [len(r.moves) if not r.errors else 0 for r in runs]
        freed = [r.freed for r in runs]
        rows.append(
            {
                "kind": "latency",
                "trace": case["trace"],
                "mode": "latency",
                "policy": f"cycle {limit:g} s",
                "seed": case["seed"],
                "time_limit_s": limit,
                "cycles": cycles,
                "cycle_p50_ms": round(percentile(total, 50) * 1e3, 1),
                "cycle_p99_ms": round(percentile(total, 99) * 1e3, 1),
                "cycle_max_ms": round(max(total) * 1e3, 1),
                "select_p50_ms": round(percentile([r.select_seconds for r in runs], 50) * 1e3, 1),
                "build_p50_ms": round(percentile([r.build_seconds for r in runs], 50) * 1e3, 1),
                "solve_p50_ms": round(percentile([r.solve_seconds for r in runs], 50) * 1e3, 1),
                "source_nodes_p50": int(percentile([len(r.sources) for r in runs], 50)),
                "nodes": int(percentile([r.outcome.nodes for r in runs], 50)),
                "variables_p50": int(percentile([r.outcome.variables for r in runs], 50)),
                "no_solution": cycles - len(solved),
                "optimal": sum(r.outcome.status == "optimal" for r in runs),
                "greedy_moves_p50": percentile([r.greedy_moves for r in runs], 50),
                "moves_p50": percentile(moves, 50),
                "moves_max": max(moves),
                "freed_p50": percentile(freed, 50),
                "freed_max": max(freed),
                "gain_p50": round(percentile(gains, 50), 1) + 0.0,
                "gain_max": round(max(gains), 1) + 0.0,  # no "-0"
                "cluster_free_now": bound.free_now,
                "cluster_free_max": bound.free_max,
                "cluster_gain_bound": bound.gain,
                "cluster_counting_bound": bound.counting_gain,
                "cluster_lp_bound": bound.lp_gain,
                "cluster_bound_ms": round(bound_ms, 1),
                # gap to the whole cluster's bound, in objective units (FREE_WEIGHT per GPU)
                "cluster_gap_p50": round(bound.gain - percentile(gains, 50), 1),
                # CP-SAT's bound on the neighbourhood, over the cycles that found a solution
                "gap_p50": round(percentile([r.outcome.gap for r in solved], 50), 4)
                if solved
                else "",
                "gap_max": round(max(r.outcome.gap for r in solved), 4) if solved else "",
                "hood_gain_bound_p50": round(
                    percentile([r.outcome.bound - r.outcome.baseline for r in solved], 50), 1
                )
                if solved
                else "",
                "pods_arrived": last,
                "unallocated_gpus_at_100": "",
                "migrated_pods": "",
                "invalid": sum(bool(r.errors) for r in runs),
                "ablation": False,
                "curve": "",
            }
        )
    return rows


def latency_table(rows: list[dict]) -> list[str]:
    """Per trace and wall-time budget: the cycles' times, moves, gains and bounds."""
    if not rows:
        return []
    first = rows[0]
    lines = [
        "## Latency of one re-optimization cycle on the whole cluster",
        "",
        "The seed's placement at 100 % arrived (our online policy, 1,213 nodes); a "
        "consolidation cycle within a wall-time budget (`defrag.budgeted_consolidation`): "
        "a greedy over the whole cluster (pods alone on a GPU to the tightest partly used GPU "
        "with room, CPU and memory), then CP-SAT over source nodes from the most fragmented "
        "(shifted per cycle), as many as the budget affords, plus their destinations; unlimited migration budget, 1 CP-SAT worker. "
        "Time: the whole cycle (choosing the nodes, building, solving, decoding, checking). "
        "Gain: FREE_WEIGHT (10) per GPU freed minus 4 per pod moved. Whole-cluster bound "
        f"(`defrag.cluster_bound`, valid for any migrations): gain <= "
        f"{float(first['cluster_gain_bound']):g} (the pattern LP's "
        f"{float(first['cluster_lp_bound']):g}, the counting bound's "
        f"{float(first['cluster_counting_bound']):g}; computed in "
        f"{float(first['cluster_bound_ms']):.0f} ms; fully free GPUs "
        f"{first['cluster_free_now']} now, at most {first['cluster_free_max']}).",
        "",
        "| trace | budget | cycles | total p50 / p99 / max | select / build / solve p50 "
        "| source nodes / variables p50 | moves p50 / max (greedy p50) | GPUs freed p50 / max "
        "| gain p50 / max | gap to cluster bound p50 | neighbourhood bound p50 / gap p50 "
        "| no solution | invalid |",
        rule(13),
    ]
    for trace, limit in dict.fromkeys((r["trace"], r["time_limit_s"]) for r in rows):
        g = [r for r in rows if r["trace"] == trace and r["time_limit_s"] == limit]
        hood, gap = mean_of(g, "hood_gain_bound_p50"), mean_of(g, "gap_p50")
        lines.append(
            f"| {trace} | {float(limit):g} s | {sum(int(r['cycles']) for r in g)} "
            f"| {mean_of(g, 'cycle_p50_ms'):.0f} / {max(float(r['cycle_p99_ms']) for r in g):.0f}"
            f" / {max(float(r['cycle_max_ms']) for r in g):.0f} ms "
            f"| {mean_of(g, 'select_p50_ms'):.0f} / {mean_of(g, 'build_p50_ms'):.0f} / "
            f"{mean_of(g, 'solve_p50_ms'):.0f} ms "
            f"| {mean_of(g, 'source_nodes_p50'):.0f} / {mean_of(g, 'variables_p50'):.0f} "
            f"| {mean_of(g, 'moves_p50'):g} / {max(float(r['moves_max']) for r in g):g} "
            f"({mean_of(g, 'greedy_moves_p50'):g}) "
            f"| {mean_of(g, 'freed_p50'):g} / {max(float(r['freed_max']) for r in g):g} "
            f"| {mean_of(g, 'gain_p50'):g} / {max(float(r['gain_max']) for r in g):g} "
            f"| {mean_of(g, 'cluster_gap_p50'):g} "
            f"| {'-' if math.isnan(hood) else f'{hood:g}'} / "
            f"{'-' if math.isnan(gap) else f'{gap:.4f}'} "
            f"| {sum(int(r['no_solution']) for r in g)} "
            f"| {sum(int(r.get('invalid') or 0) for r in g)} |"
        )
    lines.append("")
    return lines
