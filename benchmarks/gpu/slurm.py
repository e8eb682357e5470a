"""``placement bench gpu-slurm``: one job stream replayed twice on the same real Slurm cluster,
Slurm alone against ``placement slurm schedule`` (issue 37, item 3).

Per seed, a fresh cluster (:mod:`.slurm_cluster`: ``munged``, ``slurmctld``, one ``slurmd``
per node on loopback; ``leaves`` leaf switches of ``nodes_per_leaf`` nodes of ``gpus`` GPUs
under one spine, ``topology/tree``, ``select/cons_tres``, ``sched/backfill``) replays the
seed's stream (:mod:`.slurm_stream`: real Cirrus Slurm jobs mapped to GPU jobs, gangs added
where the window has too few) twice (:mod:`.slurm_replay`): first Slurm alone (jobs
submitted unheld), then the same jobs submitted held and placed by ``placement slurm
schedule --interval I`` running as a real process.

Slurm alone gets its best reasonable configuration for a compressed time scale, for both
replays: :data:`SCHEDULER_PARAMETERS` (a main scheduling pass every second besides the one
each submit and each job end triggers, a backfill pass every second that continues where
it stopped, one-second backfill resolution, no minimum interval between passes).

Columns per seed and policy (times in replay seconds): waiting GPU-minutes (GPUs asked x
(start - submit), summed), leaf switches per multi-node job (distinct leaves of its nodes,
mean), multi-node jobs whose ``--switches=1`` was met (all nodes under one leaf), Kant's
metrics through :func:`~placement.models.gpu.sim.kant.kant_metrics` (GAR, SOR, GFR, the
waiting-time distribution, JTTED as run time over time limit), the makespan, and
``invalid``: for ``placement``, the cycles whose solution the GPU family's checker rejected
plus the jobs Slurm did not run on exactly the ``ReqNodeList`` the scheduler set (or ran
with none); for ``slurm``, 0 (no decision of ours). A plot per seed
(``gpu-slurm-seed<S>.png``) shows the GPUs allocated over time under both policies.
"""

from __future__ import annotations

import csv
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from placement.benchmarks.gpu.slurm_cluster import SlurmCluster, missing, tree
from placement.benchmarks.gpu.slurm_replay import POLICIES, Replay, replay
from placement.benchmarks.gpu.slurm_stream import TRACE, StreamJob, cirrus_stream
from placement.benchmarks.runner import load_1min
from placement.benchmarks.tables import rule
from placement.models.gpu.sim.kant import JobRun, allocation_steps, kant_metrics

SCHEDULER_PARAMETERS = (
    "sched_interval=1,sched_min_interval=0,bf_interval=1,bf_resolution=1,bf_continue"
)
FULL = {
    "seeds": "1-5",
    "leaves": 4,
    "nodes_per_leaf": 4,
    "gpus": 4,
    "jobs": 80,
    "span": 90.0,
    "max_run": 90.0,
    "interval": 0.5,
    "gang_share": 0.2,
    "switch_wait": 30,
}
QUICK = FULL | {
    "seeds": "1",
    "leaves": 2,
    "nodes_per_leaf": 2,
    "jobs": 8,
    "span": 4.0,
    "max_run": 6.0,
    "switch_wait": 10,
}
DRAIN_S = 600.0
"""Seconds after the last submission before what is left is cancelled."""


def _settings(config: Any) -> dict[str, Any]:
    out = dict(QUICK if config.quick else FULL)
    for key, value in (config.params or {}).items():
        if value not in (None, "", ()):
            out[key] = value
    return out


def _seeds(value: Any) -> list[int]:
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    out: list[int] = []
    for part in parts:
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def skip_reason(config: Any) -> str:
    """Why the suite cannot run here (``""``: it can)."""
    why = missing()
    if why:
        return why
    trace = config.data / TRACE
    if not trace.is_file():
        return f"the Cirrus trace is not at {trace} (pass --data DIR, the benchmark data root)"
    return ""


def cases_slurm(config: Any) -> list[dict[str, Any]]:
    """One case per seed (both policies on one cluster); a single ``skipped`` case where
    Slurm, munge, root or the trace is missing."""
    why = skip_reason(config)
    if why:
        return [{"case": "skipped", "skip": why}]
    s = _settings(config)
    return [{"case": f"seed {seed}", "seed": seed, **s} for seed in _seeds(s["seeds"])]


