"""Greedy heuristics for topology-aware GPU allocation: best fit (the fallback) and FGD.

Neither calls a solver. Both place jobs one at a time in :func:`job_order` (priority first,
then the largest gang demand), each gang all or nothing, and both respect everything
:mod:`.check` checks. They differ in where a worker goes:

* :func:`best_fit` -- topology-aware best fit. A gang goes to the tightest group that can
  hold all of it (one NVLink domain, one node, one rack, ...), the fullest such group first;
  inside a node whole GPUs come from the fullest NVLink domain that can hold them, so empty
  domains stay whole for others; a fractional worker takes the GPU with the least free
  milli-GPU that fits.
* :func:`fgd` -- Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation:
  Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023):
  each worker goes to the node / GPU whose fragmentation, measured against the expected job
  mix, grows least. Gangs keep the topology-aware scope choice of best fit (FGD itself is
  topology-blind, and communication cost outranks fragmentation in the objective).

The fragmentation measure is re-implemented here on purpose (the checker must stay
independent of every heuristic); it is the one of ``check.node_fragmentation_milli``.

:class:`ClusterState` (numpy arrays of what is free, with an undo journal) and
:meth:`ClusterState.job_caps` are shared with :mod:`.explain`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from placement.models.gpu.instance import (
    MILLI,
    SPAN_SAME_GPU,
    GpuInstance,
    GpuJob,
    GpuSolution,
    WorkerPlacement,
)
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions

BIG = 1 << 40
"""Larger than any count or milli-GPU sum in an instance."""
_I64 = np.int64


def _excl_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a), dtype=_I64)
    if len(a) > 1:
        np.cumsum(a[:-1], out=out[1:])
    return out


def _segment(
    ufunc: np.ufunc, values: np.ndarray, starts: np.ndarray, empty: np.ndarray, identity: int
) -> np.ndarray:
    """``ufunc`` over contiguous segments starting at ``starts`` (empty ones -> identity)."""
    if len(starts) == 0:
        return np.zeros(0, dtype=_I64)
    # The sentinel lets trailing empty segments start at len(values); reduceat returns
    # values[start] for an empty segment, so those are overwritten with the identity.
    ext = np.concatenate([values.astype(_I64, copy=False), np.array([identity], dtype=_I64)])
    out = ufunc.reduceat(ext, starts)
    if empty.any():
        out[empty] = identity
    return out


@dataclass
class View:
    """A set of nodes (ascending) with their GPUs and NVLink domains laid out contiguously."""

    nodes: np.ndarray
    """Global node indices."""
    gpus: np.ndarray | slice
    """Global GPU indices, node by node (a slice for the whole cluster)."""
    gpu_lnode: np.ndarray
    """Position in ``nodes`` of each GPU's node."""
    node_start: np.ndarray
    """Position of each node's first GPU in the view."""
    node_empty: np.ndarray
    """Nodes without GPUs."""
    doms: np.ndarray
    """Global NVLink-domain indices, node by node."""
    dom_start: np.ndarray
    """Position of each domain's first GPU in the view."""
    dom_lnode: np.ndarray
    """Position in ``nodes`` of each domain's node."""
    node_dom_start: np.ndarray
    """Position of each node's first domain in ``doms``."""


@dataclass
class Caps:
    """How many workers of one job fit where, in a view (every count clipped to the gang size)."""

    view: View
    allowed: np.ndarray
    """Per view node: GPU type (and, for whole GPUs, GPU memory) allowed."""
    units: np.ndarray | None
    """Per view GPU, for a fractional job: workers that fit on it. None otherwise."""
    node_units: np.ndarray | None
    """Per view node: entirely free allowed GPUs (whole job) or the sum of ``units``
    (fractional job). None for a CPU-only job."""
    node_cap: np.ndarray
    """Per view node: workers that fit (GPUs, CPU and memory together)."""
    res_cap: np.ndarray
    """Per view node: workers that the node's free CPU and memory allow."""


