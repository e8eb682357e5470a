"""One replay of a seed's workload: online, batch, defragmenting, or the bounds on it.

:func:`run_case` is the row of one (trace, policy or mode, seed) case of the allocation
curves, the peers' reproduction, the defragmentation budgets and the offline bounds.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from placement.benchmarks.gpu.openb.bounds import config_bound_row
from placement.benchmarks.gpu.openb.shared import lp_bound, percentile, trace_of

MODES = ("online", "batch", "defrag", "repack", "bound", "config_bound", "forced_bound")


def run_case(
    trace: str,
    policy: str,
    seed: int,
    data: Path,
    mode: str = "online",
    batch: int | None = None,
    time_limit: float = 1.0,
    tie_break: str = "rank",
    protocol: str = "simulator",
    pods_file: str | None = None,
    budget: float | None = None,
    every: int = 0,
    repack: dict | None = None,
) -> dict:
    """One (trace, policy or mode, seed) case; returns its row (``curve``: allocation % at
    0..130 % arrived). ``mode``: ``online`` (``policy`` decides one pod at a time),
    ``batch`` (cycles of ``batch`` arrivals, ``policy`` as the hint, CP-SAT per cycle with
    ``time_limit`` s), ``defrag`` (``policy`` online, migration cycles within ``budget``,
    :mod:`placement.models.gpu.sim.openb.defrag`; the replay ends after the 100 % window) or
    ``repack`` (``policy`` online, re-packing cycles within ``budget`` every ``every``
    arrivals while pods wait, ``repack`` the cycle's other settings: ``cycle_time_s``,
    ``nodes``, ``cycle_moves``, ``pressure`` of :func:`~placement.models.gpu.sim.openb.repack.replay_repack`;
    the replay ends after the 100 % window) or
    ``bound`` (the offline LP bound on the seed's workload). ``pods_file``: the pod list
    (default: the trace's file under ``data``)."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.batch import replay_batch
    from placement.models.gpu.sim.openb.defrag import replay_defrag
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.repack import replay_repack
    from placement.models.gpu.sim.openb.replay import replay, workload

    cluster, pods = trace_of(data, trace, pods_file)
    gpus = cluster.total_gpu_milli // 1000
    row: dict = {
        "total_gpus": gpus,
        "trace": trace,
        "policy": policy,
        "mode": mode,
        "batch": batch or "",
        "seed": seed,
        "tie_break": tie_break,
        "protocol": protocol,
    }
    t0 = time.perf_counter()
    if mode == "online":
        curve = replay(
            cluster, pods, make_any(policy), seed, tie_break=tie_break, protocol=protocol
        )
        lat, cpu = curve.latency_ns / 1e3, curve.cpu_ns / 1e3
        row.update(
            latency_p50_us=round(percentile(lat, 50), 1),
            latency_p99_us=round(percentile(lat, 99), 1),
            latency_max_us=round(float(lat.max()), 1),
            over_5ms=int((lat > 5000).sum()),
            cpu_p50_us=round(percentile(cpu, 50), 1),
            cpu_p99_us=round(percentile(cpu, 99), 1),
        )
    elif mode == "batch":
        if not batch:
            raise ValueError("batch mode needs a batch size (pods per cycle), e.g. 64")
        curve = replay_batch(
            cluster,
            pods,
            make_any(policy),
            seed,
            batch,
            time_limit=time_limit,
            tie_break=tie_break,
            protocol=protocol,
        )
        row["policy"] = f"{policy} batch {batch}"
        row.update(
            alloc_live_at_100=curve.at_live(100),
            cycles=len(curve.cycle_seconds),
            solves=len(curve.solve_seconds),
            cycle_p50_ms=round(percentile(curve.cycle_seconds, 50) * 1e3, 1),
            cycle_p99_ms=round(percentile(curve.cycle_seconds, 99) * 1e3, 1),
            solve_p50_ms=round(percentile(curve.solve_seconds, 50) * 1e3, 1),
            solve_p99_ms=round(percentile(curve.solve_seconds, 99) * 1e3, 1),
            statuses=" ".join(f"{k}={v}" for k, v in sorted(curve.statuses.items())),
            invalid=curve.invalid,
            max_pending=curve.max_pending,
        )
    elif mode == "defrag":
        curve = replay_defrag(
            cluster,
            pods,
            make_any(policy),
            seed,
            budget,
            every=every,
            time_limit=time_limit,
            tie_break=tie_break,
            protocol=protocol,
            stop=1.01,
        )
        row.update(_budget_columns(curve, budget))
        row.update(
            # over the cycles CP-SAT answered (a cycle without a solution proves no gap)
            gap_max=(
                round(float(np.nanmax(curve.gaps)), 4) if np.isfinite(curve.gaps).any() else ""
            ),
            statuses=" ".join(f"{k}={v}" for k, v in sorted(curve.statuses.items())),
            invalid=curve.invalid,
        )
    elif mode == "repack":
        curve = replay_repack(
            cluster,
            pods,
            make_any(policy),
            seed,
            budget,
            every=every,
            tie_break=tie_break,
            protocol=protocol,
            stop=1.01,
            **(repack or {}),
        )
        row.update(_budget_columns(curve, budget))
        row.update(
            every=every,
            cycle_time_s=curve.cycle_time_s,
            nodes=curve.nodes,
            cycle_moves="" if curve.cycle_moves is None else curve.cycle_moves,
            pressure=curve.pressure,
            per_gpu=curve.per_gpu,
            planned_moves=curve.planned,
            rejected_moves=curve.rejected,
            waiting_placed=curve.placed_waiting,
            cycle_gains_gpus=" ".join(f"{g / 1000:g}" for g in curve.gained_milli),
            cycle_migrated_pods=" ".join(str(m) for m in curve.cycle_migrated),
            cycle_arrived_pct=" ".join(f"{curve.arrived_pct[a]:.2f}" for a in curve.cycle_at),
            end_unalloc_gpus=round((cluster.total_gpu_milli - int(curve.used[-1])) / 1000, 2),
        )
    elif mode == "bound":
        workload_ss, _ = np.random.SeedSequence(seed).spawn(2)
        order = workload(
            pods, cluster.total_gpu_milli, np.random.default_rng(workload_ss), protocol=protocol
        )
        values = lp_bound(data, trace, pods_file).curve(order)
        row.update(
            policy="offline LP bound",
            alloc_at_100=round(float(values[100]), 2),
            alloc_at_130=round(float(values[130]), 2),
            pods=len(order),
            seconds=round(time.perf_counter() - t0, 2),
            curve=values,
        )
        row["unalloc_gpus_at_100"] = round((100 - row["alloc_at_100"]) / 100 * gpus, 1)
        return headline(row, np.cumsum(pods.demand[order]), cluster.total_gpu_milli)
    elif mode in ("config_bound", "forced_bound"):
        workload_ss, _ = np.random.SeedSequence(seed).spawn(2)
        order = workload(
            pods, cluster.total_gpu_milli, np.random.default_rng(workload_ss), protocol=protocol
        )
        row.update(
            config_bound_row(
                data, trace, pods_file, order, seed, never_refusing=mode == "forced_bound"
            )
        )
        row["seconds"] = round(time.perf_counter() - t0, 2)
        return headline(row, np.cumsum(pods.demand[order]), cluster.total_gpu_milli)
    else:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    row["placements"] = (
        [int(p) for p in curve.order],
        [(i, int(n), tuple(curve.gpus[i])) for i, n in enumerate(curve.node) if n >= 0],
    )
    row.update(
        alloc_at_100=curve.at(100),
        alloc_at_130=curve.at(130),
        unalloc_gpus_at_100=round((100 - curve.at(100)) / 100 * gpus, 1),
        pods=len(curve.order),
        pods_unplaced=curve.unplaced,
        seconds=round(time.perf_counter() - t0, 2),
        curve=curve.discrete(130),
    )
    return headline(row, curve.arrived, cluster.total_gpu_milli)


def _budget_columns(curve, budget: float | None) -> dict:
    """The columns of a replay that migrates within a budget (defrag, repack): the policy,
    the budget, the pods migrated by 100 % arrived, the moves, the cycles and their
    latency."""
    return {
        "policy": curve.policy,
        "batch": "unlimited" if budget is None else budget,
        "budget": "unlimited" if budget is None else budget,
        "migrated_pods": curve.migrated_at_100,
        "migrated_share_pct": round(
            curve.migrated_at_100 / max(curve.arrived_pods_at_100, 1) * 100, 3
        ),
        "migrations": curve.migrations,
        "cycles": curve.cycles,
        "cycles_applied": curve.applied,
        "cycle_p50_ms": round(percentile(curve.cycle_seconds, 50) * 1e3, 1),
        "cycle_p99_ms": round(percentile(curve.cycle_seconds, 99) * 1e3, 1),
    }


def headline(row: dict, arrived: np.ndarray, total_milli: int) -> dict:
    """The columns every replay row has: ``unallocated_gpus_at_100`` (at 100 % arrived, as
    :meth:`Curve.at` discretises it), ``pods_arrived`` (arrivals up to 100 % of the
    cluster's GPUs), ``migrated_pods`` (distinct pods ever moved by then; 0 without moves)."""
    row["unallocated_gpus_at_100"] = row["unalloc_gpus_at_100"]
    row["pods_arrived"] = int(np.searchsorted(arrived, total_milli, side="right"))
    row.setdefault("migrated_pods", 0)
    return row
