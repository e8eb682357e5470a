"""The typed GPU-allocation instance and solution, their JSON form, and validation.

Units are in the names: milli-GPU (1000 = one whole GPU), milli-cores, MiB, GB/s, GB.
Level 0 of the topology is the NVLink domain inside a node, level 1 the node, and each level
after that names one entry of ``GpuNode.groups`` (rack, spine, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from placement.models.gpu import density
from placement.models.gpu.density import CpuCapacityPoint, Piece
from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import (
    FieldRange,
    check_ranges,
    finite,
    register_ranges,
)
from placement.solver.schema.v1 import gpu_pb2 as pb

MILLI = 1000
"""milli-GPU in one whole GPU."""
MAX_GPUS_PER_NODE = 1024
MAX_WORKERS = 1_000_000
MAX_MIB = 10**9
"""MiB of one node's memory (about a PiB), and of one GPU's."""
MAX_MILLI_CORES = 10**9
"""milli-cores of one node (a million cores)."""
MAX_PODS_PER_NODE = 10_000
"""Pods on one node (Kubernetes' default limit is 110); bounds the density rows'
coefficients (docs/formulations/gpu.md, §5a)."""
MAX_PRIORITY = 1000
MAX_TRAFFIC_GB = 10**5
MIN_BANDWIDTH_GBPS = 0.01
MAX_BANDWIDTH_GBPS = 10**6
MAX_PENALTY = 10**6
MAX_COST = 10**6
"""Preemption or migration cost of one worker (the disruption tier stays below 2^62)."""
MAX_QUOTA_MILLI = 10**12
POLICIES = ("never", "lower_priority", "reclaim_within_quota")
"""The preemption policies, by their ``placement.v1.PreemptionPolicy`` names in lower case."""

RANGES = register_ranges(
    {
        "TopologyLevel.bandwidth_gbps": FieldRange(
            MIN_BANDWIDTH_GBPS, MAX_BANDWIDTH_GBPS, unit="GB/s"
        ),
        "GpuNode.gpu_count": FieldRange(0, MAX_GPUS_PER_NODE, integer=True, unit="GPUs"),
        "GpuNode.gpu_memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuNode.nvlink_domain_size": FieldRange(0, MAX_GPUS_PER_NODE, integer=True, unit="GPUs"),
        "GpuNode.cpu_milli": FieldRange(0, MAX_MILLI_CORES, integer=True, unit="milli-cores"),
        "GpuNode.memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuNode.cpu_milli_used": FieldRange(0, MAX_MILLI_CORES, integer=True, unit="milli-cores"),
        "GpuNode.memory_mib_used": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuNode.pods_used": FieldRange(0, MAX_PODS_PER_NODE, integer=True, unit="pods"),
        "CpuDensity.overhead_milli_per_pod": FieldRange(
            0, MAX_MILLI_CORES, integer=True, unit="milli-cores"
        ),
        "CpuCapacityPoint.pods": FieldRange(0, MAX_PODS_PER_NODE, integer=True, unit="pods"),
        "CpuCapacityPoint.cpu_milli": FieldRange(
            0, MAX_MILLI_CORES, integer=True, unit="milli-cores"
        ),
        "GpuUsage.index": FieldRange(0, MAX_GPUS_PER_NODE - 1, integer=True),
        "GpuUsage.milli_used": FieldRange(0, 1000, integer=True, unit="milli-GPU"),
        "GpuUsage.memory_mib_used": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuJob.workers": FieldRange(1, MAX_WORKERS, integer=True),
        "GpuJob.gpus": FieldRange(0, MAX_GPUS_PER_NODE, integer=True, unit="whole GPUs"),
        "GpuJob.gpu_milli": FieldRange(0, 999, integer=True, unit="milli-GPU"),
        "GpuJob.gpu_memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuJob.cpu_milli": FieldRange(0, MAX_MILLI_CORES, integer=True, unit="milli-cores"),
        "GpuJob.memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "GpuJob.priority": FieldRange(1, MAX_PRIORITY, integer=True),
        "GpuJob.traffic_gb": FieldRange(0, MAX_TRAFFIC_GB, unit="GB"),
        "WorkloadClass.gpus": FieldRange(0, MAX_GPUS_PER_NODE, integer=True, unit="whole GPUs"),
        "WorkloadClass.gpu_milli": FieldRange(0, 999, integer=True, unit="milli-GPU"),
        "WorkloadClass.weight": FieldRange(1, MAX_WORKERS, integer=True),
        "GpuInstance.locality_miss_penalty": FieldRange(0, MAX_PENALTY),
        "GpuJob.preemption_cost": FieldRange(0, MAX_COST, integer=True),
        "GpuJob.migration_cost": FieldRange(0, MAX_COST, integer=True),
        "GpuJob.min_workers": FieldRange(0, MAX_WORKERS, integer=True),
        "GpuJob.size_utility_milli": FieldRange(0, MAX_QUOTA_MILLI, integer=True, unit="milli-GPU"),
        "GpuQueue.guaranteed_milli": FieldRange(0, MAX_QUOTA_MILLI, integer=True, unit="milli-GPU"),
        "GpuQueue.borrowing_limit_milli": FieldRange(
            0, MAX_QUOTA_MILLI, integer=True, unit="milli-GPU"
        ),
        "GpuQueue.priority": FieldRange(0, MAX_PRIORITY, integer=True),
        "DisruptionBudget.max_migrated_workers": FieldRange(0, MAX_WORKERS, integer=True),
        "DisruptionBudget.max_preempted_workers": FieldRange(0, MAX_WORKERS, integer=True),
        "DisruptionBudget.max_disruption_cost": FieldRange(0, 10**15, integer=True),
    }
)
"""The documented range of every numeric field (docs/library.md lists them). The CP-SAT
encoding scales communication costs (traffic / bandwidth + penalties) by 10^6 and weighs
placed GPU demand by priority: within these limits every coefficient stays below 10^14 and
every objective below 2^62."""

SPAN_SAME_GPU = -1
"""The span level of a job whose workers all share one GPU (inside the innermost level, 0:
one NVLink domain; 1 is the node, and so on up the topology)."""


@dataclass(frozen=True)
class TopologyLevel:
    """A level of the topology tree and the bandwidth inside one of its groups."""

    name: str
    bandwidth_gbps: float


@dataclass(frozen=True)
class GpuNode:
    """A machine with ``gpu_count`` GPUs of one type and what running work already uses."""

    name: str
    gpu_type: str
    gpu_count: int
    gpu_memory_mib: int
    nvlink_domain_size: int
    cpu_milli: int
    memory_mib: int
    cpu_milli_used: int = 0
    memory_mib_used: int = 0
    groups: tuple[str, ...] = ()
    gpu_milli_used: tuple[int, ...] = ()
    """Per GPU, the milli-GPU in use (length ``gpu_count``)."""
    gpu_memory_mib_used: tuple[int, ...] = ()
    """Per GPU, the MiB of GPU memory in use (length ``gpu_count``)."""
    pods_used: int = 0
    """Pods on the node that the instance does not describe as running jobs (their CPU is in
    ``cpu_milli_used``); a running job of the instance counts by its workers placed here."""
    cpu_overhead_milli_per_pod: int = 0
    """Density (JSON ``cpu_density.overhead_milli_per_pod``): the effective CPU with k pods is
    ``cpu_milli - k x`` this (:mod:`.density`)."""
    cpu_capacity_curve: tuple[CpuCapacityPoint, ...] = ()
    """Density (JSON ``cpu_density.curve``): the effective CPU by pod count, non-increasing
    and concave (:mod:`.density`)."""

    def __post_init__(self) -> None:
        # A node built in code may leave the per-GPU usage out: all GPUs free. A count of
        # the wrong type or size is left for validation to name (gpu.cluster.nodes[i]).
        count = self.gpu_count
        if isinstance(count, int) and 0 < count <= MAX_GPUS_PER_NODE:
            if not self.gpu_milli_used:
                object.__setattr__(self, "gpu_milli_used", (0,) * count)
            if not self.gpu_memory_mib_used:
                object.__setattr__(self, "gpu_memory_mib_used", (0,) * count)
        if isinstance(self.groups, list):
            object.__setattr__(self, "groups", tuple(self.groups))
        if isinstance(self.cpu_capacity_curve, list):
            object.__setattr__(self, "cpu_capacity_curve", tuple(self.cpu_capacity_curve))

    @cached_property
    def density_pieces(self) -> tuple[Piece, ...]:
        """The rows ``d cpu_used <= a + b pods`` of the node's density model; empty without
        one (:func:`.density.density_pieces`)."""
        return density.density_pieces(
            self.cpu_milli, self.cpu_overhead_milli_per_pod, self.cpu_capacity_curve
        )

    def cpu_fits(self, cpu_used: int, pods: int) -> bool:
        """Whether ``cpu_used`` milli-cores with ``pods`` pods fit the node's effective CPU."""
        return density.fits(self.cpu_milli, self.density_pieces, cpu_used, pods)

    def density_room(self, cpu_used: int, pods: int, cpu_per_worker: int, most: int) -> int:
        """The most new workers (up to ``most``) of ``cpu_per_worker`` that the density model
        admits next to ``cpu_used`` and ``pods`` (:func:`.density.workers_that_fit`)."""
        return density.workers_that_fit(self.density_pieces, cpu_used, pods, cpu_per_worker, most)

    def effective_cpu_milli(self, pods: int) -> float:
        """The CPU the node delivers with ``pods`` pods, in milli-cores."""
        return float(density.effective_cpu_milli(self.cpu_milli, self.density_pieces, pods))

    def nvlink_domain(self, gpu: int) -> int:
        """The NVLink domain of GPU ``gpu``."""
        return gpu // self.nvlink_domain_size if self.nvlink_domain_size > 0 else 0

    @property
    def cpu_milli_free(self) -> int:
        """CPU left for new work."""
        return self.cpu_milli - self.cpu_milli_used

    @property
    def memory_mib_free(self) -> int:
        """Memory left for new work."""
        return self.memory_mib - self.memory_mib_used


@dataclass(frozen=True)
class WorkerPlacement:
    """Where one worker runs: node index and GPU indices inside the node."""

    node: int
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class GpuJob:
    """A gang of ``workers`` identical workers, placed all together or not at all."""

    name: str
    workers: int = 1
    gpus: int = 0
    gpu_milli: int = 0
    gpu_memory_mib: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0
    gpu_types: tuple[str, ...] = ()
    priority: int = 1
    locality_level: str = ""
    locality_required: bool = False
    traffic_gb: float = 0.0
    worker_names: tuple[str, ...] = ()
    """The workers' names where the job came from (e.g. Kubernetes pods ``namespace/name``),
    one per worker or none; ``placement export k8s`` binds worker k to the k-th name."""
    current: tuple[WorkerPlacement, ...] = ()
    """A running job: where its workers run now (one per worker); empty for a pending job."""
    preemptible: bool = True
    preemption_cost: int = 1
    """Cost per preempted worker (work lost)."""
    migration_cost: int = 1
    """Cost per restarted worker (a migration or a resize restarts the gang)."""
    min_workers: int = 0
    """Elastic jobs: the fewest workers (``workers`` is the most); 0 = a fixed gang."""
    queue: str = ""
    size_utility_milli: tuple[int, ...] = ()
    """Elastic jobs: the primary objective's value (before the priority) of each size
    ``min_workers..workers``; empty = size x :attr:`milli_per_worker`."""

    def __post_init__(self) -> None:
        for attr in ("worker_names", "current", "size_utility_milli"):
            if isinstance(getattr(self, attr), list):
                object.__setattr__(self, attr, tuple(getattr(self, attr)))

    @property
    def running(self) -> bool:
        """Whether the job runs now (it has a current placement)."""
        return bool(self.current)

    @property
    def elastic(self) -> bool:
        """Whether the job may run with fewer than ``workers`` workers."""
        return 0 < self.min_workers < self.workers

    def gpu_value_milli(self, size: int) -> int:
        """The job's value placed with ``size`` workers before any priority (x1000): its GPU
        demand, or an elastic job's utility for that size."""
        if self.elastic and self.size_utility_milli:
            return self.size_utility_milli[size - self.min_workers]
        return self.milli_per_worker * size

    def value_milli(self, size: int) -> int:
        """What the job placed with ``size`` workers adds to ``placed_gpu_weighted`` (x1000)."""
        return self.priority * self.gpu_value_milli(size)

    @property
    def fewest_workers(self) -> int:
        """The smallest size the job may be placed with."""
        return self.min_workers if self.elastic else self.workers

    @property
    def kind(self) -> str:
        """``whole``, ``fractional`` or ``cpu``."""
        if self.gpus > 0:
            return "whole"
        if self.gpu_milli > 0:
            return "fractional"
        return "cpu"

    @property
    def milli_per_worker(self) -> int:
        """GPU demand of one worker in milli-GPU."""
        return self.gpus * MILLI if self.gpus > 0 else self.gpu_milli

    @property
    def demand_milli(self) -> int:
        """GPU demand of the whole gang in milli-GPU."""
        return self.workers * self.milli_per_worker

    @property
    def weighted_demand_milli(self) -> int:
        """Priority-weighted GPU demand: what placing the job adds to the primary objective."""
        return self.priority * self.demand_milli

    def allows(self, gpu_type: str) -> bool:
        """Whether the job may run on GPUs of ``gpu_type``."""
        return not self.gpu_types or gpu_type in self.gpu_types

    def describe_worker(self) -> str:
        """What one worker asks for, e.g. ``8 x A100`` or ``300 milli-GPU``."""
        types = "|".join(self.gpu_types) if self.gpu_types else "any GPU"
        if self.kind == "whole":
            return f"{self.gpus} x {types}"
        if self.kind == "fractional":
            return f"{self.gpu_milli} milli-GPU of {types}"
        return f"{self.cpu_milli} milli-CPU"


@dataclass(frozen=True)
class WorkloadClass:
    """One class of the expected job mix (for the fragmentation measure)."""

    gpus: int
    gpu_milli: int
    weight: int


@dataclass(frozen=True)
class GpuQueue:
    """A queue (tenant): a guaranteed GPU quota and how far above it it may borrow."""

    name: str
    guaranteed_milli: int = 0
    borrowing_limit_milli: int | None = None
    """None: no limit."""
    priority: int = 0

    @property
    def limit_milli(self) -> int | None:
        """The most the queue may use (guarantee + borrowing limit); None: no limit."""
        if self.borrowing_limit_milli is None:
            return None
        return self.guaranteed_milli + self.borrowing_limit_milli


@dataclass(frozen=True)
class DisruptionBudget:
    """Limits on one re-optimization decision; None = unlimited."""

    max_migrated_workers: int | None = None
    max_preempted_workers: int | None = None
    max_disruption_cost: int | None = None


@dataclass(eq=False)
class GpuInstance:
    """A topology-aware GPU allocation instance."""

    family_name = "gpu"

    levels: list[TopologyLevel]
    nodes: list[GpuNode]
    jobs: list[GpuJob]
    expected_mix: list[WorkloadClass] = field(default_factory=list)
    locality_miss_penalty: float = 1.0
    queues: list[GpuQueue] = field(default_factory=list)
    preemption_policy: str = "never"
    """One of :data:`POLICIES`."""
    disruption_budget: DisruptionBudget = field(default_factory=DisruptionBudget)
    topology_fit: bool = False
    """Opt-in fourth objective tier ``topology_fit`` (docs/formulations/gpu.md): fewest racks
    per gang, then best fit per rack and block. Off: the three tiers only."""
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)
    """Set by the parser; ``solve`` validates instances built in code once."""

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Node name -> index."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    @cached_property
    def job_index(self) -> dict[str, int]:
        """Job name -> index."""
        return {j.name: i for i, j in enumerate(self.jobs)}

    @cached_property
    def level_index(self) -> dict[str, int]:
        """Level name -> index (0 = NVLink domain, 1 = node, 2.. = groups)."""
        return {lv.name: i for i, lv in enumerate(self.levels)}

    @cached_property
    def group_ids(self) -> np.ndarray:
        """``group_ids[level - 2, node]``: an integer id of the node's group at that level."""
        extra = len(self.levels) - 2
        out = np.zeros((extra, len(self.nodes)), dtype=np.int64)
        for lv in range(extra):
            ids: dict[str, int] = {}
            for n, node in enumerate(self.nodes):
                out[lv, n] = ids.setdefault(node.groups[lv], len(ids))
        return out

    @cached_property
    def mix(self) -> list[WorkloadClass]:
        """The expected job mix: ``expected_mix`` or, when empty, the GPU jobs themselves."""
        if self.expected_mix:
            return [c for c in self.expected_mix if c.gpus > 0 or c.gpu_milli > 0]
        counts: dict[tuple[int, int], int] = {}
        for job in self.jobs:
            if job.kind != "cpu":
                key = (job.gpus, job.gpu_milli)
                counts[key] = counts.get(key, 0) + job.workers
        return [WorkloadClass(g, m, w) for (g, m), w in sorted(counts.items())]

    @cached_property
    def running_jobs(self) -> list[int]:
        """Indices of the running jobs (those with a current placement)."""
        return [j for j, job in enumerate(self.jobs) if job.running]

    @property
    def reopt(self) -> bool:
        """Whether this is a re-optimization (some job runs now, or queues are declared): the
        widened objective and rules (docs/formulations/gpu.md, "Running work")."""
        return bool(self.running_jobs or self.queues)

    @cached_property
    def queue_index(self) -> dict[str, int]:
        """Queue name -> index."""
        return {q.name: i for i, q in enumerate(self.queues)}

    @cached_property
    def queue_priorities(self) -> list[int] | None:
        """Per job, the priority of its queue (0 without a queue); None when no queue has a
        priority, and then the ``queue_priority_gpu`` tier is absent (docs/formulations/gpu.md,
        "Running work")."""
        if not any(q.priority for q in self.queues):
            return None
        return [
            self.queues[self.queue_index[job.queue]].priority if job.queue else 0
            for job in self.jobs
        ]

    def current_solution(self) -> GpuSolution:
        """Every running job kept where it runs, nothing new placed (always feasible)."""
        return GpuSolution({j: self.jobs[j].current for j in self.running_jobs})

    @property
    def total_gpus(self) -> int:
        """Number of GPUs in the cluster."""
        return sum(n.gpu_count for n in self.nodes)

    def level_of_name(self, name: str) -> int:
        """Index of level ``name``."""
        return self.level_index[name]


