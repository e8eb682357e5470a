"""The integer model of one GPU instance, shared by the two exact encodings (CP-SAT, MILP).

Built once here as a :class:`~placement.solver.linear.LinearModel` and translated
one-to-one by :mod:`placement.models.gpu.cpsat` and :mod:`placement.models.gpu.milp`, so both
backends solve exactly the same mathematics (docs/formulations/gpu.md): aggregated counts
per job and node / NVLink domain / GPU, span indicators for the communication tier, and an
exact linearisation of the fragmentation measure of
:func:`placement.models.gpu.check.node_fragmentation_milli`; a hint from a solution
(:meth:`GpuModel.values_from_solution`) and the decoding of counts into a placement
(:meth:`GpuModel.decode`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
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
    preemption_rule,
    queue_caps,
    queue_usage_before,
)
from placement.solver.linear import LinearModel, Objective, Values


@dataclass
class _SpanLevel:
    """One level at which a job's span indicator is modelled."""

    level: int
    mode: str  # "var": c is a variable; "always": c == x; "never": c == 0
    c: int = -1
    groups: list[Any] = field(default_factory=list)
    u: dict[Any, int] = field(default_factory=dict)


class GpuModel:
    """The integer model of one GPU instance (possibly restricted to candidate nodes).

    Variables are aggregated by symmetry: per job a placement binary ``x``; per (job, node)
    a worker count ``w`` for whole and CPU-only jobs, per (job, node, NVLink domain) a GPU
    count ``a`` on nodes with fully free GPUs in several domains, per (job, GPU) a worker
    count ``y`` for fractional jobs; per fully free GPU that both whole and fractional work
    can use a binary ``z`` (given to whole workers). Everything else (span indicators,
    fragmentation terms) is derived. See docs/formulations/gpu.md.

    Parameters
    ----------
    instance:
        The instance.
    cluster:
        Its :class:`FreeCapacity`.
    candidates:
        Per job, the nodes it may use; None for the full model (every eligible node).
    fixed:
        Jobs kept exactly where this solution places them (a restricted model's jobs outside
        its window). They get no variables: ``cluster`` must be the state they leave
        (:meth:`FreeCapacity.residual`); their objective terms are constants and :meth:`decode`
        adds them back.
    """

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
        self.spans: dict[int, list[_SpanLevel]] = {}
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
        if self.reopt:
            self._build_reopt()

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
            plan = self._plan_job(j, job, None if candidates is None else candidates[j])
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
                self.comm.constant += self.span_cost(job, span_level(inst, job.kind, spots))

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
                use = self._whole_use(n, d, jobs_here)
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
            lm.row(self._used_milli(n, g), None, int(cl.free0[k]))
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
                    used2 = [(v, -c) for v, c in self._used_milli(n, g2)]
                    lm.row(self._used_milli(n, g1) + used2, 0, None)

        # Node CPU and memory.
        on_node: dict[int, list[tuple[int, int]]] = {}
        for j in plans:
            job = inst.jobs[j]
            for n in self.job_nodes[j]:
                on_node.setdefault(n, []).extend(self._worker_vars(j, n))
        for n, pairs in on_node.items():
            for attr, cap in (("cpu_milli", cl.cpu_free[n]), ("memory_mib", cl.mem_free[n])):
                terms = []
                for j, v in pairs:
                    c = getattr(inst.jobs[j], attr)
                    if c:
                        terms.append((v, c))
                if sum(c * lm.ub[v] for v, c in terms) > cap:
                    lm.row(terms, None, int(cap))

        self.plans, self.whole_on, self.frac_gpus = plans, whole_on, frac_gpus
        for j, plan in plans.items():
            self.spans[j] = plan["span"]
            for sl in plan["span"]:
                if sl.level == plan["required"] and sl.mode == "var":
                    self._span_var(j, sl)
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
            self.span_cost(inst.jobs[j], self._possible_spans(inst.jobs[j])[-1]) > 0 for j in plans
        )
        self.frag_active = bool(inst.mix) and bool(whole_on or frac_gpus)
        self.fit_active = bool(
            inst.topology_fit and not self.reopt and len(inst.levels) > 2 and plans
        )
        self.layers: set[str] = {"placed_gpu_weighted"}
        if self.has_cpu_tier:
            self.layers.add(CPU_TIER)  # built with the placement variables

    def cpu_tier_met(self, values: Values) -> bool:
        """Whether ``values`` places every CPU-only job of the model at its largest size: the
        ``placed_cpu_jobs`` tier's most (its coefficients are positive), so it is optimal."""
        most = sum(c * self.lm.ub[v] for v, c in self.cpu_tier.terms.items())
        return self.cpu_tier.value(values) >= self.cpu_tier.constant + most

    def _add_queue_value(self, j: int, var: int, value_milli: int) -> None:
        """Add ``var`` x ``value_milli`` x the priority of job ``j``'s queue to ``qtier``."""
        if self.queue_priority is not None and self.queue_priority[j]:
            self.qtier.add(var, self.queue_priority[j] * value_milli)

    def ensure_layer(self, tier: str) -> bool:
        """Add the variables and rows tier ``tier`` needs (once); True if anything was added.

        Tier 1 needs only placement and capacity (and the span indicators of required
        localities); the span indicators of the communication cost and the fragmentation
        terms are added just before the tier that optimises them, so the first tiers work
        on a much smaller model.
        """
        if tier in self.layers:
            return False
        self.layers.add(tier)
        if tier == "comm_cost":
            for j in self.plans:
                self._build_span(j)
        elif tier == "fragmentation":
            self._build_fragmentation(self.whole_on, self.frac_gpus)
        elif tier == "topology_fit":
            self._build_topology_fit()
        return True

    def fit_coefficients(self) -> tuple[list[int], int]:
        """Per node, the fully free GPUs (before the decision) of its groups at every level
        above the node, summed; and the cost ``S`` of one extra rack (the most GPUs in a rack
        times the sum over those levels of the most GPUs in a group: more than the first term
        of a rack's worth of GPUs anywhere). See docs/formulations/gpu.md, "Topology fit"."""
        inst = self.instance
        full = FreeCapacity(inst)  # the instance's state, not a restricted model's residual
        ff = np.asarray(full.ff_count, dtype=np.int64)
        per_node = np.zeros(len(inst.nodes), dtype=np.int64)
        for ids in inst.group_ids:
            per_node += np.bincount(ids, weights=ff)[ids].astype(np.int64)
        gpus = np.asarray([node.gpu_count for node in inst.nodes], dtype=np.int64)
        most = [int(np.bincount(ids, weights=gpus).max()) for ids in inst.group_ids]
        return per_node.tolist(), most[0] * sum(most)

    def _fit_of_fixed(self, j: int, per_node: list[int], spread: int) -> int:
        workers = self.fixed[j]
        racks = {int(self.instance.group_ids[0][w.node]) for w in workers}
        cost = spread * (len(racks) - 1)
        if self.instance.jobs[j].kind == "whole":
            cost += sum(len(w.gpus) * per_node[w.node] for w in workers)
        return cost

    def _build_topology_fit(self) -> None:
        """Tier 4 (opt-in): S x (racks used - 1) per placed job plus, per whole GPU, the
        fully free GPUs of its rack and block before the decision."""
        inst, lm = self.instance, self.lm
        per_node, spread = self.fit_coefficients()
        racks = inst.group_ids[0]
        for j in self.fixed:
            self.fit.constant += self._fit_of_fixed(j, per_node, spread)
        for j in self.plans:
            job = inst.jobs[j]
            if job.kind == "whole":
                for n in self.job_nodes[j]:
                    self.fit.add(self.w[(j, n)], job.gpus * per_node[n])
            by_rack: dict[int, list[tuple[int, int]]] = {}
            for n in self.job_nodes[j]:
                by_rack.setdefault(int(racks[n]), []).extend(
                    (v, 1) for _, v in self._worker_vars(j, n)
                )
            if len(by_rack) < 2 or job.workers < 2:
                continue
            # r = 1 when the job has a worker in the rack; at least one rack when placed.
            self.fit.add(self.x[j], -spread)
            for key, terms in sorted(by_rack.items()):
                r = self.rk[(j, key)] = lm.var(0, 1, "r")
                most = min(job.workers, sum(lm.ub[v] for v, _ in terms))
                lm.row(terms + [(r, -most)], None, 0)
                self.fit.add(r, spread)
            lm.row([(self.rk[(j, key)], 1) for key in by_rack] + [(self.x[j], -1)], 0, None)

    def _plan_job(self, j: int, job: GpuJob, cand: list[int] | None) -> dict[str, Any] | None:
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
        levels = self._span_levels(j, job, plan)
        if levels is None:
            return None
        plan["span"] = levels
        return plan

    def _possible_spans(self, job: GpuJob) -> list[int]:
        """Span levels a placement of ``job`` can have (check.span_level's rules; ``last + 1``
        is "beyond": several groups of the outermost level)."""
        w, beyond = job.workers, self.last + 1
        if job.kind == "whole":
            if job.gpus * w == 1:
                return [SPAN_SAME_GPU]
            return [0, 1] if w == 1 else list(range(0, beyond + 1))
        if job.kind == "fractional":
            return [SPAN_SAME_GPU] if w == 1 else list(range(SPAN_SAME_GPU, beyond + 1))
        return [1] if w == 1 else list(range(1, beyond + 1))

    def span_cost(self, job: GpuJob, span: int) -> float:
        """Communication cost plus preferred-locality penalty at span level ``span``."""
        cost = 0.0
        if span != SPAN_SAME_GPU and job.traffic_gb:
            # Beyond the outermost level its bandwidth still applies (check.comm_cost_of).
            level = min(span, self.last)
            cost = job.traffic_gb / self.instance.levels[level].bandwidth_gbps
        preferred = job.locality_level and not job.locality_required
        if preferred and span > self.instance.level_of_name(job.locality_level):
            cost += self.instance.locality_miss_penalty
        return cost

    def _span_levels(self, j: int, job: GpuJob, plan: dict[str, Any]) -> list[_SpanLevel] | None:
        """The levels whose indicator changes the cost or carries a required locality."""
        spans = self._possible_spans(job)
        required = None
        if job.locality_level and job.locality_required:
            limit = self.instance.level_of_name(job.locality_level)
            inside = [s for s in spans if s <= limit]
            if not inside:
                return None  # e.g. a CPU-only job required inside one NVLink domain
            if inside[-1] != spans[-1]:
                required = inside[-1]
        out: list[_SpanLevel] = []
        for i, s in enumerate(spans[:-1]):
            gain = self.span_cost(job, spans[i + 1]) - self.span_cost(job, s)
            if gain <= 0 and s != required:
                continue
            groups_any, groups_all = self._groups(j, job, plan, s)
            if len(groups_any) == 1 and groups_all:
                mode = "always"
            elif groups_all:
                mode = "var"
            else:
                mode = "never"
            if s == required and mode == "never":
                return None
            out.append(_SpanLevel(s, mode, groups=groups_all))
        plan["required"] = required
        return out

    def _groups(
        self, j: int, job: GpuJob, plan: dict[str, Any], level: int
    ) -> tuple[set[Any], list[Any]]:
        """Groups at ``level`` where the job has variables, and those that can hold all of it."""
        inst, W = self.instance, job.workers
        caps, nodes = plan["caps"], plan["nodes"]
        any_groups: set[Any] = set()
        all_groups: list[Any] = []
        if level == SPAN_SAME_GPU:
            for n in nodes:
                for g in plan["gpus"][n]:
                    any_groups.add((n, g))
                    if plan["gcaps"][n][g] >= W and caps[n] >= W:
                        all_groups.append((n, g))
        elif level == 0:
            for n in nodes:
                if job.kind == "whole":
                    for d in self.doms[n]:
                        any_groups.add((n, d))
                        if len(self.ff[n][d]) >= job.gpus * W and caps[n] >= W:
                            all_groups.append((n, d))
                else:
                    per_dom: dict[int, int] = {}
                    for g in plan["gpus"][n]:
                        d = inst.nodes[n].nvlink_domain(g)
                        per_dom[d] = per_dom.get(d, 0) + plan["gcaps"][n][g]
                    for d, room in sorted(per_dom.items()):
                        any_groups.add((n, d))
                        if room >= W and caps[n] >= W:
                            all_groups.append((n, d))
        elif level == 1:
            any_groups.update(nodes)
            all_groups = [n for n in nodes if caps[n] >= W]
        else:
            ids = inst.group_ids[level - 2]
            room: dict[int, int] = {}
            for n in nodes:
                room[int(ids[n])] = room.get(int(ids[n]), 0) + int(caps[n])
            any_groups.update(room)
            all_groups = [k for k, r in sorted(room.items()) if r >= W]
        return any_groups, all_groups

    def _used_milli(self, n: int, g: int) -> list[tuple[int, int]]:
        """Terms of the milli-GPU that new work uses on GPU ``g`` of node ``n``."""
        jobs = self.instance.jobs
        terms = [(self.y[(j, n, g)], jobs[j].gpu_milli) for j in self.frac_gpus[(n, g)]]
        if (n, g) in self.z:
            terms.append((self.z[(n, g)], MILLI))
        return terms

    def _whole_use(self, n: int, d: int, jobs_here: list[int]) -> list[tuple[int, int]]:
        """Terms counting the fully free GPUs of domain ``d`` of node ``n`` given to whole jobs."""
        out = []
        for j in jobs_here:
            if (j, n, d) in self.a:
                out.append((self.a[(j, n, d)], 1))
            else:
                out.append((self.w[(j, n)], self.instance.jobs[j].gpus))
        return out

    def _worker_vars(self, j: int, n: int) -> list[tuple[int, int]]:
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
            return [(v, 1) for _, v in self._worker_vars(j, key)], W
        ids = self.instance.group_ids[level - 2]
        terms = []
        for n in self.job_nodes[j]:
            if int(ids[n]) == key:
                terms.extend((v, 1) for _, v in self._worker_vars(j, n))
        return terms, W

    def _span_var(self, j: int, sl: _SpanLevel) -> None:
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

    def _build_span(self, j: int) -> None:
        """The comm cost of job ``j``: cost(widest span) x - sum of gains x c[j, L]."""
        job, lm, x = self.instance.jobs[j], self.lm, self.x[j]
        spans = self._possible_spans(job)
        self.comm.add(x, self.span_cost(job, spans[-1]))
        prev: int | None = None
        for sl in self.spans[j]:
            nxt = spans[spans.index(sl.level) + 1]
            gain = self.span_cost(job, nxt) - self.span_cost(job, sl.level)
            if sl.mode == "always":
                self.comm.add(x, -gain)
                sl.c = x
                if prev is not None:
                    lm.row([(prev, 1), (x, -1)], None, 0)
                    prev = None  # every wider level holds the job too
            elif sl.mode == "var":
                if sl.c < 0:
                    self._span_var(j, sl)
                self.comm.add(sl.c, -gain)
                if prev is not None:
                    # Inside one group of a level => inside one group of the next level.
                    lm.row([(prev, 1), (sl.c, -1)], None, 0)
                prev = sl.c

    def _build_fragmentation(
        self, whole_on: dict[int, list[int]], frac_gpus: dict[tuple[int, int], list[int]]
    ) -> None:
        """Tier 3: the weighted unusable free milli-GPU of every node, linearised exactly."""
        inst, cl, lm = self.instance, self.cluster, self.lm
        var_gpus_of: dict[int, list[int]] = {}
        for n, g in sorted(frac_gpus):
            var_gpus_of.setdefault(n, []).append(g)
        for n, g in sorted(frac_gpus):
            free0 = int(cl.free0[cl.gpu_offset[n] + g])
            fv = self.fv[(n, g)] = lm.var(0, free0, "fv")
            lm.row([(fv, 1)] + self._used_milli(n, g), free0, free0)
        for n, node in enumerate(inst.nodes):
            start = cl.gpu_offset[n]
            var_gpus = var_gpus_of.get(n, [])
            var_set = set(var_gpus)
            count_doms = [d for d in self.doms[n] if (n, d) in self.count_domains]
            count_set = {g for d in count_doms for g in self.ff[n][d]}
            const_free = [
                int(cl.free0[start + g])
                for g in range(node.gpu_count)
                if g not in var_set and g not in count_set
            ]
            if not var_gpus and not count_doms:
                self.frag.constant += self._const_node_frag(const_free)
                continue
            const_full = sum(1 for f in const_free if f == MILLI)
            const_partial = sum(f for f in const_free if 0 < f < MILLI)
            capacity = sum(len(self.ff[n][d]) for d in count_doms)
            use = [t for d in count_doms for t in self._whole_use(n, d, whole_on.get(n, []))]
            es = []
            for g in var_gpus:
                if int(cl.free0[start + g]) == MILLI:
                    fv = self.fv[(n, g)]
                    e = self.e[(n, g)] = lm.var(0, 1, "e")
                    lm.row([(fv, 1), (e, -MILLI)], 0, None)  # e = 1 => fully free
                    lm.row([(fv, 1), (e, -1)], None, MILLI - 1)  # fully free => e = 1
                    es.append(e)
            # partial = const_partial + sum(fv) - 1000 sum(e);  F = free whole GPUs
            partial: list[tuple[int, int]] = [(self.fv[(n, g)], 1) for g in var_gpus]
            partial += [(e, -MILLI) for e in es]
            f_const = const_full + capacity
            f_terms: list[tuple[int, int]] = [(e, 1) for e in es] + [(v, -c) for v, c in use]
            f_lo, f_hi = const_full, const_full + capacity + len(es)
            for k, weight in self.whole_classes:
                self.frag.constant += weight * const_partial
                for v, c in partial:
                    self.frag.add(v, weight * c)
                if k <= 1 or f_lo >= k:
                    continue  # F < k never holds with F >= k, and F < 1 means F = 0
                if not f_terms or f_hi < k:
                    # F < k always (or F constant): 1000 * F counts directly.
                    if f_hi < k or f_const < k:
                        self.frag.constant += weight * MILLI * f_const
                        for v, c in f_terms:
                            self.frag.add(v, weight * MILLI * c)
                    continue
                if n not in self.F:
                    F = self.F[n] = lm.var(f_lo, f_hi, "F")
                    lm.row([(F, 1)] + [(v, -c) for v, c in f_terms], f_const, f_const)
                F = self.F[n]
                h, q = lm.var(0, 1, "h"), lm.var(0, k - 1, "q")
                self.hq[(n, k)] = (h, q)
                lm.row([(F, 1), (h, k)], k, None)  # h = 0 => F >= k
                lm.row([(F, 1), (h, f_hi - k + 1)], None, f_hi)  # h = 1 => F <= k - 1
                lm.row([(q, 1), (h, -(k - 1))], None, 0)  # q <= (k-1) h
                lm.row([(q, 1), (F, -1)], None, 0)  # q <= F
                lm.row([(q, 1), (F, -1), (h, -f_hi)], -f_hi, None)  # q >= F - F_max (1 - h)
                self.frag.add(q, weight * MILLI)
            for fm, weight in self.frac_classes:
                self.frag.constant += weight * sum(f for f in const_free if f < fm)
                for g in var_gpus:
                    fv = self.fv[(n, g)]
                    free0 = int(cl.free0[start + g])
                    if free0 < fm:
                        self.frag.add(fv, weight)  # always below the class's demand
                        continue
                    t, r = lm.var(0, 1, "t"), lm.var(0, fm - 1, "r")
                    self.t[(n, g, fm)] = (t, r)
                    lm.row([(fv, 1), (t, fm)], fm, None)  # t = 0 => fv >= fm
                    lm.row([(fv, 1), (t, free0 - fm + 1)], None, free0)  # t = 1 => fv < fm
                    lm.row([(r, 1), (t, -(fm - 1))], None, 0)  # r <= (fm-1) t
                    lm.row([(r, 1), (fv, -1)], None, 0)  # r <= fv
                    lm.row([(r, 1), (fv, -1), (t, -free0)], -free0, None)  # r >= fv - free0 (1-t)
                    self.frag.add(r, weight)

    def _const_node_frag(self, free: list[int]) -> int:
        """check.node_fragmentation_milli of a node whose free capacity cannot change."""
        full = sum(1 for f in free if f == MILLI)
        partial = sum(f for f in free if 0 < f < MILLI)
        total = 0
        for k, weight in self.whole_classes:
            total += weight * (partial + (MILLI * full if full < k else 0))
        for fm, weight in self.frac_classes:
            total += weight * sum(f for f in free if f < fm)
        return total

    # --- evaluation -------------------------------------------------------------------------
    def terms(self, values: Values) -> dict[str, float]:
        """The tiers at ``values``, in the checker's units and order (GPUs, CPU-only workers,
        cost units, GPUs)."""
        out = {"placed_gpu_weighted": self.tier1.value(values) / MILLI}
        if self.queue_priority is not None:
            out["queue_priority_gpu"] = self.qtier.value(values) / MILLI
        if self.has_cpu_tier:
            out[CPU_TIER] = self.cpu_tier.value(values)
        if self.reopt:
            out["disruption_cost"] = self.disrupt.value(values)
        out["comm_cost"] = self.comm.value(values)
        out["fragmentation"] = self.frag.value(values) / self.frag_divisor
        if "topology_fit" in self.layers:
            out["topology_fit"] = self.fit.value(values)
        return out

    # --- decoding ---------------------------------------------------------------------------
    def decode(self, values: Values) -> GpuSolution:
        """The placement the counts ``values`` describe.

        Per NVLink domain, the GPUs given to whole workers (z = 1, or the first ones of a
        count domain) are handed out job by job, a[j, n, d] each; a job's GPUs on a node are
        then cut into its w[j, n] workers, ``gpus`` each (a worker may straddle domains).
        A fractional job's y[j, g] workers run on GPU g.
        """
        inst = self.instance
        val = [int(round(v)) for v in values]
        pools: dict[tuple[int, int], list[int]] = {}
        for n, ff in enumerate(self.ff):
            for d, gpus in ff.items():
                if (n, d) in self.count_domains:
                    pools[(n, d)] = list(gpus)
                else:
                    z = self.z
                    pools[(n, d)] = [g for g in gpus if (n, g) in z and val[z[(n, g)]] == 1]
        taken: dict[tuple[int, int], int] = {}
        placements: dict[int, tuple[WorkerPlacement, ...]] = dict(self.fixed)
        kept = {j for j, k in self.keep.items() if val[k] == 1}
        for j in sorted(kept):
            # A kept job stays exactly where it runs; its GPUs leave the pools first (the
            # keep rows put them among the whole-GPU ones: z = 1 or a count domain).
            job = inst.jobs[j]
            placements[j] = job.current
            if job.kind == "whole":
                for w in job.current:
                    for g in w.gpus:
                        pool = pools[(w.node, inst.nodes[w.node].nvlink_domain(g))]
                        pool.remove(g)
        for j in sorted(self.x):
            if val[self.x[j]] != 1 or j in kept:
                continue
            job = inst.jobs[j]
            workers: list[WorkerPlacement] = []
            for n in self.job_nodes[j]:
                if job.kind == "fractional":
                    for g in self.job_gpus[(j, n)]:
                        workers.extend([WorkerPlacement(n, (g,))] * val[self.y[(j, n, g)]])
                    continue
                count = val[self.w[(j, n)]]
                if count <= 0:
                    continue
                if job.kind == "cpu":
                    workers.extend([WorkerPlacement(n, ())] * count)
                    continue
                gpus: list[int] = []
                for d in self.doms[n]:
                    want = val[self.a[(j, n, d)]] if (j, n, d) in self.a else job.gpus * count
                    pos = taken.get((n, d), 0)
                    gpus.extend(pools[(n, d)][pos : pos + want])
                    taken[(n, d)] = pos + want
                for k in range(count):
                    share = tuple(gpus[k * job.gpus : (k + 1) * job.gpus])
                    workers.append(WorkerPlacement(n, share))
            placements[j] = tuple(workers)
        return GpuSolution(placements)

    # --- hints --------------------------------------------------------------------------------
    def canonical(self, solution: GpuSolution) -> GpuSolution:
        """``solution`` with identical GPUs renumbered so the symmetry-breaking rows hold."""
        if not self.sym_groups:
            return solution
        inst = self.instance
        used: dict[tuple[int, int], int] = {}
        for j, workers in solution.placements.items():
            if j in self.fixed:
                continue  # already in the cluster state
            job = inst.jobs[j]
            for w in workers:
                for g in w.gpus:
                    add = MILLI if job.kind == "whole" else job.gpu_milli
                    used[(w.node, g)] = used.get((w.node, g), 0) + add
        remap: dict[tuple[int, int], int] = {}
        for n, gpus in self.sym_groups:
            # Most used first: final free milli-GPU ascending along the group.
            order = sorted(gpus, key=lambda g, n=n: -used.get((n, g), 0))
            for new, old in zip(gpus, order, strict=True):
                if new != old:
                    remap[(n, old)] = new
        if not remap:
            return solution
        return GpuSolution(
            {
                j: workers
                if j in self.fixed
                else tuple(
                    WorkerPlacement(w.node, tuple(remap.get((w.node, g), g) for g in w.gpus))
                    for w in workers
                )
                for j, workers in solution.placements.items()
            }
        )

    def values_from_solution(self, solution: GpuSolution | None) -> list[int] | None:
        """A complete assignment of every model variable describing ``solution``.

        Used as the CP-SAT hint / MILP warm start and to normalise a tier's best solution.
        Auxiliary variables get their exact values (maximal span indicators, exact
        fragmentation terms), so the model's objectives equal the checker's. Returns None
        when the solution cannot be expressed (a node outside a job's candidates, ...).
        """
        if solution is None:
            return None
        inst, cl = self.instance, self.cluster
        sol = self.canonical(solution)
        val = [0] * self.lm.num_vars
        whole_gpu: set[tuple[int, int]] = set()
        frac_load: dict[tuple[int, int], int] = {}
        if any(sol.placements.get(j) != workers for j, workers in self.fixed.items()):
            return None  # a fixed job moved: not this model's solution
        try:
            for j, workers in sol.placements.items():
                if j in self.fixed:
                    continue
                job = inst.jobs[j]
                val[self.x[j]] = 1
                for wp in workers:
                    n = wp.node
                    if job.kind == "fractional":
                        (g,) = wp.gpus
                        val[self.y[(j, n, g)]] += 1
                        frac_load[(n, g)] = frac_load.get((n, g), 0) + job.gpu_milli
                        continue
                    val[self.w[(j, n)]] += 1
                    for g in wp.gpus:
                        whole_gpu.add((n, g))
                        d = inst.nodes[n].nvlink_domain(g)
                        if (j, n, d) in self.a:
                            val[self.a[(j, n, d)]] += 1
                spots = [(wp.node, tuple(wp.gpus)) for wp in workers]
                span = span_level(inst, job.kind, spots)
                for sl in self.spans.get(j, []):
                    if sl.mode != "var" or sl.c < 0:
                        continue
                    key = self._group_key(job, sl.level, spots) if span <= sl.level else None
                    if key is not None and key in sl.u:
                        val[sl.c] = 1
                        val[sl.u[key]] = 1
                if j in self.s:
                    val[self.s[j]] = len(workers)
                if j in self.b:
                    val[self.b[j][len(workers) - job.min_workers]] = 1
            if self.reopt:
                self._reopt_values(sol, val)
        except (KeyError, ValueError):
            return None
        for (j, key), r in self.rk.items():
            workers = sol.placements.get(j, ())
            val[r] = int(any(int(inst.group_ids[0][w.node]) == key for w in workers))
        for (n, g), z in self.z.items():
            val[z] = 1 if (n, g) in whole_gpu else 0
        for (n, g), fv in self.fv.items():
            k = cl.gpu_offset[n] + g
            f = int(cl.free0[k]) - frac_load.get((n, g), 0) - (MILLI if (n, g) in whole_gpu else 0)
            val[fv] = f
            if (n, g) in self.e:
                val[self.e[(n, g)]] = 1 if f == MILLI else 0
        for (n, g, fm), (t, r) in self.t.items():
            f = val[self.fv[(n, g)]]
            val[t] = 1 if f < fm else 0
            val[r] = f if f < fm else 0
        for n, F in self.F.items():
            node = inst.nodes[n]
            start = cl.gpu_offset[n]
            free = sum(
                1
                for g in range(node.gpu_count)
                if (n, g) not in whole_gpu
                and int(cl.free0[start + g]) - frac_load.get((n, g), 0) == MILLI
            )
            val[F] = free
        for (n, k), (h, q) in self.hq.items():
            f = val[self.F[n]]
            val[h] = 1 if f < k else 0
            val[q] = f if f < k else 0
        return val

    def _reopt_values(self, sol: GpuSolution, val: list[int]) -> None:
        """Keep indicators, preempted and restarted workers of the running jobs in ``sol``."""
        for j, k in self.keep.items():
            job = self.instance.jobs[j]
            now = sol.placements.get(j, ())
            spots = sorted((w.node, tuple(w.gpus)) for w in now)
            kept = bool(now) and spots == sorted((w.node, tuple(w.gpus)) for w in job.current)
            val[k] = int(kept)
            cur = len(job.current)
            if j in self.pv:
                val[self.pv[j]] = max(0, cur - len(now))
                val[self.gv[j]] = int(len(now) >= cur)
            if j in self.mv:
                val[self.mv[j]] = 0 if kept else min(cur, len(now))

    def _build_reopt(self) -> None:
        """The rows and the disruption objective of running work, queues and the budget.

        Per running job j with cur current workers: keep k_j <= x_j; k_j = 1 forces its
        current counts (per node, NVLink domain, shared GPU) and its current GPUs among the
        whole-GPU ones, so that with the gang row the job is exactly where it runs. Preempted
        workers p_j = cur - size (at least, for an elastic job), restarted workers
        m_j = cur (x_j - k_j) (at least min(cur, size) - ... for an elastic one); the policy
        lets p_j > 0 only when an allowed preemptor has a worker on one of j's nodes.
        """
        inst, lm = self.instance, self.lm
        miss = [j for j in inst.running_jobs if j not in self.x]
        if miss:
            raise ValueError(f"running job {inst.jobs[miss[0]].name!r} has no variables")
        p_of: dict[int, tuple[list[tuple[int, int]], int]] = {}
        m_of: dict[int, tuple[list[tuple[int, int]], int]] = {}
        for j in inst.running_jobs:
            job = inst.jobs[j]
            cur = len(job.current)
            x = self.x[j]
            k = self.keep[j] = lm.var(0, 1, "k")
            lm.row([(k, 1), (x, -1)], None, 0)
            if job.kind == "fractional":
                for (n, g), c in Counter((w.node, w.gpus[0]) for w in job.current).items():
                    lm.row([(self.y[(j, n, g)], 1), (k, -c)], 0, None)
            else:
                for n, c in Counter(w.node for w in job.current).items():
                    lm.row([(self.w[(j, n)], 1), (k, -c)], 0, None)
            if job.kind == "whole":
                node_of = self.instance.nodes
                doms = Counter(
                    (w.node, node_of[w.node].nvlink_domain(g)) for w in job.current for g in w.gpus
                )
                for (n, d), c in doms.items():
                    if (j, n, d) in self.a:
                        lm.row([(self.a[(j, n, d)], 1), (k, -c)], 0, None)
                for w in job.current:
                    for g in w.gpus:
                        if (w.node, g) in self.z:
                            lm.row([(self.z[(w.node, g)], 1), (k, -1)], 0, None)
            if job.elastic:
                size = self.s[j]
                # Kept => the current size (the count rows give at least it).
                lm.row([(size, 1), (k, job.workers - cur)], None, job.workers)
                # p = max(0, cur - size) exactly, with g = 1 iff size >= cur.
                p = self.pv[j] = lm.var(0, cur, "p")
                g = self.gv[j] = lm.var(0, 1, "g")
                lm.row([(p, 1), (size, 1)], cur, None)  # p >= cur - size
                lm.row([(p, 1), (size, 1), (g, -(job.workers - cur))], None, cur)
                lm.row([(p, 1), (g, cur)], None, cur)  # g = 1 => p = 0
                # m = (x - k)(cur - p) exactly: restarted workers when moved, else 0.
                m = self.mv[j] = lm.var(0, cur, "m")
                lm.row([(m, 1), (x, -cur), (k, cur), (p, 1)], 0, None)  # m >= cur(x-k) - p
                lm.row([(m, 1), (p, 1)], None, cur)  # m <= cur - p
                lm.row([(m, 1), (x, -cur), (k, cur)], None, 0)  # m <= cur (x - k)
                p_of[j], m_of[j] = ([(p, 1)], 0), ([(m, 1)], 0)
            else:
                p_of[j] = ([(x, -cur)], cur)
                m_of[j] = ([(x, cur), (k, -cur)], 0)
            terms, const = p_of[j]
            for v, c in terms:
                self.disrupt.add(v, c * job.preemption_cost)
            self.disrupt.constant += const * job.preemption_cost
            for v, c in m_of[j][0]:
                self.disrupt.add(v, c * job.migration_cost)
            # The policy: preempted workers only where an allowed preemptor lands.
            nodes = sorted({w.node for w in job.current})
            room: list[tuple[int, int]] = []
            for i in self.x:
                if not inst.jobs[i].running and preemption_rule(inst, j, i):
                    for n in nodes:
                        room.extend((v, -cur) for _, v in self._worker_vars(i, n))
            lm.row(terms + room, None, -const)
        # Queues: at most max(guarantee + borrowing limit, current use); under reclaim, a
        # borrowing queue keeps at least its guarantee.
        if inst.queues:
            before = queue_usage_before(inst)
            use: dict[str, list[tuple[int, int]]] = {q.name: [] for q in inst.queues}
            for j, x in self.x.items():
                job = inst.jobs[j]
                if job.queue:
                    if j in self.s:
                        use[job.queue].append((self.s[j], job.milli_per_worker))
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
        if budget.max_disruption_cost is not None and self.keep:
            cost = list(self.disrupt.terms.items())
            lm.row(cost, None, budget.max_disruption_cost - self.disrupt.constant)

    def _group_key(self, job: GpuJob, level: int, spots: list[tuple[int, tuple[int, ...]]]) -> Any:
        """The group at ``level`` holding every worker of a placed job (its span is <= level)."""
        n = spots[0][0]
        if level == SPAN_SAME_GPU:
            return (n, spots[0][1][0])
        if level == 0:
            return (n, self.instance.nodes[n].nvlink_domain(spots[0][1][0]))
        if level == 1:
            return n
        return int(self.instance.group_ids[level - 2][n])

    def feasible(self, values: Values) -> bool:
        """Whether ``values`` satisfies every row and bound of the model."""
        return not self.lm.violated_rows(values)
