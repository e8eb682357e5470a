"""The job stream of ``placement bench gpu-slurm``: real Slurm jobs of EPCC's Cirrus cluster,
mapped to GPU jobs and compressed in time so that one replay takes minutes.

Source: ``jobs/cirrus-2024q1/2024_Q1_CPU-sacct-subset.csv`` under the benchmark data root
(Slurm accounting of Cirrus' CPU partition, 27 Dec 2023 - 4 Jan 2024: ``JobID, NCPUS,
NNodes, Submit, Start, End, ElapsedRaw, State``; see ``jobs/README.md`` there). Read at run
time, never copied into the repository.

The mapping, per seed:

- **Window**: the jobs that started and ran at least one second, in submit order; the seed
  picks the first job of a window of ``jobs`` consecutive ones (``numpy`` generator of the
  seed).
- **Arrivals**: the window's real submit times, shifted to 0 and scaled linearly so that the
  last one lands at ``span_s`` replay seconds (the bursts and gaps of the trace keep their
  shape; jobs submitted in the same trace second stay together).
- **Run times**: ``min(max_run_s, 5 + 10 log2(1 + ElapsedRaw / 60))`` replay seconds: a
  45 s trace job runs 13 s, a 5 min one 31 s, an hour 64 s, longer ones ``max_run_s`` (90 s
  by default). The logarithm keeps the order of the run times while a day-long job does not
  make the replay last a day.
- **Time limit** (what backfill plans with): ``ceil((run + 10) / 60)`` minutes, since
  Slurm keeps time limits in whole minutes: 1 or 2 minutes, so backfill sees every job as
  running 1-12 times longer than it does (Cirrus' accounting has no requested wall time).
- **Shape**: a multi-node job of ``N`` nodes becomes a gang of ``min(N, leaf_nodes)`` whole
  nodes (``-N k --gres=gpu:G --exclusive --switches=1@W``: all ``G`` GPUs of each, under one
  leaf switch if Slurm can within ``W`` seconds); a single-node job asks
  ``clamp(ceil(NCPUS x G / 36), 1, G)`` GPUs (its share of a 36-core Cirrus node) with 4 CPUs
  per GPU.
- **Added gangs**: Cirrus' windows have few multi-node jobs (5 % of the jobs); where a
  window has fewer than ``gang_share`` of its jobs multi-node, single-node jobs picked by the
  seed's generator are made gangs of 2..``leaf_nodes`` nodes (uniform) of ``G`` GPUs each, with
  their own arrival and run time, until the share is met. ``StreamJob.added_gang`` marks them.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TRACE = Path("jobs") / "cirrus-2024q1" / "2024_Q1_CPU-sacct-subset.csv"
"""The trace, under the benchmark data root."""
CORES_PER_TRACE_NODE = 36
CPUS_PER_GPU = 4


@dataclass(frozen=True)
class StreamJob:
    """One job of a replay: when it is submitted, how long it sleeps, what it asks for."""

    name: str
    trace_id: int
    submit_s: float
    run_s: float
    nodes: int
    gpus_per_node: int
    exclusive: bool
    added_gang: bool
    trace_run_s: int

    @property
    def time_limit_min(self) -> int:
        """The time limit given to Slurm, in whole minutes (10 s of slack for the start)."""
        return math.ceil((self.run_s + 10) / 60)

    @property
    def gpus(self) -> int:
        """GPUs asked in all."""
        return self.nodes * self.gpus_per_node

    def sbatch_args(self, switch_wait_s: int) -> list[str]:
        """The ``sbatch`` arguments (without ``-H``)."""
        args = [
            f"--job-name={self.name}",
            f"--nodes={self.nodes}",
            f"--gres=gpu:{self.gpus_per_node}",
            f"--time={self.time_limit_min}",
            "--output=/dev/null",
        ]
        if self.exclusive:
            args.append("--exclusive")
        else:
            args += ["--ntasks=1", f"--cpus-per-task={CPUS_PER_GPU * self.gpus_per_node}"]
        if self.nodes > 1:
            minutes, seconds = divmod(int(switch_wait_s), 60)
            args.append(f"--switches=1@{minutes:02d}:{seconds:02d}")
        args.append(f"--wrap=sleep {self.run_s:.1f}")
        return args


def run_time_s(elapsed_s: float, max_run_s: float) -> float:
    """The replay run time of a trace job that ran ``elapsed_s`` seconds.

    >>> run_time_s(45, 90), run_time_s(3600, 90), run_time_s(86400, 90)
    (13.1, 64.3, 90.0)
    """
    return round(min(float(max_run_s), 5 + 10 * math.log2(1 + elapsed_s / 60)), 1)


def read_trace(path: Path) -> list[dict[str, int]]:
    """The trace's jobs that started and ran at least one second, in submit order."""
    out = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["Start"] in ("", "None") or int(row["ElapsedRaw"] or 0) < 1:
                continue
            out.append(
                {
                    "id": int(row["JobID"]),
                    "ncpus": int(row["NCPUS"]),
                    "nnodes": int(row["NNodes"]),
                    "submit": int(row["Submit"]),
                    "elapsed": int(row["ElapsedRaw"]),
                }
            )
    out.sort(key=lambda r: (r["submit"], r["id"]))
    return out


def cirrus_stream(
    path: Path,
    seed: int,
    *,
    jobs: int,
    gpus_per_node: int,
    leaf_nodes: int,
    span_s: float,
    max_run_s: float = 90.0,
    gang_share: float = 0.2,
) -> list[StreamJob]:
    """The stream of one seed (see the module's docstring for every rule of the mapping)."""
    trace = read_trace(path)
    if len(trace) < jobs:
        raise ValueError(f"{path}: {len(trace)} usable jobs, fewer than {jobs}")
    rng = np.random.default_rng(seed)
    first = int(rng.integers(0, len(trace) - jobs + 1))
    window = trace[first : first + jobs]
    t0, t1 = window[0]["submit"], window[-1]["submit"]
    scale = span_s / (t1 - t0) if t1 > t0 else 0.0
    multi = [k for k, r in enumerate(window) if r["nnodes"] > 1]
    single = [k for k, r in enumerate(window) if r["nnodes"] == 1]
    want = math.ceil(gang_share * jobs) - len(multi)
    added: dict[int, int] = {}
    if want > 0 and single:
        picked = rng.choice(single, size=min(want, len(single)), replace=False)
        for k in sorted(int(p) for p in picked):
            added[k] = int(rng.integers(2, max(2, leaf_nodes) + 1))
    out = []
    for k, r in enumerate(window):
        if r["nnodes"] > 1 or k in added:
            nodes = min(r["nnodes"], leaf_nodes) if k not in added else added[k]
            gpus, exclusive = gpus_per_node, True
        else:
            share = math.ceil(r["ncpus"] * gpus_per_node / CORES_PER_TRACE_NODE)
            nodes, gpus, exclusive = 1, max(1, min(gpus_per_node, share)), False
        out.append(
            StreamJob(
                name=f"t{r['id']}",
                trace_id=r["id"],
                submit_s=round((r["submit"] - t0) * scale, 2),
                run_s=run_time_s(r["elapsed"], max_run_s),
                nodes=max(1, nodes),
                gpus_per_node=gpus,
                exclusive=exclusive,
                added_gang=k in added,
                trace_run_s=r["elapsed"],
            )
        )
    return out