# -------------------------------------------------------------------------------------------
# Solution


@dataclass
class GpuSolution:
    """Placed jobs (job index -> one placement per worker). Jobs absent are unplaced."""

    placements: dict[int, tuple[WorkerPlacement, ...]] = field(default_factory=dict)

    def placed_jobs(self) -> list[int]:
        """Indices of placed jobs, sorted."""
        return sorted(self.placements)


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 JSON form


def read_message(msg: Any, name: str = "", description: str = "") -> GpuInstance:
    """Build and validate a :class:`GpuInstance` from a ``placement.v1.GpuInstance`` message,
    every rule but one: whether the running jobs' placements fit the cluster together, which
    only the checker can judge (:func:`placement.models.gpu.reading.instance_from_message`
    adds it; read instances through that).

    Raises :class:`InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    P = "gpu"
    check_ranges(msg, RANGES, P, v)
    levels: list[TopologyLevel] = []
    seen_levels: set[str] = set()
    if len(msg.cluster.levels) < 2:
        v.add(
            f"{P}.cluster.levels",
            [lv.name for lv in msg.cluster.levels],
            "at least 2 levels, innermost first: the NVLink domain, the node, then e.g. rack, spine",
        )
    for i, lv in enumerate(msg.cluster.levels):
        path = f"{P}.cluster.levels[{i}]"
        v.unique_name(f"{path}.name", lv.name, seen_levels, "level")
        seen_levels.add(lv.name)
        if levels and finite(lv.bandwidth_gbps) and lv.bandwidth_gbps > levels[-1].bandwidth_gbps:
            v.add(
                f"{path}.bandwidth_gbps",
                lv.bandwidth_gbps,
                f"at most the inner level's {levels[-1].bandwidth_gbps} GB/s "
                "(bandwidth does not grow going outward)",
            )
        levels.append(TopologyLevel(lv.name, float(lv.bandwidth_gbps)))
    n_groups = max(0, len(levels) - 2)

    nodes: list[GpuNode] = []
    node_names: set[str] = set()
    v.require(len(msg.cluster.nodes) > 0, f"{P}.cluster.nodes", [], "at least one node")
    for i, nd in enumerate(msg.cluster.nodes):
        path = f"{P}.cluster.nodes[{i}]"
        v.unique_name(f"{path}.name", nd.name, node_names, "node")
        node_names.add(nd.name)
        gpu_count = nd.gpu_count if RANGES["GpuNode.gpu_count"].contains(nd.gpu_count) else 0
        if gpu_count > 0:
            v.require(bool(nd.gpu_type), f"{path}.gpu_type", nd.gpu_type, "a GPU type name")
        v.require(
            0 <= nd.cpu_milli_used <= max(nd.cpu_milli, 0),
            f"{path}.cpu_milli_used",
            nd.cpu_milli_used,
            f"milli-cores in [0, cpu_milli={nd.cpu_milli}]",
        )
        v.require(
            0 <= nd.memory_mib_used <= max(nd.memory_mib, 0),
            f"{path}.memory_mib_used",
            nd.memory_mib_used,
            f"MiB in [0, memory_mib={nd.memory_mib}]",
        )
        density.validate(
            v,
            path,
            nd.cpu_milli,
            nd.cpu_milli_used,
            nd.pods_used,
            nd.cpu_density.overhead_milli_per_pod,
            [(p.pods, p.cpu_milli) for p in nd.cpu_density.curve],
        )
        v.require(
            len(nd.groups) == n_groups,
            f"{path}.groups",
            list(nd.groups),
            f"{n_groups} group name(s), one per level above the node "
            f"({', '.join(lv.name for lv in levels[2:]) or 'none'})",
        )
        milli_used = [0] * gpu_count
        mem_used = [0] * gpu_count
        seen_gpu: set[int] = set()
        for k, usage in enumerate(nd.gpu_usage):
            upath = f"{path}.gpu_usage[{k}]"
            if not v.require(
                0 <= usage.index < gpu_count,
                f"{upath}.index",
                usage.index,
                f"a GPU index in [0, {gpu_count - 1}]",
            ):
                continue
            v.require(
                usage.index not in seen_gpu, f"{upath}.index", usage.index, "each GPU listed once"
            )
            seen_gpu.add(usage.index)
            if v.require(
                0 <= usage.milli_used <= MILLI,
                f"{upath}.milli_used",
                usage.milli_used,
                "milli-GPU in [0, 1000]",
            ):
                milli_used[usage.index] = usage.milli_used
            if v.require(
                0 <= usage.memory_mib_used <= max(nd.gpu_memory_mib, 0),
                f"{upath}.memory_mib_used",
                usage.memory_mib_used,
                f"MiB in [0, gpu_memory_mib={nd.gpu_memory_mib}]",
            ):
                mem_used[usage.index] = usage.memory_mib_used
        nodes.append(
            GpuNode(
                name=nd.name,
                gpu_type=nd.gpu_type,
                gpu_count=gpu_count,
                gpu_memory_mib=nd.gpu_memory_mib,
                nvlink_domain_size=nd.nvlink_domain_size,
                cpu_milli=nd.cpu_milli,
                memory_mib=nd.memory_mib,
                cpu_milli_used=nd.cpu_milli_used,
                memory_mib_used=nd.memory_mib_used,
                groups=tuple(nd.groups),
                gpu_milli_used=tuple(milli_used),
                gpu_memory_mib_used=tuple(mem_used),
                pods_used=nd.pods_used,
                cpu_overhead_milli_per_pod=nd.cpu_density.overhead_milli_per_pod,
                cpu_capacity_curve=tuple(
                    CpuCapacityPoint(p.pods, p.cpu_milli) for p in nd.cpu_density.curve
                ),
            )
        )

    queues: list[GpuQueue] = []
    for i, qu in enumerate(msg.queues):
        path = f"{P}.queues[{i}]"
        v.require(bool(qu.name), f"{path}.name", qu.name, "a non-empty queue name")
        v.require(
            qu.name not in {q.name for q in queues},
            f"{path}.name",
            qu.name,
            "a queue name used once",
        )
        limit = qu.borrowing_limit_milli if qu.HasField("borrowing_limit_milli") else None
        queues.append(GpuQueue(qu.name, qu.guaranteed_milli, limit, qu.priority))
    queue_names = {q.name for q in queues}
    node_at = {nd.name: k for k, nd in enumerate(msg.cluster.nodes)}

    jobs: list[GpuJob] = []
    job_names: set[str] = set()
    for i, jb in enumerate(msg.jobs):
        path = f"{P}.jobs[{i}]"
        v.unique_name(f"{path}.name", jb.name, job_names, "job")
        job_names.add(jb.name)
        workers = jb.workers if jb.HasField("workers") else 1
        v.require(
            not (jb.gpus > 0 and jb.gpu_milli > 0),
            f"{path}.gpu_milli",
            jb.gpu_milli,
            "0 when gpus > 0 (a worker takes whole GPUs or a share of one, not both)",
        )
        priority = jb.priority if jb.HasField("priority") else 1
        if jb.locality_level:
            v.require(
                jb.locality_level in seen_levels,
                f"{path}.locality_level",
                jb.locality_level,
                "one of the cluster's level names: " + ", ".join(lv.name for lv in levels),
            )
        else:
            v.require(
                not jb.locality_required,
                f"{path}.locality_required",
                True,
                "false unless locality_level names a level",
            )
        if jb.worker_names:
            v.require(
                len(jb.worker_names) == workers,
                f"{path}.worker_names",
                list(jb.worker_names),
                f"one name per worker ({workers}) or none",
            )
            v.require(
                all(jb.worker_names) and len(set(jb.worker_names)) == len(jb.worker_names),
                f"{path}.worker_names",
                list(jb.worker_names),
                "non-empty names, each used once",
            )
        if jb.min_workers:
            v.require(
                jb.min_workers <= workers,
                f"{path}.min_workers",
                jb.min_workers,
                f"0 (not elastic) or 1..workers={workers}",
            )
            # The exact model sizes an elastic gang with one count; its span (and so its
            # communication cost) would depend on that count: not modelled in this version.
            v.require(
                not jb.traffic_gb and not jb.locality_level,
                f"{path}.min_workers",
                jb.min_workers,
                "0 for a job with traffic_gb or locality_level (elastic jobs take neither)",
            )
        if jb.size_utility_milli:
            elastic = 0 < jb.min_workers < workers
            sizes = range(jb.min_workers, workers + 1)
            milli = jb.gpus * MILLI if jb.gpus > 0 else jb.gpu_milli
            v.require(
                elastic and len(jb.size_utility_milli) == len(sizes),
                f"{path}.size_utility_milli",
                list(jb.size_utility_milli),
                f"one value per size min_workers..workers ({len(sizes)}) of an elastic job",
            )
            v.require(
                all(u <= s * milli for u, s in zip(jb.size_utility_milli, sizes, strict=False)),
                f"{path}.size_utility_milli",
                list(jb.size_utility_milli),
                f"at most size x {milli} milli-GPU per size (a worker adds at most its GPUs)",
            )
        if jb.queue:
            v.require(
                jb.queue in queue_names,
                f"{path}.queue",
                jb.queue,
                "the name of one of gpu.queues: " + (", ".join(sorted(queue_names)) or "none"),
            )
        current: list[WorkerPlacement] = []
        for k, wp in enumerate(jb.current):
            n = node_at.get(wp.node)
            if v.require(
                n is not None, f"{path}.current[{k}].node", wp.node, "a node name of the cluster"
            ):
                current.append(WorkerPlacement(n, tuple(int(g) for g in wp.gpus)))
        if jb.current:
            fewest = jb.min_workers if 0 < jb.min_workers < workers else workers
            v.require(
                fewest <= len(jb.current) <= workers,
                f"{path}.current",
                len(jb.current),
                f"one placement per running worker ({fewest}..{workers} workers)"
                if fewest < workers
                else f"one placement per worker ({workers})",
            )
        jobs.append(
            GpuJob(
                name=jb.name,
                workers=workers,
                gpus=jb.gpus,
                gpu_milli=jb.gpu_milli,
                gpu_memory_mib=jb.gpu_memory_mib,
                cpu_milli=jb.cpu_milli,
                memory_mib=jb.memory_mib,
                gpu_types=tuple(jb.gpu_types),
                priority=priority,
                locality_level=jb.locality_level,
                locality_required=jb.locality_required,
                traffic_gb=float(jb.traffic_gb),
                worker_names=tuple(jb.worker_names),
                current=tuple(current),
                preemptible=jb.preemptible if jb.HasField("preemptible") else True,
                preemption_cost=jb.preemption_cost if jb.HasField("preemption_cost") else 1,
                migration_cost=jb.migration_cost if jb.HasField("migration_cost") else 1,
                min_workers=jb.min_workers,
                queue=jb.queue,
                size_utility_milli=tuple(jb.size_utility_milli),
            )
        )

    mix: list[WorkloadClass] = []
    for c in msg.expected_mix:
        mix.append(WorkloadClass(c.gpus, c.gpu_milli, c.weight))
    penalty = msg.locality_miss_penalty if msg.HasField("locality_miss_penalty") else 1.0
    policy = pb.PreemptionPolicy.Name(msg.preemption_policy).lower()
    policy = "never" if policy == "preemption_policy_unspecified" else policy
    bud = msg.disruption_budget
    budget = DisruptionBudget(
        *(
            getattr(bud, f) if bud.HasField(f) else None
            for f in ("max_migrated_workers", "max_preempted_workers", "max_disruption_cost")
        )
    )
    topology_fit = msg.HasField("topology_fit") and msg.topology_fit
    v.require(
        not (topology_fit and (msg.queues or any(jb.current for jb in msg.jobs))),
        "gpu.topology_fit",
        True,
        "false with running jobs or queues (a re-optimization has no topology_fit tier)",
    )
    v.raise_if_any()
    instance = GpuInstance(
        levels=levels,
        nodes=nodes,
        jobs=jobs,
        expected_mix=mix,
        locality_miss_penalty=float(penalty),
        queues=queues,
        preemption_policy=policy,
        disruption_budget=budget,
        topology_fit=bool(topology_fit),
        name=name,
        description=description,
        validated=True,
    )
    return instance


def instance_to_message(instance: GpuInstance) -> Any:
    """The ``placement.v1.GpuInstance`` message of an instance."""
    msg = pb.GpuInstance()
    for lv in instance.levels:
        msg.cluster.levels.add(name=lv.name, bandwidth_gbps=lv.bandwidth_gbps)
    for node in instance.nodes:
        nd = msg.cluster.nodes.add(
            name=node.name,
            gpu_type=node.gpu_type,
            gpu_count=node.gpu_count,
            gpu_memory_mib=node.gpu_memory_mib,
            nvlink_domain_size=node.nvlink_domain_size,
            cpu_milli=node.cpu_milli,
            memory_mib=node.memory_mib,
            cpu_milli_used=node.cpu_milli_used,
            memory_mib_used=node.memory_mib_used,
            groups=list(node.groups),
        )
        # Both absent unless used: an instance without them writes the JSON it always did.
        if node.pods_used:
            nd.pods_used = node.pods_used
        if node.cpu_overhead_milli_per_pod or node.cpu_capacity_curve:
            nd.cpu_density.overhead_milli_per_pod = node.cpu_overhead_milli_per_pod
            for p in node.cpu_capacity_curve:
                nd.cpu_density.curve.add(pods=p.pods, cpu_milli=p.cpu_milli)
        for g in range(node.gpu_count):
            if node.gpu_milli_used[g] or node.gpu_memory_mib_used[g]:
                nd.gpu_usage.add(
                    index=g,
                    milli_used=node.gpu_milli_used[g],
                    memory_mib_used=node.gpu_memory_mib_used[g],
                )
    for job in instance.jobs:
        jb = msg.jobs.add(
            name=job.name,
            workers=job.workers,
            gpus=job.gpus,
            gpu_milli=job.gpu_milli,
            gpu_memory_mib=job.gpu_memory_mib,
            cpu_milli=job.cpu_milli,
            memory_mib=job.memory_mib,
            gpu_types=list(job.gpu_types),
            priority=job.priority,
            locality_level=job.locality_level,
            locality_required=job.locality_required,
            traffic_gb=job.traffic_gb,
            worker_names=list(job.worker_names),
            min_workers=job.min_workers,
            queue=job.queue,
            size_utility_milli=list(job.size_utility_milli),
        )
        for w in job.current:
            jb.current.add(node=instance.nodes[w.node].name, gpus=list(w.gpus))
        if not job.preemptible:
            jb.preemptible = False
        if job.preemption_cost != 1:
            jb.preemption_cost = job.preemption_cost
        if job.migration_cost != 1:
            jb.migration_cost = job.migration_cost
    for c in instance.expected_mix:
        msg.expected_mix.add(gpus=c.gpus, gpu_milli=c.gpu_milli, weight=c.weight)
    msg.locality_miss_penalty = instance.locality_miss_penalty
    if instance.topology_fit:
        msg.topology_fit = True
    for q in instance.queues:
        qm = msg.queues.add(name=q.name, guaranteed_milli=q.guaranteed_milli, priority=q.priority)
        if q.borrowing_limit_milli is not None:
            qm.borrowing_limit_milli = q.borrowing_limit_milli
    if instance.preemption_policy != "never":
        msg.preemption_policy = pb.PreemptionPolicy.Value(instance.preemption_policy.upper())
    bud = instance.disruption_budget
    for f in ("max_migrated_workers", "max_preempted_workers", "max_disruption_cost"):
        if getattr(bud, f) is not None:
            setattr(msg.disruption_budget, f, getattr(bud, f))
    return msg


def solution_from_message(instance: GpuInstance, msg: Any) -> GpuSolution:
    """A :class:`GpuSolution` from a ``placement.v1.GpuSolution`` message.

    Names must exist in the instance (InputError otherwise); everything else, including
    infeasible GPU indices, is left for the checker to judge.
    """
    v = ValidationCollector()
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    for i, jp in enumerate(msg.placements):
        path = f"gpu.placements[{i}]"
        j = instance.job_index.get(jp.job)
        if not v.require(j is not None, f"{path}.job", jp.job, "the name of a job of the instance"):
            continue
        if not v.require(
            j not in placements, f"{path}.job", jp.job, "each job placed at most once"
        ):
            continue
        workers = []
        for k, wp in enumerate(jp.workers):
            n = instance.node_index.get(wp.node)
            if v.require(
                n is not None,
                f"{path}.workers[{k}].node",
                wp.node,
                "the name of a node of the instance",
            ):
                workers.append(WorkerPlacement(n, tuple(int(g) for g in wp.gpus)))
        placements[j] = tuple(workers)
    v.raise_if_any()
    return GpuSolution(placements)


def queue_usage_before(instance: GpuInstance) -> dict[str, int]:
    """Milli-GPU each queue's running jobs hold now."""
    return queue_usage(instance, {j: instance.jobs[j].current for j in instance.running_jobs})


