"""The FCFS schedule of a dispatch: each server starts its jobs in arrival order, each as
early as its cores allow.

Given which server every job goes to, this earliest-start schedule is optimal for every
regular objective (total weighted flow time among them): by induction over a server's jobs
in FCFS order, each start is no later than in any other feasible FCFS schedule with the same
assignment (docs/formulations/dispatch.md gives the argument). So a dispatch policy is a map
from jobs to servers, and :class:`ServerQueue` is the state an online policy sees.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from placement.models.dispatch.instance import DispatchInstance, DispatchSolution


@dataclass
class ServerQueue:
    """One server's committed FCFS schedule, as an online dispatcher sees it.

    ``running`` is a heap of ``(end, cores)`` of jobs that may still hold cores at or after
    ``last_start`` (the latest start so far: FCFS starts no later job before it), so the
    cores in use only fall from ``last_start`` on.
    """

    cores: int
    last_start: int = 0
    running: list[tuple[int, int]] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    """End times of every job dispatched here (a heap): the jobs in system at a time."""
    work_end: int = 0
    """When the server's last committed job ends."""

    def earliest_start(self, arrival: int, cores: int) -> int:
        """The FCFS start a job of ``cores`` arriving at ``arrival`` would get here."""
        t = max(arrival, self.last_start)
        in_use = sum(c for end, c in self.running if end > t)
        if in_use + cores <= self.cores:
            return t
        for end, c in sorted(self.running):
            if end <= t:
                continue
            in_use -= c
            t = end
            if in_use + cores <= self.cores:
                return t
        return t

    def commit(self, arrival: int, cores: int, service: int) -> int:
        """Dispatch the job here; its start."""
        t = self.earliest_start(arrival, cores)
        self.last_start = t
        while self.running and self.running[0][0] <= t:
            heapq.heappop(self.running)
        heapq.heappush(self.running, (t + service, cores))
        heapq.heappush(self.ends, t + service)
        self.work_end = max(self.work_end, t + service)
        return t

    def in_system(self, now: int) -> int:
        """Jobs dispatched here that have not ended by ``now`` (waiting or running)."""
        while self.ends and self.ends[0] <= now:
            heapq.heappop(self.ends)
        return len(self.ends)

    def work_left(self, now: int) -> int:
        """Time from ``now`` until the server's committed jobs have all ended."""
        return max(0, self.work_end - now)


def queues(instance: DispatchInstance) -> list[ServerQueue]:
    """An empty queue per server."""
    return [ServerQueue(s.cores) for s in instance.servers]


def fcfs_solution(
    instance: DispatchInstance, server_of: list[int] | tuple[int, ...]
) -> DispatchSolution:
    """The earliest-start FCFS schedule of an assignment (every server index valid and
    fitting)."""
    qs = queues(instance)
    start = [0] * len(instance.jobs)
    for j in instance.order:
        s = server_of[j]
        job = instance.jobs[j]
        start[j] = qs[s].commit(job.arrival, job.cores, instance.service[j][s])
    return DispatchSolution(tuple(server_of), tuple(start))


def total_flow_time(instance: DispatchInstance, solution: DispatchSolution) -> int:
    """The objective of a schedule (the checker recomputes it on its own)."""
    return sum(
        job.weight * (solution.start[j] + instance.service[j][solution.server_of[j]] - job.arrival)
        for j, job in enumerate(instance.jobs)
    )


def easy_starts(instance: DispatchInstance, server: int, jobs: list[int]) -> dict[int, int]:
    """EASY backfilling of ``jobs`` (in FCFS order) on one server, with exact run times: at
    each arrival or end, start queued jobs in order while the first fits; when it does not,
    reserve its earliest start (the shadow time) and start any later queued job that fits
    now and either ends by the shadow time or leaves the reserved cores free (Lifka 1995;
    Mu'alem and Feitelson, TPDS 2001). Returns each job's start."""
    cores = instance.servers[server].cores
    service = {j: instance.service[j][server] for j in jobs}
    need = {j: instance.jobs[j].cores for j in jobs}
    pending = list(jobs)  # not arrived yet, FCFS order
    queue: list[int] = []  # arrived, not started, FCFS order
    running: list[tuple[int, int]] = []  # (end, cores)
    start: dict[int, int] = {}
    t = instance.jobs[jobs[0]].arrival if jobs else 0
    while pending or queue:
        while pending and instance.jobs[pending[0]].arrival <= t:
            queue.append(pending.pop(0))
        running = [(e, c) for e, c in running if e > t]
        free = cores - sum(c for _, c in running)
        while queue and need[queue[0]] <= free:
            j = queue.pop(0)
            start[j] = t
            running.append((t + service[j], need[j]))
            free -= need[j]
        if queue:
            # The head waits: its shadow time and the cores spare then.
            head = queue[0]
            shadow, spare = t, free
            for end, c in sorted(running):
                if spare >= need[head]:
                    break
                shadow, spare = end, spare + c
            extra = spare - need[head]
            for j in list(queue[1:]):
                if need[j] <= free and (t + service[j] <= shadow or need[j] <= extra):
                    queue.remove(j)
                    start[j] = t
                    running.append((t + service[j], need[j]))
                    free -= need[j]
                    if t + service[j] > shadow:
                        extra -= need[j]
        ends = [e for e, _ in running if e > t]
        arrivals = [instance.jobs[pending[0]].arrival] if pending else []
        if not ends and not arrivals:
            break
        t = min(ends + arrivals)
    return start


def easy_solution(
    instance: DispatchInstance, server_of: list[int] | tuple[int, ...]
) -> DispatchSolution:
    """The EASY-backfilling schedule of an assignment (valid in ``backfill`` mode)."""
    start = [0] * len(instance.jobs)
    for s in range(len(instance.servers)):
        jobs = [j for j in instance.order if server_of[j] == s]
        for j, t in easy_starts(instance, s, jobs).items():
            start[j] = t
    return DispatchSolution(tuple(server_of), tuple(start))
