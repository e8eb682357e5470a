"""List-scheduling heuristics: HEFT (the fallback), PEFT and CPOP for DAGs; MCT, Min-Min,
Max-Min and Sufferage for independent tasks (the grid case). No solver is called here.

All of them place a task at its earliest finish on a machine's timeline, with insertion into
idle gaps (HEFT, PEFT, CPOP) or after the machine's last task (the grid heuristics), where
the earliest start respects the release time, the dataset transfer and every parent's data
arrival (``end + latency + bytes / bandwidth`` between different machines).

References: Topcuoglu, Hariri, Wu, IEEE TPDS 13(3) 2002 (HEFT, CPOP); Arabnejad, Barbosa,
IEEE TPDS 25(3) 2014 (PEFT); Braun et al., JPDC 61(6) 2001 (MCT, Min-Min, Max-Min);
Maheswaran et al., HCW 1999 (Sufferage).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Callable

import numpy as np

from placement.models.dag.check import evaluate
from placement.models.dag.instance import DagInstance, DagSolution
from placement.solver.options import Backend, SolveOptions

MAX_MIN_MAX_CELLS = 65_536
"""Tasks x machines above which R||Cmax instances skip Max-Min and the move/swap descent in
the greedy phase: Max-Min is never the best there (about twice Min-Min's makespan on the
Braun classes), and the two took over half of the greedy phase at 2,048 x 64 and up, time
the R||Cmax search (whose first step is a faster descent) uses better."""

GRID_HEURISTICS_MAX_CELLS = 50_000_000
"""Tasks x machines above which the grid heuristics are skipped (memory of the matrices)."""


class Timeline:
    """The tasks already on one machine: earliest feasible start and insertion.

    A multi-slot machine also keeps its usage profile: breakpoints ``_times`` (sorted) and
    the cores in use ``_use[i]`` from ``_times[i]`` to the next breakpoint, so that a query
    walks the profile once instead of re-summing every task at every candidate instant
    (HEFT on a 900-task workflow on 4-8-slot machines: 9.7 s -> under a second).
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.cores: list[int] = []
        self._times: list[float] = [-math.inf]
        self._use: list[int] = [0]

    def last_end(self) -> float:
        """End of the latest task (0 when empty)."""
        return max(self.ends, default=0.0)

    def earliest(self, ready: float, duration: float, cores: int, insert: bool = True) -> float:
        """Earliest start >= ``ready`` where the task fits for ``duration`` seconds."""
        if not insert:
            ready = max(ready, self.last_end()) if self.slots == 1 else ready
        if duration <= 0:
            return ready
        if self.slots == 1:
            start = ready
            i = bisect_right(self.ends, ready)
            for j in range(i, len(self.starts)):
                if start + duration <= self.starts[j]:
                    return start
                start = max(start, self.ends[j])
            return start
        # Walk the profile from the segment holding ``ready``: a segment without room moves
        # the start to its end (usage only falls at a task's end, so the answer is ``ready``
        # or an end, as when every end was tried in turn); a start is returned once
        # ``duration`` seconds of room follow it.
        times, use = self._times, self._use
        j = bisect_right(times, ready) - 1
        start = ready
        while True:
            seg_end = times[j + 1] if j + 1 < len(times) else math.inf
            if use[j] + cores > self.slots:
                start = seg_end
            elif start + duration <= seg_end:
                return start
            j += 1

    def _split(self, at: float) -> int:
        """The index of the breakpoint at ``at`` (inserted, splitting a segment, if new)."""
        i = bisect_right(self._times, at) - 1
        if self._times[i] == at:
            return i
        self._times.insert(i + 1, at)
        self._use.insert(i + 1, self._use[i])
        return i + 1

    def add(self, start: float, end: float, cores: int) -> None:
        """Record a task on the machine."""
        if self.slots == 1:
            i = bisect_right(self.starts, start)
            self.starts.insert(i, start)
            self.ends.insert(i, end)
            self.cores.insert(i, cores)
        else:
            self.starts.append(start)
            self.ends.append(end)
            self.cores.append(cores)
            if end > start:  # zero-length tasks hold no capacity
                a, b = self._split(start), self._split(end)
                for i in range(a, b):
                    self._use[i] += cores


