"""Bundle mode's heuristics (the mode's greedies): per-task dispatch, Byun et al.'s node-based
bundling and ours, all under a serial scheduler that spends ``scheduler_overhead`` per
dispatch.

Byun et al., "Node-Based Job Scheduling for Large Scale Simulations of Short Running Jobs"
(IEEE HPEC 2021, MIT SuperCloud): a scheduler such as Slurm spends a roughly fixed time on
every job it launches, so thousands of short tasks submitted one by one are limited by the
scheduler, not the machine; node-based scheduling gives whole nodes to bundles of tasks (the
launcher LLMapReduce spreads an array's tasks evenly over the nodes and, on a node, over its
cores in turn), one scheduler dispatch per node, while long jobs are still dispatched one by
one beside them. Written from the paper's description; not from code.

The heuristics build the schedule in one pass over dispatches in order of release (a job's
arrival; a bundle's last task's arrival); each dispatch is launched by the scheduler
``max(previous launch, release) + h`` at the earliest and starts no earlier, and after the
previous dispatch's start (the scheduler launches in start order: the checker's rule). A job
takes the cores of a server that free first; a bundle takes a whole node, runs its tasks on
its cores, and holds the node until its last task ends.

* ``per-task``: every job its own dispatch, to the server where it ends soonest;
* ``byun``: the short jobs (``size <= short_size``) in arrival order split evenly into one
  bundle per node, tasks dealt to the node's cores in turn; long jobs per task;
* ``bundle-opt`` (ours): the number of bundles chosen by simulating every count from 1 to
  twice the nodes (and 3, 4 and 8 times), each bundle's tasks placed longest first on the
  core that frees first (LPT); the count of least total weighted flow time is kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from placement.models.dispatch.instance import DispatchInstance, DispatchSolution

Layout = Callable[[list[int], int], list[int]]
"""(service times of a bundle's tasks, cores) -> each task's start offset in the bundle."""


def round_robin(service: list[int], cores: int) -> list[int]:
    """Task i on core ``i mod cores``, back to back (LLMapReduce's even spread)."""
    ends = [0] * cores
    out = []
    for i, p in enumerate(service):
        out.append(ends[i % cores])
        ends[i % cores] += p
    return out


def list_schedule(service: list[int], cores: int, longest: bool) -> list[int]:
    """Tasks in order of size (longest first: LPT, the shortest hold of the node; shortest
    first: SPT, which minimises the tasks' total completion time on identical cores, Conway,
    Maxwell and Miller 1967), each on the core that frees first."""
    out = [0] * len(service)
    heap = [(0, c) for c in range(cores)]
    for i in sorted(range(len(service)), key=lambda i: -service[i] if longest else service[i]):
        t, c = heapq.heappop(heap)
        out[i] = t
        heapq.heappush(heap, (t + service[i], c))
    return out


def longest_first(service: list[int], cores: int) -> list[int]:
    """LPT (see :func:`list_schedule`)."""
    return list_schedule(service, cores, True)


def shortest_first(service: list[int], cores: int) -> list[int]:
    """SPT (see :func:`list_schedule`)."""
    return list_schedule(service, cores, False)


class Cluster:
    """The state of one pass: every server's cores (sorted free times) and the scheduler."""

    def __init__(self, instance: DispatchInstance) -> None:
        self.instance = instance
        self.free = [[0] * s.cores for s in instance.servers]
        self.h = instance.scheduler_overhead
        self.launched = 0
        self.last_start = -1
        n = len(instance.jobs)
        self.server_of, self.start, self.bundle = [0] * n, [0] * n, [""] * n

    def earliest(self, release: int) -> tuple[int, int]:
        """The scheduler's launch of a dispatch released at ``release``, and the earliest
        start it allows."""
        launch = max(self.launched, release) + self.h
        return launch, max(launch, self.last_start + (1 if self.h else 0))

    def _commit(self, launch: int, start: int) -> None:
        self.launched, self.last_start = launch, start

    def place_job(self, j: int) -> None:
        """``j`` alone, on the server where it ends soonest."""
        inst = self.instance
        job = inst.jobs[j]
        launch, floor = self.earliest(job.arrival)
        s = min(
            inst.eligible[j],
            key=lambda s: (max(floor, self.free[s][job.cores - 1]) + inst.service[j][s], s),
        )
        t = max(floor, self.free[s][job.cores - 1])
        end = t + inst.service[j][s]
        self.free[s] = sorted([end] * job.cores + self.free[s][job.cores :])
        self.server_of[j], self.start[j] = s, t
        self._commit(launch, t)

    def place_bundle(self, name: str, tasks: list[int], layout: Layout) -> None:
        """``tasks`` as one whole-node dispatch, on the node where they end soonest."""
        inst = self.instance
        launch, floor = self.earliest(max(inst.jobs[j].arrival for j in tasks))
        cache: dict[tuple[int, float, int], tuple[list[int], int]] = {}
        best = None
        for s, server in enumerate(inst.servers):
            if any(not inst.fits(j, s) for j in tasks):
                continue
            key = (server.cores, server.speed, server.dispatch_overhead)
            if key not in cache:
                service = [inst.service[j][s] for j in tasks]
                offsets = layout(service, server.cores)
                cache[key] = (offsets, max(o + p for o, p in zip(offsets, service, strict=True)))
            offsets, span = cache[key]
            t = max(floor, self.free[s][-1])
            if best is None or (t + span, s) < best[0]:
                best = ((t + span, s), s, t, offsets)
        assert best is not None, "a bundle of short tasks fits no node"
        (end, _), s, t, offsets = best
        for j, offset in zip(tasks, offsets, strict=True):
            self.server_of[j], self.start[j], self.bundle[j] = s, t + offset, name
        self.free[s] = [end] * len(self.free[s])
        self._commit(launch, t)

    def solution(self) -> DispatchSolution:
        return DispatchSolution(tuple(self.server_of), tuple(self.start), tuple(self.bundle))


def shorts_of(instance: DispatchInstance) -> list[int]:
    """The short jobs (size at most ``short_size``) in arrival order."""
    limit = instance.short_size
    return [j for j in instance.order if limit and instance.jobs[j].size <= limit]


def split(jobs: list[int], count: int) -> list[list[int]]:
    """``jobs`` in order, in ``count`` consecutive groups whose sizes differ by at most 1."""
    count = max(1, min(count, len(jobs)))
    q, r = divmod(len(jobs), count)
    out, at = [], 0
    for g in range(count):
        size = q + (g < r)
        out.append(jobs[at : at + size])
        at += size
    return [g for g in out if g]


def bundled(
    instance: DispatchInstance, groups: list[list[int]], layout: Layout
) -> DispatchSolution:
    """Long jobs per task and these bundles, dispatched in order of release."""
    in_bundle = {j for g in groups for j in g}
    units: list[tuple[int, int, list[int]]] = []
    for b, g in enumerate(groups):
        units.append((max(instance.jobs[j].arrival for j in g), b, g))
    order = len(groups)
    for j in instance.order:
        if j not in in_bundle:
            units.append((instance.jobs[j].arrival, order + j, [j]))
    units.sort(key=lambda u: (u[0], u[1]))
    cluster = Cluster(instance)
    for _, key, members in units:
        if key < len(groups):
            cluster.place_bundle(f"b{key}", members, layout)
        else:
            cluster.place_job(members[0])
    return cluster.solution()


def per_task(instance: DispatchInstance) -> DispatchSolution:
    """Every job its own dispatch."""
    return bundled(instance, [], round_robin)


def byun(instance: DispatchInstance) -> DispatchSolution:
    """Byun et al.'s node-based bundling: one bundle per node, tasks dealt to cores."""
    shorts = shorts_of(instance)
    return bundled(instance, split(shorts, len(instance.servers)), round_robin)


def flow(instance: DispatchInstance, solution: DispatchSolution) -> int:
    """Total weighted flow time (the checker recomputes it)."""
    return sum(
        job.weight * (solution.start[j] + instance.service[j][solution.server_of[j]] - job.arrival)
        for j, job in enumerate(instance.jobs)
    )


def bundle_counts(instance: DispatchInstance) -> list[int]:
    """The bundle counts ours tries."""
    m, n = len(instance.servers), len(shorts_of(instance))
    counts = set(range(1, 2 * m + 1)) | {3 * m, 4 * m, 8 * m}
    return sorted(c for c in counts if c <= max(1, n))


def bundle_opt(instance: DispatchInstance) -> DispatchSolution:
    """Ours: the best bundle count and order inside the bundles (module docstring)."""
    shorts = shorts_of(instance)
    if not shorts:
        return per_task(instance)
    best = None
    for count in bundle_counts(instance):
        for layout in (shortest_first, longest_first):
            solution = bundled(instance, split(shorts, count), layout)
            value = flow(instance, solution)
            if best is None or value < best[0]:
                best = (value, solution)
    assert best is not None
    return best[1]


BUNDLING: dict[str, Callable[[DispatchInstance], DispatchSolution]] = {
    "bundle-opt": bundle_opt,
    "byun": byun,
    "per-task": per_task,
}
"""Bundle mode's heuristics by name, the fallback (ours) first."""
