"""Heuristics of the re-optimization of running work, which are also its peers.

* :func:`keep_and_place` -- FGD with no moves: every running job stays where it runs, the
  pending jobs go by FGD (or best fit) on what is left. The fallback (always feasible: the
  current placement is, and each pending job is added only within its queue's limit).
* :func:`evict_lowest` -- "evict the lowest priority until it fits", the preemption of the
  Kubernetes batch schedulers. For each pending job in priority order, if it does not fit,
  running jobs the policy lets it preempt are evicted one at a time, lowest priority first,
  until it fits; victims it did not need are put back; if it never fits, nothing is evicted.
  Read from (our code, not theirs):

  - Kueue, ``pkg/scheduler/preemption/common/ordering.go`` at commit f51fd24a (kubernetes-sigs/
    kueue): candidates from other ClusterQueues before the preemptor's own, then lower
    priority first, then the most recently admitted first;
  - KAI-Scheduler, ``pkg/scheduler/actions/preempt/preempt.go`` at commit 37c67e2f
    (NVIDIA/KAI-Scheduler): pending jobs by queue order, victims only preemptible jobs of
    the same queue with a strictly lower priority, a job that would put its queue over quota
    is skipped;
  - Volcano, ``pkg/scheduler/actions/preempt/preempt.go`` at commit d253943b
    (volcano-sh/volcano): per node, victims popped lowest priority first until the
    preemptor's request fits the node's future idle resources, the statement discarded
    otherwise.

  Elastic victims are first shrunk to their ``min_workers`` (their last workers go), as
  KAI-Scheduler's elastic reclaim does, before whole jobs are evicted.
* :func:`clear_cheapest_node` -- Lyra's server reclaiming generalised: a waiting job clears
  the node whose victims lose least, and the jobs it preempted are placed again elsewhere.
* :func:`defragment` -- FGD with no moves, then for each pending job still waiting, one
  running job at a time (cheapest migration first) is moved by best fit to make room, within
  the disruption budget.

The heuristics keep their own account of the queues' use and of the disruption budget (they
do not ask the checker, which judges them independently); evictions follow the policy's
rule (:func:`placement.models.gpu.instance.preemption_rule`) and a victim is kept evicted
only when the preemptor lands on one of its nodes, as the checker requires.
"""

from __future__ import annotations

from collections.abc import Iterator

from placement.models.gpu.greedy import _Placer, greedy_solutions, job_order
from placement.models.gpu.instance import (
    GpuInstance,
    GpuSolution,
    WorkerPlacement,
    preemption_rule,
    queue_caps,
    queue_usage_before,
)
from placement.solver.options import SolveOptions

_MAX_MOVE_TRIES = 16
"""Running jobs tried as a migration per waiting job (defragment)."""
_MAX_NODE_TRIES = 12
"""Nodes tried per waiting job (clear_cheapest_node), the cheapest-looking first."""


