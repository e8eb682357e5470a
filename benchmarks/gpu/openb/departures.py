"""The trace with departures: allocation, fragmentation and waiting when pods leave.

:func:`run_departures` replays a seed's workload with each pod's lifetime
(:mod:`placement.models.gpu.sim.openb.departures`), without moves, with migrations, with
preemption or with re-packing cycles; :func:`departure_tables` and :func:`plot_departures`
report it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from placement.benchmarks.gpu.kant import kant_table
from placement.benchmarks.gpu.openb.shared import mean_of, percentile, pods_file_of, trace_of
from placement.benchmarks.tables import rule

DEPARTURE_MODES = (
    ("FGD", "none", None),
    ("BestFit", "none", None),
    ("FGD+BF-tie", "none", None),
    ("FGD+BF-tie", "migrate", 0.05),
    ("FGD+BF-tie", "preempt", None),
    ("FGD+BF-tie", "repack", 0.05),
)
"""The trace with departures: (policy, mode, budget) side by side on the same replay."""


def departure_repack_settings(params: dict) -> dict:
    """The ``repack`` mode's ``every`` and ``cycle_time_s`` with departures: the suite's
    ``--param repack_every`` / ``repack_time`` when given (checked as
    :func:`.repacking.repack_settings` checks them), else the replay's own defaults
    (:data:`~placement.models.gpu.sim.openb.departures.REPACK_EVERY`,
    :data:`~placement.models.gpu.sim.openb.departures.REPACK_SECONDS`: the FGD protocol's
    240 s cycles would take 24 minutes in six cycles here)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.benchmarks.gpu.openb.repacking import repack_settings
    from placement.models.gpu.sim.openb.departures import REPACK_EVERY, REPACK_SECONDS

    checked = repack_settings(params)
    return {
        "every": checked["every"] if params.get("repack_every") else REPACK_EVERY,
        "cycle_time_s": checked["cycle_time_s"] if params.get("repack_time") else REPACK_SECONDS,
    }