def queue_usage(
    instance: GpuInstance, placements: dict[int, tuple[WorkerPlacement, ...]]
) -> dict[str, int]:
    """Milli-GPU each queue holds under ``placements`` (job index -> its workers)."""
    usage = {q.name: 0 for q in instance.queues}
    for j, workers in placements.items():
        if 0 <= j < len(instance.jobs) and instance.jobs[j].queue in usage:
            usage[instance.jobs[j].queue] += instance.jobs[j].milli_per_worker * len(workers)
    return usage


def queue_caps(instance: GpuInstance) -> dict[str, int | None]:
    """The most milli-GPU each queue may hold after a decision: max(guarantee + borrowing
    limit, what its running jobs hold now) -- a decision never has to shrink a queue that
    already holds more; None: no limit."""
    before = queue_usage_before(instance)
    return {
        q.name: None if q.limit_milli is None else max(q.limit_milli, before[q.name])
        for q in instance.queues
    }


def preemption_rule(instance: GpuInstance, victim: int, preemptor: int) -> str:
    """Under which rule of the instance's policy pending job ``preemptor`` may take the place
    of running job ``victim``: ``lower_priority``, ``reclaim`` or ``""`` (not at all)."""
    v, p = instance.jobs[victim], instance.jobs[preemptor]
    policy = instance.preemption_policy
    if policy == "never" or not v.preemptible or p.running:
        return ""
    same_queue = v.queue == p.queue
    if p.priority > v.priority and (policy == "lower_priority" or same_queue):
        return "lower_priority"
    if policy == "reclaim_within_quota" and not same_queue and v.queue and p.queue:
        before = queue_usage_before(instance)
        qv = instance.queues[instance.queue_index[v.queue]]
        qp = instance.queues[instance.queue_index[p.queue]]
        if before[v.queue] > qv.guaranteed_milli and before[p.queue] < qp.guaranteed_milli:
            return "reclaim"
    return ""


