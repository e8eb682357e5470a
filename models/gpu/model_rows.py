"""The variables and rows of the GPU model that every tier needs: placement and capacity.

:class:`GpuRows` builds, for one instance (possibly restricted to candidate nodes, with jobs
kept fixed), the placement binary and the aggregated worker counts of each job, the gang
rows, the fully free GPUs given to whole workers, the milli-GPU, GPU memory, CPU and memory
capacities (CPU with the node's density model, :mod:`.density`), the symmetry-breaking rows of identical GPUs, the span indicators of required
localities, and the first tiers' objectives (weighted placed GPUs, queue priorities,
CPU-only workers). :class:`~placement.models.gpu.model.GpuModel` adds the later tiers'
layers, the running work's rows, the evaluation and the decoding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.gpu.check import CPU_TIER, has_cpu_tier, span_level
from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.instance import (
    MILLI,
    SPAN_SAME_GPU,
    GpuInstance,
    GpuJob,
    GpuSolution,
    WorkerPlacement,
)
from placement.models.gpu.model_spans import SpanLevel, possible_spans, span_cost, span_levels
from placement.solver.linear import LinearModel, Objective, Values


class GpuRows:
    """The placement and capacity variables and rows of one GPU instance (see
    :class:`~placement.models.gpu.model.GpuModel`, which adds the rest, for the variables and
    the parameters)."""

    def __init__(
        self,
        instance: GpuInstance,
        cluster: FreeCapacity | None = None,
        candidates: list[list[int]] | None = None,
        fixed: GpuSolution | None = None,
    ) -> None:
        self.instance = instance
        self.cluster = cluster or FreeCapacity(instance)
        self.restricted = candidates is not None or fixed is not None
        self.fixed: dict[int, tuple[WorkerPlacement, ...]] = dict(fixed.placements) if fixed else {}
        self.lm = LinearModel()
        self.last = len(instance.levels) - 1
        self.x: dict[int, int] = {}
        self.w: dict[tuple[int, int], int] = {}
        self.a: dict[tuple[int, int, int], int] = {}
        self.y: dict[tuple[int, int, int], int] = {}
        self.z: dict[tuple[int, int], int] = {}
        self.fv: dict[tuple[int, int], int] = {}
        self.e: dict[tuple[int, int], int] = {}
        self.t: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.F: dict[int, int] = {}
        self.hq: dict[tuple[int, int], tuple[int, int]] = {}
        self.job_nodes: dict[int, list[int]] = {}
        self.job_gpus: dict[tuple[int, int], list[int]] = {}
        self.spans: dict[int, list[SpanLevel]] = {}
        self.ff: list[dict[int, list[int]]] = []
        self.doms: list[list[int]] = []
        self.count_domains: set[tuple[int, int]] = set()
        self.sym_groups: list[tuple[int, list[int]]] = []
        self.tier1 = Objective()
        # Re-optimization with queue priorities: tier 1's sum with the queue's priority.
        self.queue_priority = instance.queue_priorities
        self.qtier = Objective()
        # Instances with CPU-only jobs: priority x workers of the placed ones (check.CPU_TIER).
        self.has_cpu_tier = has_cpu_tier(instance)
        self.cpu_tier = Objective()
        self.comm = Objective()
        self.frag = Objective()
        self.frag_divisor = MILLI * (sum(c.weight for c in instance.mix) or 1)
        # Opt-in tier 4 (topology_fit): rack-use binaries per (job, rack id).
        self.fit = Objective()
        self.rk: dict[tuple[int, int], int] = {}
        # Re-optimization (docs/formulations/gpu.md, "Running work"): sizes of elastic jobs,
        # keep indicators and the preempted / restarted workers of running jobs.
        self.reopt = instance.reopt
        self.s: dict[int, int] = {}
        self.b: dict[int, list[int]] = {}
        self.keep: dict[int, int] = {}
        self.pv: dict[int, int] = {}
        self.mv: dict[int, int] = {}
        self.gv: dict[int, int] = {}
        self.disrupt = Objective()
        self._build(candidates)

    # --- building -------------------------------------------------------------------------
    def _build(self, candidates: list[list[int]] | None) -> None:
        inst, cl, lm = self.instance, self.cluster, self.lm
        for n, node in enumerate(inst.nodes):
            start = cl.gpu_offset[n]
            ff: dict[int, list[int]] = {}
            for g in range(node.gpu_count):
                if cl.fully_free[start + g]:
                    ff.setdefault(node.nvlink_domain(g), []).append(g)
            self.ff.append(ff)
            self.doms.append(sorted(ff))

        plans: dict[int, dict[str, Any]] = {}
        for j, job in enumerate(inst.jobs):
            if j in self.fixed:
                continue
            plan = self._plan_job(job, None if candidates is None else candidates[j])
            if plan is not None:
                plans[j] = plan
        if self.fixed:
            for j, workers in self.fixed.items():
                job = inst.jobs[j]
                self.tier1.constant += job.weighted_demand_milli
                if self.queue_priority is not None:
                    self.qtier.constant += self.queue_priority[j] * job.demand_milli
                if job.kind == "cpu":
                    self.cpu_tier.constant += job.priority * len(workers)
                spots = [(w.node, tuple(w.gpus)) for w in workers]
                self.comm.constant += span_cost(inst, job, span_level(inst, job.kind, spots))

        whole_on: dict[int, list[int]] = {}  # node -> whole jobs with variables there
        frac_gpus: dict[tuple[int, int], list[int]] = {}  # (node, gpu) -> fractional jobs
        for j, plan in plans.items():
            job = inst.jobs[j]
            for n in plan["nodes"]:
                if job.kind == "whole":
                    whole_on.setdefault(n, []).append(j)
                elif job.kind == "fractional":
                    for g in plan["gpus"][n]:
                        frac_gpus.setdefault((n, g), []).append(j)

        self.frac_gpus = frac_gpus
        # Placement variables and the gang rows: sum over nodes = workers * x.
        for j, plan in plans.items():
            job = inst.jobs[j]
            x = self.x[j] = lm.var(0, 1, "x")
            self.job_nodes[j] = plan["nodes"]
            terms: list[tuple[int, int]] = [(x, -job.workers)]
            if job.elastic:
                # The gang's size is a count between min_workers and workers when placed.
                size = self.s[j] = lm.var(0, job.workers, "s")
                terms = [(size, -1)]
                lm.row([(size, 1), (x, -job.min_workers)], 0, None)
                lm.row([(size, 1), (x, -job.workers)], None, 0)
            for n in plan["nodes"]:
                cap = int(plan["caps"][n])
                if job.kind == "fractional":
                    gpus = plan["gpus"][n]
                    self.job_gpus[(j, n)] = gpus
                    for g in gpus:
                        y = self.y[(j, n, g)] = lm.var(0, int(plan["gcaps"][n][g]), "y")
                        terms.append((y, 1))
                    continue
                w = self.w[(j, n)] = lm.var(0, cap, "w")
                terms.append((w, 1))
                if job.kind == "whole" and len(self.doms[n]) > 1:
                    parts: list[tuple[int, int]] = [(w, -job.gpus)]
                    for d in self.doms[n]:
                        a = self.a[(j, n, d)] = lm.var(
                            0, min(len(self.ff[n][d]), job.gpus * cap), "a"
                        )
                        parts.append((a, 1))
                    lm.row(parts, 0, 0)
            lm.row(terms, 0, 0)
            if job.elastic and job.size_utility_milli:
                # A value per size: one binary per size, exactly one when placed.
                sizes = range(job.min_workers, job.workers + 1)
                bs = self.b[j] = [lm.var(0, 1, "b") for _ in sizes]
                lm.row([(b, 1) for b in bs] + [(x, -1)], 0, 0)
                lm.row([(self.s[j], 1)] + [(b, -k) for b, k in zip(bs, sizes, strict=True)], 0, 0)
                for b, k in zip(bs, sizes, strict=True):
                    self.tier1.add(b, job.value_milli(k))
                    self._add_queue_value(j, b, job.gpu_value_milli(k))
            elif job.elastic:
                self.tier1.add(self.s[j], job.priority * job.milli_per_worker)
                self._add_queue_value(j, self.s[j], job.milli_per_worker)
            else:
                self.tier1.add(x, job.weighted_demand_milli)
                self._add_queue_value(j, x, job.demand_milli)
            if job.kind == "cpu":
                # check.CPU_TIER: priority x workers placed (the size of an elastic job).
                if job.elastic:
                    self.cpu_tier.add(self.s[j], job.priority)
                else:
                    self.cpu_tier.add(x, job.priority * job.workers)

        # Fully free GPUs of each NVLink domain: whole workers use exactly the z = 1 ones, or
        # at most all of them where no fractional job can use the domain (count domains).
        for n, jobs_here in whole_on.items():
            for d in self.doms[n]:
                use = self.whole_use(n, d, jobs_here)
                gpus = self.ff[n][d]
                if any((n, g) in frac_gpus for g in gpus):
                    for g in gpus:
                        self.z[(n, g)] = lm.var(0, 1, "z")
                    lm.row(use + [(self.z[(n, g)], -1) for g in gpus], 0, 0)
                else:
                    self.count_domains.add((n, d))
                    most = sum(c * lm.ub[v] for v, c in use)
                    if most > len(gpus):
                        lm.row(use, None, len(gpus))

        # Each GPU that fractional work can use: milli-GPU and GPU memory capacity. (The final
        # free milli-GPU fv = free0 - used gets a variable only in the fragmentation layer:
        # defining it by an equality here sends HiGHS 1.16's presolve aggregator into a loop
        # that ignores the time limit.)
        for (n, g), js in frac_gpus.items():
            k = cl.gpu_offset[n] + g
            lm.row(self.used_milli(n, g), None, int(cl.free0[k]))
            mem = [(self.y[(j, n, g)], inst.jobs[j].gpu_memory_mib) for j in js]
            memfree = int(cl.memfree[k])
            if sum(c * lm.ub[v] for v, c in mem) > memfree:
                lm.row(mem, None, memfree)

        # Identical GPUs (same node, NVLink domain, free milli and free memory) are
        # interchangeable: order them by used milli-GPU, most used first (symmetry breaking).
        by_class: dict[tuple[int, int, int, int], list[int]] = {}
        for n, g in sorted(frac_gpus):
            k = cl.gpu_offset[n] + g
            key = (n, inst.nodes[n].nvlink_domain(g), int(cl.free0[k]), int(cl.memfree[k]))
            by_class.setdefault(key, []).append(g)
        for (n, *_), gpus in by_class.items():
            # (Not with running work: a kept job pins its GPUs, so they are not interchangeable.)
            if len(gpus) > 1 and not self.reopt:
                self.sym_groups.append((n, gpus))
                for g1, g2 in zip(gpus, gpus[1:], strict=False):
                    used2 = [(v, -c) for v, c in self.used_milli(n, g2)]
                    lm.row(self.used_milli(n, g1) + used2, 0, None)

        # Node CPU and memory.
        on_node: dict[int, list[tuple[int, int]]] = {}
        for j in plans:
            job = inst.jobs[j]
            for n in self.job_nodes[j]:
                on_node.setdefault(n, []).extend(self.worker_vars(j, n))
        for n, pairs in on_node.items():
            for attr, cap in (("cpu_milli", cl.cpu_free[n]), ("memory_mib", cl.mem_free[n])):
                terms = []
                for j, v in pairs:
                    c = getattr(inst.jobs[j], attr)
                    if c:
                        terms.append((v, c))
                if sum(c * lm.ub[v] for v, c in terms) > cap:
                    lm.row(terms, None, int(cap))
            self._density_rows(n, pairs)

        self.plans, self.whole_on, self.frac_gpus = plans, whole_on, frac_gpus
        for j, plan in plans.items():
            self.spans[j] = plan["span"]
            for sl in plan["span"]:
                if sl.level == plan["required"] and sl.mode == "var":
                    self.add_span_var(j, sl)
                    self.lm.row([(sl.c, 1), (self.x[j], -1)], 0, 0)  # required locality

        whole_cls: dict[int, int] = {}
        frac_cls: dict[int, int] = {}
        for c in inst.mix:
            if c.gpus > 0:
                whole_cls[c.gpus] = whole_cls.get(c.gpus, 0) + c.weight
            else:
                frac_cls[c.gpu_milli] = frac_cls.get(c.gpu_milli, 0) + c.weight
        self.whole_classes = sorted(whole_cls.items())
        self.frac_classes = sorted(frac_cls.items())
        # Which later tiers depend on the decisions (else their tier is skipped). Costs are
        # non-decreasing in the span, so all are 0 when the widest span costs nothing.
        self.comm_active = any(
            span_cost(inst, inst.jobs[j], possible_spans(inst, inst.jobs[j])[-1]) > 0 for j in plans
        )
        self.frag_active = bool(inst.mix) and bool(whole_on or frac_gpus)
        self.fit_active = bool(
            inst.topology_fit and not self.reopt and len(inst.levels) > 2 and plans
        )
        self.layers: set[str] = {"placed_gpu_weighted"}
        if self.has_cpu_tier:
            self.layers.add(CPU_TIER)  # built with the placement variables

    def _density_rows(self, n: int, pairs: list[tuple[int, int]]) -> None:
        """Node ``n``'s density model (density.py), one row per piece ``(d, a, b)``:
        ``d (used0 + sum_j c_j k_jn) <= a + b (pods0 + sum_j k_jn)``, with ``k_jn`` the workers
        of job j on n and ``used0``, ``pods0`` what is there before (fixed work included)."""
        node, cl, lm = self.instance.nodes[n], self.cluster, self.lm
        if not node.density_pieces:
            return
        used0 = node.cpu_milli - int(cl.cpu_free[n])
        pods0 = int(cl.pods[n])
        for d, a, b in node.density_pieces:
            terms = [(v, d * self.instance.jobs[j].cpu_milli - b) for j, v in pairs]
            terms = [(v, c) for v, c in terms if c]
            room = a + b * pods0 - d * used0
            if terms and sum(c * lm.ub[v] for v, c in terms) > room:
                lm.row(terms, None, room)

    def cpu_tier_met(self, values: Values) -> bool:
        """Whether ``values`` places every CPU-only job of the model at its largest size: the
        ``placed_cpu_jobs`` tier's most (its coefficients are positive), so it is optimal."""
        most = sum(c * self.lm.ub[v] for v, c in self.cpu_tier.terms.items())
        return self.cpu_tier.value(values) >= self.cpu_tier.constant + most

    def _add_queue_value(self, j: int, var: int, value_milli: int) -> None:
        """Add ``var`` x ``value_milli`` x the priority of job ``j``'s queue to ``qtier``."""
        if self.queue_priority is not None and self.queue_priority[j]:
            self.qtier.add(var, self.queue_priority[j] * value_milli)

    def _plan_job(self, job: GpuJob, cand: list[int] | None) -> dict[str, Any] | None:
        """Nodes, worker caps and span structure of one job; None when it cannot be placed."""
        cl = self.cluster
        gcaps_all = cl.gpu_caps(job) if job.kind == "fractional" else None
        caps = cl.node_caps(job, gcaps_all)
        if cand is not None:
            mask = np.zeros(len(caps), dtype=bool)
            mask[cand] = True
            caps = np.where(mask, caps, 0)
        nodes = np.flatnonzero(caps).tolist()
        if int(caps.sum()) < job.fewest_workers:
            return None
        plan: dict[str, Any] = {"nodes": nodes, "caps": caps}
        if job.kind == "fractional":
            gpus: dict[int, list[int]] = {}
            gcaps: dict[int, dict[int, int]] = {}
            for n in nodes:
                start = cl.gpu_offset[n]
                row = gcaps_all[start : start + self.instance.nodes[n].gpu_count]
                gs = np.flatnonzero(row).tolist()
                gpus[n] = gs
                gcaps[n] = {g: int(row[g]) for g in gs}
            plan["gpus"], plan["gcaps"] = gpus, gcaps
        levels = span_levels(self.instance, job, plan, self.doms, self.ff)
        if levels is None:
            return None
        plan["span"] = levels
        return plan

    def used_milli(self, n: int, g: int) -> list[tuple[int, int]]:
        """Terms of the milli-GPU that new work uses on GPU ``g`` of node ``n``."""
        jobs = self.instance.jobs
        terms = [(self.y[(j, n, g)], jobs[j].gpu_milli) for j in self.frac_gpus[(n, g)]]
        if (n, g) in self.z:
            terms.append((self.z[(n, g)], MILLI))
        return terms

    def whole_use(self, n: int, d: int, jobs_here: list[int]) -> list[tuple[int, int]]:
        """Terms counting the fully free GPUs of domain ``d`` of node ``n`` given to whole jobs."""
        out = []
        for j in jobs_here:
            if (j, n, d) in self.a:
                out.append((self.a[(j, n, d)], 1))
            else:
                out.append((self.w[(j, n)], self.instance.jobs[j].gpus))
        return out

    def worker_vars(self, j: int, n: int) -> list[tuple[int, int]]:
        """(job, variable) pairs whose sum is the number of workers of ``j`` on node ``n``."""
        if (j, n) in self.w:
            return [(j, self.w[(j, n)])]
        return [(j, self.y[(j, n, g)]) for g in self.job_gpus.get((j, n), [])]

    def _usage(
        self, j: int, job: GpuJob, level: int, key: Any
    ) -> tuple[list[tuple[int, int]], int]:
        """Terms of job ``j``'s usage of group ``key`` at ``level`` and the usage of all of it."""
        W = job.workers
        if level == SPAN_SAME_GPU:
            n, g = key
            return [(self.y[(j, n, g)], 1)], W
        if level == 0:
            n, d = key
            if job.kind == "whole":
                if (j, n, d) in self.a:
                    return [(self.a[(j, n, d)], 1)], job.gpus * W
                return [(self.w[(j, n)], 1)], W
            node = self.instance.nodes[n]
            gpus = [g for g in self.job_gpus[(j, n)] if node.nvlink_domain(g) == d]
            return [(self.y[(j, n, g)], 1) for g in gpus], W
        if level == 1:
            return [(v, 1) for _, v in self.worker_vars(j, key)], W
        ids = self.instance.group_ids[level - 2]
        terms = []
        for n in self.job_nodes[j]:
            if int(ids[n]) == key:
                terms.extend((v, 1) for _, v in self.worker_vars(j, n))
        return terms, W

    def add_span_var(self, j: int, sl: SpanLevel) -> None:
        """c[j, L] and its group choice u[j, L, k]: u = 1 only if group k holds all of j."""
        job, lm = self.instance.jobs[j], self.lm
        c = sl.c = lm.var(0, 1, "c")
        if len(sl.groups) == 1:
            sl.u = {sl.groups[0]: c}
        else:
            sl.u = {key: lm.var(0, 1, "u") for key in sl.groups}
            lm.row([(u, 1) for u in sl.u.values()] + [(c, -1)], 0, 0)
        for key, u in sl.u.items():
            terms, need = self._usage(j, job, sl.level, key)
            lm.row(terms + [(u, -need)], 0, None)
