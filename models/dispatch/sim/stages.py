"""A two-stage structure chosen by simulation: which servers serve the short jobs, and where
"short" ends.

Yildiz et al.'s two-stage cluster ("Two-Stagification", 2025) sends the jobs above a size
threshold to a second group of servers; they choose the threshold and the group sizes by a
one-dimensional search on the trace. Here the choice is a search over the whole grid: every
first-stage size ``k`` (all of ``1..m-1`` up to :data:`FULL_GRID_SERVERS` servers, else
eighths of ``m``) and every cutoff at the size quantiles :data:`QUANTILES`, plus "no split",
each scored by the mean response time of earliest completion within the stages on
``paths`` sample paths of ``jobs`` jobs (at most :data:`WORK_CAP` / m, and at most the
trace's length when it has over 2,000 jobs), and the least mean wins (ties: fewer splits, smaller
``k``). It is exact over that grid for those paths, not over every threshold policy.

**What it is given.** The sample paths are drawn from what the size-based peers are given
(SITA-E and the two-stage peer cut the trace's own size distribution,
:mod:`placement.models.dispatch.peers.policies`): each sampled job is a job of the trace
(size, cores, weight: its service time on every server) drawn with replacement, and the
arrivals are Poisson at the trace's mean rate. No arrival time and no order of the trace is
used. The search scores candidates in the order: no split, the peer's split, then the grid,
and stops once the next would take the scans past :data:`SEARCH_CAP` (work, not time, so the
choice does not depend on the machine's load: the whole grid on 8 servers and 10,000 jobs,
no split and the peer's split on 1,000 servers); ``budget_s`` adds a wall-clock limit. The chosen structure
says how many candidates it evaluated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from placement.models.dispatch.instance import DispatchInstance
from placement.models.dispatch.peers.policies import work_cutoffs
from placement.models.dispatch.schedule import ServerQueue

WORK_CAP = 2_000_000
"""A sample path has at most ``WORK_CAP / m`` jobs (at least 1,000): scoring a candidate costs
one earliest-completion scan of the stage per job."""
SEARCH_CAP = 15_000_000
"""Server scans the structure search may spend (a candidate costs paths x path length x m;
about 33 s on the 8-server, 10,000-job traces at load 6)."""
QUANTILES = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98)
"""Cutoffs tried: these quantiles of the trace's job sizes."""
FULL_GRID_SERVERS = 16
"""Up to this many servers every first-stage size is tried; above it, eighths of ``m``."""


@dataclass(frozen=True)
class Stages:
    """Jobs of size at most ``cutoff`` go to ``first``, the others to ``second``
    (``cutoff`` None: no split, every job to ``first``, which is every server)."""

    first: tuple[int, ...]
    second: tuple[int, ...]
    cutoff: int | None
    score: float
    """The mean response on the sample paths."""
    evaluated: int
    """Candidates scored within the budget."""
    seconds: float

    def of(self, size: int) -> tuple[int, ...]:
        """The servers of a job of this size."""
        if self.cutoff is None or size <= self.cutoff:
            return self.first
        return self.second


def no_split(instance: DispatchInstance) -> Stages:
    """Every server in one stage."""
    every = tuple(range(len(instance.servers)))
    return Stages(every, (), None, float("nan"), 0, 0.0)