def validate_fields(instance: GpuInstance) -> None:
    """The rules of a typed instance built in code that its message cannot express: per-GPU
    usage tuples of the wrong length, reported under ``gpu.cluster.nodes[i]``."""
    v = ValidationCollector()
    v.require(
        instance.preemption_policy in POLICIES,
        "gpu.preemption_policy",
        instance.preemption_policy,
        "one of " + ", ".join(POLICIES),
    )
    for i, node in enumerate(instance.nodes):
        for attr in ("gpu_milli_used", "gpu_memory_mib_used"):
            if len(getattr(node, attr)) != max(node.gpu_count, 0):
                v.add(
                    f"gpu.cluster.nodes[{i}].{attr}",
                    getattr(node, attr),
                    f"one value per GPU ({node.gpu_count})",
                )
    v.raise_if_any()


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedWorker:
    """Where one worker runs, by node name, and the GPU indices inside the node."""

    node: str
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class NamedJobPlacement:
    """One placed job: its name and one :class:`NamedWorker` per worker."""

    job: str
    workers: tuple[NamedWorker, ...]


@dataclass(frozen=True)
class NamedGpuSolution:
    """A :class:`GpuSolution` by name: ``placements["job-a"].workers[0].node``."""

    placements: dict[str, NamedJobPlacement]
    unplaced: tuple[str, ...]
    """Names of the jobs not placed, in instance order."""


def named_solution(instance: GpuInstance, solution: GpuSolution) -> NamedGpuSolution:
    """The solution keyed by job and node names."""
    placements = {
        instance.jobs[j].name: NamedJobPlacement(
            instance.jobs[j].name,
            tuple(NamedWorker(instance.nodes[w.node].name, tuple(w.gpus)) for w in workers),
        )
        for j, workers in sorted(solution.placements.items())
    }
    unplaced = tuple(job.name for job in instance.jobs if job.name not in placements)
    return NamedGpuSolution(placements, unplaced)