class _Run:
    """A placer that starts from the current placement and tracks queue usage."""

    def __init__(self, instance: GpuInstance, policy: str) -> None:
        self.instance = instance
        self.placer = _Placer(instance, policy)
        self.current = instance.current_solution()
        self.placer.state.apply(self.current)
        self.placements: dict[int, tuple[WorkerPlacement, ...]] = dict(self.current.placements)
        before = queue_usage_before(instance)
        self.limit = queue_caps(instance)
        self.use = dict(before)
        self.before = before
        self.marks: list[tuple[int, dict, dict]] = []

    def undo(self) -> None:
        """Back to the last mark (see :func:`_clear`)."""
        mark, placements, use = self.marks.pop()
        self.placer.state.rollback(mark)
        self.placements, self.use = placements, use

    def quota_ok(self, j: int, workers: int) -> bool:
        job = self.instance.jobs[j]
        limit = self.limit.get(job.queue)
        return limit is None or self.use[job.queue] + job.milli_per_worker * workers <= limit

    def add(self, j: int, workers: tuple[WorkerPlacement, ...]) -> None:
        self.placements[j] = workers
        job = self.instance.jobs[j]
        if job.queue in self.use:
            self.use[job.queue] += job.milli_per_worker * len(workers)

    def remove(self, j: int) -> tuple[WorkerPlacement, ...]:
        job = self.instance.jobs[j]
        workers = self.placements.pop(j)
        for w in workers:
            self.placer.state.release_worker(job, w.node, tuple(w.gpus))
        if job.queue in self.use:
            self.use[job.queue] -= job.milli_per_worker * len(workers)
        return workers

    def put(self, j: int, workers: tuple[WorkerPlacement, ...]) -> None:
        job = self.instance.jobs[j]
        for w in workers:
            self.placer.state.place_worker(job, w.node, tuple(w.gpus))
        self.add(j, workers)

    def try_place(self, j: int) -> tuple[WorkerPlacement, ...] | None:
        job = self.instance.jobs[j]
        if not self.quota_ok(j, job.workers):
            return None
        workers = self.placer.place(job)
        return None if workers is None else tuple(workers)

    def within_rules(self) -> bool:
        """The disruption budget, and under reclaim no borrowing queue below its guarantee."""
        inst = self.instance
        moved = preempted = cost = 0
        for j in inst.running_jobs:
            job = inst.jobs[j]
            now = self.placements.get(j, ())
            if now and sorted(now, key=_spot) == sorted(job.current, key=_spot):
                continue
            p, m = max(0, len(job.current) - len(now)), min(len(job.current), len(now))
            preempted, moved = preempted + p, moved + m
            cost += p * job.preemption_cost + m * job.migration_cost
        budget = inst.disruption_budget
        for total, limit in (
            (moved, budget.max_migrated_workers),
            (preempted, budget.max_preempted_workers),
            (cost, budget.max_disruption_cost),
        ):
            if limit is not None and total > limit:
                return False
        if inst.preemption_policy == "reclaim_within_quota":
            for q in inst.queues:
                if self.before[q.name] > q.guaranteed_milli > self.use[q.name]:
                    return False
        return True

    def pending(self) -> list[int]:
        return [j for j in job_order(self.instance) if not self.instance.jobs[j].running]


def _place_waiting_cpu_jobs(run: _Run) -> None:
    """Place the CPU-only jobs still waiting where they now fit, in the heuristics' order.

    An eviction or a migration for a later job can free CPU and memory that an earlier CPU-only
    job lacked; the objective ranks placing it (``placed_cpu_jobs``) above every cost, so it is
    placed. (Only CPU-only jobs: the GPU jobs' placements stay as the heuristics make them.)"""
    for j in run.pending():
        if j not in run.placements and run.instance.jobs[j].kind == "cpu":
            workers = run.try_place(j)
            if workers is not None:
                run.add(j, workers)


def _spot(w: WorkerPlacement) -> tuple[int, tuple[int, ...]]:
    return (w.node, tuple(w.gpus))


def family_greedies(
    instance: GpuInstance, options: SolveOptions | None = None
) -> Iterator[tuple[str, GpuSolution]]:
    """The family's heuristics for the portfolio: for a re-optimization ``keep_fgd`` (the
    fallback), ``evict_lowest`` and ``defragment``; otherwise best fit and FGD
    (:func:`placement.models.gpu.greedy.greedy_solutions`), unchanged."""
    if not instance.reopt:
        yield from greedy_solutions(instance, options)
        return
    yield "keep_fgd", keep_and_place(instance)
    yield "evict_lowest", evict_lowest(instance)
    yield "clear_cheapest_node", clear_cheapest_node(instance)
    yield "defragment", defragment(instance)


def keep_and_place(instance: GpuInstance, policy: str = "fgd") -> GpuSolution:
    """Every running job kept; pending jobs placed by ``policy`` (``fgd`` or ``best_fit``) on
    what is left, within their queues' limits."""
    run = _Run(instance, policy)
    for j in run.pending():
        workers = run.try_place(j)
        if workers is not None:
            run.add(j, workers)
    return GpuSolution(run.placements)


