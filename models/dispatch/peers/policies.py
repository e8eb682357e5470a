"""The peers' dispatching policies (see the package docstring).

A policy is an object with ``name``, ``start(instance)`` (called once before a replay) and
``choose(instance, queues, job, now)`` returning a server the job fits on. Every policy only
reads the queues' state at the job's arrival (``now``) and, where it is size-aware (LWL, SITA,
two-stage), the job's own size; SITA's and two-stage's cutoffs are computed from the trace's
size distribution, which those policies assume known. Randomised ones draw from
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from placement.models.dispatch.instance import DispatchInstance
from placement.models.dispatch.schedule import ServerQueue


class Policy(Protocol):
    """An online dispatching policy."""

    name: str

    def start(self, instance: DispatchInstance) -> None:
        """Reset the policy's state for a replay of ``instance``."""
        ...

    def choose(
        self, instance: DispatchInstance, queues: list[ServerQueue], job: int, now: int
    ) -> int:
        """The server ``job`` (arriving at ``now``) goes to."""
        ...


def _least(instance: DispatchInstance, job: int, key: Callable[[int], object]) -> int:
    return min(instance.eligible[job], key=lambda s: (key(s), s))


class RoundRobin:
    """RR: the servers in cyclic order (a server the job does not fit is skipped)."""

    name = "rr"

    def start(self, instance: DispatchInstance) -> None:
        self.next = 0

    def choose(self, instance, queues, job, now):  # noqa: D102
        m = len(instance.servers)
        for step in range(m):
            s = (self.next + step) % m
            if instance.fits(job, s):
                self.next = s + 1
                return s
        raise AssertionError("a validated job fits some server")


class JoinIdleQueue:
    """JIQ (Lu et al., Performance Evaluation 2011): an idle server (no job in system) if
    there is one, the one idle longest by index order of our choosing (lowest index); else a
    server chosen uniformly at random."""

    name = "jiq"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def start(self, instance: DispatchInstance) -> None:
        self.rng = np.random.default_rng(self.seed)

    def choose(self, instance, queues, job, now):  # noqa: D102
        idle = [s for s in instance.eligible[job] if queues[s].in_system(now) == 0]
        if idle:
            return idle[0]
        options = instance.eligible[job]
        return options[int(self.rng.integers(len(options)))]


class JoinShortestQueue:
    """JSQ: the fewest jobs in system (waiting or running); ties: the lowest index."""

    name = "jsq"

    def start(self, instance: DispatchInstance) -> None:
        pass

    def choose(self, instance, queues, job, now):  # noqa: D102
        return _least(instance, job, lambda s: queues[s].in_system(now))


class LeastWorkLeft:
    """LWL: the least committed work left (time until the server's queue has ended); the
    job's own service time is not added (unlike the family's earliest-completion greedy,
    which differs on heterogeneous servers)."""

    name = "lwl"

    def start(self, instance: DispatchInstance) -> None:
        pass

    def choose(self, instance, queues, job, now):  # noqa: D102
        return _least(instance, job, lambda s: queues[s].work_left(now))


def work_cutoffs(sizes: list[int], parts: int) -> list[int]:
    """Size cutoffs splitting the total work of ``sizes`` into ``parts`` equal shares
    (SITA-E: equal expected load per interval); cutoff k is the largest size of interval k."""
    ordered = sorted(sizes)
    total = sum(ordered)
    cutoffs, acc, k = [], 0, 1
    for size in ordered:
        acc += size
        while k < parts and acc >= total * k / parts:
            cutoffs.append(size)
            k += 1
    while len(cutoffs) < parts - 1:
        cutoffs.append(ordered[-1])
    return cutoffs


class Sita:
    """SITA-E (Harchol-Balter, Crovella, Murta 1999): server k takes the sizes of the k-th of
    ``m`` intervals that split the trace's total work equally; a job that does not fit its
    interval's server goes to the least work left among those it fits."""

    name = "sita"

    def start(self, instance: DispatchInstance) -> None:
        self.cutoffs = work_cutoffs([j.size for j in instance.jobs], len(instance.servers))

    def choose(self, instance, queues, job, now):  # noqa: D102
        size = instance.jobs[job].size
        s = next((k for k, c in enumerate(self.cutoffs) if size <= c), len(self.cutoffs))
        if instance.fits(job, s):
            return s
        return _least(instance, job, lambda k: queues[k].work_left(now))


class JoinBelowThreshold:
    """JBT-d (Zhou, Wu, Tan, Sun, Shroff, INFOCOM 2017): every ``period`` arrivals the
    threshold becomes the shortest queue length; a job goes to a server, at random, whose
    queue is at most the threshold, else to a random server. The paper samples ``d`` servers
    to update the threshold; we read every queue (d = m)."""

    name = "jbt"

    def __init__(self, period: int = 10, seed: int = 0) -> None:
        self.period = period
        self.seed = seed

    def start(self, instance: DispatchInstance) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.threshold = 0
        self.arrivals = 0

    def choose(self, instance, queues, job, now):  # noqa: D102
        if self.arrivals % self.period == 0:
            self.threshold = min(q.in_system(now) for q in queues)
        self.arrivals += 1
        options = instance.eligible[job]
        below = [s for s in options if queues[s].in_system(now) <= self.threshold]
        pool = below or options
        return pool[int(self.rng.integers(len(pool)))]


class TwoStage:
    """A size-threshold two-stage split: jobs whose size is above the cutoff that splits the
    trace's work in halves go to the second half of the servers, the others to the first;
    within a stage, least work left. (Yildiz et al.'s "Two-Stagification" moves a job to the
    second stage once it has run past a threshold, without knowing sizes; with FCFS servers
    and known sizes the split is decided at arrival, which is what this peer does.)"""

    name = "two-stage"

    def start(self, instance: DispatchInstance) -> None:
        m = len(instance.servers)
        self.first = list(range(max(1, m // 2)))
        self.second = list(range(max(1, m // 2), m)) or self.first
        self.cutoff = work_cutoffs([j.size for j in instance.jobs], 2)[0]

    def choose(self, instance, queues, job, now):  # noqa: D102
        stage = self.second if instance.jobs[job].size > self.cutoff else self.first
        options = [s for s in stage if instance.fits(job, s)] or instance.eligible[job]
        return min(options, key=lambda s: (queues[s].work_left(now), s))


POLICIES: dict[str, Callable[[], Policy]] = {
    "rr": RoundRobin,
    "jiq": JoinIdleQueue,
    "jsq": JoinShortestQueue,
    "lwl": LeastWorkLeft,
    "sita": Sita,
    "jbt": JoinBelowThreshold,
    "two-stage": TwoStage,
}
"""Every peer by name (a fresh policy object per replay)."""