class ClusterState:
    """What is free in the cluster, as flat numpy arrays, with an undo journal.

    Parameters
    ----------
    instance:
        The instance.
    empty:
        Start from an empty cluster (no running work) instead of the instance's usage.
    """

    def __init__(self, instance: GpuInstance, *, empty: bool = False) -> None:
        self.instance = instance
        nodes = instance.nodes
        n = len(nodes)
        self.n_nodes = n
        counts = np.fromiter((nd.gpu_count for nd in nodes), dtype=_I64, count=n)
        self.gpu_count = counts
        self.node_gpu_start = _excl_cumsum(counts)
        total = int(counts.sum())
        self.n_gpus = total
        self.gpu_node = np.repeat(np.arange(n, dtype=_I64), counts)
        local = np.arange(total, dtype=_I64) - self.node_gpu_start[self.gpu_node]
        # nvlink_domain_size 0 means one domain per node.
        dsize = np.fromiter(
            (
                nd.nvlink_domain_size if nd.nvlink_domain_size > 0 else max(nd.gpu_count, 1)
                for nd in nodes
            ),
            dtype=_I64,
            count=n,
        )
        self.dom_size = dsize
        ndom = (counts + dsize - 1) // dsize
        self.node_dom_count = ndom
        self.node_dom_start = _excl_cumsum(ndom)
        self.dom_node = np.repeat(np.arange(n, dtype=_I64), ndom)
        n_doms = int(ndom.sum())
        self.gpu_dom = self.node_dom_start[self.gpu_node] + local // dsize[self.gpu_node]
        self.dom_gpu_start = (
            self.node_gpu_start[self.dom_node]
            + (np.arange(n_doms, dtype=_I64) - self.node_dom_start[self.dom_node])
            * dsize[self.dom_node]
        )
        self.node_gpu_mem = np.fromiter((nd.gpu_memory_mib for nd in nodes), dtype=_I64, count=n)
        self.gpu_mem_cap = self.node_gpu_mem[self.gpu_node]
        self.type_names = sorted({nd.gpu_type for nd in nodes})
        tid = {t: i for i, t in enumerate(self.type_names)}
        self.node_type = np.fromiter((tid[nd.gpu_type] for nd in nodes), dtype=_I64, count=n)
        self.group_ids = instance.group_ids
        self.n_groups = [int(g.max()) + 1 if g.size else 0 for g in self.group_ids]
        cpu = np.fromiter((nd.cpu_milli for nd in nodes), dtype=_I64, count=n)
        mem = np.fromiter((nd.memory_mib for nd in nodes), dtype=_I64, count=n)
        if empty:
            self.free_milli = np.full(total, MILLI, dtype=_I64)
            self.gpu_mem_used = np.zeros(total, dtype=_I64)
            self.cpu_free = cpu.copy()
            self.mem_free = mem.copy()
        else:
            self.free_milli = MILLI - np.fromiter(
                _per_gpu(nodes, "gpu_milli_used"), dtype=_I64, count=total
            )
            self.gpu_mem_used = np.fromiter(
                _per_gpu(nodes, "gpu_memory_mib_used"), dtype=_I64, count=total
            )
            self.cpu_free = cpu - np.fromiter(
                (nd.cpu_milli_used for nd in nodes), dtype=_I64, count=n
            )
            self.mem_free = mem - np.fromiter(
                (nd.memory_mib_used for nd in nodes), dtype=_I64, count=n
            )
        # Density (density.py): pods per node and the nodes with a density model.
        self.pods = np.fromiter((0 if empty else nd.pods_used for nd in nodes), dtype=_I64, count=n)
        self.dense = np.fromiter((bool(nd.density_pieces) for nd in nodes), dtype=bool, count=n)
        # Counters kept up to date by every change (so whole-GPU jobs need no per-GPU pass):
        # entirely free GPUs (all milli and no memory used) per node and per NVLink domain,
        # and GPUs with all milli free per node (the fragmentation measure's count).
        whole = ((self.free_milli == MILLI) & (self.gpu_mem_used == 0)).astype(_I64)
        self.node_whole_free = np.bincount(self.gpu_node, weights=whole, minlength=n).astype(_I64)
        self.dom_whole_free = np.bincount(self.gpu_dom, weights=whole, minlength=n_doms).astype(
            _I64
        )
        full = (self.free_milli == MILLI).astype(_I64)
        self.node_full = np.bincount(self.gpu_node, weights=full, minlength=n).astype(_I64)
        self._gpu_node = self.gpu_node.tolist()
        self._gpu_dom = self.gpu_dom.tolist()
        self.journal: list[tuple[int, int, int, int]] = []
        self._allowed: dict[tuple[str, ...], np.ndarray] = {}
        self.full_view = View(
            nodes=np.arange(n, dtype=_I64),
            gpus=slice(None),
            gpu_lnode=self.gpu_node,
            node_start=self.node_gpu_start,
            node_empty=counts == 0,
            doms=np.arange(n_doms, dtype=_I64),
            dom_start=self.dom_gpu_start,
            dom_lnode=self.dom_node,
            node_dom_start=self.node_dom_start,
        )

    # --- views and capacities ---------------------------------------------------------------

    def view(self, nodes: np.ndarray) -> View:
        """A view of some nodes (sorted ascending here)."""
        nodes = np.unique(np.asarray(nodes, dtype=_I64))
        if len(nodes) == self.n_nodes:
            return self.full_view
        cnt = self.gpu_count[nodes]
        lstart = _excl_cumsum(cnt)
        k = len(nodes)
        gpu_lnode = np.repeat(np.arange(k, dtype=_I64), cnt)
        gpus = (
            self.node_gpu_start[nodes][gpu_lnode]
            + np.arange(int(cnt.sum()), dtype=_I64)
            - lstart[gpu_lnode]
        )
        dcnt = self.node_dom_count[nodes]
        ldstart = _excl_cumsum(dcnt)
        dom_lnode = np.repeat(np.arange(k, dtype=_I64), dcnt)
        doms = (
            self.node_dom_start[nodes][dom_lnode]
            + np.arange(int(dcnt.sum()), dtype=_I64)
            - ldstart[dom_lnode]
        )
        dom_start = (
            lstart[dom_lnode] + self.dom_gpu_start[doms] - self.node_gpu_start[nodes][dom_lnode]
        )
        return View(nodes, gpus, gpu_lnode, lstart, cnt == 0, doms, dom_start, dom_lnode, ldstart)

    def allowed_nodes(self, job: GpuJob) -> np.ndarray:
        """Per node: whether the job's GPU types allow it (every node for a CPU-only job)."""
        if job.kind == "cpu" or not job.gpu_types:
            return np.ones(self.n_nodes, dtype=bool)
        key = job.gpu_types
        if key not in self._allowed:
            ids = [i for i, t in enumerate(self.type_names) if t in key]
            self._allowed[key] = np.isin(self.node_type, ids)
        return self._allowed[key]

    def job_caps(self, job: GpuJob, view: View | None = None) -> Caps:
        """Workers of ``job`` that fit on each node of ``view`` (default: the whole cluster)."""
        view = view or self.full_view
        w = job.workers
        nodes = view.nodes
        res = np.full(len(nodes), w, dtype=_I64)
        if job.cpu_milli > 0:
            res = np.minimum(res, self.cpu_free[nodes] // job.cpu_milli)
        if job.memory_mib > 0:
            res = np.minimum(res, self.mem_free[nodes] // job.memory_mib)
        for i in np.flatnonzero(self.dense[nodes]).tolist():
            res[i] = self._density_cap(int(nodes[i]), job, int(res[i]))
        res = np.maximum(res, 0)
        allowed = self.allowed_nodes(job)[nodes]
        if job.kind == "cpu":
            return Caps(view, allowed, None, None, res, res)
        if job.kind == "whole":
            allowed = allowed & (self.node_gpu_mem[nodes] >= job.gpu_memory_mib)
            node_units = np.where(allowed, self.node_whole_free[nodes], 0)
            cap = np.minimum(node_units // job.gpus, res)
            return Caps(view, allowed, None, node_units, cap, res)
        f = self.free_milli[view.gpus]
        units = f // job.gpu_milli
        if job.gpu_memory_mib > 0:
            room = self.gpu_mem_cap[view.gpus] - self.gpu_mem_used[view.gpus]
            units = np.minimum(units, room // job.gpu_memory_mib)
        units = np.where(allowed[view.gpu_lnode], np.clip(units, 0, w), 0)
        node_units = _segment(np.add, units, view.node_start, view.node_empty, 0)
        return Caps(view, allowed, units, node_units, np.minimum(node_units, res), res)

    def _density_cap(self, n: int, job: GpuJob, most: int) -> int:
        """The most workers of ``job``, up to ``most``, that node ``n``'s density model
        admits now."""
        node = self.instance.nodes[n]
        used = node.cpu_milli - int(self.cpu_free[n])
        return node.density_room(used, int(self.pods[n]), job.cpu_milli, most)

    def node_fits(self, n: int, job: GpuJob) -> bool:
        """Whether one more worker of ``job`` fits node ``n``'s free CPU and memory (and its
        density model: the CPU it delivers with one more pod)."""
        c = job.cpu_milli
        if self.cpu_free[n] < c or self.mem_free[n] < job.memory_mib:
            return False
        if not self.dense[n]:
            return True
        node = self.instance.nodes[n]
        used = node.cpu_milli - int(self.cpu_free[n]) + c
        return node.cpu_fits(used, int(self.pods[n]) + 1)

    def dom_workers(self, job: GpuJob, caps: Caps) -> np.ndarray:
        """Per view NVLink domain: workers of ``job`` that fit in it alone."""
        view = caps.view
        if job.kind == "cpu" or len(view.dom_start) == 0:
            return np.zeros(len(view.doms), dtype=_I64)
        if job.kind == "whole":
            free = np.where(caps.allowed[view.dom_lnode], self.dom_whole_free[view.doms], 0)
            dom_units = free // job.gpus
        else:
            dom_units = np.add.reduceat(caps.units, view.dom_start)
        return np.minimum(dom_units, caps.res_cap[view.dom_lnode])

    def node_spans(self, job: GpuJob, caps: Caps) -> np.ndarray:
        """Per view node: the tightest span level of the whole gang placed on that node alone."""
        view = caps.view
        k = len(view.nodes)
        w = job.workers
        if job.kind == "cpu":
            return np.ones(k, dtype=_I64)
        if job.kind == "whole" and w * job.gpus == 1:
            return np.full(k, SPAN_SAME_GPU, dtype=_I64)
        no_dom = view.node_dom_start >= len(view.doms)
        best_dom = _segment(
            np.maximum,
            self.dom_workers(job, caps),
            view.node_dom_start,
            view.node_empty | no_dom,
            0,
        )
        spans = np.where(best_dom >= w, 0, 1)
        if job.kind == "fractional":
            best_gpu = _segment(np.maximum, caps.units, view.node_start, view.node_empty, 0)
            spans = np.where(best_gpu >= w, SPAN_SAME_GPU, spans)
        return spans.astype(_I64)

    def full_count(self, view: View) -> np.ndarray:
        """Per view node: GPUs with all 1000 milli free (the fragmentation measure's count)."""
        return self.node_full[view.nodes]

    # --- changes, with an undo journal -----------------------------------------------------

    def take_gpu(self, g: int, milli: int, mem: int) -> None:
        """Use ``milli`` and ``mem`` MiB of global GPU ``g``."""
        f0, m0 = int(self.free_milli[g]), int(self.gpu_mem_used[g])
        self.journal.append((0, g, f0, m0))
        self.free_milli[g] = f0 - milli
        self.gpu_mem_used[g] = m0 + mem
        self._recount(g, f0, m0, f0 - milli, m0 + mem)

    def _recount(self, g: int, f0: int, m0: int, f1: int, m1: int) -> None:
        """Update the counters for GPU ``g`` going from (f0, m0) to (f1, m1) (free milli, MiB)."""
        whole = int(f1 == MILLI and m1 == 0) - int(f0 == MILLI and m0 == 0)
        if whole:
            self.node_whole_free[self._gpu_node[g]] += whole
            self.dom_whole_free[self._gpu_dom[g]] += whole
        full = int(f1 == MILLI) - int(f0 == MILLI)
        if full:
            self.node_full[self._gpu_node[g]] += full

    def take_node(self, n: int, cpu: int, mem: int, pods: int) -> None:
        """Use ``cpu`` milli-cores, ``mem`` MiB and ``pods`` pods of node ``n``."""
        self.journal.append((1, n, int(self.cpu_free[n]), int(self.mem_free[n])))
        self.journal.append((2, n, int(self.pods[n]), 0))
        self.cpu_free[n] -= cpu
        self.mem_free[n] -= mem
        self.pods[n] += pods

    def rollback(self, mark: int) -> None:
        """Undo every change after journal position ``mark``."""
        while len(self.journal) > mark:
            kind, i, a, b = self.journal.pop()
            if kind == 0:
                self._recount(i, int(self.free_milli[i]), int(self.gpu_mem_used[i]), a, b)
                self.free_milli[i], self.gpu_mem_used[i] = a, b
            elif kind == 1:
                self.cpu_free[i], self.mem_free[i] = a, b
            else:
                self.pods[i] = a

    def place_worker(self, job: GpuJob, node: int, gpus: tuple[int, ...]) -> None:
        """Apply one worker of ``job`` on ``node`` using local GPU indices ``gpus``."""
        base = int(self.node_gpu_start[node])
        for g in gpus:
            if job.kind == "whole":
                # As in the checker: a whole GPU is gone, memory included.
                self.take_gpu(
                    base + g,
                    int(self.free_milli[base + g]),
                    int(self.node_gpu_mem[node] - self.gpu_mem_used[base + g]),
                )
            else:
                self.take_gpu(base + g, job.gpu_milli, job.gpu_memory_mib)
        self.take_node(node, job.cpu_milli, job.memory_mib, 1)

    def release_worker(self, job: GpuJob, node: int, gpus: tuple[int, ...]) -> None:
        """Give back what one placed worker of ``job`` uses (journaled, so it can be undone)."""
        base = int(self.node_gpu_start[node])
        for g in gpus:
            if job.kind == "whole":
                # Whole GPUs are only ever placed on entirely free GPUs.
                self.take_gpu(
                    base + g,
                    int(self.free_milli[base + g]) - MILLI,
                    -int(self.gpu_mem_used[base + g]),
                )
            else:
                self.take_gpu(base + g, -job.gpu_milli, -job.gpu_memory_mib)
        self.take_node(node, -job.cpu_milli, -job.memory_mib, -1)

    def apply(self, solution: GpuSolution) -> None:
        """Apply every placement of ``solution`` (assumed feasible)."""
        jobs = self.instance.jobs
        for j, workers in solution.placements.items():
            for w in workers:
                self.place_worker(jobs[j], w.node, tuple(w.gpus))


def _per_gpu(nodes: list, attr: str):
    for nd in nodes:
        values = getattr(nd, attr)
        yield from values if len(values) == nd.gpu_count else (0,) * nd.gpu_count


def required_limit(instance: GpuInstance, job: GpuJob) -> int | None:
    """The level a job must stay inside (one group of it), or None when nothing is required."""
    if not (job.locality_required and job.locality_level):
        return None
    return instance.level_of_name(job.locality_level)


def span_of(instance: GpuInstance, job: GpuJob, workers: list[WorkerPlacement]) -> int:
    """Innermost level holding every GPU of a placed gang, as the checker computes it.

    -1: one shared GPU; ``len(instance.levels)``: several groups of the outermost level.
    """
    nodes = {w.node for w in workers}
    last = len(instance.levels) - 1
    if len(nodes) == 1:
        if job.kind == "cpu":
            return 1
        gpus = {g for w in workers for g in w.gpus}
        if len(gpus) == 1:
            return SPAN_SAME_GPU
        node = instance.nodes[next(iter(nodes))]
        return 0 if len({node.nvlink_domain(g) for g in gpus}) == 1 else 1
    for lv in range(2, last + 1):
        if len({instance.nodes[n].groups[lv - 2] for n in nodes}) == 1:
            return lv
    return last + 1


def job_order(instance: GpuInstance) -> list[int]:
    """Job indices in placement order: priority desc, then the queue's priority desc (the
    objective's ``queue_priority_gpu`` tier), gang GPU demand, size, CPU; index."""
    queue_priority = instance.queue_priorities or [0] * len(instance.jobs)
    return sorted(
        range(len(instance.jobs)),
        key=lambda j: (
            -instance.jobs[j].priority,
            -queue_priority[j],
            -instance.jobs[j].demand_milli,
            -instance.jobs[j].workers,
            -instance.jobs[j].workers * instance.jobs[j].cpu_milli,
            j,
        ),
    )


# -------------------------------------------------------------------------------------------
# Fragmentation (FGD)


class FragTables:
    """Lookup tables of the node fragmentation measure against the expected mix.

    With ``f_g`` the free milli of GPU ``g`` and ``full`` the number of entirely free GPUs of
    a node, the measure is ``sum_g H[f_g] + F[full]`` where ``H`` counts the partly free GPUs
    (unusable by every whole-GPU class) and the slivers too small for each fractional class,
    and ``F`` counts the entirely free GPUs of a node too few for each whole-GPU class.
    """

    def __init__(self, instance: GpuInstance) -> None:
        mix = instance.mix
        whole = [(c.gpus, c.weight) for c in mix if c.gpus > 0]
        frac = [(c.gpu_milli, c.weight) for c in mix if c.gpus <= 0 and c.gpu_milli > 0]
        w_whole = sum(w for _, w in whole)
        f = np.arange(MILLI + 1, dtype=_I64)
        frac_above = np.zeros(MILLI + 1, dtype=_I64)  # weight of fractional classes asking > f
        for m, w in frac:
            frac_above[: min(m, MILLI + 1)] += w
        partial = (f > 0) & (f < MILLI)
        self.h = w_whole * f * partial + f * frac_above
        top = max([nd.gpu_count for nd in instance.nodes] + [0]) + 1
        x = np.arange(top + 1, dtype=_I64)
        whole_above = np.zeros(top + 1, dtype=_I64)  # weight of whole classes asking > x GPUs
        for g, w in whole:
            whole_above[: min(g, top + 1)] += w
        self.full_term = MILLI * x * whole_above

    def whole_delta(self, full: np.ndarray, need: int) -> np.ndarray:
        """Growth of the measure when ``need`` of a node's ``full`` entirely free GPUs are used."""
        after = np.maximum(full - need, 0)
        return self.full_term[after] - self.full_term[full]

    def frac_delta(self, free: np.ndarray, milli: int, full: np.ndarray) -> np.ndarray:
        """Growth of the measure when ``milli`` is taken from GPUs with ``free`` (node ``full``)."""
        after = np.maximum(free - milli, 0)
        delta = self.h[after] - self.h[free]
        was_full = free == MILLI
        if was_full.any():
            f = np.maximum(full - 1, 0)
            delta = delta + np.where(was_full, self.full_term[f] - self.full_term[full], 0)
        return delta


# -------------------------------------------------------------------------------------------
# Placing one job


class _Placer:
    """Places jobs one by one on a :class:`ClusterState` with one policy (best fit or FGD)."""

    def __init__(self, instance: GpuInstance, policy: str) -> None:
        self.instance = instance
        self.policy = policy
        self.state = ClusterState(instance)
        self.frag = FragTables(instance) if policy == "fgd" else None
        self.last = len(instance.levels) - 1

    def run(self, stop: CancellationToken | None = None) -> GpuSolution:
        """Every job in :func:`job_order`, placed or left out; when ``stop`` fires, the jobs
        not yet tried stay unplaced (the placement so far is feasible as it is)."""
        placements: dict[int, tuple[WorkerPlacement, ...]] = {}
        for j in job_order(self.instance):
            if stop is not None and stop.cancelled:
                break
            workers = self.place(self.instance.jobs[j])
            if workers is not None:
                placements[j] = tuple(workers)
        return GpuSolution(placements)

    def place(self, job: GpuJob) -> list[WorkerPlacement] | None:
        """Place every worker of ``job`` or none (tentative placement, rolled back on failure)."""
        st = self.state
        w = job.workers
        limit = required_limit(self.instance, job)
        if limit == 0 and job.kind == "cpu":
            return None  # a CPU-only worker spans the node level, never one NVLink domain
        caps = st.job_caps(job)
        if int(caps.node_cap.sum()) < w:
            return None
        mark = len(st.journal)
        workers = self._single_node(job, caps, limit)
        if workers is None and w > 1 and (limit is None or limit >= 2):
            workers = self._multi_node(job, caps, limit)
        if workers is None or len(workers) != w:
            st.rollback(mark)
            return None
        if limit is not None and span_of(self.instance, job, workers) > limit:
            st.rollback(mark)  # safety net: never hand out a required-locality violation
            return None
        return workers

    # --- scope choice --------------------------------------------------------------------

    def _single_node(
        self, job: GpuJob, caps: Caps, limit: int | None
    ) -> list[WorkerPlacement] | None:
        st = self.state
        w = job.workers
        cand = np.flatnonzero(caps.node_cap >= w)
        if cand.size == 0:
            return None
        spans_all = st.node_spans(job, caps)
        spans = spans_all[cand]
        if limit is not None and limit <= 0:
            keep = spans <= limit
            cand, spans = cand[keep], spans[keep]
            if cand.size == 0:
                return None
        n = int(cand[self._rank_nodes(job, caps, cand, spans, w)[0]])
        return self._fill_node(job, n, w, caps, int(spans_all[n]))

    def _rank_nodes(
        self, job: GpuJob, caps: Caps, cand: np.ndarray, spans: np.ndarray, w: int
    ) -> np.ndarray:
        """Order of ``cand`` (view node positions) for ``w`` workers, best first."""
        st = self.state
        view = caps.view
        keys: list[np.ndarray] = []
        if job.kind == "whole":
            need = w * job.gpus
            left = caps.node_units[cand] - need
            if self.policy == "fgd":
                keys.append(self.frag.whole_delta(st.full_count(view)[cand], need))
            keys.append(left)
        elif job.kind == "fractional":
            f = st.free_milli[view.gpus]
            usable = caps.units >= 1
            best = _segment(
                np.minimum, np.where(usable, f, BIG), view.node_start, view.node_empty, BIG
            )
            total = _segment(np.add, np.where(usable, f, 0), view.node_start, view.node_empty, 0)
            if self.policy == "fgd":
                full = st.full_count(view)
                delta = self.frag.frac_delta(f, job.gpu_milli, full[view.gpu_lnode])
                delta = np.where(usable, delta, BIG)
                keys.append(
                    _segment(np.minimum, delta, view.node_start, view.node_empty, BIG)[cand]
                )
            keys.append(best[cand])
            keys.append(total[cand])
        else:
            # Keep GPU nodes' CPU for GPU work: prefer nodes with the least free GPU capacity.
            nodes = view.nodes[cand]
            gpu_free = _segment(
                np.add, st.free_milli[view.gpus], view.node_start, view.node_empty, 0
            )
            keys.append(gpu_free[cand])
            keys.append(st.cpu_free[nodes] - w * job.cpu_milli)
        # Best fit always prefers the tightest span (one GPU, one NVLink domain, one node).
        # FGD puts it first only where it costs something (traffic or a locality wish):
        # communication cost outranks fragmentation; otherwise it only breaks ties.
        if self.policy == "best_fit" or job.traffic_gb > 0 or job.locality_level:
            keys.insert(0, spans)
        else:
            keys.append(spans)
        keys.append(cand)
        return np.lexsort(keys[::-1])

    def _multi_node(
        self, job: GpuJob, caps: Caps, limit: int | None
    ) -> list[WorkerPlacement] | None:
        st = self.state
        w = job.workers
        cap = caps.node_cap
        top = self.last if limit is None else min(limit, self.last)
        scope = None
        for lv in range(2, top + 1):
            gid = st.group_ids[lv - 2]
            gcap = np.bincount(gid, weights=cap, minlength=st.n_groups[lv - 2])
            ok = gcap >= w
            if ok.any():
                # Best fit among groups: the fullest group that holds the gang.
                g = int(np.argmin(np.where(ok, gcap, np.inf)))
                scope = np.flatnonzero((gid == g) & (cap > 0))
                break
        if scope is None:
            if limit is not None:
                return None
            scope = np.flatnonzero(cap > 0)
        if self.policy == "fgd":
            return self._spread_fgd(job, scope)
        return self._spread_best_fit(job, caps, scope)

    def _spread_best_fit(
        self, job: GpuJob, caps: Caps, scope: np.ndarray
    ) -> list[WorkerPlacement] | None:
        # Fewest nodes: the largest capacities first; the remainder goes to the node whose
        # capacity fits it most tightly (best fit).
        cap = caps.node_cap
        order = sorted(scope.tolist(), key=lambda n: (-int(cap[n]), n))
        rem = job.workers
        alloc: dict[int, int] = {}
        for n in order:
            if rem == 0:
                break
            c = int(cap[n])
            if c <= rem:
                alloc[n] = c
                rem -= c
        if rem > 0:
            rest = [n for n in order if n not in alloc and cap[n] >= rem]
            if not rest:
                return None
            alloc[min(rest, key=lambda n: (int(cap[n]), n))] = rem
        workers: list[WorkerPlacement] = []
        for n in sorted(alloc):
            part = self._fill_node(job, n, alloc[n], caps, 1)
            if part is None:
                return None
            workers.extend(part)
        return workers

    def _spread_fgd(self, job: GpuJob, scope: np.ndarray) -> list[WorkerPlacement] | None:
        st = self.state
        view = st.view(scope)
        one = _OneWorker(job)
        workers: list[WorkerPlacement] = []
        for _ in range(job.workers):
            caps = st.job_caps(one, view)
            cand = np.flatnonzero(caps.node_cap >= 1)
            if cand.size == 0:
                return None
            spans = np.ones(cand.size, dtype=_I64)
            pos = int(cand[self._rank_nodes(one, caps, cand, spans, 1)[0]])
            part = self._fill_node(job, int(view.nodes[pos]), 1, None, 1)
            if part is None:
                return None
            workers.extend(part)
        return workers

    # --- inside one node -----------------------------------------------------------------

    def _fill_node(
        self, job: GpuJob, n: int, count: int, caps: Caps | None, span: int
    ) -> list[WorkerPlacement] | None:
        """Place ``count`` workers of ``job`` on node ``n``; ``span`` is the tightest possible."""
        st = self.state
        if job.kind == "cpu":
            out = []
            for _ in range(count):
                if not st.node_fits(n, job):
                    return None
                st.place_worker(job, n, ())
                out.append(WorkerPlacement(n))
            return out
        if job.kind == "whole":
            return self._fill_whole(job, n, count)
        return self._fill_fractional(
            job, n, count, span if (job.traffic_gb > 0 or job.locality_level) else 1
        )

    def _fill_whole(self, job: GpuJob, n: int, count: int) -> list[WorkerPlacement] | None:
        st = self.state
        node = self.instance.nodes[n]
        if not st.allowed_nodes(job)[n] or node.gpu_memory_mib < job.gpu_memory_mib:
            return None
        s = int(st.node_gpu_start[n])
        cnt = int(st.gpu_count[n])
        free = (
            (st.free_milli[s : s + cnt] == MILLI) & (st.gpu_mem_used[s : s + cnt] == 0)
        ).tolist()
        size = int(st.dom_size[n])
        doms: dict[int, list[int]] = {}
        for g in range(cnt):
            if free[g]:
                doms.setdefault(g // size, []).append(g)
        k = job.gpus
        need = count * k
        chunks: list[list[int]] = []
        fitting = [d for d, gs in doms.items() if len(gs) >= need]
        if fitting:
            # The whole lot in one domain: the fullest domain that holds it (best fit).
            d = min(fitting, key=lambda d: (len(doms[d]), d))
            gs = doms[d][:need]
            chunks = [gs[i * k : (i + 1) * k] for i in range(count)]
        else:
            for _ in range(count):
                fitting = [d for d, gs in doms.items() if len(gs) >= k]
                if fitting:
                    d = min(fitting, key=lambda d: (len(doms[d]), d))
                    chunk = doms[d][:k]
                    doms[d] = doms[d][k:]
                else:
                    # Spread over the fewest domains: the emptiest first.
                    chunk = []
                    for d in sorted(doms, key=lambda d: (-len(doms[d]), d)):
                        take = doms[d][: k - len(chunk)]
                        chunk.extend(take)
                        doms[d] = doms[d][len(take) :]
                        if len(chunk) == k:
                            break
                    if len(chunk) < k:
                        return None
                chunks.append(sorted(chunk))
        out = []
        for chunk in chunks:
            if not st.node_fits(n, job):
                return None
            st.place_worker(job, n, tuple(chunk))
            out.append(WorkerPlacement(n, tuple(chunk)))
        return out

    def _fill_fractional(
        self, job: GpuJob, n: int, count: int, span: int
    ) -> list[WorkerPlacement] | None:
        st = self.state
        if not st.allowed_nodes(job)[n]:
            return None
        s = int(st.node_gpu_start[n])
        cnt = int(st.gpu_count[n])
        size = int(st.dom_size[n])
        m, e = job.gpu_milli, job.gpu_memory_mib
        cap_mem = int(st.node_gpu_mem[n])

        def fits(g: int) -> int:
            free = int(st.free_milli[s + g])
            room = free // m
            if e > 0:
                room = min(room, (cap_mem - int(st.gpu_mem_used[s + g])) // e)
            return max(room, 0)

        allowed = list(range(cnt))
        if span == SPAN_SAME_GPU and count > 1:
            # Keep the gang on one GPU (no traffic leaves it): the fullest GPU that holds it.
            ok = [g for g in allowed if fits(g) >= count]
            if ok:
                allowed = [min(ok, key=lambda g: (int(st.free_milli[s + g]), g))]
        elif span == 0 and count > 1:
            rooms: dict[int, int] = {}
            free_sum: dict[int, int] = {}
            for g in allowed:
                r = fits(g)
                if r > 0:
                    rooms[g // size] = rooms.get(g // size, 0) + r
                    free_sum[g // size] = free_sum.get(g // size, 0) + int(st.free_milli[s + g])
            ok = [d for d, r in rooms.items() if r >= count]
            if ok:
                d = min(ok, key=lambda d: (free_sum[d], d))
                allowed = [g for g in allowed if g // size == d]
        out = []
        for _ in range(count):
            if not st.node_fits(n, job):
                return None
            ok = [g for g in allowed if fits(g) >= 1]
            if not ok:
                return None
            if self.policy == "fgd":
                free = np.array([int(st.free_milli[s + g]) for g in ok], dtype=_I64)
                full = int((st.free_milli[s : s + cnt] == MILLI).sum())
                delta = self.frag.frac_delta(free, m, np.full(len(ok), full, dtype=_I64)).tolist()
                g = min(range(len(ok)), key=lambda i: (delta[i], int(free[i]), ok[i]))
                g = ok[g]
            else:
                g = min(ok, key=lambda g: (int(st.free_milli[s + g]), g))
            st.place_worker(job, n, (g,))
            out.append(WorkerPlacement(n, (g,)))
        return out


class _OneWorker:
    """A job seen as a single worker (capacities for the next worker of a gang)."""

    def __init__(self, job: GpuJob) -> None:
        self._job = job
        self.workers = 1

    def __getattr__(self, name: str):
        return getattr(self._job, name)


# -------------------------------------------------------------------------------------------
# Public API


def best_fit(instance: GpuInstance, stop: CancellationToken | None = None) -> GpuSolution:
    """Topology-aware best fit: tightest group for each gang, fullest domain / GPU that fits.

    Parameters
    ----------
    instance:
        The instance.

    Returns
    -------
    stop:
        When it fires, the jobs not yet tried stay unplaced (a deadline).

    Returns
    -------
    GpuSolution
        A feasible solution (per :func:`placement.models.gpu.check.check`); deterministic.
    """
    return _Placer(instance, "best_fit").run(stop)


def fgd(instance: GpuInstance, stop: CancellationToken | None = None) -> GpuSolution:
    """Fragmentation Gradient Descent: each worker where the node's fragmentation grows least.

    Parameters
    ----------
    instance:
        The instance. Fragmentation is measured against ``instance.mix``.
    stop:
        When it fires, the jobs not yet tried stay unplaced (a deadline).

    Returns
    -------
    GpuSolution
        A feasible solution; deterministic.
    """
    return _Placer(instance, "fgd").run(stop)


def complete(
    instance: GpuInstance, solution: GpuSolution, *, cpu_only: bool = False
) -> GpuSolution:
    """``solution`` (assumed feasible) with the jobs it leaves unplaced placed by best fit on
    the capacity it leaves free, in the heuristics' job order (a warm start's completion).
    With ``cpu_only``, only the CPU-only jobs: nothing else changes, and the result ranks
    at least as high (``placed_cpu_jobs`` comes before every cost)."""
    placer = _Placer(instance, "best_fit")
    placer.state.apply(solution)
    placements = dict(solution.placements)
    for j in job_order(instance):
        if cpu_only and instance.jobs[j].kind != "cpu":
            continue
        if j not in placements:
            workers = placer.place(instance.jobs[j])
            if workers is not None:
                placements[j] = tuple(workers)
    return GpuSolution(placements)


def greedy_solutions(
    instance: GpuInstance, options: SolveOptions | None = None
) -> Iterator[tuple[str, GpuSolution]]:
    """Both heuristics, best fit first (the portfolio's fallback), each yielded as soon as
    it is computed (the portfolio checks and reports it before the next one runs).

    Parameters
    ----------
    instance:
        The instance.
    options:
        Solve options: ``cancel`` (which the portfolio fires at the deadline) stops a
        heuristic, leaving the jobs it has not tried unplaced. Both heuristics are
        deterministic whatever the seed or ``deterministic`` flag.

    Yields
    ------
    (str, GpuSolution)
        ``("best_fit", ...)``, then ``("fgd", ...)``. (The family's portfolio runs
        :func:`placement.models.gpu.reopt_greedy.family_greedies`, which calls this one
        unless the instance is a re-optimization.)
    """
    stop = options.cancel if options is not None else None
    yield "best_fit", best_fit(instance, stop)
    yield "fgd", fgd(instance, stop)