def run_departures(case: dict[str, Any], config: Any, data: Path) -> dict[str, Any]:
    """One replay with departures (:mod:`placement.models.gpu.sim.openb.departures`)."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.departures import WINDOW, read_pod_times, replay_departures
    from placement.models.gpu.sim.openb.online import make_any

    cluster, pods = trace_of(data, case["trace"], case.get("pods_file"))
    times = read_pod_times(pods_file_of(data, case["trace"], case.get("pods_file")), pods)
    window = WINDOW
    repack = case.get("repack") or {}
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
        **repack,
    )
    waits = run.wait[~np.isnan(run.wait)]
    label = {
        "none": "no moves",
        "migrate": f"migrations <= {case.get('budget')}",
        "preempt": "preempts BE for LS",
        "repack": f"re-packing within {(case.get('budget') or 0) * 100:g} %",
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
        "wait_p99_s": round(percentile(waits, 99), 2),
        "waited_pct": round(float(run.waited.mean()) * 100, 2),
        "never_started": int(np.isnan(run.wait).sum()),
        **_by_qos(run),
        "preemptions": run.preemptions,
        "migrated_pods": run.migrated,
        "cycles": run.cycles,
        **(
            {
                "planned_moves": run.planned,
                "rejected_moves": run.rejected,
                "waiting_placed": run.placed_waiting,
            }
            if repack
            else {"planned_moves": "", "rejected_moves": "", "waiting_placed": ""}
        ),
        "repack_every": repack.get("every", ""),
        "repack_time_s": repack.get("cycle_time_s", ""),
        "moves_per_hour": round(run.moves_per_hour, 1),
        "restart_s": run.restart_s,
        "lost_gpu_s": round(run.lost_gpu_s, 1),
        "cycle_p50_ms": round(percentile(run.cycle_seconds, 50) * 1e3, 1),
        "cycle_p99_ms": round(percentile(run.cycle_seconds, 99) * 1e3, 1),
        "invalid": run.invalid,
        **(run.kant.row("kant_") if run.kant else {}),
        "seconds": round(run.seconds, 1),
        "ablation": False,
        "curve": json.dumps(
            {
                "t": [round(float(x), 1) for x in run.times[idx]],
                "alloc": [round(float(x), 2) for x in run.alloc[idx]],
                "wait_q": [round(percentile(waits, q), 2) for q in range(101)],
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
        out[f"wait_p99_{cls.lower()}_s"] = round(percentile(waits, 99), 2)
        out[f"waited_{cls.lower()}_pct"] = (
            round(float(run.waited[mine].mean()) * 100, 2) if mine.any() else ""
        )
    return out


def departure_tables(rows: list[dict]) -> list[str]:
    """Per trace, each policy and mode with departures: allocation, waits, moves."""
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
            "until the last pod has started. Disruption: `moves / h`, migrations and "
            "preemptions per hour of the replay's clock; `GPU-s lost`, what they cost at the "
            "stated restart cost (our assumption): a migrated pod loses the restart on the "
            "GPUs it holds, a preempted pod the restart and its whole run so far. Re-packing: "
            "while pods wait, a cycle of the online re-packing policy every N arrivals "
            "(whole cluster, the budget left, its wall time per cycle, `settings`); `rejected`: "
            "its planned moves that failed their check when applied (never applied); "
            "`pending placed`: waiting pods a cycle started; `cycle p50 / p99`: a cycle's wall "
            "time (migration and re-packing cycles).",
            "",
            "| policy (mode) | seeds | allocation | fragmentation rate | mean wait | p99 wait "
            "| pods that waited | LS: mean / p99 wait, waited | BE: mean / p99 wait, waited "
            "| never started | preemptions | migrated pods | moves / h | GPU-s lost "
            f"(restart {mine[0].get('restart_s', '?')} s) | cycles | rejected | pending placed "
            "| cycle p50 / p99 | settings | invalid |",
            rule(20),
        ]
        for policy in dict.fromkeys(r["policy"] for r in mine):
            g = [r for r in mine if r["policy"] == policy]
            lines.append(
                f"| {policy} | {len(g)} | {mean_of(g, 'alloc_mean_pct'):.2f} % "
                f"| {mean_of(g, 'frag_rate_pct'):.2f} % | {mean_of(g, 'wait_mean_s'):.1f} s "
                f"| {mean_of(g, 'wait_p99_s'):.1f} s | {mean_of(g, 'waited_pct'):.2f} % "
                f"| {mean_of(g, 'wait_mean_ls_s'):.1f} / {mean_of(g, 'wait_p99_ls_s'):.1f} s, "
                f"{mean_of(g, 'waited_ls_pct'):.2f} % "
                f"| {mean_of(g, 'wait_mean_be_s'):.1f} / {mean_of(g, 'wait_p99_be_s'):.1f} s, "
                f"{mean_of(g, 'waited_be_pct'):.2f} % "
                f"| {mean_of(g, 'never_started'):.1f} | {mean_of(g, 'preemptions'):.1f} "
                f"| {mean_of(g, 'migrated_pods'):.1f} | {mean_of(g, 'moves_per_hour'):.1f} "
                f"| {mean_of(g, 'lost_gpu_s'):,.0f} | {mean_of(g, 'cycles'):.0f} "
                f"| {_mean_text(g, 'rejected_moves')} | {_mean_text(g, 'waiting_placed')} "
                f"| {_latency(g)} | {_settings(g[0])} "
                f"| {sum(int(r.get('invalid') or 0) for r in g)} |"
            )
        lines += kant_table(mine, "policy")
        lines.append("")
    return lines


def _mean_text(rows: list[dict], key: str) -> str:
    """The mean of ``key`` over ``rows`` (one decimal), blank where the rows lack it."""
    return f"{mean_of(rows, key):.1f}" if all(r.get(key) not in (None, "") for r in rows) else ""


def _latency(rows: list[dict]) -> str:
    """Mean cycle p50 / p99 (s) of rows that ran cycles, else blank."""
    if not mean_of(rows, "cycles"):
        return ""
    return (
        f"{mean_of(rows, 'cycle_p50_ms') / 1e3:.2f} / {mean_of(rows, 'cycle_p99_ms') / 1e3:.2f} s"
    )


def _settings(row: dict) -> str:
    """The re-packing cycles' settings of a row, else blank."""
    if row.get("repack_every") in (None, ""):
        return ""
    return f"N {row['repack_every']}, {float(row['repack_time_s']):g} s, whole cluster"


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
