"""``placement bench gpu-openb``: the FGD paper's protocol on the Alibaba openb trace.

The six peers (reproduced), our online, batch and defragmenting modes, the offline LP bound;
the trace with departures (:mod:`placement.models.gpu.sim.openb.departures`); the latency of one
defragmentation cycle on the whole cluster. ``--trace FILE`` (repeatable), ``--seeds A-B``
and ``--modes LIST`` choose the traces, seeds and modes (:data:`MODE_HELP`).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import time
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from placement.solver import InputError

# --- gpu-openb ----------------------------------------------------------------------------------
# The FGD paper's protocol on the Alibaba openb trace: the six peers, ours (online and batch) and
# an offline upper bound. Every policy of :mod:`placement.models.gpu.peers.fgd` and our online
# policy (:mod:`placement.models.gpu.sim.openb.online`) replay the seeds' workloads (the paper's 42-51)
# with :func:`placement.models.gpu.sim.openb.replay.replay`; our batch mode (:mod:`.batch`, B pending pods
# per cycle, CP-SAT per cycle) with :func:`replay_batch`; the offline LP bound
# (:mod:`.offline_bound`) on the same workloads; on the default trace and on the all-fractional
# ``gpushare100`` variant, against the published means (``fgd_published_allocation.csv``
# beside the trace). Every replay's placements, online and batch, are re-checked from scratch
# against the cluster's capacities (:func:`placement.models.gpu.sim.openb.batch.check_placement`).

TRACES = {"default": "openb_pod_list_default.csv", "gpushare100": "openb_pod_list_gpushare100.csv"}
WITHIN_PP = 0.5
"""The reproduction target: our mean within this many percentage points of the published."""
OURS = "FGD+BF-tie"
"""Our online policy (:mod:`placement.models.gpu.sim.openb.online`), also the hint of the batch mode."""
NODE_LIST = "openb_node_list_gpu_node.csv"
MODES = ("online", "batch", "defrag", "bound", "config_bound", "forced_bound")
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
DEFRAG_BUDGETS = (0.0, 0.005, 0.01, 0.02, 0.05, None)
"""The budget curve: fractions of the arrived pods that may ever be migrated (None:
unlimited)."""
LATENCY_LIMITS = (0.2, 1.0, 5.0)
"""Wall-time budgets of the latency cases (s): a whole cycle, build and check included."""
LATENCY_CYCLES = 10
LATENCY_SOURCES = 64
"""Candidate source nodes of a latency cycle (the budget picks a prefix of them)."""
DEPARTURE_MODES = (
    ("FGD", "none", None),
    ("BestFit", "none", None),
    ("FGD+BF-tie", "none", None),
    ("FGD+BF-tie", "migrate", 0.05),
    ("FGD+BF-tie", "preempt", None),
)
"""The trace with departures: (policy, mode, budget) side by side on the same replay."""
BATCH_SIZES = (8, 64, 512)
TARGETS = {("online", None): 296, ("batch", 64): 200, ("defrag", 0.05): 200}
"""Unallocated GPUs at 100 % arrived demand on the default trace that the issue asks for."""
TOTAL_GPUS = 6212
"""The openb cluster's GPUs (rows carry their own cluster's count in ``total_gpus``)."""


def published(data: Path, trace: str) -> dict[str, dict[int, np.ndarray]]:
    """``{policy: {seed: allocation % at 0..130 % arrived}}`` of the paper's artifact."""
    out: dict[str, dict[int, np.ndarray]] = {}
    workload = Path(TRACES[trace]).stem
    if not (data / "fgd_published_allocation.csv").is_file():
        return out
    with open(data / "fgd_published_allocation.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["workload"] != workload:
                continue
            policy = row["sc_policy"].split("-", 1)[1]
            curve = np.array([float(row[str(x)]) if row[str(x)] else math.nan for x in range(131)])
            out.setdefault(policy, {})[int(row["seed"])] = curve
    return out


def _pods_file(data: Path, trace: str, pods_file: str | None = None) -> Path:
    """The pod list of a case: ``--trace FILE``, else the trace's file under the data."""
    return Path(pods_file) if pods_file else data / TRACES[trace]


@cache
def _trace(data: Path, trace: str, pods_file: str | None = None):
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.replay import load_trace

    return load_trace(data / NODE_LIST, _pods_file(data, trace, pods_file))


@cache
def _bound(data: Path, trace: str, pods_file: str | None = None):
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.offline_bound import OfflineBound

    return OfflineBound(*_trace(data, trace, pods_file))


def _config_bound_row(
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

    cluster, pods = _trace(data, trace, pods_file)
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
    lp = _bound(data, trace, pods_file).at(arrived)
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


def _pct(values, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


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
) -> dict:
    """One (trace, policy or mode, seed) case; returns its row (``curve``: allocation % at
    0..130 % arrived). ``mode``: ``online`` (``policy`` decides one pod at a time),
    ``batch`` (cycles of ``batch`` arrivals, ``policy`` as the hint, CP-SAT per cycle with
    ``time_limit`` s), ``defrag`` (``policy`` online, migration cycles within ``budget``,
    :mod:`placement.models.gpu.sim.openb.defrag`; the replay ends after the 100 % window) or
    ``bound`` (the offline LP bound on the seed's workload). ``pods_file``: the pod list
    (default: the trace's file under ``data``)."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.batch import replay_batch
    from placement.models.gpu.sim.openb.defrag import replay_defrag
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.replay import replay, workload

    cluster, pods = _trace(data, trace, pods_file)
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
            latency_p50_us=round(_pct(lat, 50), 1),
            latency_p99_us=round(_pct(lat, 99), 1),
            latency_max_us=round(float(lat.max()), 1),
            over_5ms=int((lat > 5000).sum()),
            cpu_p50_us=round(_pct(cpu, 50), 1),
            cpu_p99_us=round(_pct(cpu, 99), 1),
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
            cycle_p50_ms=round(_pct(curve.cycle_seconds, 50) * 1e3, 1),
            cycle_p99_ms=round(_pct(curve.cycle_seconds, 99) * 1e3, 1),
            solve_p50_ms=round(_pct(curve.solve_seconds, 50) * 1e3, 1),
            solve_p99_ms=round(_pct(curve.solve_seconds, 99) * 1e3, 1),
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
        row["policy"] = curve.policy
        row["batch"] = "unlimited" if budget is None else budget
        row.update(
            budget="unlimited" if budget is None else budget,
            migrated_pods=curve.migrated_at_100,
            migrated_share_pct=round(
                curve.migrated_at_100 / max(curve.arrived_pods_at_100, 1) * 100, 3
            ),
            migrations=curve.migrations,
            cycles=curve.cycles,
            cycles_applied=curve.applied,
            cycle_p50_ms=round(_pct(curve.cycle_seconds, 50) * 1e3, 1),
            cycle_p99_ms=round(_pct(curve.cycle_seconds, 99) * 1e3, 1),
            # over the cycles CP-SAT answered (a cycle without a solution proves no gap)
            gap_max=(
                round(float(np.nanmax(curve.gaps)), 4) if np.isfinite(curve.gaps).any() else ""
            ),
            statuses=" ".join(f"{k}={v}" for k, v in sorted(curve.statuses.items())),
            invalid=curve.invalid,
        )
    elif mode == "bound":
        workload_ss, _ = np.random.SeedSequence(seed).spawn(2)
        order = workload(
            pods, cluster.total_gpu_milli, np.random.default_rng(workload_ss), protocol=protocol
        )
        values = _bound(data, trace, pods_file).curve(order)
        row.update(
            policy="offline LP bound",
            alloc_at_100=round(float(values[100]), 2),
            alloc_at_130=round(float(values[130]), 2),
            pods=len(order),
            seconds=round(time.perf_counter() - t0, 2),
            curve=values,
        )
        row["unalloc_gpus_at_100"] = round((100 - row["alloc_at_100"]) / 100 * gpus, 1)
        return _headline(row, np.cumsum(pods.demand[order]), cluster.total_gpu_milli)
    elif mode in ("config_bound", "forced_bound"):
        workload_ss, _ = np.random.SeedSequence(seed).spawn(2)
        order = workload(
            pods, cluster.total_gpu_milli, np.random.default_rng(workload_ss), protocol=protocol
        )
        row.update(
            _config_bound_row(
                data, trace, pods_file, order, seed, never_refusing=mode == "forced_bound"
            )
        )
        row["seconds"] = round(time.perf_counter() - t0, 2)
        return _headline(row, np.cumsum(pods.demand[order]), cluster.total_gpu_milli)
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
    return _headline(row, curve.arrived, cluster.total_gpu_milli)


def _headline(row: dict, arrived: np.ndarray, total_milli: int) -> dict:
    """The columns every replay row has: ``unallocated_gpus_at_100`` (at 100 % arrived, as
    :meth:`Curve.at` discretises it), ``pods_arrived`` (arrivals up to 100 % of the
    cluster's GPUs), ``migrated_pods`` (distinct pods ever moved by then; 0 without moves)."""
    row["unallocated_gpus_at_100"] = row["unalloc_gpus_at_100"]
    row["pods_arrived"] = int(np.searchsorted(arrived, total_milli, side="right"))
    row.setdefault("migrated_pods", 0)
    return row


def _mean_sd(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def summary(rows: list[dict], pub: dict[str, dict[int, np.ndarray]], total_gpus: int) -> list[dict]:
    out = []
    for policy in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == policy]
        ours, sd = _mean_sd([r["alloc_at_100"] for r in mine])
        theirs = pub.get(policy, {})
        published_mean = (
            statistics.fmean(float(c[100]) for c in theirs.values()) if theirs else math.nan
        )
        out.append(
            {
                "policy": policy,
                "seeds": len(mine),
                "ours": ours,
                "sd": sd,
                "published": published_mean,
                "diff": ours - published_mean,
                "unalloc_ours": (100 - ours) / 100 * total_gpus,
                "unalloc_published": (100 - published_mean) / 100 * total_gpus,
                "p50": statistics.median(r["latency_p50_us"] for r in mine),
                "p99": statistics.median(r["latency_p99_us"] for r in mine),
                "seconds": statistics.fmean(r["seconds"] for r in mine),
            }
        )
    return out


def _modes_table(rows: list[dict], trace: str, fgd_published: float) -> list[str]:
    """Ours (online, batch) against FGD and the bound, one trace."""
    rows = [r for r in rows if r["trace"] == trace]
    total = rows[0].get("total_gpus", TOTAL_GPUS) if rows else TOTAL_GPUS
    # Distances are to the strongest bound run: the configuration bound when present.
    bounds = [
        statistics.fmean(r["unalloc_gpus_at_100"] for r in rows if r["mode"] == mode)
        for mode in ("bound", "config_bound")
        if any(r["mode"] == mode for r in rows)
    ]
    bound_unalloc = max(bounds) if bounds else math.nan
    lines = [
        "| policy / mode | seeds | allocation at 100 % | unallocated GPUs | target "
        "| distance to bound (GPUs) | decision or cycle p50 / p99 | CP-SAT solve p50 / p99 "
        "(cycles solved) | invalid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    if not math.isnan(fgd_published):
        lines.append(
            f"| FGD (published) | 10 | {fgd_published:.2f} % "
            f"| {(100 - fgd_published) / 100 * total:.0f} | | "
            f"{(100 - fgd_published) / 100 * total - bound_unalloc:.0f} | | | |"
        )
    for policy in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == policy]
        mode = mine[0]["mode"]
        if mode == "online" and policy not in ("FGD", "BestFit", OURS):
            continue
        mean, sd = _mean_sd([r["alloc_at_100"] for r in mine])
        unalloc = (100 - mean) / 100 * total
        key = (mode, mine[0]["batch"] or None) if policy != "FGD" else None
        target = TARGETS.get(key) if trace == "default" and policy != "BestFit" else None
        target_txt = (
            f"<= {target}: {'met' if unalloc <= target else '**missed**'}" if target else ""
        )
        if mode == "online":
            lat = (
                f"{statistics.median(r['latency_p50_us'] for r in mine):.0f} / "
                f"{statistics.median(r['latency_p99_us'] for r in mine):.0f} us"
            )
            if all("cpu_p50_us" in r for r in mine):  # rows of older runs lack CPU time
                lat += (
                    f" (CPU {statistics.median(r['cpu_p50_us'] for r in mine):.0f} / "
                    f"{statistics.median(r['cpu_p99_us'] for r in mine):.0f}; "
                    f"{statistics.fmean(r['over_5ms'] / r['pods'] for r in mine) * 100:.2f} % "
                    "over 5 ms)"
                )
            solve, invalid = "", ""
        elif mode == "batch":
            lat = (
                f"{statistics.median(r['cycle_p50_ms'] for r in mine):.1f} / "
                f"{statistics.median(r['cycle_p99_ms'] for r in mine):.1f} ms"
            )
            solved = [r for r in mine if r["solves"]]
            solve = (
                f"{statistics.median(r['solve_p50_ms'] for r in solved):.0f} / "
                f"{statistics.median(r['solve_p99_ms'] for r in solved):.0f} ms "
                if solved
                else "- "
            ) + f"({sum(r['solves'] for r in mine)} of {sum(r['cycles'] for r in mine)})"
            invalid = str(sum(r["invalid"] for r in mine))
        else:
            lat, solve, invalid = "", "", ""
        dist = f"{unalloc - bound_unalloc:.0f}"
        lines.append(
            f"| {policy} | {len(mine)} | {mean:.2f} % ({sd:.2f}) | {unalloc:.0f} | {target_txt} "
            f"| {dist} | {lat} | {solve} | {invalid} |"
        )
    return lines


def _paired(rows: list[dict], trace: str) -> list[str]:
    """GPUs saved against FGD seed by seed (the same workload): mean, its standard error and
    the seeds where ours allocates more."""
    rows = [r for r in rows if r["trace"] == trace]
    fgd = {r["seed"]: r["alloc_at_100"] for r in rows if r["policy"] == "FGD"}
    lines = []
    for policy in dict.fromkeys(r["policy"] for r in rows):
        if policy == "FGD" or not (policy == OURS or policy.startswith(f"{OURS} batch")):
            continue
        saved = [
            (r["alloc_at_100"] - fgd[r["seed"]]) / 100 * r.get("total_gpus", TOTAL_GPUS)
            for r in rows
            if r["policy"] == policy and r["seed"] in fgd
        ]
        if len(saved) < 2:
            continue
        se = statistics.stdev(saved) / math.sqrt(len(saved))
        wins = sum(x > 0 for x in saved)
        lines.append(
            f"| {policy} | {statistics.fmean(saved):+.1f} | {se:.1f} | {wins} of {len(saved)} |"
        )
    if not lines:
        return []
    return [
        "",
        "GPUs saved at 100 % against our FGD on the same seed (positive: fewer unallocated):",
        "",
        "| policy / mode | mean | standard error | seeds better |",
        "|---|---|---|---|",
        *lines,
    ]


def markdown(
    tables: dict[str, list[dict]],
    ablation: list[dict],
    command: str,
    load: str,
    rows: list[dict] | None = None,
    fgd_published: dict[str, float] | None = None,
) -> str:
    lines = [
        "# GPU allocation on the Alibaba openb trace (FGD protocol)",
        "",
        "Generated by `placement bench gpu-openb`; do not edit by hand. Reproduce with:",
        "",
        f"    {command}",
        "",
        f"Machine: 2 shared cores, {load}.",
        "",
    ]
    modes = [r for r in rows or [] if r["mode"] != "online" or r["policy"] == OURS]
    if modes:
        lines += [
            "## Ours (online and batch) against FGD and the offline bound",
            "",
            f"`{OURS}` is our online policy: FGD's fragmentation score, ties broken by the "
            "free milli-GPU left on the chosen GPU before the run's random node order "
            "(`models/gpu/sim/openb/online.py`). `batch B`: every B arrivals, the pending pods are "
            f"placed jointly -- `{OURS}` in arrival order as the hint; when it leaves a pod "
            "that fits alone unplaced, CP-SAT over candidate nodes (max placed milli-GPU, then "
            "fewest fully free GPUs opened by shared pods; 1 worker, the per-cycle time limit "
            "of the command) -- and every placement passes an independent check before it is "
            "applied (`invalid` counts those that fail; the answer must be 0). Allocation at "
            "100 % for batch is *settled*: the pods among the arrivals so far that are placed "
            "once the cycle that received the last of them has run (`alloc_live_at_100` in "
            "the CSV: what the cluster holds at that arrival, before its cycle). `offline LP "
            "bound`: the most milli-GPU any placement of the arrived pods can allocate, with "
            "all of them known (an LP over pod and node classes with per-GPU packing rows, "
            "`models/gpu/sim/openb/offline_bound.py`), evaluated at the end of the 100 % window. "
            "Distance to bound = unallocated GPUs - the bound's. Latency: online, per "
            "decision (filter + scores + choice over 1,213 nodes), wall time and (CPU) the "
            "thread's CPU time, which leaves out preemption by the other processes of the "
            "shared machine, and the share of decisions over 5 ms wall; batch, wall time per "
            "cycle (hint, model, solve, check, apply); medians over seeds of each run's "
            "p50 / p99.",
            "",
        ]
        for trace in dict.fromkeys(r["trace"] for r in rows or []):
            lines += [f"### `{TRACES.get(trace, trace)}`", ""]
            lines += _modes_table(rows or [], trace, (fgd_published or {}).get(trace, math.nan))
            lines += _paired(rows or [], trace)
            lines.append("")
    lines += [
        "## The peers: reproduction of the published figures",
        "",
        "GPU allocation ratio (milli-GPUs allocated / 6,212 GPUs) when the arrived GPU demand "
        "reaches 100 % of capacity, mean over the seeds (sd in brackets), against the mean of "
        "the paper's artifact (`fgd_published_allocation.csv`, same seeds; single runs cannot "
        "match because Go's random stream is not reproduced). Unallocated GPUs = "
        "(1 - ratio) x 6,212. Decision latency: per pod, filter + scores + choice over the "
        "1,213 nodes, median over seeds of each run's p50 / p99 (the machine is shared, so "
        "p99 includes preemption).",
        "",
    ]
    for trace, table in tables.items():
        lines += [
            f"### `{TRACES.get(trace, trace)}`",
            "",
            "| policy | seeds | ours at 100 % | published | diff (pp) | within +-0.5 pp "
            "| unallocated GPUs ours / published | p50 / p99 latency (us) | s per run |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for s in table:
            if math.isnan(s["published"]):
                continue
            ok = "yes" if abs(s["diff"]) <= WITHIN_PP else "**no**"
            lines.append(
                f"| {s['policy']} | {s['seeds']} | {s['ours']:.2f} % ({s['sd']:.2f}) "
                f"| {s['published']:.2f} % | {s['diff']:+.2f} | {ok} "
                f"| {s['unalloc_ours']:.0f} / {s['unalloc_published']:.0f} "
                f"| {s['p50']:.0f} / {s['p99']:.0f} | {s['seconds']:.1f} |"
            )
        lines.append("")
    if ablation:
        lines += [
            "## Ablation: what the reproduction depends on (the `ablation` rows of `gpu-openb.csv`)",
            "",
            "Default trace, allocation at 100 % arrived, mean over the seeds. `rank` is the "
            "simulator's tie-break (smallest node name, names carrying a random rank), "
            "`uniform` stock Kubernetes; `simulator` keeps every trace pod and appends "
            "draws, `resample` draws every pod with replacement.",
            "",
            "| policy | tie-break | protocol | seeds | allocation at 100 % |",
            "|---|---|---|---|---|",
        ]
        for s in tables.get("default", []):
            if any(r["policy"] == s["policy"] for r in ablation):
                lines.append(
                    f"| {s['policy']} | rank | simulator | {s['seeds']} "
                    f"| {s['ours']:.2f} % ({s['sd']:.2f}) |"
                )
        keys = dict.fromkeys((r["policy"], r["tie_break"], r["protocol"]) for r in ablation)
        for policy, tie, protocol in keys:
            vals = [
                r["alloc_at_100"]
                for r in ablation
                if (r["policy"], r["tie_break"], r["protocol"]) == (policy, tie, protocol)
            ]
            mean, sd = _mean_sd(vals)
            lines.append(
                f"| {policy} | {tie} | {protocol} | {len(vals)} | {mean:.2f} % ({sd:.2f}) |"
            )
        lines.append("")
    return "\n".join(lines)


def plot(
    all_rows: dict[str, list[dict]], pubs: dict[str, dict], path: Path, command: str = ""
) -> None:
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    fig, axes = plt.subplots(1, len(all_rows), figsize=(6.5 * len(all_rows), 4.8), squeeze=False)
    x = np.arange(131)
    for ax, (trace, rows) in zip(axes[0], all_rows.items(), strict=True):
        for i, policy in enumerate(dict.fromkeys(r["policy"] for r in rows)):
            color = f"C{i}"
            ours = np.nanmean([r["curve"] for r in rows if r["policy"] == policy], axis=0)
            ax.plot(x, ours, color=color, label=f"{policy} (ours)")
            theirs = pubs[trace].get(policy)
            if theirs:
                ax.plot(
                    x,
                    np.nanmean(list(theirs.values()), axis=0),
                    color=color,
                    linestyle="--",
                    linewidth=1,
                    label=f"{policy} (published)",
                )
        ax.plot(x, x, color="grey", linewidth=0.5)
        ax.set_xlim(50, 130)
        ax.set_ylim(50, 100)
        ax.set_xlabel("arrived GPU demand (% of cluster GPUs)")
        ax.set_ylabel("GPU allocation ratio (%)")
        ax.set_title(TRACES.get(trace, trace))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    if command:
        fig.text(0.005, 0.005, command, fontsize=6, color="grey")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_modes(rows: list[dict], path: Path, command: str = "") -> None:
    """Allocation vs arrived demand: every policy, our online and batch modes, the bound; the
    lower row zooms in on the leaders."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    fig, axes = plt.subplots(2, len(traces), figsize=(6.5 * len(traces), 9), squeeze=False)
    x = np.arange(131)
    for col, trace in enumerate(traces):
        mine = [r for r in rows if r["trace"] == trace]
        means = {}
        with warnings.catch_warnings():
            # Points past a replay's last arrival are NaN in every seed: their mean stays NaN
            # (not drawn), which numpy would otherwise warn about on stderr.
            warnings.simplefilter("ignore", RuntimeWarning)
            for policy in dict.fromkeys(r["policy"] for r in mine):
                curves = [r["curve"] for r in mine if r["policy"] == policy]
                means[policy] = np.nanmean(curves, axis=0)
        for ax in axes[:, col]:
            for i, policy in enumerate(means):
                mode = next(r["mode"] for r in mine if r["policy"] == policy)
                style = {"online": "-", "batch": "-.", "bound": "--"}.get(mode, ":")
                color = "black" if mode in ("bound", "config_bound", "forced_bound") else f"C{i}"
                width = 2.0 if policy == OURS or mode != "online" else 1.0
                if mode in ("config_bound", "forced_bound"):  # one point: at 100 % arrived
                    marker = "*" if mode == "config_bound" else "v"
                    ax.plot(x, means[policy], marker, color=color, ms=9, label=policy)
                    continue
                ax.plot(x, means[policy], style, color=color, lw=width, label=policy)
            ax.plot(x, x, color="grey", linewidth=0.5)
            ax.set_xlabel("arrived GPU demand (% of cluster GPUs)")
            ax.set_ylabel("GPU allocation ratio (%)")
            ax.grid(alpha=0.3)
        top, zoom = axes[0, col], axes[1, col]
        top.set_xlim(50, 130)
        top.set_ylim(70, 100)
        top.set_title(f"{TRACES.get(trace, trace)} (mean over seeds)")
        top.legend(fontsize=7, ncol=2, loc="lower right")
        centre = means.get("FGD", means.get(OURS, np.full(131, 90.0)))[100]
        if not np.isnan(centre):
            zoom.set_xlim(95, 130)
            zoom.set_ylim(centre - 0.8, centre + 0.8)
        zoom.set_title("zoom on the leaders (the bound is above)")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    if command:
        fig.text(0.005, 0.004, command, fontsize=6, color="grey")
    fig.savefig(path, dpi=110)
    plt.close(fig)


OPENB_DATA = "gpu/openb"
QUICK_MODES = ("Random", "BestFit", "FGD", "online", "batch:64", "bound")
FULL_MODES = (
    "peers",
    "online",
    "batch:8",
    "batch:64",
    "batch:512",
    "bound",
    "ablation",
    *(f"defrag:{'unlimited' if b is None else f'{b:g}'}" for b in DEFRAG_BUDGETS),
    "departures",
    "latency",
)
MODE_HELP = (
    "peers (the six peers online), a peer's name (FGD, BestFit, ...), online (ours), "
    "batch:B, defrag:F[:K] (migrations within a fraction F of the arrived pods, or "
    "unlimited; a consolidation cycle every K arrivals), bound (the class LP), bound:config "
    "(the configuration LP at 100 percent arrived), bound:never-refusing (the same over "
    "the packings that hold what every policy that never refuses a pod that fits after "
    "any migration holds), ablation, departures (the "
    "trace with departures), latency (one cycle on the whole cluster)"
)
QUICK_SEEDS = (42,)
FULL_SEEDS = tuple(range(42, 52))


def _budget(text: str, word: str) -> float | None:
    if text == "unlimited":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise InputError.single("--modes", word, "defrag:F with F in [0, 1] or 'unlimited'")
    return value


def _mode_cases(word: str, trace: str, pods_file: str | None, seeds) -> list[dict[str, Any]]:
    """The cases of one ``--modes`` word on one trace (InputError naming a bad word)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.peers.fgd import POLICIES
    from placement.models.gpu.sim.openb.online import OURS as OUR_POLICIES

    base = {"trace": trace, "pods_file": pods_file}
    name, _, arg = word.partition(":")
    out: list[dict[str, Any]] = []
    if name in ("peers", *POLICIES, *OUR_POLICIES, "online") and not arg:
        chosen = list(POLICIES) if name == "peers" else [OURS if name == "online" else name]
        for policy in chosen:
            out += [
                {**base, "case": f"{trace} {policy} seed {s}", "policy": policy, "seed": s}
                for s in seeds
            ]
    elif name == "batch" and arg.isdigit() and int(arg) > 0:
        b = int(arg)
        out += [
            {
                **base,
                "case": f"{trace} batch {b} seed {s}",
                "policy": OURS,
                "seed": s,
                "mode": "batch",
                "batch": b,
            }
            for s in seeds
        ]
    elif name == "defrag" and arg:
        budget_text, _, every = arg.partition(":")
        if every and not every.isdigit():
            raise InputError.single("--modes", word, "defrag:F:K with K a whole number")
        budget = _budget(budget_text, word)
        out += [
            {
                **base,
                "case": f"{trace} defrag {budget_text} seed {s}",
                "policy": OURS,
                "seed": s,
                "mode": "defrag",
                "budget": budget,
                "every": int(every or 0),
            }
            for s in seeds
        ]
    elif word == "bound":
        out += [
            {
                **base,
                "case": f"{trace} bound seed {s}",
                "policy": "bound",
                "seed": s,
                "mode": "bound",
            }
            for s in seeds
        ]
    elif word in CONFIG_BOUND_MODES:
        mode, policy = CONFIG_BOUND_MODES[word]
        out += [
            {
                **base,
                "case": f"{trace} {policy} seed {s}",
                "policy": policy,
                "seed": s,
                "mode": mode,
            }
            for s in seeds
        ]
    elif word == "ablation":
        for policy in ("BestFit", "FGD"):
            for tie_break, protocol in (("uniform", "simulator"), ("rank", "resample")):
                out += [
                    {
                        **base,
                        "case": f"{trace} ablation {policy} {tie_break} {protocol} seed {s}",
                        "policy": policy,
                        "seed": s,
                        "tie_break": tie_break,
                        "protocol": protocol,
                        "ablation": True,
                    }
                    for s in seeds
                ]
    elif word == "departures":
        for policy, mode, budget in DEPARTURE_MODES:
            out += [
                {
                    **base,
                    "case": f"{trace} departures {policy} {mode} seed {s}",
                    "kind": "departures",
                    "policy": policy,
                    "dmode": mode,
                    "budget": budget,
                    "seed": s,
                }
                for s in seeds
            ]
    elif word == "latency":
        out += [
            {**base, "case": f"{trace} latency seed {s}", "kind": "latency", "seed": s}
            for s in seeds
        ]
    else:
        raise InputError.single("--modes", word, MODE_HELP)
    return out


def cases_openb(config: Any) -> list[dict[str, Any]]:
    """Per trace and mode (``--modes``, default: the full protocol, or the quick one) and
    seed (``--seeds``), one case. Traces: ``--trace FILE`` (pod lists; the cluster is the
    trace's node list), else both traces of the data (quick: the default one)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.formats.openb import read_openb_pods

    params = config.params
    files = params.get("trace") or []
    if isinstance(files, str):  # given as --param trace=FILE
        files = [files]
    traces: list[tuple[str, str | None]] = []
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise InputError.single("--trace", f, "an existing pod list CSV (openb layout)")
        try:
            read_openb_pods(path)
        except InputError as exc:
            raise InputError.single(
                "--trace", f, f"a pod list in the openb layout: {exc}"
            ) from None
        known = {v: k for k, v in TRACES.items()}
        traces.append((known.get(path.name, path.stem), str(path.resolve())))
    if not traces:
        traces = [(t, None) for t in (("default",) if config.quick else TRACES)]
    seeds = params.get("seeds") or (QUICK_SEEDS if config.quick else FULL_SEEDS)
    modes = params.get("modes") or (QUICK_MODES if config.quick else FULL_MODES)
    out: list[dict[str, Any]] = []
    for trace, pods_file in traces:
        for word in modes:
            if word in ("ablation",) and trace != "default":
                continue
            out += _mode_cases(word, trace, pods_file, seeds)
    return out


def run_openb(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """One replay (or the bound, a replay with departures, a latency measurement) and the
    independent re-check of every placement it made."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.batch import check_placement
    from placement.models.gpu.sim.openb.replay import TraceState

    data = config.data_dir(OPENB_DATA)
    kind = case.get("kind")
    if kind == "departures":
        return [_run_departures(case, config, data)]
    if kind == "latency":
        return _run_latency(case, config, data)
    row = run_case(
        case["trace"],
        case["policy"],
        case["seed"],
        data,
        mode=case.get("mode", "online"),
        batch=case.get("batch"),
        time_limit=config.time_limit_s,
        tie_break=case.get("tie_break", "rank"),
        protocol=case.get("protocol", "simulator"),
        pods_file=case.get("pods_file"),
        budget=case.get("budget"),
        every=case.get("every", 0),
    )
    placements = row.pop("placements", None)
    if placements is not None:
        # Pods are never removed, so the run is valid iff every placement it holds at the
        # end (after the migrations, for defrag), applied at once to the empty cluster,
        # fits: recomputed from scratch.
        cluster, pods = _trace(data, case["trace"], case.get("pods_file"))
        items, placement = placements
        errors = check_placement(TraceState(cluster), pods, items, placement)
        row["invalid"] = int(row.get("invalid") or 0) + (1 if errors else 0)
        row["placements_checked"] = len(placement)
    row.setdefault("invalid", 0)
    row["ablation"] = bool(case.get("ablation"))
    row["kind"] = "replay"
    row["curve"] = json.dumps([None if math.isnan(v) else round(float(v), 4) for v in row["curve"]])
    return [row]


def _run_departures(case: dict[str, Any], config: Any, data: Path) -> dict[str, Any]:
    """One replay with departures (:mod:`placement.models.gpu.sim.openb.departures`)."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.departures import WINDOW, read_pod_times, replay_departures
    from placement.models.gpu.sim.openb.online import make_any

    cluster, pods = _trace(data, case["trace"], case.get("pods_file"))
    times = read_pod_times(_pods_file(data, case["trace"], case.get("pods_file")), pods)
    window = WINDOW
    run = replay_departures(
        cluster,
        pods,
        times,
        make_any(case["policy"]),
        case["seed"],
        window,
        case["dmode"],
        case.get("budget"),
        min(config.time_limit_s, 1.0),
    )
    waits = run.wait[~np.isnan(run.wait)]
    label = {
        "none": "no moves",
        "migrate": f"migrations <= {case.get('budget')}",
        "preempt": "preempts BE for LS",
    }[case["dmode"]]
    idx = np.linspace(0, len(run.times) - 1, min(len(run.times), 300)).astype(int)
    return {
        "kind": "departures",
        "trace": case["trace"],
        "mode": f"departures:{case['dmode']}",
        "policy": f"{case['policy']} ({label})",
        "seed": case["seed"],
        "window_s": window,
        "pods_arrived": len(run.wait),
        "unallocated_gpus_at_100": "",
        "alloc_mean_pct": round(run.time_mean(run.alloc), 2),
        "frag_rate_pct": round(run.time_mean(run.frag), 2),
        "wait_mean_s": round(float(waits.mean()), 2) if len(waits) else "",
        "wait_p99_s": round(_pct(waits, 99), 2),
        "waited_pct": round(float(run.waited.mean()) * 100, 2),
        "never_started": int(np.isnan(run.wait).sum()),
        **_by_qos(run),
        "preemptions": run.preemptions,
        "migrated_pods": run.migrated,
        "cycles": run.cycles,
        "cycle_p50_ms": round(_pct(run.cycle_seconds, 50) * 1e3, 1),
        "cycle_p99_ms": round(_pct(run.cycle_seconds, 99) * 1e3, 1),
        "invalid": run.invalid,
        "seconds": round(run.seconds, 1),
        "ablation": False,
        "curve": json.dumps(
            {
                "t": [round(float(x), 1) for x in run.times[idx]],
                "alloc": [round(float(x), 2) for x in run.alloc[idx]],
                "wait_q": [round(_pct(waits, q), 2) for q in range(101)],
            }
        ),
    }


def _by_qos(run) -> dict[str, Any]:
    """Mean and p99 wait and the share that waited, of the LS and of the BE pods."""
    out: dict[str, Any] = {}
    qos = np.array(run.qos)
    for cls in ("LS", "BE"):
        mine = qos == cls
        waits = run.wait[mine & ~np.isnan(run.wait)]
        out[f"wait_mean_{cls.lower()}_s"] = round(float(waits.mean()), 2) if len(waits) else ""
        out[f"wait_p99_{cls.lower()}_s"] = round(_pct(waits, 99), 2)
        out[f"waited_{cls.lower()}_pct"] = (
            round(float(run.waited[mine].mean()) * 100, 2) if mine.any() else ""
        )
    return out


def _run_latency(case: dict[str, Any], config: Any, data: Path) -> list[dict[str, Any]]:
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

    from placement.models.gpu.sim.openb.defrag import (
        Book,
        _fragmented,
        budgeted_consolidation,
        cluster_bound,
    )
    from placement.models.gpu.sim.openb.online import make_any
    from placement.models.gpu.sim.openb.replay import TraceState, replay

    cluster, pods = _trace(data, case["trace"], case.get("pods_file"))
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
                "cycle_p50_ms": round(_pct(total, 50) * 1e3, 1),
                "cycle_p99_ms": round(_pct(total, 99) * 1e3, 1),
                "cycle_max_ms": round(max(total) * 1e3, 1),
                "select_p50_ms": round(_pct([r.select_seconds for r in runs], 50) * 1e3, 1),
                "build_p50_ms": round(_pct([r.build_seconds for r in runs], 50) * 1e3, 1),
                "solve_p50_ms": round(_pct([r.solve_seconds for r in runs], 50) * 1e3, 1),
                "source_nodes_p50": int(_pct([len(r.sources) for r in runs], 50)),
                "nodes": int(_pct([r.outcome.nodes for r in runs], 50)),
                "variables_p50": int(_pct([r.outcome.variables for r in runs], 50)),
                "no_solution": cycles - len(solved),
                "optimal": sum(r.outcome.status == "optimal" for r in runs),
                "greedy_moves_p50": _pct([r.greedy_moves for r in runs], 50),
                "moves_p50": _pct(moves, 50),
                "moves_max": max(moves),
                "freed_p50": _pct(freed, 50),
                "freed_max": max(freed),
                "gain_p50": round(_pct(gains, 50), 1) + 0.0,
                "gain_max": round(max(gains), 1) + 0.0,  # no "-0"
                "cluster_free_now": bound.free_now,
                "cluster_free_max": bound.free_max,
                "cluster_gain_bound": bound.gain,
                "cluster_counting_bound": bound.counting_gain,
                "cluster_lp_bound": bound.lp_gain,
                "cluster_bound_ms": round(bound_ms, 1),
                # gap to the whole cluster's bound, in objective units (FREE_WEIGHT per GPU)
                "cluster_gap_p50": round(bound.gain - _pct(gains, 50), 1),
                # CP-SAT's bound on the neighbourhood, over the cycles that found a solution
                "gap_p50": round(_pct([r.outcome.gap for r in solved], 50), 4) if solved else "",
                "gap_max": round(max(r.outcome.gap for r in solved), 4) if solved else "",
                "hood_gain_bound_p50": round(
                    _pct([r.outcome.bound - r.outcome.baseline for r in solved], 50), 1
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


def report_openb(rows: list[dict[str, Any]], config: Any) -> str:
    """The tables (ours vs FGD and the bound, the defragmentation curve, the peers vs the
    published means, the ablation, the trace with departures, the cycle latency) and the
    figures ``gpu-openb.png``, ``gpu-openb-modes.png``, ``gpu-openb-departures.png``."""
    departures = [r for r in rows if r.get("kind") == "departures"]
    latency = [r for r in rows if r.get("kind") == "latency"]
    rows = [
        {**r, "curve": np.array([math.nan if v is None else v for v in json.loads(r["curve"])])}
        for r in rows
        if r.get("kind", "replay") == "replay"
    ]
    data = config.data_dir(OPENB_DATA)
    main = [r for r in rows if not r["ablation"]]
    ablation = [r for r in rows if r["ablation"]]
    traces = list(dict.fromkeys(r["trace"] for r in main))
    pubs = {t: published(data, t) if t in TRACES else {} for t in traces}
    online = {t: [r for r in main if r["trace"] == t and r["mode"] == "online"] for t in traces}
    tables = {
        t: summary(rs, pubs[t], rs[0].get("total_gpus", TOTAL_GPUS))
        for t, rs in online.items()
        if rs
    }
    fgd_pub = {
        t: statistics.fmean(float(c[100]) for c in pubs[t]["FGD"].values())
        for t in traces
        if pubs[t].get("FGD")
    }
    text = markdown(tables, ablation, config.command, "see above", main, fgd_pub)
    peers = {t: [r for r in online[t] if r["policy"] in pubs[t]] for t in traces}
    if any(peers.values()):
        plot(
            {t: rs for t, rs in peers.items() if rs},
            pubs,
            config.out / "gpu-openb.png",
            config.command,
        )
    if main:
        plot_modes(main, config.out / "gpu-openb-modes.png", config.command)
    extra = (
        _bound_table(main)
        + _defrag_tables(main)
        + _departure_tables(departures)
        + _latency_table(latency)
    )
    if departures:
        plot_departures(departures, config.out / "gpu-openb-departures.png", config.command)
    # The runner writes the title, the command and the machine: keep the tables.
    body = text[text.index("\n## ") + 1 :] if "\n## " in text else ""
    return "\n".join([*extra, body])


def _mean(rows: list[dict], key: str) -> float:
    values = [float(r[key]) for r in rows if r.get(key) not in ("", None)]
    return statistics.fmean(values) if values else math.nan


def _bound_table(rows: list[dict]) -> list[str]:
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
        "|---|---|---|---|---|---|---|---|---|---|---|",
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
                    f"{_mean(group, 'lp_bound_unalloc_at_100'):.2f} | "
                    f"{_mean(group, 'unallocated_gpus_at_100'):.2f} | "
                    f"{_mean(group, 'witness_unalloc_at_100'):.2f} | | | | |"
                )
    lines.append("")
    return lines


def _defrag_tables(rows: list[dict]) -> list[str]:
    """Unallocated GPUs at 100 % against the share of pods ever migrated, per budget,
    beside FGD, our online mode and the bound (mean over seeds)."""
    lines: list[str] = []
    for trace in dict.fromkeys(r["trace"] for r in rows if r["mode"] == "defrag"):
        mine = [r for r in rows if r["trace"] == trace]
        lines += [
            f"## Defragmentation: migrations within a budget (`{trace}`)",
            "",
            "Pods never removed; when an arriving pod fits nowhere, a CP-SAT cycle over a "
            "neighbourhood may migrate shared-GPU and CPU-only pods to make room "
            "(`models/gpu/sim/openb/defrag.py`); every cycle is checked before it is applied. "
            "Budget: the fraction of arrived pods that may ever be migrated. Means over the "
            "seeds; `migrated` is the share of the pods arrived at 100 % that were moved.",
            "",
            "| policy / mode | seeds | unallocated GPUs at 100 % | target | migrated pods "
            "(% of arrived) | cycles (applied) | cycle p50 / p99 | invalid |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for policy in dict.fromkeys(r["policy"] for r in mine):
            group = [r for r in mine if r["policy"] == policy]
            mode = group[0]["mode"]
            if mode == "batch" or (mode == "online" and policy not in ("FGD", OURS)):
                continue
            target = ""
            if mode == "defrag" and trace == "default":
                t = TARGETS.get(("defrag", group[0]["batch"]))
                u = _mean(group, "unallocated_gpus_at_100")
                if t:
                    target = f"<= {t}: {'met' if u <= t else '**missed**'}"
            migrated = (
                f"{_mean(group, 'migrated_pods'):.1f} ({_mean(group, 'migrated_share_pct'):.2f} %)"
                if mode == "defrag"
                else ""
            )
            cycles = (
                f"{_mean(group, 'cycles'):.0f} ({_mean(group, 'cycles_applied'):.1f})"
                if mode == "defrag"
                else ""
            )
            lat = (
                f"{_mean(group, 'cycle_p50_ms'):.0f} / {_mean(group, 'cycle_p99_ms'):.0f} ms"
                if mode == "defrag"
                else ""
            )
            lines.append(
                f"| {policy} | {len(group)} | {_mean(group, 'unallocated_gpus_at_100'):.1f} "
                f"| {target} | {migrated} | {cycles} | {lat} "
                f"| {sum(int(r.get('invalid') or 0) for r in group)} |"
            )
        lines.append("")
    return lines


def _departure_tables(rows: list[dict]) -> list[str]:
    lines: list[str] = []
    for trace in dict.fromkeys(r["trace"] for r in rows):
        mine = [r for r in rows if r["trace"] == trace]
        lines += [
            f"## The trace with departures (`{trace}`)",
            "",
            "The seed's workload arrives at a constant rate over "
            f"{mine[0]['window_s']:g} s; each pod runs its own lifetime from the trace and "
            "leaves; a pod that fits nowhere waits in a queue retried whenever capacity is "
            "freed (`models/gpu/sim/openb/departures.py`). Means over the seeds; allocation and "
            "fragmentation rate (FGD's fragmentation / free milli-GPU) are time-averaged "
            "until the last pod has started.",
            "",
            "| policy (mode) | seeds | allocation | fragmentation rate | mean wait | p99 wait "
            "| pods that waited | LS: mean / p99 wait, waited | BE: mean / p99 wait, waited "
            "| never started | preemptions | migrated pods | cycles | invalid |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for policy in dict.fromkeys(r["policy"] for r in mine):
            g = [r for r in mine if r["policy"] == policy]
            lines.append(
                f"| {policy} | {len(g)} | {_mean(g, 'alloc_mean_pct'):.2f} % "
                f"| {_mean(g, 'frag_rate_pct'):.2f} % | {_mean(g, 'wait_mean_s'):.1f} s "
                f"| {_mean(g, 'wait_p99_s'):.1f} s | {_mean(g, 'waited_pct'):.2f} % "
                f"| {_mean(g, 'wait_mean_ls_s'):.1f} / {_mean(g, 'wait_p99_ls_s'):.1f} s, "
                f"{_mean(g, 'waited_ls_pct'):.2f} % "
                f"| {_mean(g, 'wait_mean_be_s'):.1f} / {_mean(g, 'wait_p99_be_s'):.1f} s, "
                f"{_mean(g, 'waited_be_pct'):.2f} % "
                f"| {_mean(g, 'never_started'):.1f} | {_mean(g, 'preemptions'):.1f} "
                f"| {_mean(g, 'migrated_pods'):.1f} | {_mean(g, 'cycles'):.0f} "
                f"| {sum(int(r.get('invalid') or 0) for r in g)} |"
            )
        lines.append("")
    return lines


def _latency_table(rows: list[dict]) -> list[str]:
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
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for trace, limit in dict.fromkeys((r["trace"], r["time_limit_s"]) for r in rows):
        g = [r for r in rows if r["trace"] == trace and r["time_limit_s"] == limit]
        hood, gap = _mean(g, "hood_gain_bound_p50"), _mean(g, "gap_p50")
        lines.append(
            f"| {trace} | {float(limit):g} s | {sum(int(r['cycles']) for r in g)} "
            f"| {_mean(g, 'cycle_p50_ms'):.0f} / {max(float(r['cycle_p99_ms']) for r in g):.0f}"
            f" / {max(float(r['cycle_max_ms']) for r in g):.0f} ms "
            f"| {_mean(g, 'select_p50_ms'):.0f} / {_mean(g, 'build_p50_ms'):.0f} / "
            f"{_mean(g, 'solve_p50_ms'):.0f} ms "
            f"| {_mean(g, 'source_nodes_p50'):.0f} / {_mean(g, 'variables_p50'):.0f} "
            f"| {_mean(g, 'moves_p50'):g} / {max(float(r['moves_max']) for r in g):g} "
            f"({_mean(g, 'greedy_moves_p50'):g}) "
            f"| {_mean(g, 'freed_p50'):g} / {max(float(r['freed_max']) for r in g):g} "
            f"| {_mean(g, 'gain_p50'):g} / {max(float(r['gain_max']) for r in g):g} "
            f"| {_mean(g, 'cluster_gap_p50'):g} "
            f"| {'-' if math.isnan(hood) else f'{hood:g}'} / "
            f"{'-' if math.isnan(gap) else f'{gap:.4f}'} "
            f"| {sum(int(r['no_solution']) for r in g)} "
            f"| {sum(int(r.get('invalid') or 0) for r in g)} |"
        )
    lines.append("")
    return lines


def plot_departures(rows: list[dict], path: Path, command: str = "") -> None:
    """Allocation over time and the waiting-time distribution, per policy (first seed)."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    fig, axes = plt.subplots(2, len(traces), figsize=(6.5 * len(traces), 8), squeeze=False)
    for col, trace in enumerate(traces):
        mine = [r for r in rows if r["trace"] == trace]
        seed = mine[0]["seed"]
        top, low = axes[0, col], axes[1, col]
        for i, r in enumerate(x for x in mine if x["seed"] == seed):
            series = json.loads(r["curve"]) if isinstance(r["curve"], str) else r["curve"]
            top.plot(series["t"], series["alloc"], color=f"C{i}", lw=1.2, label=r["policy"])
            q = series["wait_q"]
            low.plot(q, np.arange(101), color=f"C{i}", lw=1.2, label=r["policy"])
        top.set_xlabel("time (s)")
        top.set_ylabel("GPU allocation (%)")
        top.set_title(f"{trace}, seed {seed}: allocation over time")
        top.grid(alpha=0.3)
        top.legend(fontsize=7)
        low.set_xscale("symlog", linthresh=1.0)
        low.set_xlabel("waiting time (s)")
        low.set_ylabel("percentile of started pods")
        low.set_title("waiting-time distribution")
        low.grid(alpha=0.3)
        low.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    if command:
        fig.text(0.005, 0.004, command, fontsize=6, color="grey")
    fig.savefig(path, dpi=110)
    plt.close(fig)