def mean_transfer(instance: DagInstance) -> tuple[float, float]:
    """Mean ``(latency_s, seconds per byte)`` over ordered pairs of different machines."""
    k = len(instance.machines)
    if k < 2:
        return 0.0, 0.0
    latency, per_byte = instance.network
    counts = np.bincount(instance.machine_zone, minlength=len(instance.zones)).astype(float)
    pairs = np.outer(counts, counts) - np.diag(counts)
    total = pairs.sum()
    return float((pairs * latency).sum() / total), float((pairs * per_byte).sum() / total)


def mean_duration(instance: DagInstance) -> np.ndarray:
    """Mean running time of each task over the machines that can run it."""
    d = instance.duration
    finite = np.isfinite(d)
    return np.where(finite, d, 0.0).sum(axis=1) / np.maximum(finite.sum(axis=1), 1)


def upward_rank(instance: DagInstance) -> np.ndarray:
    """HEFT's rank_u: mean cost of the task plus the longest mean-cost path to an exit."""
    w = mean_duration(instance)
    lat, per_byte = mean_transfer(instance)
    rank = np.zeros(len(instance.tasks))
    for t in reversed(instance.topological_order):
        tail = 0.0
        for c, data in instance.children[t]:
            tail = max(tail, lat + data * per_byte + rank[c])
        rank[t] = w[t] + tail
    return rank


def downward_rank(instance: DagInstance) -> np.ndarray:
    """CPOP's rank_d: the longest mean-cost path from an entry to the task's start."""
    w = mean_duration(instance)
    lat, per_byte = mean_transfer(instance)
    rank = np.zeros(len(instance.tasks))
    for t in instance.topological_order:
        for p, data in instance.parents[t]:
            rank[t] = max(rank[t], rank[p] + w[p] + lat + data * per_byte)
    return rank


