"""Our online dispatcher: a rolling-horizon rollout over sampled futures.

At each arrival the job must go to a server now (immediate dispatch), and the future is
unknown, so a re-solve over "queued + arriving" jobs has nothing to decide: queued jobs are
committed FCFS and the arriving job's own best server is exactly earliest completion (ECT).
What a decision can still weigh is its effect on the jobs to come. This policy samples
``scenarios`` continuations of ``horizon`` future jobs from what it has seen so far (the
inter-arrival gaps and the sizes and core counts of past jobs, drawn with replacement: no
look at the trace's future), and for every candidate server replays the job and each sampled
future with ECT on copies of the queues; it picks the server of least mean total flow time
(the job's own plus the sampled jobs'), ties to ECT's choice; only the ``candidates``
servers where the job itself would end soonest are tried. Until ``warmup`` jobs have been
seen, or when a decision would scan more than :data:`MAX_SCANS` servers, it falls back to ECT
(counted in :attr:`fallbacks`). Both tests count work, not time, so a replay's decisions do
not depend on the machine's load; ``budget_s`` adds a wall-clock limit per decision (also a
fallback) for callers that need one. Bertsekas's rollout with ECT as the base policy; the replay checks the
schedule like every other policy's.

**Staged** (``staged=True``, the policy ``staged-rollout``): the same rollout inside Yildiz et
al.'s two-stage structure, with the structure (first-stage servers and size cutoff, or no
split) chosen at the start by :func:`.stages.choose_stages` over the whole grid on sampled
paths, from the trace's size distribution and mean arrival rate only (what the size-based
peers are given, plus the rate). A job and every sampled future job are dispatched within
their stage; the base policy is earliest completion within the stage.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from placement.models.dispatch.instance import DispatchInstance
from placement.models.dispatch.schedule import ServerQueue
from placement.models.dispatch.sim.stages import Stages, choose_stages, no_split

MAX_SCANS = 20_000
"""Above this many server scans per decision (candidates x scenarios x horizon x servers) the
rollout cannot fit a few milliseconds in Python: earliest completion decides, counted as a
fallback."""


class Rollout:
    """The rollout dispatcher (see the module docstring)."""

    name = "rollout"

    def __init__(
        self,
        horizon: int = 6,
        scenarios: int = 4,
        candidates: int = 4,
        warmup: int = 50,
        budget_s: float | None = None,
        seed: int = 0,
        staged: bool = False,
        stage_budget_s: float | None = None,
    ) -> None:
        self.horizon = horizon
        self.scenarios = scenarios
        self.candidates = candidates
        self.warmup = warmup
        self.budget_s = budget_s
        self.seed = seed
        self.staged = staged
        self.stage_budget_s = stage_budget_s
        if staged:
            self.name = "staged-rollout"

    def start(self, instance: DispatchInstance) -> None:
        self.stages: Stages = (
            choose_stages(instance, seed=self.seed, budget_s=self.stage_budget_s)
            if self.staged
            else no_split(instance)
        )
        self.rng = np.random.default_rng(self.seed)
        self.seen: list[int] = []
        self.gaps: list[int] = []
        self.last_arrival: int | None = None
        self.fallbacks = 0

    def _sample_future(self, now: int) -> list[list[tuple[int, int]]]:
        """``scenarios`` lists of ``(arrival, job seen)`` pairs: sampled future jobs."""
        out = []
        for _ in range(self.scenarios):
            t, future = now, []
            for _ in range(self.horizon):
                t += self.gaps[int(self.rng.integers(len(self.gaps)))]
                future.append((t, self.seen[int(self.rng.integers(len(self.seen)))]))
            out.append(future)
        return out

    def servers(self, instance: DispatchInstance, job: int) -> list[int]:
        """The servers ``job`` may go to: those of its stage it fits (every server it fits
        when none of its stage does)."""
        if self.stages.cutoff is None:
            return instance.eligible[job]
        stage = self.stages.of(instance.jobs[job].size)
        return [s for s in stage if instance.fits(job, s)] or instance.eligible[job]

    def choose(self, instance, queues, job, now):  # noqa: D102
        started = time.perf_counter()
        j = instance.jobs[job]
        options = self.servers(instance, job)
        ranked = heapq.nsmallest(
            max(1, self.candidates),
            options,
            key=lambda k: (queues[k].earliest_start(now, j.cores) + instance.service[job][k], k),
        )
        base = ranked[0]
        choice = base
        scans = self.candidates * self.scenarios * self.horizon * len(options)
        if len(self.seen) >= self.warmup and len(options) > 1 and scans > MAX_SCANS:
            self.fallbacks += 1
        elif len(self.seen) >= self.warmup and len(options) > 1:
            futures = self._sample_future(now)
            best = None
            deadline = None if self.budget_s is None else started + self.budget_s
            for s in ranked[: self.candidates]:
                cost: float | None = 0.0
                for future in futures:
                    part = _rollout_cost(self, instance, queues, job, s, now, future, deadline)
                    cost = None if part is None or cost is None else cost + part
                    if cost is None:
                        break
                if cost is None:
                    choice = base
                    self.fallbacks += 1
                    break
                key = (cost, s != base, s)
                if best is None or key < best:
                    best, choice = key, s
        self.seen.append(job)
        if self.last_arrival is not None:
            self.gaps.append(now - self.last_arrival)
        self.last_arrival = now
        return choice


def _rollout_cost(
    policy: Rollout,
    instance: DispatchInstance,
    queues: list[ServerQueue],
    job: int,
    server: int,
    now: int,
    future: list[tuple[int, int]],
    deadline: float | None,
) -> float | None:
    """Total weighted flow of ``job`` on ``server`` and the sampled jobs dispatched by
    earliest completion within their stages; None once the wall clock passes ``deadline``
    (checked before every sampled job; None: no limit)."""
    qs = _CopyOnCommit(queues)
    j = instance.jobs[job]
    end = (
        qs.commit(server, now, j.cores, instance.service[job][server])
        + instance.service[job][server]
    )
    cost = float(j.weight * (end - now))
    for arrival, like in future:
        if deadline is not None and time.perf_counter() > deadline:
            return None
        jl = instance.jobs[like]
        best_end, best_s = None, -1
        for s in policy.servers(instance, like):
            e = qs[s].earliest_start(arrival, jl.cores) + instance.service[like][s]
            if best_end is None or e < best_end:
                best_end, best_s = e, s
        qs.commit(best_s, arrival, jl.cores, instance.service[like][best_s])
        cost += jl.weight * (best_end - arrival)
    return cost


class _CopyOnCommit:
    """The queues as a rollout sees them: read through to the real ones, copied on the first
    commit to a server (a rollout touches a few servers of many)."""

    def __init__(self, queues: list[ServerQueue]) -> None:
        self.queues = queues
        self.copies: dict[int, ServerQueue] = {}

    def __getitem__(self, s: int) -> ServerQueue:
        return self.copies.get(s) or self.queues[s]

    def commit(self, s: int, arrival: int, cores: int, service: int) -> int:
        q = self.copies.get(s)
        if q is None:
            o = self.queues[s]
            q = self.copies[s] = ServerQueue(o.cores, o.last_start, list(o.running), [], o.work_end)
        return q.commit(arrival, cores, service)


__all__ = ["Rollout"]
