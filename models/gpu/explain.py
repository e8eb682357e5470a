"""Why a job is unplaced: one ``placement.v1.UnplacedJob`` dict per job a solution leaves out.

Three kinds, decided by placing the job alone (no other new job) on three clusters:

* ``infeasible_alone`` -- it does not fit the *empty* cluster (no running work): no node of an
  allowed type is big enough for one worker (GPUs, GPU memory, CPU, memory), or no group of
  its required locality level can hold the whole gang.
* ``no_room`` -- it fits the empty cluster, but not what the running work leaves free.
* ``crowded_out`` -- it fits what the running work leaves free, but not next to the jobs the
  solution placed. ``blocking_jobs`` names placed jobs whose removal would let it fit, lower
  priority first. (A job that would still fit next to the placed jobs -- a solve stopped
  before it was added -- is reported as ``crowded_out`` with no blocking jobs; when its queue's
  quota forbids it, the message says so, with the queue's use and limit. A proven
  optimum never leaves such a job out: placing it raises ``placed_gpu_weighted``, or for a
  CPU-only job ``placed_cpu_jobs``, ranked before every cost. A re-optimization's waiting job
  blocked by running work the policy protects says so, and when the disruption budget also
  forbids moving that work, says that too.)

Where a node's density model (:mod:`.density`) refuses a worker its free CPU and memory
would take, the message ends with ``; density: node 'n7' would hold 41 pods, effective CPU
57.2 cores < 60.0 cores used``.

"Fits" is exact for one job alone: workers of one job are identical, so the workers each node
(or NVLink domain) can take add up, and a gang fits iff one group of its required level (or
the cluster) can take all of them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from placement.models.gpu.check import running_decisions
from placement.models.gpu.greedy import ClusterState, View, required_limit
from placement.models.gpu.instance import (
    MILLI,
    GpuInstance,
    GpuJob,
    GpuSolution,
    preemption_rule,
    queue_caps,
    queue_usage,
)
from placement.solver.cancel import CancellationToken

KINDS = ("infeasible_alone", "no_room", "crowded_out")
_SHARED_ROOM: weakref.WeakKeyDictionary[GpuInstance, dict[tuple, int]] = weakref.WeakKeyDictionary()
"""Per instance: workers of each job shape that fit the empty and the initial cluster."""
_SHOWN_BLOCKERS = 3


def explain_unplaced(
    instance: GpuInstance, solution: GpuSolution, stop: CancellationToken | None = None
) -> list[dict[str, Any]]:
    """A structured reason for every job ``solution`` leaves unplaced.

    Parameters
    ----------
    instance:
        The instance.
    solution:
        A feasible solution of it.
    stop:
        When it fires (the solve's deadline has passed), the jobs still to explain get their
        kind and a message that says what was not worked out: a ``crowded_out`` job then has
        no ``blocking_jobs`` (finding them, and whether the placed jobs block it at all, is
        the costly part).

    Returns
    -------
    list of dict
        In job order, one dict per unplaced job with exactly the fields of
        ``placement.v1.UnplacedJob``: ``job``, ``kind`` (``infeasible_alone``, ``no_room`` or
        ``crowded_out``), ``message`` (one line), ``needed`` (e.g. ``2 workers x 8 x A100``),
        ``largest_free`` and ``largest_free_node`` (the largest free block next to the placed
        jobs: entirely free GPUs of an allowed type in one node for a whole-GPU job, free
        milli-GPU of the best allowed GPU for a fractional job, free milli-CPU of the best node
        for a CPU-only job) and ``blocking_jobs``.
    """
    unplaced = [j for j in range(len(instance.jobs)) if j not in solution.placements]
    if not unplaced:
        return []
    reasons = _Explainer(instance, solution, stop).explain_all(unplaced)
    if instance.reopt:
        _add_running_work(instance, solution, unplaced, reasons)
    return reasons


def _add_running_work(
    instance: GpuInstance,
    solution: GpuSolution,
    unplaced: list[int],
    reasons: list[dict[str, Any]],
) -> None:
    """Re-optimization: a preempted running job says what it made room for; a waiting job
    blocked by running jobs the policy protects says so ("would need preempting X, which
    the policy forbids")."""
    jobs = instance.jobs
    decisions = {d.job: d for d in running_decisions(instance, solution)[0]}
    budget = instance.disruption_budget
    migrated = sum(d.migrated_workers for d in decisions.values())
    cost = sum(d.cost for d in decisions.values())
    for j, reason in zip(unplaced, reasons, strict=True):
        job = jobs[j]
        if job.running:
            d = decisions[j]
            room = ", ".join(jobs[i].name for i in d.made_room_for) or "no placed job"
            reason["message"] = (
                f"{job.name} was preempted ({d.preempted_workers} worker(s), rule "
                f"{d.rule or 'none'}) to make room for {room}"
            )
            continue
        protected = []
        for name in reason["blocking_jobs"]:
            b = instance.job_index[name]
            if jobs[b].running and not preemption_rule(instance, b, j):
                protected.append((name, _why_protected(instance, b, j)))
        if protected:
            what = "; ".join(f"{name} ({why})" for name, why in protected)
            reason["message"] += f"; it would need preempting {what}, which the policy forbids"
            # Moving them instead is a migration: say so when the budget leaves no room for it
            # (a job already moved costs nothing more to move elsewhere).
            kept = [instance.job_index[name] for name, _ in protected]
            moved = [jobs[b] for b in kept if decisions[b].action == "keep"]
            workers = sum(len(b.current) for b in moved)
            more = sum(b.migration_cost * len(b.current) for b in moved)
            most_moved, most_cost = budget.max_migrated_workers, budget.max_disruption_cost
            over = []
            if most_moved is not None and migrated + workers > most_moved:
                over.append(f"{migrated} + {workers} migrated workers > {most_moved}")
            if most_cost is not None and cost + more > most_cost:
                over.append(f"disruption cost {cost} + {more} > {most_cost}")
            if moved and over:
                why = "; ".join(over)
                reason["message"] += (
                    f", or moving them, which the disruption budget forbids ({why})"
                )


def _why_protected(instance: GpuInstance, victim: int, preemptor: int) -> str:
    """Why the policy does not let ``preemptor`` preempt ``victim``, in a few words."""
    v, p = instance.jobs[victim], instance.jobs[preemptor]
    if instance.preemption_policy == "never":
        return "policy never"
    if not v.preemptible:
        return "not preemptible"
    if p.priority <= v.priority:
        return f"priority {v.priority} not below {p.priority}"
    return f"queue {v.queue!r} under {instance.preemption_policy}"


class _Explainer:
    def __init__(
        self, instance: GpuInstance, solution: GpuSolution, stop: CancellationToken | None = None
    ) -> None:
        self.instance = instance
        self.solution = solution
        self.stop = stop
        self.empty = ClusterState(instance, empty=True)
        self.initial = ClusterState(instance)
        self.after = ClusterState(instance)
        self.after.apply(solution)
        # How many workers of a job shape fit the empty and the initial cluster depends on the
        # instance alone: shared by every explainer of it (the quick bound's and the reasons').
        self._room_alone = _SHARED_ROOM.setdefault(instance, {})
        self._room: dict[tuple, int] = {}
        self._largest: dict[tuple, tuple[int, str]] = {}
        self._holders: list[list[int]] | None = None
        self._prio = np.zeros(0, dtype=np.int64)
        self._weight = np.zeros(0, dtype=np.int64)

    def explain_all(self, unplaced: list[int]) -> list[dict[str, Any]]:
        return [self.explain(j) for j in unplaced]

    # --- how many workers fit, alone ------------------------------------------------------

    def room(self, state: ClusterState, job: GpuJob, view: View | None = None) -> int:
        """Most workers of ``job`` that fit inside one group its required locality allows."""
        cache: dict[tuple, int] | None = None
        if view is None and (state is self.empty or state is self.initial):
            cache, key = self._room_alone, (state is self.empty, _shape(job))
        elif view is None:
            cache, key = self._room, (id(state), _shape(job))
        if cache is not None and key in cache:
            return cache[key]
        w = job.workers
        limit = required_limit(self.instance, job)
        if limit == 0 and job.kind == "cpu":
            out = 0  # a CPU-only worker spans the node level, never one NVLink domain
        else:
            caps = state.job_caps(job, view)
            if limit == 0:
                out = int(state.dom_workers(job, caps).max(initial=0))
            elif limit == 1:
                out = int(caps.node_cap.max(initial=0))
            elif limit is not None:
                gid = state.group_ids[limit - 2][caps.view.nodes]
                out = int(np.bincount(gid, weights=caps.node_cap).max(initial=0))
            else:
                out = int(caps.node_cap.sum())
        out = min(out, w)
        if cache is not None:
            cache[key] = out
        return out

    def largest_free(self, job: GpuJob) -> tuple[int, str]:
        """The largest free block of an allowed type next to the placed jobs, and its node."""
        key = (job.kind, job.gpu_types, job.gpu_memory_mib)
        if key in self._largest:
            return self._largest[key]
        st = self.after
        nodes = self.instance.nodes
        if job.kind == "cpu":
            values, where = st.cpu_free, np.arange(st.n_nodes)
        else:
            allowed = st.allowed_nodes(job)[st.gpu_node]
            f, used = st.free_milli, st.gpu_mem_used
            if job.kind == "whole":
                ok = allowed & (st.gpu_mem_cap >= job.gpu_memory_mib) & (f == MILLI) & (used == 0)
                values = np.bincount(st.gpu_node[ok], minlength=st.n_nodes)
                where = np.arange(st.n_nodes)
            else:
                ok = allowed & (st.gpu_mem_cap - used >= job.gpu_memory_mib)
                values, where = np.where(ok, f, 0), st.gpu_node
        out = (0, "")
        if len(values) and values.max() > 0:
            i = int(np.argmax(values))
            out = (int(values[i]), nodes[int(where[i])].name)
        self._largest[key] = out
        return out

    # --- one job -----------------------------------------------------------------------------

    def explain(self, j: int) -> dict[str, Any]:
        job = self.instance.jobs[j]
        w = job.workers
        needed = f"{w} worker{'s' if w != 1 else ''} x {job.describe_worker()}"
        largest, largest_node = self.largest_free(job)
        blocking: list[str] = []
        if self.room(self.empty, job) < w:
            kind = "infeasible_alone"
            message = f"{job.name} can never run here: {self._why_infeasible(job)}"
        elif (r := self.room(self.initial, job)) < w:
            kind = "no_room"
            message = (
                f"{job.name} fits an empty cluster, but the running work leaves room for "
                f"only {r} of its {w} worker(s) {self._scope_phrase(job)}"
            )
        else:
            kind = "crowded_out"
            if self.stop is not None and self.stop.cancelled:
                message = (
                    f"{job.name} fits what the running work leaves free; whether the placed "
                    "jobs block it, or the solve stopped before trying it, was not worked out: "
                    "the time limit was reached"
                )
            elif self.room(self.after, job) >= w:
                over = self._over_quota(job)
                message = (
                    f"{job.name} would still fit next to the placed jobs, but {over}"
                    if over
                    else f"{job.name} would still fit next to the placed jobs: the solve stopped "
                    "before placing it (the solution is not maximal)"
                )
            else:
                blocking, where = self._blockers(job)
                shown = ", ".join(blocking[:_SHOWN_BLOCKERS])
                more = (
                    f" and {len(blocking) - _SHOWN_BLOCKERS} more"
                    if len(blocking) > _SHOWN_BLOCKERS
                    else ""
                )
                message = (
                    f"{job.name} fits what the running work leaves free, but not next to "
                    f"the placed jobs; removing {shown}{more} from {where} would make room"
                )
        state = {"infeasible_alone": self.empty, "no_room": self.initial}.get(kind, self.after)
        message += _density_note(state, job)
        return {
            "name": job.name,
            "kind": kind,
            "message": message,
            "needed": needed,
            "largest_free": largest,
            "largest_free_node": largest_node,
            "blocking_jobs": blocking,
        }

    def _over_quota(self, job: GpuJob) -> str:
        """Why ``job``'s queue may not take it next to the solution ("" if it may): with its
        smallest size the queue would use more than max(guarantee + borrowing limit, what its
        running jobs hold now), the checker's quota rule (:func:`.check.running_decisions`)."""
        queue = next((q for q in self.instance.queues if q.name == job.queue), None)
        limit = queue_caps(self.instance).get(job.queue)
        if queue is None or limit is None:
            return ""
        used = queue_usage(self.instance, self.solution.placements)[queue.name]
        smallest = job.min_workers if job.elastic and job.min_workers else job.workers
        with_it = used + job.milli_per_worker * smallest
        if with_it <= limit:
            return ""
        return (
            f"queue {queue.name!r} would then use {with_it} milli-GPU, above its limit "
            f"{limit} (guarantee {queue.guaranteed_milli} + borrowing limit "
            f"{queue.borrowing_limit_milli})"
        )

    def _scope_phrase(self, job: GpuJob) -> str:
        limit = required_limit(self.instance, job)
        if limit is None:
            return "in the cluster"
        if limit == 0:
            return "in one NVLink domain"
        return f"in one {self.instance.levels[limit].name}"

    def _why_infeasible(self, job: GpuJob) -> str:
        st = self.empty
        inst = self.instance
        limit = required_limit(inst, job)
        allowed = st.allowed_nodes(job)
        if job.kind != "cpu":
            allowed = allowed & (st.gpu_count > 0)
            types = "|".join(job.gpu_types) + " " if job.gpu_types else ""
            if not allowed.any():
                return f"no node has {types or 'any '}GPUs"
            best_mem = int(st.node_gpu_mem[allowed].max())
            if best_mem < job.gpu_memory_mib:
                return (
                    f"it needs {job.gpu_memory_mib} MiB of GPU memory; "
                    f"the largest {types}GPU has {best_mem} MiB"
                )
            if job.kind == "whole":
                allowed = allowed & (st.node_gpu_mem >= job.gpu_memory_mib)
                most = int(st.gpu_count[allowed].max())
                if most < job.gpus:
                    return f"a worker needs {job.gpus} GPUs; the largest {types}node has {most}"
        else:
            if limit == 0:
                return "a CPU-only job cannot stay inside one NVLink domain"
        for label, need, cap in (
            ("milli-CPU", job.cpu_milli, st.cpu_free),
            ("MiB of memory", job.memory_mib, st.mem_free),
        ):
            most = int(cap[allowed].max(initial=0))
            if most < need:
                return f"a worker needs {need} {label}; the largest allowed node has {most}"
        caps = st.job_caps(job)
        if int(caps.node_cap.max(initial=0)) == 0:
            return "no allowed node has the GPUs, CPU and memory of one worker at the same time"
        r = self.room(st, job)
        if limit is None:
            return f"the whole cluster holds only {r} of its {job.workers} workers"
        if limit == 0:
            return (
                f"it must stay in one NVLink domain, and the largest holds {r} of its "
                f"{job.workers} worker(s)"
            )
        name = inst.levels[limit].name
        return (
            f"it must stay in one {name}, and the largest {name} holds {r} of its "
            f"{job.workers} workers"
        )

    # --- crowded out: who holds the room ----------------------------------------------------

    def _holders_per_node(self) -> list[list[int]]:
        """Per node: indices of the placed jobs with a worker there."""
        if self._holders is None:
            holders: list[set[int]] = [set() for _ in self.instance.nodes]
            for j, workers in self.solution.placements.items():
                for wp in workers:
                    holders[wp.node].add(j)
            self._holders = [sorted(h) for h in holders]
            jobs = self.instance.jobs
            # Cost of clearing a node: the highest priority held there, then the weighted demand.
            self._prio = np.array(
                [max((jobs[h].priority for h in hs), default=0) for hs in self._holders],
                dtype=np.int64,
            )
            self._weight = np.array(
                [sum(jobs[h].weighted_demand_milli for h in hs) for hs in self._holders],
                dtype=np.int64,
            )
        return self._holders

    def _clear(self, job: GpuJob) -> tuple[np.ndarray, np.ndarray, str]:
        """Where to make room: (nodes to clear, nodes to count, description of the group).

        The group is the tightest one where the job fits what the running work leaves free,
        the cheapest to clear first; inside it, the cheapest nodes whose clearing gives back
        enough room.
        """
        inst = self.instance
        w = job.workers
        limit = required_limit(inst, job)
        self._holders_per_node()
        prio, weight = self._prio, self._weight
        init = self.initial.job_caps(job)
        if limit == 0:
            ok = self.initial.dom_workers(job, init) >= w
            single = np.zeros(self.initial.n_nodes, dtype=bool)
            single[self.initial.dom_node[ok]] = True
        else:
            single = init.node_cap >= w
        if single.any():
            cand = np.flatnonzero(single)
            n = int(cand[np.lexsort((cand, weight[cand], prio[cand]))[0]])
            return np.array([n]), np.array([n]), f"node {inst.nodes[n].name}"
        after = self.after.job_caps(job)
        last = len(inst.levels) - 1
        top = last if limit is None else min(limit, last)
        scope, where = np.arange(self.initial.n_nodes), "the cluster"
        for lv in range(2, top + 1):
            gid = self.initial.group_ids[lv - 2]
            gcap = np.bincount(gid, weights=init.node_cap)
            ok = np.flatnonzero(gcap >= w)
            if ok.size:
                gprio = np.zeros(len(gcap), dtype=np.int64)
                np.maximum.at(gprio, gid, prio)
                gweight = np.bincount(gid, weights=weight, minlength=len(gcap))
                g = int(ok[np.lexsort((ok, gweight[ok], gprio[ok]))[0]])
                scope = np.flatnonzero(gid == g)
                where = f"{inst.levels[lv].name} {inst.nodes[int(scope[0])].groups[lv - 2]}"
                break
        gain = (init.node_cap - after.node_cap)[scope]
        order = np.lexsort((scope, weight[scope], prio[scope]))
        order = order[gain[order] > 0]
        short = w - int(after.node_cap[scope].sum())
        taken = np.cumsum(gain[order])
        k = int(np.searchsorted(taken, short)) + 1
        cleared = np.sort(scope[order[:k]])
        counted = scope[(after.node_cap[scope] > 0) | np.isin(scope, cleared)]
        return cleared, counted, where

    def _blockers(self, job: GpuJob) -> tuple[list[str], str]:
        """Placed jobs whose removal lets ``job`` fit in one group, lower priority first."""
        inst, st = self.instance, self.after
        jobs = inst.jobs
        cleared, counted, where = self._clear(job)
        view = st.view(counted)
        holders = self._holders_per_node()
        order = sorted(
            {h for n in cleared.tolist() for h in holders[n]},
            key=lambda h: (jobs[h].priority, jobs[h].weighted_demand_milli, jobs[h].name),
        )
        mark = len(st.journal)
        evicted: list[int] = []
        for h in order:
            if self.room(st, job, view) >= job.workers:
                break
            for wp in self.solution.placements[h]:
                st.release_worker(jobs[h], wp.node, tuple(wp.gpus))
            evicted.append(h)
        # Keep only the jobs that must go: put back, most important first, whatever still
        # leaves room.
        needed: list[int] = []
        for h in reversed(evicted):
            back = len(st.journal)
            for wp in self.solution.placements[h]:
                st.place_worker(jobs[h], wp.node, tuple(wp.gpus))
            if self.room(st, job, view) < job.workers:
                st.rollback(back)
                needed.append(h)
        st.rollback(mark)
        needed.sort(key=lambda h: (jobs[h].priority, jobs[h].weighted_demand_milli, jobs[h].name))
        return [jobs[h].name for h in needed], where


def _density_note(st: ClusterState, job: GpuJob) -> str:
    """``; density: node 'n7' would hold 41 pods, effective CPU 57.2 cores < 60.0 cores used``
    for the first node of an allowed type whose free CPU and memory take one more worker but
    whose density model (density.py) does not; empty when no such node."""
    allowed = st.allowed_nodes(job) & st.dense
    for n in np.flatnonzero(allowed).tolist():
        if st.node_fits(n, job) or st.cpu_free[n] < job.cpu_milli:
            continue
        if st.mem_free[n] < job.memory_mib:
            continue
        node = st.instance.nodes[n]
        pods = int(st.pods[n]) + 1
        used = node.cpu_milli - int(st.cpu_free[n]) + job.cpu_milli
        return (
            f"; density: node {node.name!r} would hold {pods} pods, effective CPU "
            f"{node.effective_cpu_milli(pods) / 1000:.1f} cores < {used / 1000:.1f} cores used"
        )
    return ""


def _shape(job: GpuJob) -> tuple:
    """What decides where a job fits (not its name, priority or traffic)."""
    return (
        job.workers,
        job.gpus,
        job.gpu_milli,
        job.gpu_memory_mib,
        job.cpu_milli,
        job.memory_mib,
        job.gpu_types,
        job.locality_level,
        job.locality_required,
    )


def fits_alone_now(instance: GpuInstance) -> Callable[[GpuJob], bool]:
    """Whether a job fits what running work leaves free, with no other new job (asked per job:
    each shape is worked out once, and only when asked).

    A job for which this is False is unplaced in every feasible solution (an elastic job
    counts as fitting when its fewest workers fit).
    """
    explainer = _Explainer(instance, GpuSolution())
    return lambda job: explainer.room(explainer.initial, job) >= job.fewest_workers