def run_slurm(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Both policies on one seed's stream: one row each."""
    if case.get("skip"):
        return [{"seed": "-", "policy": "-", "skipped": case["skip"], "invalid": 0}]
    leaves, per_leaf, gpus = int(case["leaves"]), int(case["nodes_per_leaf"]), int(case["gpus"])
    stream = cirrus_stream(
        config.data / TRACE,
        int(case["seed"]),
        jobs=int(case["jobs"]),
        gpus_per_node=gpus,
        leaf_nodes=per_leaf,
        span_s=float(case["span"]),
        max_run_s=float(case["max_run"]),
        gang_share=float(case["gang_share"]),
    )
    nodes, switches = tree(leaves, per_leaf, gpus=gpus, cpus=4 * gpus)
    leaf_of = {n: s for s, members in switches.items() if s != "spine" for n in members}
    node_gpus = {n.name: n.gpus for n in nodes}
    # a short path of our own: the munge socket lives under it (unix sockets: <= 107 bytes)
    folder = Path(tempfile.mkdtemp(prefix="placement-slurm-"))
    replays: list[Replay] = []
    try:
        with SlurmCluster(
            folder,
            nodes,
            switches,
            scheduler_parameters=SCHEDULER_PARAMETERS,
            min_job_age_s=3600,
        ) as cluster:
            for policy in POLICIES:
                _wait_idle(cluster)
                replays.append(
                    replay(
                        cluster,
                        stream,
                        policy,
                        switch_wait_s=int(case["switch_wait"]),
                        interval_s=float(case["interval"]),
                        solve_time_limit_s=config.time_limit_s,
                        drain_s=float(case["span"]) + DRAIN_S,
                        log_path=config.out / f"gpu-slurm-seed{case['seed']}-{policy}.log",
                    )
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    runs = {r.policy: _job_runs(r) for r in replays}
    _write_jobs(config.out / f"gpu-slurm-seed{case['seed']}-jobs.csv", replays, leaf_of)
    _plot(config.out / f"gpu-slurm-seed{case['seed']}.png", node_gpus, runs, case)
    return [_row(case, stream, r, runs[r.policy], node_gpus, leaf_of) for r in replays]


def _write_jobs(path: Path, replays: list[Replay], leaf_of: dict[str, str]) -> None:
    """Every job of both replays, one line each (for reading where one policy wins)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(
            ["policy", "job", "trace_id", "nodes", "gpus_per_node", "added_gang", "run_s",
             "submit_s", "start_s", "end_s", "wait_s", "node_list", "leaves", "state"]
        )  # fmt: skip
        for r in replays:
            for rec in r.records:
                j = rec.job
                wait = "" if rec.start_s is None else round(rec.start_s - rec.submit_s, 1)
                w.writerow(
                    [r.policy, j.name, j.trace_id, j.nodes, j.gpus_per_node, int(j.added_gang),
                     j.run_s, rec.submit_s, rec.start_s, rec.end_s, wait, " ".join(rec.nodes),
                     len({leaf_of[n] for n in rec.nodes}), rec.state]
                )  # fmt: skip


def _wait_idle(cluster: SlurmCluster, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(s == "idle" for s in cluster.states().values()):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the cluster is not idle after {timeout:.0f} s: {cluster.states()}")


def _job_runs(r: Replay) -> list[JobRun]:
    return [
        JobRun(
            name=rec.job.name,
            submit_s=rec.submit_s,
            start_s=rec.start_s,
            end_s=rec.end_s,
            gpus_by_node=dict.fromkeys(rec.nodes, rec.job.gpus_per_node),
            gpus=rec.job.gpus,
            estimate_s=60.0 * rec.job.time_limit_min,
        )
        for rec in r.records
    ]


def _row(
    case: dict[str, Any],
    stream: list[StreamJob],
    r: Replay,
    runs: list[JobRun],
    node_gpus: dict[str, int],
    leaf_of: dict[str, str],
) -> dict[str, Any]:
    kant = kant_metrics(node_gpus, runs)
    gangs = [rec for rec in r.records if rec.job.nodes > 1]
    ran_gangs = [rec for rec in gangs if rec.nodes]
    leaves = [len({leaf_of[n] for n in rec.nodes}) for rec in ran_gangs]
    mismatched = unrequested = 0
    if r.policy == "placement":
        for rec in r.records:
            if not rec.nodes:
                continue
            if not rec.req_nodes:
                unrequested += 1
            elif set(rec.nodes) != set(rec.req_nodes):
                mismatched += 1
    ends = [rec.end_s for rec in r.records if rec.end_s is not None]
    return {
        "seed": case["seed"],
        "policy": r.policy,
        "nodes": len(node_gpus),
        "gpus": sum(node_gpus.values()),
        "jobs": len(stream),
        "gangs": len(gangs),
        "added_gangs": sum(1 for j in stream if j.added_gang),
        "ran": sum(1 for rec in r.records if rec.nodes),
        "completed": sum(1 for rec in r.records if rec.state == "COMPLETED"),
        "waiting_gpu_min": round(kant.waiting_gpu_h * 60, 2),
        "leaf_switches_per_gang": round(sum(leaves) / len(leaves), 3) if leaves else "",
        "switches_met": sum(1 for n in leaves if n == 1),
        "makespan_s": round(max(ends) - min(rec.submit_s for rec in r.records), 1) if ends else "",
        **kant.row(),
        "cycles": r.cycles,
        "checker_rejections": r.checker_rejections,
        "nodelist_mismatches": mismatched,
        "ran_without_reqnodelist": unrequested,
        "failed_cycles": r.failed_cycles,
        "cancelled_at_deadline": r.cancelled_at_deadline,
        "replay_wall_s": round(r.wall_s, 1),
        "span_s": case["span"],
        "interval_s": case["interval"],
        "load_1min": load_1min(),
        "invalid": r.checker_rejections + mismatched + unrequested,
    }


def _plot(
    path: Path, node_gpus: dict[str, int], runs: dict[str, list[JobRun]], case: dict[str, Any]
) -> None:
    import matplotlib  # plots only: matplotlib is slow to import and only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display on a server

    fig, ax = plt.subplots(figsize=(8, 3.2))
    for policy, job_runs in runs.items():
        ends = [j.end_s for j in job_runs if j.end_s is not None] or [0.0]
        times, allocated, _, _ = allocation_steps(node_gpus, job_runs, max(ends))
        ax.step(times[:-1], allocated, where="post", label=policy)
    ax.axhline(sum(node_gpus.values()), color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("replay seconds")
    ax.set_ylabel("GPUs allocated")
    ax.set_title(f"gpu-slurm, seed {case['seed']}: {len(node_gpus)} nodes x {case['gpus']} GPUs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _f(value: Any, digits: int = 2) -> str:
    if value in (None, ""):
        return "-"
    return f"{float(value):.{digits}f}"


def report_slurm(rows: list[dict[str, Any]], config: Any) -> str:
    """The ``gpu-slurm`` table (both policies, every seed), the target per seed, the plots."""
    skipped = [r for r in rows if r.get("skipped")]
    if skipped:
        why = skipped[0]["skipped"]
        # still a table: every suite's report has one (tests/test_bench.py)
        return "\n".join(["| suite | skipped because |", rule(2), f"| gpu-slurm | {why} |", ""])
    s = _settings(config)
    lines = [
        f"Cluster: {s['leaves']} leaf switches x {s['nodes_per_leaf']} nodes x {s['gpus']} GPUs "
        f"under one spine; {s['jobs']} jobs per replay arriving over {_f(s['span'], 0)} s; "
        f"`placement slurm schedule --interval {float(s['interval']):g} --time-limit "
        f"{config.time_limit_s:g}`; gangs ask `--switches=1@{s['switch_wait']}s`. Times in "
        "replay seconds (the stream is compressed: see below); waiting GPU-min = GPUs asked x "
        "(start - submit) in replay minutes, summed.",
        "",
        "| seed | policy | ran | waiting GPU-min | wait mean s | p50 | p90 | p99 "
        "| leaf sw / gang | switches met | GAR | SOR | GFR | JTTED p50 | makespan s "
        "| cycles | invalid |",
        rule("rlrrrrrrrrrrrrrrr"),
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['policy']} | {r['ran']}/{r['jobs']} "
            f"| {_f(r['waiting_gpu_min'], 1)} | {_f(r['wait_mean_s'], 1)} "
            f"| {_f(r['wait_p50_s'], 0)} | {_f(r['wait_p90_s'], 0)} | {_f(r['wait_p99_s'], 0)} "
            f"| {_f(r['leaf_switches_per_gang'])} | {r['switches_met']}/{r['gangs']} "
            f"| {_f(r['gar'], 3)} | {_f(r['sor'], 3)} | {_f(r['gfr'], 3)} "
            f"| {_f(r['jtted_p50'], 2)} | {_f(r['makespan_s'], 0)} "
            f"| {r['cycles'] if r['policy'] == 'placement' else '-'} | {r['invalid']} |"
        )
    lines += ["", "Target per seed (placement against Slurm alone on the same stream):", ""]
    lines += [
        "| seed | fewer waiting GPU-min | fewer leaf switches per gang | 0 invalid | met |",
        rule("rllll"),
    ]
    for seed in sorted({r["seed"] for r in rows}, key=str):
        by = {r["policy"]: r for r in rows if r["seed"] == seed}
        if set(by) != set(POLICIES):
            continue
        ours, peer = by["placement"], by["slurm"]
        wait_ok = float(ours["waiting_gpu_min"]) < float(peer["waiting_gpu_min"])
        ls_o, ls_p = ours["leaf_switches_per_gang"], peer["leaf_switches_per_gang"]
        leaf_ok = ls_o not in ("", None) and ls_p not in ("", None) and float(ls_o) < float(ls_p)
        leaf_tie = ls_o not in ("", None) and ls_p not in ("", None) and float(ls_o) == float(ls_p)
        valid = int(ours["invalid"]) == 0
        leaf_text = "yes" if leaf_ok else ("tie" if leaf_tie else "no")
        lines.append(
            f"| {seed} | {'yes' if wait_ok else 'no'} ({_f(ours['waiting_gpu_min'], 1)} vs "
            f"{_f(peer['waiting_gpu_min'], 1)}) | {leaf_text} ({_f(ls_o)} vs {_f(ls_p)}) "
            f"| {'yes' if valid else 'no'} | {'yes' if wait_ok and leaf_ok and valid else 'no'} |"
        )
    lines += ["", *STREAM_NOTE, ""]
    for seed in sorted({r["seed"] for r in rows}, key=str):
        lines.append(f"![GPUs allocated over time, seed {seed}](gpu-slurm-seed{seed}.png)")
    lines.append("")
    loads = [float(r["load_1min"]) for r in rows if r.get("load_1min") not in (None, "")]
    finite = [x for x in loads if math.isfinite(x)]
    if finite:
        lines.append(
            f"1-minute load average at the end of each replay: {min(finite):.2f} to "
            f"{max(finite):.2f} (2 cores)."
        )
    return "\n".join(lines) + "\n"


STREAM_NOTE = [
    "**The stream** (`benchmarks/gpu/slurm_stream.py`): per seed, a window of consecutive",
    "jobs of EPCC Cirrus' Slurm accounting (`jobs/cirrus-2024q1`, jobs that started and ran",
    ">= 1 s), arrivals scaled linearly to the span, run times `min(max_run, 5 + 10",
    "log2(1 + ElapsedRaw/60))` s (a 45 s trace job runs 13 s, an hour 64 s), time limits",
    "`ceil((run + 10)/60)` minutes (Slurm keeps minutes: backfill sees every job as 1-12",
    "times longer than it runs). A multi-node job becomes a gang of min(N, leaf size) whole",
    "nodes (`--exclusive`, all GPUs, `--switches=1@wait`); a single-node job asks its share",
    "of a 36-core node in GPUs (1 to G; most Cirrus jobs use one core: 1 GPU). Where fewer",
    "than `gang_share` of the window's jobs are multi-node, single-node jobs picked by the",
    "seed become gangs of 2..leaf-size nodes (uniform), keeping their arrival and run time.",
    "",
    "**Slurm alone** (both replays run under it): `SchedulerParameters="
    + SCHEDULER_PARAMETERS
    + "`, `PriorityType=priority/basic` (FIFO), `select/cons_tres`, `topology/tree`.",
    "**Waiting** is start - submit from `scontrol show job` (whole seconds), so placement's",
    "includes its cycle: read the cluster, solve, check, `scontrol update ReqNodeList` and",
    "`release`, then Slurm's own start. **invalid** (placement): cycles whose solution the",
    "GPU family's checker rejected + jobs Slurm ran elsewhere than the `ReqNodeList` set, or",
    "without one. JTTED is run time over time limit.",
]