def evict_lowest(instance: GpuInstance) -> GpuSolution:
    """The Kueue / KAI-Scheduler / Volcano preemption (see the module)."""
    run = _Run(instance, "best_fit")
    jobs = instance.jobs
    for j in run.pending():
        workers = run.try_place(j)
        if workers is not None:
            run.add(j, workers)
            continue
        pj = jobs[j]
        victims = sorted(
            (
                v
                for v in instance.running_jobs
                if v in run.placements and preemption_rule(instance, v, j)
            ),
            key=lambda v: (jobs[v].queue == pj.queue, jobs[v].priority, -v),
        )
        if not victims:
            continue
        mark = len(run.placer.state.journal)
        saved = dict(run.placements)
        saved_use = dict(run.use)
        removed: list[tuple[int, tuple[WorkerPlacement, ...]]] = []
        placed = None
        # Shrink elastic victims to their minimum first, then evict whole jobs.
        steps = [(v, "shrink") for v in victims if jobs[v].elastic] + [
            (v, "evict") for v in victims
        ]
        for v, how in steps:
            if v not in run.placements:
                continue
            now = run.remove(v)
            if how == "shrink":
                keep = now[: jobs[v].min_workers]
                if len(keep) == len(now):
                    run.put(v, now)
                    continue
                run.put(v, keep)
            removed.append((v, now))
            placed = run.try_place(j)
            if placed is not None:
                break
        if placed is not None:
            run.add(j, placed)
            # Victims on nodes the preemptor does not use were not needed: put them back.
            used = {w.node for w in placed}
            for v, before in reversed(removed):
                if not used & {w.node for w in before}:
                    if v in run.placements:
                        run.remove(v)
                    run.put(v, before)
            if run.within_rules():
                continue
        run.placer.state.rollback(mark)
        run.placements, run.use = saved, saved_use
    _place_waiting_cpu_jobs(run)
    return GpuSolution(run.placements)


def clear_cheapest_node(instance: GpuInstance) -> GpuSolution:
    """Make room node by node: a waiting job clears the node whose victims lose least.

    For each pending job in priority order that does not fit, every node it may use is tried
    in turn: the running jobs there that the policy lets it preempt give way (an elastic job
    only its workers on that node when it keeps at least ``min_workers``, any other job
    entirely), lowest priority first, until the job fits; the node whose clearing loses the
    least priority-weighted GPU demand (then the least preemption cost) is chosen. The jobs
    it preempted whole are then placed again elsewhere where there is room (a migration
    instead of a preemption). This generalises Lyra's server reclaiming (the cheapest server
    first, elastic jobs scaled in; :mod:`placement.models.gpu.peers.lyra`) to any pending job and
    adds the re-placement that an exact re-optimization finds.
    """
    run = _Run(instance, "best_fit")
    for j in run.pending():
        workers = run.try_place(j)
        if workers is not None:
            run.add(j, workers)
            continue
        best: tuple[tuple[int, int], int] | None = None
        for n in _nodes_to_try(run, j):
            trial = _clear(run, j, n)
            if trial is not None and (best is None or trial < best[0]):
                best = (trial, n)
            run.undo()
        if best is None:
            continue
        mark = len(run.placer.state.journal)
        saved, saved_use = dict(run.placements), dict(run.use)
        _clear(run, j, best[1])
        placed_j = run.placements.get(j)
        if placed_j is None:
            run.placer.state.rollback(mark)
            run.placements, run.use = saved, saved_use
            continue
        for v in instance.running_jobs:
            if v not in run.placements and v in saved:
                again = run.try_place(v)
                if again is not None:
                    run.add(v, again)
                    if not run.within_rules():
                        run.remove(v)
        if not run.within_rules():
            run.placer.state.rollback(mark)
            run.placements, run.use = saved, saved_use
        run.marks.clear()
    _place_waiting_cpu_jobs(run)
    return GpuSolution(run.placements)


