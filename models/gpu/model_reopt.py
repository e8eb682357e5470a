"""The running work's part of the GPU model: keep, preemption and migration, queues, budget.

:func:`build_reopt` adds, per running job, the keep indicator and its preempted and
restarted workers, the disruption objective, the preemption policy, the queues' quotas and
the disruption budget (docs/formulations/gpu.md, "Running work"); :func:`reopt_values` gives
those variables their values for a solution (the hint).
"""

from __future__ import annotations

from collections import Counter

from placement.models.gpu.instance import (
    GpuSolution,
    preemption_rule,
    queue_caps,
    queue_usage_before,
)
from placement.models.gpu.model_rows import GpuRows


def build_reopt(model: GpuRows) -> None:
    """The rows and the disruption objective of running work, queues and the budget.

    Per running job j with cur current workers: keep k_j <= x_j; k_j = 1 forces its
    current counts (per node, NVLink domain, shared GPU) and its current GPUs among the
    whole-GPU ones, so that with the gang row the job is exactly where it runs. Preempted
    workers p_j = cur - size (at least, for an elastic job), restarted workers
    m_j = cur (x_j - k_j) (at least min(cur, size) - ... for an elastic one); the policy
    lets p_j > 0 only when an allowed preemptor has a worker on one of j's nodes.
    """
    inst, lm = model.instance, model.lm
    miss = [j for j in inst.running_jobs if j not in model.x]
    if miss:
        raise ValueError(f"running job {inst.jobs[miss[0]].name!r} has no variables")
    p_of: dict[int, tuple[list[tuple[int, int]], int]] = {}
    m_of: dict[int, tuple[list[tuple[int, int]], int]] = {}
    for j in inst.running_jobs:
        job = inst.jobs[j]
        cur = len(job.current)
        x = model.x[j]
        k = model.keep[j] = lm.var(0, 1, "k")
        lm.row([(k, 1), (x, -1)], None, 0)
        if job.kind == "fractional":
            for (n, g), c in Counter((w.node, w.gpus[0]) for w in job.current).items():
                lm.row([(model.y[(j, n, g)], 1), (k, -c)], 0, None)
        else:
            for n, c in Counter(w.node for w in job.current).items():
                lm.row([(model.w[(j, n)], 1), (k, -c)], 0, None)
        if job.kind == "whole":
            node_of = model.instance.nodes
            doms = Counter(
                (w.node, node_of[w.node].nvlink_domain(g)) for w in job.current for g in w.gpus
            )
            for (n, d), c in doms.items():
                if (j, n, d) in model.a:
                    lm.row([(model.a[(j, n, d)], 1), (k, -c)], 0, None)
            for w in job.current:
                for g in w.gpus:
                    if (w.node, g) in model.z:
                        lm.row([(model.z[(w.node, g)], 1), (k, -1)], 0, None)
        if job.elastic:
            size = model.s[j]
            # Kept => the current size (the count rows give at least it).
            lm.row([(size, 1), (k, job.workers - cur)], None, job.workers)
            # p = max(0, cur - size) exactly, with g = 1 iff size >= cur.
            p = model.pv[j] = lm.var(0, cur, "p")
            g = model.gv[j] = lm.var(0, 1, "g")
            lm.row([(p, 1), (size, 1)], cur, None)  # p >= cur - size
            lm.row([(p, 1), (size, 1), (g, -(job.workers - cur))], None, cur)
            lm.row([(p, 1), (g, cur)], None, cur)  # g = 1 => p = 0
            # m = (x - k)(cur - p) exactly: restarted workers when moved, else 0.
            m = model.mv[j] = lm.var(0, cur, "m")
            lm.row([(m, 1), (x, -cur), (k, cur), (p, 1)], 0, None)  # m >= cur(x-k) - p
            lm.row([(m, 1), (p, 1)], None, cur)  # m <= cur - p
            lm.row([(m, 1), (x, -cur), (k, cur)], None, 0)  # m <= cur (x - k)
            p_of[j], m_of[j] = ([(p, 1)], 0), ([(m, 1)], 0)
        else:
            p_of[j] = ([(x, -cur)], cur)
            m_of[j] = ([(x, cur), (k, -cur)], 0)
        terms, const = p_of[j]
        for v, c in terms:
            model.disrupt.add(v, c * job.preemption_cost)
        model.disrupt.constant += const * job.preemption_cost
        for v, c in m_of[j][0]:
            model.disrupt.add(v, c * job.migration_cost)
        # The policy: preempted workers only where an allowed preemptor lands.
        nodes = sorted({w.node for w in job.current})
        room: list[tuple[int, int]] = []
        for i in model.x:
            if not inst.jobs[i].running and preemption_rule(inst, j, i):
                for n in nodes:
                    room.extend((v, -cur) for _, v in model.worker_vars(i, n))
        lm.row(terms + room, None, -const)
    # Queues: at most max(guarantee + borrowing limit, current use); under reclaim, a
    # borrowing queue keeps at least its guarantee.
    if inst.queues:
        before = queue_usage_before(inst)
        use: dict[str, list[tuple[int, int]]] = {q.name: [] for q in inst.queues}
        for j, x in model.x.items():
            job = inst.jobs[j]
            if job.queue:
                if j in model.s:
                    use[job.queue].append((model.s[j], job.milli_per_worker))
                else:
                    use[job.queue].append((x, job.demand_milli))
        caps = queue_caps(inst)
        for q in inst.queues:
            terms = [(v, c) for v, c in use[q.name] if c]
            if caps[q.name] is not None and terms:
                lm.row(terms, None, caps[q.name])
            reclaim = inst.preemption_policy == "reclaim_within_quota"
            if reclaim and before[q.name] > q.guaranteed_milli:
                lm.row(terms, q.guaranteed_milli, None)
    budget = inst.disruption_budget
    for limit, parts in (
        (budget.max_preempted_workers, [p_of[j] for j in p_of]),
        (budget.max_migrated_workers, [m_of[j] for j in m_of]),
    ):
        if limit is not None and parts:
            terms = [t for ts, _ in parts for t in ts]
            lm.row(terms, None, limit - sum(c for _, c in parts))
    if budget.max_disruption_cost is not None and model.keep:
        cost = list(model.disrupt.terms.items())
        lm.row(cost, None, budget.max_disruption_cost - model.disrupt.constant)


def reopt_values(model: GpuRows, sol: GpuSolution, val: list[int]) -> None:
    """Keep indicators, preempted and restarted workers of the running jobs in ``sol``."""
    for j, k in model.keep.items():
        job = model.instance.jobs[j]
        now = sol.placements.get(j, ())
        spots = sorted((w.node, tuple(w.gpus)) for w in now)
        kept = bool(now) and spots == sorted((w.node, tuple(w.gpus)) for w in job.current)
        val[k] = int(kept)
        cur = len(job.current)
        if j in model.pv:
            val[model.pv[j]] = max(0, cur - len(now))
            val[model.gv[j]] = int(len(now) >= cur)
        if j in model.mv:
            val[model.mv[j]] = 0 if kept else min(cur, len(now))
