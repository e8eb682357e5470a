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
- **JWTD**: the distribution of waiting times: the time a job spends pending, from its
  submission to its first start plus, for a job stopped and restarted (evicted, or moved by
  a restart), each gap between its runs (a job not started by the end of the window waits
  to the window's end and is counted in ``unstarted``).
- **JTTED**: the distribution of each finished job's run time over its estimate (Slurm's
  time limit, a pod's declared duration) where jobs carry one, else of its completion time
  (last end - submit). :attr:`KantMetrics.jtted_kind` says which.

GPU amounts may be fractions (shared GPUs: milli-GPU / 1000). Work that holds GPUs but is
not one of the replay's jobs (a cluster's pods at time 0) is passed as ``background``: it
counts in GAR, SOR and GFR, not in the job distributions.

The window runs from the first submission to the last end (or ``window_end_s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

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
    gpus_by_node: Mapping[str, float] = field(default_factory=dict)
    """GPUs held on each node while it ran."""
    gpus: float = 0
    """GPUs asked; 0 = the sum of ``gpus_by_node``."""
    estimate_s: float | None = None
    """The run time the job declared (a time limit), if any."""
    later: tuple[tuple[float, float | None, Mapping[str, float]], ...] = ()
    """Its later runs, after it was stopped (evicted, or moved with a restart): (start, end
    or None, GPUs per node) each, in time order."""
    stopped: bool = False
    """Its last run was stopped (evicted) and it waits again: it did not finish."""

    @property
    def demand(self) -> float:
        """GPUs asked."""
        return self.gpus or sum(self.gpus_by_node.values())

    def runs(self) -> list[tuple[float, float | None, Mapping[str, float]]]:
        """Every run of the job: (start, end or None, GPUs per node), in time order."""
        if self.start_s is None:
            return []
        return [(self.start_s, self.end_s, self.gpus_by_node), *self.later]

    def pending(self, window_end_s: float) -> list[tuple[float, float]]:
        """The intervals the job waits within the window: before its first start, between
        its runs, and after a run that stopped it (``stopped``) to the window's end."""
        runs = self.runs()
        inside = [r for r in runs if r[0] <= window_end_s]
        if not inside:
            return [(self.submit_s, window_end_s)] if self.submit_s < window_end_s else []
        out = [(self.submit_s, inside[0][0])]
        out += [(a[1], b[0]) for a, b in pairwise(inside) if a[1] is not None]
        last_end = inside[-1][1]
        waits_again = self.stopped or len(inside) < len(runs)
        if waits_again and last_end is not None and last_end < window_end_s:
            out.append((last_end, window_end_s))
        return [(a, b) for a, b in out if b > a]


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


def _check(node_gpus: Mapping[str, float], runs: Sequence[JobRun]) -> None:
    for r in runs:
        at = r.submit_s
        for k, (start, end, where) in enumerate(r.runs()):
            if start < at:
                raise ValueError(
                    f"job {r.name}: run {k} starts at {start}, before its submission or"
                    f" previous end {at}"
                )
            if end is None and k < len(r.runs()) - 1:
                raise ValueError(f"job {r.name}: run {k} has no end but a later run")
            if end is not None and end < start:
                raise ValueError(f"job {r.name}: run {k} ends at {end}, before its start {start}")
            at = end if end is not None else start
            for node in where:
                if node not in node_gpus:
                    raise ValueError(f"job {r.name}: node {node!r} is not in the cluster")
        if r.start_s is None and (r.end_s is not None or r.later):
            raise ValueError(f"job {r.name}: an end or later runs without a start")


def allocation_steps(
    node_gpus: Mapping[str, float],
    runs: Iterable[JobRun],
    window_end_s: float,
    background: Iterable[JobRun] = (),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cluster's state as a step function: event times, and on each interval
    [t_i, t_{i+1}) the GPUs allocated, the GPUs asked by waiting jobs and the nodes partly
    allocated. Times are ``len(intervals) + 1``; the first is the earliest event."""
    names = list(node_gpus)
    index = {n: i for i, n in enumerate(names)}
    cap = np.array([node_gpus[n] for n in names], dtype=float)
    events: list[tuple[float, int, float, Mapping[str, float] | None]] = []
    # (t, order, waiting GPUs delta, GPUs per node to add (+1) / remove (-1) or None):
    # at one time, ends (order 0) before starts (1) before the waiting changes (2).
    for r, counted in [(r, True) for r in runs] + [(r, False) for r in background]:
        for start, end, where in r.runs():
            if start <= window_end_s:
                events.append((start, 1, 1.0, where))
                if end is not None and end <= window_end_s:
                    events.append((end, 0, -1.0, where))
        if counted:
            for a, b in r.pending(window_end_s):
                events.append((a, 2, r.demand, None))
                events.append((b, 2, -r.demand, None))
    events.sort(key=lambda e: (e[0], e[1]))
    alloc = np.zeros(len(names), dtype=float)
    waiting = 0.0
    times: list[float] = []
    allocated: list[float] = []
    asked: list[float] = []
    partial: list[int] = []
    k = 0
    while k < len(events):
        t = events[k][0]
        if t > window_end_s:
            break
        while k < len(events) and events[k][0] == t:
            _, order, amount, where = events[k]
            if where is None:
                waiting += amount
            else:
                for node, g in where.items():
                    alloc[index[node]] += amount * g
            k += 1
        times.append(t)
        allocated.append(float(alloc.sum()))
        asked.append(max(0.0, waiting))
        eps = 1e-9
        partial.append(int(np.count_nonzero((alloc > eps) & (alloc < cap - eps))))
    times.append(window_end_s)
    return (
        np.asarray(times, dtype=float),
        np.asarray(allocated, dtype=float),
        np.asarray(asked, dtype=float),
        np.asarray(partial, dtype=np.int64),
    )


def kant_metrics(
    node_gpus: Mapping[str, float],
    runs: Sequence[JobRun],
    *,
    window_end_s: float | None = None,
    background: Sequence[JobRun] = (),
) -> KantMetrics:
    """GAR, SOR, GFR, JWTD and JTTED of one replay on a cluster of ``node_gpus`` (node name
    -> GPUs); ``background``: work holding GPUs that is not one of the replay's jobs. Raises
    ``ValueError`` naming the job on inconsistent times or unknown nodes."""
    _check(node_gpus, [*runs, *background])
    if not runs:
        empty = Distribution.of([])
        return KantMetrics(0.0, 1.0, 0.0, empty, empty, "completion_s", 0, 0.0, 0.0)
    start = min(r.submit_s for r in runs)
    if window_end_s is None:
        moments = [start]
        for r in runs:
            for a, b, _ in r.runs():
                moments += [a] if b is None else [a, b]
        window_end_s = max(moments)
    total = float(sum(node_gpus.values()))
    gpu_nodes = sum(1 for g in node_gpus.values() if g > 0)
    times, allocated, asked, partial = allocation_steps(node_gpus, runs, window_end_s, background)
    dt = np.diff(np.clip(times, start, window_end_s))  # the window: first submission on
    span = float(dt.sum())
    gar = float((allocated * dt).sum() / (total * span)) if total and span > 0 else 0.0
    gfr = float((partial * dt).sum() / (gpu_nodes * span)) if gpu_nodes and span > 0 else 0.0
    could = np.minimum(total, allocated + asked)
    present = (could > 0) & (dt > 0)
    busy = float(dt[present].sum())
    sor = float((dt[present] * allocated[present] / could[present]).sum() / busy) if busy else 1.0
    waits: list[float] = []
    waiting_gpu_s = 0.0
    unstarted = 0
    for r in runs:
        wait = sum(b - a for a, b in r.pending(window_end_s))
        unstarted += r.start_s is None or r.start_s > window_end_s
        waits.append(wait)
        waiting_gpu_s += r.demand * wait
    finished: list[tuple[JobRun, float, float]] = []  # job, last end, time run
    for r in runs:
        spans = r.runs()
        end = spans[-1][1] if spans else None
        if end is not None and end <= window_end_s and not r.stopped:
            ran = sum(b - a for a, b, _ in spans if b is not None)
            finished.append((r, end, ran))
    if finished and all(r.estimate_s for r, _, _ in finished):
        kind = "run/estimate"
        jtted = Distribution.of([ran / (r.estimate_s or 1.0) for r, _, ran in finished])
    else:
        kind = "completion_s"
        jtted = Distribution.of([end - r.submit_s for r, end, _ in finished])
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