def staged_ect(
    instance: DispatchInstance,
    arrivals: np.ndarray,
    jobs: np.ndarray,
    first: tuple[int, ...],
    second: tuple[int, ...],
    cutoff: int | None,
) -> float:
    """Mean response of the sampled jobs (``jobs[i]`` a job of the trace arriving at
    ``arrivals[i]``) dispatched by earliest completion within their stage, FCFS servers."""
    qs = [ServerQueue(s.cores) for s in instance.servers]
    total = 0
    for a, j in zip(arrivals.tolist(), jobs.tolist(), strict=True):
        job = instance.jobs[j]
        stage = second if cutoff is not None and job.size > cutoff else first
        best_end, best_s = -1, -1
        for s in stage:
            if job.cores > qs[s].cores:
                continue
            end = qs[s].earliest_start(a, job.cores) + instance.service[j][s]
            if best_s < 0 or end < best_end:
                best_end, best_s = end, s
        if best_s < 0:  # the job fits no server of its stage: any server it fits
            for s in instance.eligible[j]:
                end = qs[s].earliest_start(a, job.cores) + instance.service[j][s]
                if best_s < 0 or end < best_end:
                    best_end, best_s = end, s
        qs[best_s].commit(a, job.cores, instance.service[j][best_s])
        total += best_end - a
    return total / max(1, len(jobs))


def sample_paths(
    instance: DispatchInstance, paths: int, jobs: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``paths`` sample paths of ``jobs`` jobs: Poisson arrivals at the trace's mean rate,
    each a job of the trace drawn with replacement (``(arrivals, job indices)``)."""
    n = len(instance.jobs)
    arrival = np.array([j.arrival for j in instance.jobs], dtype=np.float64)
    span = float(arrival.max() - arrival.min())
    mean_gap = span / (n - 1) if span > 0 else 1.0
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(paths):
        gaps = rng.exponential(mean_gap, jobs)
        out.append((np.floor(np.cumsum(gaps)).astype(np.int64), rng.integers(0, n, jobs)))
    return out


def grid(instance: DispatchInstance) -> list[tuple[tuple[int, ...], tuple[int, ...], int | None]]:
    """The candidates ``(first, second, cutoff)`` in the order they are scored: no split,
    the two-stage peer's split, then every first-stage size by every quantile cutoff (a
    cutoff at the largest size, which splits nothing, left out)."""
    n, m = len(instance.jobs), len(instance.servers)
    sizes = sorted(j.size for j in instance.jobs)
    every = tuple(range(m))
    ks = list(range(1, m)) if m <= FULL_GRID_SERVERS else sorted({m * i // 8 for i in range(1, 8)})
    cuts = sorted({sizes[min(n - 1, int(q * n))] for q in QUANTILES})
    half = max(1, m // 2)
    peer = (every[:half], every[half:], work_cutoffs(sizes, 2)[0])
    out: list[tuple[tuple[int, ...], tuple[int, ...], int | None]] = [(every, (), None), peer]
    out += [(every[:k], every[k:], c) for k in ks for c in cuts if (k, c) != (half, peer[2])]
    return [c for c in out if c[2] is None or c[2] < sizes[-1]]


def choose_stages(
    instance: DispatchInstance,
    paths: int = 3,
    jobs: int = 10_000,
    seed: int = 0,
    budget_s: float | None = None,
) -> Stages:
    """The best structure over the grid on ``paths`` sample paths (module docstring)."""
    started = time.perf_counter()
    m = len(instance.servers)
    if len(instance.jobs) < 2 or m < 2:
        return no_split(instance)
    length = min(jobs, max(1_000, WORK_CAP // m), max(2_000, len(instance.jobs)))
    samples = sample_paths(instance, paths, length, seed)
    best: Stages | None = None
    count = 0
    cost = paths * length * m
    for count, (first, second, cutoff) in enumerate(grid(instance), start=1):
        if count > 1 and count * cost > SEARCH_CAP:
            count -= 1
            break
        score = float(
            np.mean([staged_ect(instance, a, js, first, second, cutoff) for a, js in samples])
        )
        if best is None or score < best.score:
            best = Stages(first, second, cutoff, score, count, 0.0)
        if budget_s is not None and time.perf_counter() - started > budget_s:
            break
    assert best is not None
    seconds = round(time.perf_counter() - started, 3)
    return Stages(best.first, best.second, best.cutoff, best.score, count, seconds)


__all__ = [
    "QUANTILES",
    "Stages",
    "choose_stages",
    "grid",
    "no_split",
    "sample_paths",
    "staged_ect",
]
