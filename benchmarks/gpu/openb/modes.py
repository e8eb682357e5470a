"""Ours (online and batch) against FGD and the offline bound: the allocation at 100 %.

:func:`modes_section` is the report's table per trace (with the GPUs saved against FGD
seed by seed) and :func:`plot_modes` the allocation curves (``gpu-openb-modes.png``).
"""

from __future__ import annotations

import math
import statistics
import warnings
from pathlib import Path

import numpy as np

from placement.benchmarks.gpu.openb.shared import (
    OURS,
    TARGETS,
    TOTAL_GPUS,
    TRACES,
    mean_sd,
    verdict,
)
from placement.benchmarks.tables import rule


def modes_section(rows: list[dict] | None, fgd_published: dict[str, float] | None) -> list[str]:
    """The section on our modes (none without a row of them)."""
    lines: list[str] = []
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
    return lines


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
        rule(9),
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
        mean, sd = mean_sd([r["alloc_at_100"] for r in mine])
        unalloc = (100 - mean) / 100 * total
        key = (mode, mine[0]["batch"] or None) if policy != "FGD" else None
        target = TARGETS.get(key) if trace == "default" and policy != "BestFit" else None
        target_txt = (
            verdict([(100 - r["alloc_at_100"]) / 100 * total for r in mine], target)
            if target
            else ""
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
        rule(4),
        *lines,
    ]


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
