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
seen, or when a decision's wall time exceeds ``budget_s``, it falls back to ECT (counted in
:attr:`fallbacks`). Bertsekas's rollout with ECT as the base policy; the replay checks the
schedule like every other policy's.
"""

from __future__ import annotations

import time

import numpy as np

from placement.models.dispatch.greedy import earliest_completion
from placement.models.dispatch.instance import DispatchInstance
from placement.models.dispatch.schedule import ServerQueue


class Rollout:
    """The rollout dispatcher (see the module docstring)."""

    name = "rollout"

    def __init__(
        self,
        horizon: int = 6,
        scenarios: int = 4,
        candidates: int = 4,
        warmup: int = 50,
        budget_s: float = 0.005,
        seed: int = 0,
    ) -> None:
        self.horizon = horizon
        self.scenarios = scenarios
        self.candidates = candidates
        self.warmup = warmup
        self.budget_s = budget_s
        self.seed = seed

    def start(self, instance: DispatchInstance) -> None:
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

    def choose(self, instance, queues, job, now):  # noqa: D102
        started = time.perf_counter()
        base = earliest_completion(instance, queues, job)
        choice = base
        if len(self.seen) >= self.warmup and len(instance.eligible[job]) > 1:
            futures = self._sample_future(now)
            best = None
            j = instance.jobs[job]
            ranked = sorted(
                instance.eligible[job],
                key=lambda k: (
                    queues[k].earliest_start(now, j.cores) + instance.service[job][k],
                    k,
                ),
            )
            for s in ranked[: self.candidates]:
                cost = 0.0
                for future in futures:
                    cost += _rollout_cost(instance, queues, job, s, now, future)
                key = (cost, s != base, s)
                if best is None or key < best:
                    best, choice = key, s
                if time.perf_counter() - started > self.budget_s:
                    choice = base
                    self.fallbacks += 1
                    break
        self.seen.append(job)
        if self.last_arrival is not None:
            self.gaps.append(now - self.last_arrival)
        self.last_arrival = now
        return choice


def _rollout_cost(
    instance: DispatchInstance,
    queues: list[ServerQueue],
    job: int,
    server: int,
    now: int,
    future: list[tuple[int, int]],
) -> float:
    """Total weighted flow of ``job`` on ``server`` and the sampled jobs dispatched by ECT."""
    qs = [ServerQueue(q.cores, q.last_start, list(q.running), [], q.work_end) for q in queues]
    j = instance.jobs[job]
    end = (
        qs[server].commit(now, j.cores, instance.service[job][server])
        + instance.service[job][server]
    )
    cost = float(j.weight * (end - now))
    for arrival, like in future:
        jl = instance.jobs[like]
        best_end, best_s = None, -1
        for s in instance.eligible[like]:
            e = qs[s].earliest_start(arrival, jl.cores) + instance.service[like][s]
            if best_end is None or e < best_end:
                best_end, best_s = e, s
        qs[best_s].commit(arrival, jl.cores, instance.service[like][best_s])
        cost += jl.weight * (best_end - arrival)
    return cost


__all__ = ["Rollout"]