class _Builder:
    """A schedule under construction: timelines and the data-ready time of each task."""

    def __init__(self, instance: DagInstance) -> None:
        self.instance = instance
        self.timelines = [Timeline(m.slots) for m in instance.machines]
        self.solution = DagSolution.empty(len(instance.tasks))
        self.end = np.zeros(len(instance.tasks))
        latency, per_byte = instance.network
        zone = instance.machine_zone
        # Transfer between machines = lat[zone_a, zone_b] + bytes * pb[...], 0 on one machine.
        self.lat = latency[zone][:, zone]
        self.per_byte = per_byte[zone][:, zone]
        np.fill_diagonal(self.lat, 0.0)
        np.fill_diagonal(self.per_byte, 0.0)

    def ready(self, t: int) -> np.ndarray:
        """Earliest start of ``t`` on every machine from release, data and parents."""
        r = self.instance.earliest_start[t].copy()
        for p, data in self.instance.parents[t]:
            mp = int(self.solution.machine[p])
            np.maximum(r, self.end[p] + self.lat[mp] + data * self.per_byte[mp], out=r)
        return r

    def finish_times(
        self, t: int, machines: list[int] | None = None, insert: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """(start, finish) of ``t`` on every machine (inf where it cannot run)."""
        d = self.instance.duration[t]
        ready = self.ready(t)
        k = len(self.instance.machines)
        start = np.full(k, np.inf)
        cores = self.instance.tasks[t].cores
        for m in machines if machines is not None else range(k):
            if np.isfinite(d[m]):
                start[m] = self.timelines[m].earliest(float(ready[m]), float(d[m]), cores, insert)
        return start, start + d

    def place(self, t: int, m: int, start: float) -> None:
        """Put task ``t`` on machine ``m`` at ``start``."""
        end = start + float(self.instance.duration[t, m])
        self.timelines[m].add(start, end, self.instance.tasks[t].cores)
        self.solution.machine[t] = m
        self.solution.start_s[t] = start
        self.end[t] = end


def _list_schedule(instance: DagInstance, priority: np.ndarray) -> DagSolution:
    """Tasks in decreasing ``priority`` (ties: topological position), each at its EFT."""
    position = np.empty(len(instance.tasks), dtype=np.int64)
    position[instance.topological_order] = np.arange(len(instance.tasks))
    order = sorted(range(len(instance.tasks)), key=lambda t: (-priority[t], position[t]))
    if pure_assignment(instance):
        # No edges, delays or multi-slot machines: every timeline is busy from 0 to its last
        # end, so insertion finds no gap and the earliest finish is ready + duration.
        d = instance.duration
        ready = np.zeros(len(instance.machines))
        sol = DagSolution.empty(len(instance.tasks))
        for t in order:
            m = int(np.argmin(ready + d[t]))
            sol.machine[t], sol.start_s[t] = m, ready[m]
            ready[m] += d[t, m]
        return sol
    # Rank order is topological when ranks strictly decrease along edges; guard the rest.
    done = np.zeros(len(instance.tasks), dtype=bool)
    pending: list[int] = []
    b = _Builder(instance)

    def run(t: int) -> None:
        start, finish = b.finish_times(t)
        m = int(np.argmin(finish))
        b.place(t, m, float(start[m]))
        done[t] = True

    for t in order:
        pending.append(t)
        progress = True
        while progress:
            progress = False
            for u in list(pending):
                if all(done[p] for p, _ in instance.parents[u]):
                    pending.remove(u)
                    run(u)
                    progress = True
    return b.solution


def heft(instance: DagInstance) -> DagSolution:
    """HEFT: decreasing upward rank, earliest finish time with insertion."""
    return _list_schedule(instance, upward_rank(instance))


def optimistic_cost_table(instance: DagInstance) -> np.ndarray:
    """PEFT's OCT[t, m]: the optimistic remaining time after ``t`` runs on ``m``."""
    n, k = len(instance.tasks), len(instance.machines)
    lat, per_byte = mean_transfer(instance)
    d = instance.duration
    oct_ = np.zeros((n, k))
    for t in reversed(instance.topological_order):
        for c, data in instance.children[t]:
            a = oct_[c] + d[c]  # inf where c cannot run
            best_elsewhere = float(np.min(a)) + lat + data * per_byte
            np.maximum(oct_[t], np.minimum(a, best_elsewhere), out=oct_[t])
    return oct_


def _ready_list(
    instance: DagInstance,
    priority: np.ndarray,
    choose: Callable[[_Builder, int], tuple[int, float]],
) -> DagSolution:
    """The ready-list loop PEFT and CPOP share: of the tasks whose parents are placed, the one
    of highest ``priority`` (ties: lower index) goes where ``choose(builder, task)`` says
    (machine, start)."""
    b = _Builder(instance)
    missing = [len(p) for p in instance.parents]
    heap = [(-priority[t], t) for t in range(len(instance.tasks)) if missing[t] == 0]
    heapq.heapify(heap)
    while heap:
        _, t = heapq.heappop(heap)
        m, start = choose(b, t)
        b.place(t, m, start)
        for c, _ in instance.children[t]:
            missing[c] -= 1
            if missing[c] == 0:
                heapq.heappush(heap, (-priority[c], c))
    return b.solution


def peft(instance: DagInstance) -> DagSolution:
    """PEFT: ready task of largest mean OCT first, on the machine minimising EFT + OCT."""
    oct_ = optimistic_cost_table(instance)
    eligible = np.isfinite(instance.duration)
    rank = np.where(eligible, oct_, 0.0).sum(axis=1) / np.maximum(eligible.sum(axis=1), 1)

    def choose(b: _Builder, t: int) -> tuple[int, float]:
        start, finish = b.finish_times(t)
        m = int(np.argmin(finish + oct_[t]))
        return m, float(start[m])

    return _ready_list(instance, rank, choose)


def cpop(instance: DagInstance) -> DagSolution:
    """CPOP: critical-path tasks on the one machine that runs them fastest, others at EFT."""
    up, down = upward_rank(instance), downward_rank(instance)
    priority = up + down
    n = len(instance.tasks)
    entries = [t for t in range(n) if not instance.parents[t]]
    t = max(entries, key=lambda e: (priority[e], -e))
    cp_length = priority[t]
    critical = {t}
    while instance.children[t]:
        tol = 1e-9 * max(1.0, abs(cp_length))
        nxt = [c for c, _ in instance.children[t] if abs(priority[c] - cp_length) <= tol]
        if not nxt:
            break
        t = min(nxt)
        critical.add(t)
    cp_cost = instance.duration[sorted(critical)].sum(axis=0)
    cp_machine = int(np.argmin(cp_cost)) if np.isfinite(cp_cost).any() else -1

    def choose(b: _Builder, u: int) -> tuple[int, float]:
        if u in critical and cp_machine >= 0:
            start, finish = b.finish_times(u, [cp_machine])
        else:
            start, finish = b.finish_times(u)
        m = int(np.argmin(finish))
        return m, float(start[m])

    return _ready_list(instance, priority, choose)


# -------------------------------------------------------------------------------------------
# Independent tasks (grid scheduling). Tasks hold one core each; a machine with s slots is s
# identical lanes, and a task goes to the lane that frees first.


def grid_applicable(instance: DagInstance) -> bool:
    """The grid heuristics apply: no edges, every task one core, matrices of sane size."""
    return (
        instance.independent
        and all(t.cores == 1 for t in instance.tasks)
        and len(instance.tasks) * len(instance.machines) <= GRID_HEURISTICS_MAX_CELLS
    )


class _Lanes:
    """Per machine, the ready time of each slot (a heap); ``ready[m]`` is the earliest."""

    def __init__(self, instance: DagInstance) -> None:
        self.heaps = [[0.0] * m.slots for m in instance.machines]
        self.ready = np.zeros(len(instance.machines))

    def take(self, m: int, end: float) -> None:
        heapq.heapreplace(self.heaps[m], end)
        self.ready[m] = self.heaps[m][0]


def mct(instance: DagInstance) -> DagSolution:
    """Minimum Completion Time: tasks in index order, each on its earliest-finishing machine."""
    d, est = instance.duration, instance.earliest_start
    lanes = _Lanes(instance)
    sol = DagSolution.empty(len(instance.tasks))
    for t in range(len(instance.tasks)):
        start = np.maximum(lanes.ready, est[t])
        m = int(np.argmin(start + d[t]))
        sol.machine[t], sol.start_s[t] = m, start[m]
        lanes.take(m, float(start[m] + d[t, m]))
    return sol


SHORTLIST = 8
"""Machines per task kept in :func:`_batch_one_slot`'s sorted shortlists."""


def _batch_one_slot(d: np.ndarray, pick: str) -> np.ndarray:
    """:func:`_batch`'s machine choices on one-slot machines with no release times: the
    same rounds and ties, with O(n * SHORTLIST) numpy work per round instead of O(k) for
    each task whose best machine was just taken (on consistent matrices every task is, and
    the rounds took about 40 s at 4,096 x 128).

    Each unassigned task keeps a shortlist of ``SHORTLIST`` machines with their completion
    times, with the invariant that every machine off the list comes after every valid entry
    in (time, machine index) order, the order in which ``argmin`` breaks ties. Taking a
    machine only delays that machine: its entries are re-valued in place when they stay
    before the list's last valid entry, dropped (inf) otherwise; a list left with fewer
    than two valid entries (of the task's eligible machines) is rebuilt from its whole row.
    """
    n, k = d.shape
    size = min(k, SHORTLIST)
    need = np.minimum(2, np.isfinite(d).sum(axis=1))
    ready = np.zeros(k)
    big_m = np.iinfo(np.int64).max

    def rebuild(which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = ready[None, :] + d[which]
        order = np.lexsort((np.broadcast_to(np.arange(k), c.shape), c), axis=1)[:, :size]
        return order, np.take_along_axis(c, order, axis=1)

    def first_two(m: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best machine, its time and the second-best time of each row of a shortlist."""
        rows = np.arange(len(v))
        v1 = v.min(axis=1)
        i1 = np.argmin(np.where(v == v1[:, None], m, big_m), axis=1)
        rest = v.copy()
        rest[rows, i1] = np.inf
        return m[rows, i1], v1, rest.min(axis=1)

    cm, cv = rebuild(np.arange(n))
    best_m, best_v, second_v = first_two(cm, cv)
    left = np.ones(n, dtype=bool)
    machine = np.empty(n, dtype=np.int64)
    big = np.finfo(float).max
    for _ in range(n):
        if pick == "min":
            t = int(np.argmin(np.where(left, best_v, np.inf)))
        elif pick == "max":
            t = int(np.argmax(np.where(left, best_v, -np.inf)))
        else:
            gain = second_v - best_v
            gain = np.where(np.isfinite(gain), gain, big)
            t = int(np.argmax(np.where(left, gain, -np.inf)))
        m = int(best_m[t])
        machine[t] = m
        left[t] = False
        ready[m] += d[t, m]
        hit_r, hit_p = np.nonzero(cm == m)
        keep = left[hit_r] & np.isfinite(cv[hit_r, hit_p])
        hit_r, hit_p = hit_r[keep], hit_p[keep]
        if not len(hit_r):
            continue
        new = ready[m] + d[hit_r, m]
        rv, rm = cv[hit_r], cm[hit_r]
        last_v = np.where(np.isfinite(rv), rv, -np.inf).max(axis=1)
        last_m = np.where(rv == last_v[:, None], rm, -1).max(axis=1)
        stays = (new < last_v) | ((new == last_v) & (m <= last_m))
        cv[hit_r, hit_p] = np.where(stays, new, np.inf)
        short = hit_r[np.isfinite(cv[hit_r]).sum(axis=1) < need[hit_r]]
        if len(short):
            cm[short], cv[short] = rebuild(short)
        best_m[hit_r], best_v[hit_r], second_v[hit_r] = first_two(cm[hit_r], cv[hit_r])
    return machine


def _batch(instance: DagInstance, pick: str) -> DagSolution:
    """Min-Min (``min``), Max-Min (``max``) or Sufferage (``sufferage``).

    Each round computes, for every unassigned task, its best (and second-best) completion
    time; only the rows whose best or second-best machine just changed are recomputed. On
    one-slot machines with no release times (R||Cmax) the rounds run on shortlists
    (:func:`_batch_one_slot`).
    """
    d, est = instance.duration, instance.earliest_start
    if all(m.slots == 1 for m in instance.machines) and not np.any(est > 0):
        return back_to_back(instance, _batch_one_slot(d, pick))
    n, k = d.shape
    lanes = _Lanes(instance)
    completion = np.maximum(0.0, est) + d  # (n, k), inf where ineligible
    left = np.ones(n, dtype=bool)
    sol = DagSolution.empty(n)

    def best_two(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        c = completion[rows]
        first = np.argmin(c, axis=1)
        v1 = c[np.arange(len(rows)), first]
        if k > 1:
            c2 = c.copy()
            c2[np.arange(len(rows)), first] = np.inf
            second = np.argmin(c2, axis=1)
            v2 = c2[np.arange(len(rows)), second]
        else:
            second, v2 = first, v1
        return first, v1, second, v2

    all_rows = np.arange(n)
    best_m, best_v, second_m, second_v = best_two(all_rows)
    for _ in range(n):
        if pick == "min":
            score = np.where(left, best_v, np.inf)
            t = int(np.argmin(score))
        elif pick == "max":
            score = np.where(left, best_v, -np.inf)
            t = int(np.argmax(score))
        else:
            gain = second_v - best_v
            gain = np.where(np.isfinite(gain), gain, np.finfo(float).max)
            score = np.where(left, gain, -np.inf)
            t = int(np.argmax(score))
        m = int(best_m[t])
        start = max(float(lanes.ready[m]), float(est[t, m]))
        sol.machine[t], sol.start_s[t] = m, start
        left[t] = False
        lanes.take(m, start + float(d[t, m]))
        completion[:, m] = np.maximum(lanes.ready[m], est[:, m]) + d[:, m]
        stale = np.flatnonzero(left & ((best_m == m) | (second_m == m)))
        if len(stale):
            f, v1, s, v2 = best_two(stale)
            best_m[stale], best_v[stale], second_m[stale], second_v[stale] = f, v1, s, v2
    return sol


def min_min(instance: DagInstance) -> DagSolution:
    """Min-Min: repeatedly place the task whose best completion time is smallest."""
    return _batch(instance, "min")


def max_min(instance: DagInstance) -> DagSolution:
    """Max-Min: repeatedly place the task whose best completion time is largest."""
    return _batch(instance, "max")


def sufferage(instance: DagInstance) -> DagSolution:
    """Sufferage: repeatedly place the task that loses most if denied its best machine."""
    return _batch(instance, "sufferage")


def pure_assignment(instance: DagInstance) -> bool:
    """Independent tasks, no release or dataset delays, no deadlines, one-slot machines: only
    the machine loads matter (R||Cmax)."""
    return (
        instance.independent
        and all(m.slots == 1 for m in instance.machines)
        and not np.any(instance.earliest_start > 0)
        and all(t.deadline_s == 0 for t in instance.tasks)
    )


def back_to_back(instance: DagInstance, machine: np.ndarray) -> DagSolution:
    """Starts for an assignment of independent tasks: each machine runs its tasks back to
    back in index order from time 0."""
    sol = DagSolution(np.asarray(machine, dtype=np.int64).copy(), np.zeros(len(instance.tasks)))
    clock = np.zeros(len(instance.machines))
    for t in range(len(instance.tasks)):
        m = int(sol.machine[t])
        sol.start_s[t] = clock[m]
        clock[m] += instance.duration[t, m]
    return sol


def local_search(instance: DagInstance, start: DagSolution, max_steps: int = 20_000) -> DagSolution:
    """Move and swap descent for R||Cmax from ``start``'s assignment.

    Each step takes a most-loaded machine M and either moves one of its tasks to the machine
    where it ends earliest, or swaps one of its tasks with a task of another machine, whenever
    that leaves both machines below M's load. Stops when no such step exists.
    """
    d = np.where(np.isfinite(instance.duration), instance.duration, np.inf)
    n, k = d.shape
    a = np.asarray(start.machine, dtype=np.int64).copy()
    load = np.zeros(k)
    np.add.at(load, a, d[np.arange(n), a])
    own = d[np.arange(n), a]
    for _ in range(max_steps):
        big = int(np.argmax(load))
        cmax = load[big]
        eps = 1e-9 * max(1.0, cmax)
        on_big = np.flatnonzero(a == big)
        # Moves: the task of M whose best other machine ends earliest.
        cand = load[None, :] + d[on_big]
        cand[:, big] = np.inf
        i, m = np.unravel_index(int(np.argmin(cand)), cand.shape)
        if cand[i, m] < cmax - eps:
            t = int(on_big[i])
            load[big] -= own[t]
            a[t], own[t] = m, d[t, m]
            load[m] += own[t]
            continue
        # Swaps: t on M with u elsewhere.
        others = np.flatnonzero(a != big)
        if not len(others):
            break
        best, pick = cmax - eps, None
        for t in on_big:
            new_big = load[big] - own[t] + d[others, big]
            new_other = load[a[others]] - own[others] + d[t, a[others]]
            worst = np.maximum(new_big, new_other)
            j = int(np.argmin(worst))
            if worst[j] < best:
                best, pick = worst[j], (int(t), int(others[j]))
        if pick is None:
            break
        t, u = pick
        mu = int(a[u])
        load[big] += d[u, big] - own[t]
        load[mu] += d[t, mu] - own[u]
        a[t], a[u] = mu, big
        own[t], own[u] = d[t, mu], d[u, big]
    return back_to_back(instance, a)


DAG_HEURISTICS: dict[str, Callable[[DagInstance], DagSolution]] = {
    "heft": heft,
    "peft": peft,
    "cpop": cpop,
}
"""Heuristics for DAGs, fallback first."""

GRID_HEURISTICS: dict[str, Callable[[DagInstance], DagSolution]] = {
    "min_min": min_min,
    "sufferage": sufferage,
    "max_min": max_min,
    "mct": mct,
}
"""Heuristics for independent tasks."""


def greedy_solutions(instance: DagInstance, options: SolveOptions) -> list[tuple[str, DagSolution]]:
    """Named heuristic solutions; the first (HEFT) is the fallback.

    With edges: HEFT, PEFT, CPOP (the family adds the layer packing of :mod:`.layer`:
    :func:`~placement.models.dag.layer.family_greedies`). Without edges (and one core per task): HEFT, then Min-Min,
    Sufferage, Max-Min and MCT; for R||Cmax also a move/swap descent from the best of them.
    On R||Cmax above ``MAX_MIN_MAX_CELLS``: no Max-Min and no descent, and with an exact
    phase to follow (any backend but ``greedy``) neither Min-Min nor Sufferage: HEFT and
    MCT only, the R||Cmax search doing the rest.
    """
    out = [("heft", heft(instance))]
    if grid_applicable(instance):
        large = pure_assignment(instance) and instance.duration.size > MAX_MIN_MAX_CELLS
        # With an exact phase to follow, large R||Cmax leaves the batch heuristics to it:
        # on consistent 4,096 x 128 matrices Min-Min and Sufferage took the whole 60 s
        # budget on a loaded machine, and the search's LP rounding beats both within
        # seconds (placement bench grid-large).
        searched = large and options is not None and options.backend != Backend.GREEDY
        skip = {"min_min", "sufferage", "max_min"} if searched else {"max_min"} if large else set()
        out += [(name, fn(instance)) for name, fn in GRID_HEURISTICS.items() if name not in skip]
        if pure_assignment(instance) and not large:
            # (Above MAX_MIN_MAX_CELLS the R||Cmax search's first step, a critical-machine
            # descent, does this in milliseconds; this one took 20 s at 2,048 x 64.)
            best = min(out, key=lambda item: evaluate(instance, item[1])[0])
            out.append((f"{best[0]}+local_search", local_search(instance, best[1])))
    elif not instance.independent:
        out += [(name, fn(instance)) for name, fn in DAG_HEURISTICS.items() if name != "heft"]
    return out


def semi_active(instance: DagInstance, machine: np.ndarray, key: np.ndarray) -> DagSolution:
    """The schedule that runs each task on ``machine[t]`` as early as possible, tasks taken in
    increasing ``key`` (ties: topological position), with insertion into idle gaps; a task
    whose ``machine[t]`` is -1 goes where it ends first.

    Used to turn an exact model's assignment and order into exact start times: when ``key`` is
    a feasible schedule's starts, no task starts later than there.
    """
    position = np.empty(len(instance.tasks), dtype=np.int64)
    position[instance.topological_order] = np.arange(len(instance.tasks))
    order = sorted(range(len(instance.tasks)), key=lambda t: (round(float(key[t]), 6), position[t]))
    done = np.zeros(len(instance.tasks), dtype=bool)
    b = _Builder(instance)
    pending: list[int] = []
    for t in order:
        pending.append(t)
        progress = True
        while progress:
            progress = False
            for u in list(pending):
                if all(done[p] for p, _ in instance.parents[u]):
                    pending.remove(u)
                    if machine[u] >= 0:
                        m = int(machine[u])
                        start, _ = b.finish_times(u, [m])
                    else:
                        start, finish = b.finish_times(u)
                        m = int(np.argmin(finish))
                    b.place(u, m, float(start[m]))
                    done[u] = True
                    progress = True
    return b.solution
