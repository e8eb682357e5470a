"""What an instance's cluster leaves free, and which nodes can host which job's workers.

:class:`FreeCapacity` holds the free capacity of every node and GPU as numpy arrays (from
the instance, or with :meth:`FreeCapacity.residual` from what a solution leaves free) and
answers the eligibility questions of the exact model: per node (or GPU), how many workers
of a job it can host on its own. :func:`placement_var_count` is the size of the full model.
"""

from __future__ import annotations

import numpy as np

from placement.models.gpu.instance import MILLI, GpuInstance, GpuJob, GpuSolution


class FreeCapacity:
    """Free capacity of every node and GPU as numpy arrays, for fast eligibility tests.

    Built from an instance (the initial state) or, with :meth:`residual`, from what a
    solution leaves free. A snapshot for building the exact model; the greedy heuristics
    place and undo workers one at a time on :class:`placement.models.gpu.greedy.ClusterState`
    instead.
    """

    def __init__(self, instance: GpuInstance) -> None:
        nodes = instance.nodes
        self.instance = instance
        n_nodes = len(nodes)
        self.gpu_count = np.array([nd.gpu_count for nd in nodes], dtype=np.int64)
        self.gpu_offset = np.concatenate(([0], np.cumsum(self.gpu_count)))[:-1].astype(np.int64)
        self.gpu_node = np.repeat(np.arange(n_nodes, dtype=np.int64), self.gpu_count)
        milli_used = np.concatenate(
            [_per_gpu(nd.gpu_milli_used, nd.gpu_count) for nd in nodes] or [np.zeros(0)]
        ).astype(np.int64)
        mem_used = np.concatenate(
            [_per_gpu(nd.gpu_memory_mib_used, nd.gpu_count) for nd in nodes] or [np.zeros(0)]
        ).astype(np.int64)
        node_gpu_mem = np.array([nd.gpu_memory_mib for nd in nodes], dtype=np.int64)
        self.node_gpu_mem = node_gpu_mem
        self.free0 = MILLI - milli_used
        self.memfree = node_gpu_mem[self.gpu_node] - mem_used
        # A whole-GPU worker needs a GPU with nothing running on it (check.py: no milli and
        # no memory in use).
        self.fully_free = (milli_used == 0) & (mem_used == 0)
        self.ff_count = np.bincount(self.gpu_node[self.fully_free], minlength=n_nodes).astype(
            np.int64
        )
        self.cpu_free = np.array([nd.cpu_milli_free for nd in nodes], dtype=np.int64)
        self.mem_free = np.array([nd.memory_mib_free for nd in nodes], dtype=np.int64)
        # Density (density.py): pods on each node, and the nodes with a density model.
        self.pods = np.array([nd.pods_used for nd in nodes], dtype=np.int64)
        self.dense = [n for n, nd in enumerate(nodes) if nd.density_pieces]
        types = sorted({nd.gpu_type for nd in nodes})
        self.type_code = {t: i for i, t in enumerate(types)}
        self.node_type = np.array([self.type_code[nd.gpu_type] for nd in nodes], dtype=np.int64)

    def residual(self, solution: GpuSolution | None) -> FreeCapacity:
        """A copy of this state minus what ``solution`` uses (for the candidate choice)."""
        out = object.__new__(FreeCapacity)
        out.__dict__.update(self.__dict__)
        out.free0 = self.free0.copy()
        out.memfree = self.memfree.copy()
        out.fully_free = self.fully_free.copy()
        out.cpu_free = self.cpu_free.copy()
        out.mem_free = self.mem_free.copy()
        out.pods = self.pods.copy()
        if solution is not None:
            jobs = self.instance.jobs
            for j, workers in solution.placements.items():
                job = jobs[j]
                for w in workers:
                    out.cpu_free[w.node] -= job.cpu_milli
                    out.mem_free[w.node] -= job.memory_mib
                    out.pods[w.node] += 1
                    for g in w.gpus:
                        k = self.gpu_offset[w.node] + g
                        out.fully_free[k] = False
                        if job.kind == "whole":
                            out.free0[k] = 0
                            out.memfree[k] = 0
                        else:
                            out.free0[k] -= job.gpu_milli
                            out.memfree[k] -= job.gpu_memory_mib
        out.ff_count = np.bincount(
            self.gpu_node[out.fully_free], minlength=len(self.gpu_count)
        ).astype(np.int64)
        return out

    def type_mask(self, job: GpuJob) -> np.ndarray:
        """Nodes whose GPUs the job may use (every node for a CPU-only job)."""
        if job.kind == "cpu":
            return np.ones(len(self.gpu_count), dtype=bool)
        mask = self.gpu_count > 0
        if job.gpu_types:
            codes = [self.type_code[t] for t in job.gpu_types if t in self.type_code]
            mask &= np.isin(self.node_type, codes)
        return mask

    def worker_cap(self, job: GpuJob) -> np.ndarray:
        """Per node, the workers of ``job`` that its free CPU and memory can take (with its
        density model where it has one)."""
        cap = np.full(len(self.gpu_count), job.workers, dtype=np.int64)
        if job.cpu_milli > 0:
            cap = np.minimum(cap, np.maximum(self.cpu_free, 0) // job.cpu_milli)
        if job.memory_mib > 0:
            cap = np.minimum(cap, np.maximum(self.mem_free, 0) // job.memory_mib)
        nodes = self.instance.nodes
        for n in self.dense:
            used = nodes[n].cpu_milli - int(self.cpu_free[n])
            cap[n] = nodes[n].density_room(used, int(self.pods[n]), job.cpu_milli, int(cap[n]))
        return cap

    def gpu_caps(self, job: GpuJob) -> np.ndarray:
        """Per GPU, the workers of fractional ``job`` it can host (0 for other kinds)."""
        if job.kind != "fractional":
            return np.zeros(len(self.free0), dtype=np.int64)
        ok = (self.free0 >= job.gpu_milli) & (self.memfree >= job.gpu_memory_mib)
        cap = np.where(ok, np.maximum(self.free0, 0) // job.gpu_milli, 0)
        if job.gpu_memory_mib > 0:
            cap = np.minimum(cap, np.maximum(self.memfree, 0) // job.gpu_memory_mib)
        cap = np.minimum(cap, job.workers)
        return cap * self.type_mask(job)[self.gpu_node]

    def node_caps(self, job: GpuJob, gpu_caps: np.ndarray | None = None) -> np.ndarray:
        """Per node, the most workers of ``job`` it can host alone (0 = not eligible).

        Eligibility follows check.py: an allowed GPU type, per-worker CPU and memory, and for
        a whole-GPU worker ``gpus`` fully free GPUs with enough memory each; for a fractional
        worker a GPU with enough free milli-GPU and free GPU memory.
        """
        cap = self.worker_cap(job) * self.type_mask(job)
        if job.kind == "whole":
            cap = np.minimum(cap, self.ff_count // job.gpus)
            cap = np.where(self.node_gpu_mem >= job.gpu_memory_mib, cap, 0)
        elif job.kind == "fractional":
            per_gpu = self.gpu_caps(job) if gpu_caps is None else gpu_caps
            cap = np.minimum(cap, np.bincount(self.gpu_node, per_gpu, len(cap)).astype(np.int64))
        return np.maximum(cap, 0)


def _per_gpu(values: tuple[int, ...], count: int) -> np.ndarray:
    """Per-GPU usage; an empty tuple means nothing in use."""
    if len(values) == count:
        return np.asarray(values, dtype=np.int64)
    return np.zeros(count, dtype=np.int64)


def placement_var_count(instance: GpuInstance, cluster: FreeCapacity) -> int:
    """Number of placement variables the full model would have (the size test)."""
    multi_dom = multi_domain_counts(instance, cluster)
    total = 0
    for job in instance.jobs:
        if job.kind == "fractional":
            total += int(np.count_nonzero(cluster.gpu_caps(job)))
            continue
        caps = cluster.node_caps(job)
        elig = caps > 0
        total += int(np.count_nonzero(elig))
        if job.kind == "whole":
            total += int(multi_dom[elig].sum())
    return total


def multi_domain_counts(instance: GpuInstance, cluster: FreeCapacity) -> np.ndarray:
    """Per node, the number of NVLink domains holding fully free GPUs if more than one."""
    out = np.zeros(len(instance.nodes), dtype=np.int64)
    for n, node in enumerate(instance.nodes):
        start = cluster.gpu_offset[n]
        doms = {
            node.nvlink_domain(g) for g in range(node.gpu_count) if cluster.fully_free[start + g]
        }
        out[n] = len(doms) if len(doms) > 1 else 0
    return out
