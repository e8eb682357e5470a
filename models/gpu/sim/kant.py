"""Kant's cluster metrics, computed by one function for every GPU replay over time.

Zeng et al., "Kant: An Efficient Unified Scheduling System for Large-Scale AI Clusters"
(ZTE, arXiv:2510.01256, 2025) define five metrics for an AI cluster: GPU Allocation Ratio
(GAR), Scheduling Occupancy Rate (SOR), GPU Node Fragmentation Ratio (GFR), Job Waiting Time
Distribution (JWTD) and Job Training Time Estimation Distribution (JTTED). The paper's own
formulas were not available to us (only its abstract is in the stored material), so the
definitions below are our reading of the names, written out so that every figure we print
can be recomputed:

- **GAR(t)** = GPUs allocated at time t / GPUs of the cluster. :attr:`KantMetrics.gar` is its
  time average over the window.
- **SOR(t)** = GPUs allocated / min(GPUs of the cluster, GPUs allocated + GPUs asked by the
  jobs waiting at t): the share of the GPUs the scheduler *could* have occupied (the work
  present, capped by the cluster) that it did occupy. It separates a scheduler that leaves
  GPUs idle while work waits (SOR < 1) from a cluster that is merely lightly loaded (GAR low,
  SOR 1). :attr:`KantMetrics.sor` is its time average over the instants with work present.
- **GFR(t)** = nodes partly allocated (some GPUs allocated, some free) / nodes with GPUs.
  :attr:`KantMetrics.gfr` is its time average over the window.
- **JWTD**: the distribution of waiting times, start - submit (a job not started by the end
  of the window counts to the window's end and is reported in ``unstarted``).
- **JTTED**: the distribution of each finished job's run time over its estimate (Slurm's
  time limit, a pod's declared duration) where jobs carry one, else of its completion time
  (end - submit). :attr:`KantMetrics.jtted_kind` says which.

The window runs from the first submission to the last end (or ``window_end_s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class JobRun:
    """One job of a replay: when it was submitted, started and ended, and where it ran."""

    name: str
    submit_s: float
    start_s: float | None = None
    """None: it never started within the window."""
    end_s: float | None = None
    """None: still running at the window's end (or never started)."""
    gpus_by_node: Mapping[str, int] = field(default_factory=dict)
    """GPUs held on each node while it ran."""
    gpus: int = 0
    """GPUs asked; 0 = the sum of ``gpus_by_node``."""
    estimate_s: float | None = None
    """The run time the job declared (a time limit), if any."""

    @property
    def demand(self) -> int:
        """GPUs asked."""
        return self.gpus or sum(self.gpus_by_node.values())


@dataclass(frozen=True)
class Distribution:
    """Summary of a sample: count, mean and quantiles (0 for an empty sample)."""

    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        """The summary of ``values``."""
        if not values:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        a = np.asarray(values, dtype=float)
        p50, p90, p99 = np.quantile(a, (0.5, 0.9, 0.99))
        return cls(len(a), float(a.mean()), float(p50), float(p90), float(p99), float(a.max()))


@dataclass(frozen=True)
class KantMetrics:
    """The five metrics of one replay (see the module's docstring for the definitions)."""

    gar: float
    sor: float
    gfr: float
    jwtd_s: Distribution
    jtted: Distribution
    jtted_kind: str
    """``run/estimate`` or ``completion_s``."""
    unstarted: int
    waiting_gpu_h: float
    """Sum over jobs of GPUs asked x waiting time, in GPU-hours."""
    window_s: float

    def row(self, prefix: str = "") -> dict[str, float]:
        """The metrics as flat table columns."""
        return {
            f"{prefix}gar": round(self.gar, 4),
            f"{prefix}sor": round(self.sor, 4),
            f"{prefix}gfr": round(self.gfr, 4),
            f"{prefix}wait_mean_s": round(self.jwtd_s.mean, 2),
            f"{prefix}wait_p50_s": round(self.jwtd_s.p50, 2),
            f"{prefix}wait_p90_s": round(self.jwtd_s.p90, 2),
            f"{prefix}wait_p99_s": round(self.jwtd_s.p99, 2),
            f"{prefix}jtted_p50": round(self.jtted.p50, 4),
            f"{prefix}jtted_p90": round(self.jtted.p90, 4),
            f"{prefix}unstarted": self.unstarted,
            f"{prefix}waiting_gpu_h": round(self.waiting_gpu_h, 4),
        }


def _check(node_gpus: Mapping[str, int], runs: Sequence[JobRun]) -> None:
    for r in runs:
        if r.start_s is not None and r.start_s < r.submit_s:
            raise ValueError(f"job {r.name}: start_s {r.start_s} before submit_s {r.submit_s}")
        if r.end_s is not None and (r.start_s is None or r.end_s < r.start_s):
            raise ValueError(f"job {r.name}: end_s {r.end_s} without a start at or before it")
        for node in r.gpus_by_node:
            if node not in node_gpus:
                raise ValueError(f"job {r.name}: node {node!r} is not in the cluster")