def _nodes_to_try(run: _Run, j: int) -> list[int]:
    """The :data:`_MAX_NODE_TRIES` nodes of an allowed GPU type where clearing looks cheapest
    for pending job ``j``: least priority-weighted GPU demand of the running jobs there that
    it may preempt; a node holding work it may not preempt is not tried."""
    inst = run.instance
    job = inst.jobs[j]
    held: dict[int, float] = {}
    for v, workers in run.placements.items():
        vj = inst.jobs[v]
        # Work it may not preempt (new placements included) makes a node a wall for whole
        # GPUs it holds; fractional and CPU-only work only weighs.
        rule = vj.running and preemption_rule(inst, v, j)
        weight = vj.priority * vj.milli_per_worker
        for w in workers:
            held[w.node] = held.get(w.node, 0.0) + (weight if rule else float("inf"))
    nodes = [
        n
        for n, node in enumerate(inst.nodes)
        if node.gpu_count >= job.gpus and (job.kind == "cpu" or job.allows(node.gpu_type))
    ]
    nodes.sort(key=lambda n: (held.get(n, 0.0), n))
    return [n for n in nodes[:_MAX_NODE_TRIES] if held.get(n, 0.0) < float("inf")]


def _clear(run: _Run, j: int, n: int) -> tuple[int, int] | None:
    """Evict what the policy allows on node ``n`` until pending job ``j`` fits and place it
    (the state is changed: :meth:`_Run.undo` restores it). Returns (lost weighted milli-GPU,
    preemption cost) or None when ``j`` still does not fit or lands off ``n``."""
    inst = run.instance
    jobs = inst.jobs
    run.marks.append((len(run.placer.state.journal), dict(run.placements), dict(run.use)))
    victims = sorted(
        (
            v
            for v in inst.running_jobs
            if v in run.placements
            and any(w.node == n for w in run.placements[v])
            and preemption_rule(inst, v, j)
        ),
        key=lambda v: (jobs[v].priority, jobs[v].preemption_cost, v),
    )
    if not victims:
        return None
    lost = cost = 0
    for v in victims:
        now = run.remove(v)
        keep = tuple(w for w in now if w.node != n)
        gone = len(now)
        if jobs[v].elastic and len(keep) >= jobs[v].min_workers:
            run.put(v, keep)
            gone = len(now) - len(keep)
        lost += jobs[v].priority * jobs[v].milli_per_worker * gone
        cost += jobs[v].preemption_cost * gone
        placed = run.try_place(j)
        if placed is not None:
            if not any(w.node == n for w in placed):
                return None
            run.add(j, placed)
            return (lost, cost)
    return None


def defragment(instance: GpuInstance) -> GpuSolution:
    """FGD with no moves, then one migration per waiting job where it makes room."""
    run = _Run(instance, "fgd")
    jobs = instance.jobs
    waiting = []
    for j in run.pending():
        workers = run.try_place(j)
        if workers is not None:
            run.add(j, workers)
        else:
            waiting.append(j)
    for j in waiting:
        movable = sorted(
            (v for v in instance.running_jobs if run.placements.get(v) == jobs[v].current),
            key=lambda v: (jobs[v].migration_cost * len(jobs[v].current), jobs[v].demand_milli, v),
        )
        for v in movable[:_MAX_MOVE_TRIES]:
            mark = len(run.placer.state.journal)
            saved, saved_use = dict(run.placements), dict(run.use)
            run.remove(v)
            placed = run.try_place(j)
            if placed is not None:
                run.add(j, placed)
                moved = run.try_place(v)
                if moved is not None:
                    run.add(v, moved)
                    if run.within_rules():
                        break
            run.placer.state.rollback(mark)
            run.placements, run.use = saved, saved_use
    _place_waiting_cpu_jobs(run)
    return GpuSolution(run.placements)
