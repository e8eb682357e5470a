"""The integer model of one GPU instance, shared by the two exact encodings (CP-SAT, MILP).

Built once as a :class:`~placement.solver.linear.LinearModel` and translated one-to-one by
:mod:`placement.models.gpu.cpsat` and :mod:`placement.models.gpu.milp`, so both backends solve
exactly the same mathematics (docs/formulations/gpu.md). The model is read in its parts:

* :mod:`.model_rows`: the placement and capacity variables and rows every tier needs
  (aggregated counts per job and node / NVLink domain / GPU), :class:`GpuRows`;
* :mod:`.model_spans`: the span structure (levels, costs, the groups that hold a job);
* :mod:`.model_layers`: what the later tiers add: span indicators of the communication
  cost, the exact linearisation of the fragmentation measure of
  :func:`placement.models.gpu.check.node_fragmentation_milli`, the topology fit;
* :mod:`.model_reopt`: the running work's keep, preemption and migration rows;
* here, :class:`GpuModel`: the tiers' layers on demand, their values, the decoding of counts
  into a placement (:meth:`GpuModel.decode`) and a hint from a solution
  (:meth:`GpuModel.values_from_solution`).
"""

from __future__ import annotations

from placement.models.gpu.check import CPU_TIER, span_level
from placement.models.gpu.instance import MILLI, GpuSolution, WorkerPlacement
from placement.models.gpu.model_layers import build_fragmentation, build_span, build_topology_fit
from placement.models.gpu.model_reopt import build_reopt, reopt_values
from placement.models.gpu.model_rows import GpuRows
from placement.models.gpu.model_spans import group_key
from placement.solver.linear import Values


class GpuModel(GpuRows):
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

    def _build(self, candidates: list[list[int]] | None) -> None:
        """The placement and capacity rows, then the running work's rows."""
        super()._build(candidates)
        if self.reopt:
            build_reopt(self)

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
                build_span(self, j)
        elif tier == "fragmentation":
            build_fragmentation(self, self.whole_on, self.frac_gpus)
        elif tier == "topology_fit":
            build_topology_fit(self)
        return True

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
                    key = group_key(inst, job, sl.level, spots) if span <= sl.level else None
                    if key is not None and key in sl.u:
                        val[sl.c] = 1
                        val[sl.u[key]] = 1
                if j in self.s:
                    val[self.s[j]] = len(workers)
                if j in self.b:
                    val[self.b[j][len(workers) - job.min_workers]] = 1
            if self.reopt:
                reopt_values(self, sol, val)
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

    def feasible(self, values: Values) -> bool:
        """Whether ``values`` satisfies every row and bound of the model."""
        return not self.lm.violated_rows(values)