def allocation_steps(
    node_gpus: Mapping[str, int], runs: Iterable[JobRun], window_end_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cluster's state as a step function: event times, and on each interval
    [t_i, t_{i+1}) the GPUs allocated, the GPUs asked by waiting jobs and the nodes partly
    allocated. Times are ``len(intervals) + 1``."""
    names = list(node_gpus)
    index = {n: i for i, n in enumerate(names)}
    cap = np.array([node_gpus[n] for n in names], dtype=np.int64)
    events: list[tuple[float, int, object]] = []  # (t, kind, payload); kind 0 = end first
    for r in runs:
        events.append((r.submit_s, 2, ("wait+", r.demand)))
        if r.start_s is not None and r.start_s <= window_end_s:
            events.append((r.start_s, 1, ("wait-", r.demand)))
            events.append((r.start_s, 1, ("alloc+", r.gpus_by_node)))
            if r.end_s is not None and r.end_s <= window_end_s:
                events.append((r.end_s, 0, ("alloc-", r.gpus_by_node)))
    events.sort(key=lambda e: (e[0], e[1]))
    alloc = np.zeros(len(names), dtype=np.int64)
    waiting = 0
    times: list[float] = []
    allocated: list[int] = []
    asked: list[int] = []
    partial: list[int] = []
    k = 0
    while k < len(events):
        t = events[k][0]
        while k < len(events) and events[k][0] == t:
            what, value = events[k][2]
            if what in ("alloc+", "alloc-"):
                sign = 1 if what == "alloc+" else -1
                for node, g in value.items():
                    alloc[index[node]] += sign * g
            else:
                waiting += value if what == "wait+" else -value
            k += 1
        if t > window_end_s:
            break
        times.append(t)
        allocated.append(int(alloc.sum()))
        asked.append(waiting)
        partial.append(int(np.count_nonzero((alloc > 0) & (alloc < cap))))
    times.append(window_end_s)
    return (
        np.asarray(times, dtype=float),
        np.asarray(allocated, dtype=np.int64),
        np.asarray(asked, dtype=np.int64),
        np.asarray(partial, dtype=np.int64),
    )


def kant_metrics(
    node_gpus: Mapping[str, int],
    runs: Sequence[JobRun],
    *,
    window_end_s: float | None = None,
) -> KantMetrics:
    """GAR, SOR, GFR, JWTD and JTTED of one replay on a cluster of ``node_gpus`` (node name
    -> GPUs). Raises ``ValueError`` naming the job on inconsistent times or unknown nodes."""
    _check(node_gpus, runs)
    if not runs:
        empty = Distribution.of([])
        return KantMetrics(0.0, 1.0, 0.0, empty, empty, "completion_s", 0, 0.0, 0.0)
    start = min(r.submit_s for r in runs)
    if window_end_s is None:
        ends = [r.end_s for r in runs if r.end_s is not None]
        ends += [r.start_s for r in runs if r.start_s is not None]
        window_end_s = max([*ends, start])
    total = sum(node_gpus.values())
    gpu_nodes = sum(1 for g in node_gpus.values() if g > 0)
    times, allocated, asked, partial = allocation_steps(node_gpus, runs, window_end_s)
    dt = np.diff(times)
    span = float(dt.sum())
    gar = float((allocated * dt).sum() / (total * span)) if total and span > 0 else 0.0
    gfr = float((partial * dt).sum() / (gpu_nodes * span)) if gpu_nodes and span > 0 else 0.0
    could = np.minimum(total, allocated + asked)
    present = could > 0
    busy = float(dt[present].sum())
    sor = (
        float((dt[present] * allocated[present] / could[present]).sum() / busy) if busy > 0 else 1.0
    )
    waits: list[float] = []
    waiting_gpu_s = 0.0
    unstarted = 0
    for r in runs:
        started = r.start_s is not None and r.start_s <= window_end_s
        wait = (r.start_s if started else window_end_s) - r.submit_s
        unstarted += not started
        waits.append(max(0.0, wait))
        waiting_gpu_s += r.demand * max(0.0, wait)
    done = [r for r in runs if r.end_s is not None and r.end_s <= window_end_s]
    if done and all(r.estimate_s for r in done):
        kind = "run/estimate"
        jtted = Distribution.of([(r.end_s - r.start_s) / r.estimate_s for r in done])
    else:
        kind = "completion_s"
        jtted = Distribution.of([r.end_s - r.submit_s for r in done])
    return KantMetrics(
        gar=gar,
        sor=sor,
        gfr=gfr,
        jwtd_s=Distribution.of(waits),
        jtted=jtted,
        jtted_kind=kind,
        unstarted=unstarted,
        waiting_gpu_h=waiting_gpu_s / 3600.0,
        window_s=window_end_s - start,
    )
