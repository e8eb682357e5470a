"""The generated cluster and job trace of ``placement bench gpu-topology``.

Cluster: 8-GPU nodes (one NVLink domain of 8 GPUs each, as an HGX board), racks of 8 nodes
(64 GPUs) and blocks of 8 racks (512 GPUs): the levels ``nvlink``, ``node``, ``rack``,
``block``. At 1,024 GPUs that is 128 nodes, 16 racks, 2 blocks; at 8,192 GPUs 1,024 nodes,
128 racks, 16 blocks. At time 0 the cluster is partly occupied (:data:`START_OCCUPIED` of its
GPUs) by single-node pods with their own departure times.

Trace (seeded): Poisson arrivals of training gangs (2-64 workers of 1-8 whole GPUs; a
``rack`` level up to 64 GPUs, ``block`` above; required or preferred) and single-node
inference pods (1 worker of 1-8 GPUs), with log-normal durations. The *shape* of the mix
follows the Microsoft Philly trace as characterised by Jeon et al., "Analysis of Large-Scale
Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019: gang sizes in powers
of two, most jobs small, run times heavy-tailed from minutes to days, larger jobs running
longer. The shares and the log-normal parameters below (:data:`GANG_SIZES`,
:data:`DURATION_MEDIAN_H`, :data:`DURATION_SIGMA`) are ours, chosen to that shape: they are
not fitted to the published trace files, which are not in the shared data. The arrival rate
is set so that the offered load (GPU-hours arriving per hour) is :data:`OFFERED_LOAD` of the
cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from placement.models.gpu.instance import (
    GpuInstance,
    GpuJob,
    GpuNode,
    TopologyLevel,
    WorkloadClass,
)

GPUS_PER_NODE = 8
NODES_PER_RACK = 8
RACKS_PER_BLOCK = 8
LEVELS = (
    TopologyLevel("nvlink", 450.0),
    TopologyLevel("node", 450.0),
    TopologyLevel("rack", 50.0),
    TopologyLevel("block", 25.0),
)
"""Bandwidth inside an NVLink domain (NVLink 4, GB/s), a node, a rack (400 Gb/s NICs) and a
block (the spine, oversubscribed 2:1)."""

START_OCCUPIED = 0.8
"""Share of the cluster's GPUs held by running pods at time 0."""
OFFERED_LOAD = 1.3
"""GPU-hours arriving per hour, as a share of the cluster's GPUs."""
INFERENCE_SHARE = 0.3
"""Share of arrivals that are single-node inference pods."""
REQUIRED_SHARE = 0.5
"""Share of training gangs whose level is required (the others prefer it)."""
TRAFFIC_GB_PER_GPU = 10.0
"""Gradient traffic per GPU of a gang and step window (the comm cost's ``traffic_gb``)."""

GANG_SIZES: tuple[tuple[int, int, float], ...] = (
    (2, 1, 0.14),
    (2, 2, 0.10),
    (2, 4, 0.10),
    (4, 2, 0.06),
    (2, 8, 0.14),
    (4, 4, 0.04),
    (4, 8, 0.14),
    (8, 4, 0.04),
    (8, 8, 0.10),
    (16, 4, 0.02),
    (16, 8, 0.06),
    (32, 8, 0.04),
    (64, 1, 0.01),
    (64, 4, 0.01),
)
"""(workers, GPUs per worker, share) of the training gangs: 2-128 GPUs in powers of two,
small gangs most frequent (the shape of Philly's job sizes, Jeon et al. 2019)."""
INFERENCE_GPUS: tuple[tuple[int, float], ...] = ((1, 0.5), (2, 0.2), (4, 0.2), (8, 0.1))
"""(GPUs, share) of one inference pod."""
DURATION_MEDIAN_H = {"small": 0.25, "medium": 0.75, "large": 1.5, "inference": 0.5}
"""Median run time in hours by size (small < 8 GPUs, medium 8-32, large > 32)."""
DURATION_SIGMA = 1.0
"""Log-normal sigma of run times (heavy-tailed: the 99th percentile about 10x the median)."""
MAX_DURATION_H = 24.0


@dataclass(frozen=True)
class TraceJob:
    """One arrival: a training gang or an inference pod."""

    name: str
    arrival_h: float
    duration_h: float
    workers: int
    gpus: int
    level: str = ""
    required: bool = False
    kind: str = "train"

    @property
    def demand(self) -> int:
        """GPUs of the whole gang."""
        return self.workers * self.gpus

    def as_job(self, priority: int = 1) -> GpuJob:
        """The family's job of this arrival (whole GPUs, no CPU/memory limits)."""
        return GpuJob(
            name=self.name,
            workers=self.workers,
            gpus=self.gpus,
            priority=priority,
            locality_level=self.level,
            locality_required=self.required,
            traffic_gb=TRAFFIC_GB_PER_GPU * self.demand if self.workers > 1 else 0.0,
        )


@dataclass(frozen=True)
class TopologyTrace:
    """A cluster's nodes, the pods holding GPUs at time 0 and the arrivals."""

    gpus: int
    nodes: tuple[GpuNode, ...]
    initial: tuple[tuple[int, int, float], ...]
    """(node, GPUs, departure hour) of each pod running at time 0 (lowest free GPUs first)."""
    jobs: tuple[TraceJob, ...]
    hours: float

    def instance(self, jobs: list[GpuJob], used: list[tuple[int, ...]]) -> GpuInstance:
        """The family's instance of one scheduling cycle: the nodes with ``used[n]`` (milli-GPU
        per GPU) in use and ``jobs`` pending."""
        nodes = [
            GpuNode(
                name=n.name,
                gpu_type=n.gpu_type,
                gpu_count=n.gpu_count,
                gpu_memory_mib=n.gpu_memory_mib,
                nvlink_domain_size=n.nvlink_domain_size,
                cpu_milli=n.cpu_milli,
                memory_mib=n.memory_mib,
                groups=n.groups,
                gpu_milli_used=used[i],
                gpu_memory_mib_used=tuple(n.gpu_memory_mib if u else 0 for u in used[i]),
            )
            for i, n in enumerate(self.nodes)
        ]
        return GpuInstance(
            levels=list(LEVELS),
            nodes=nodes,
            jobs=jobs,
            expected_mix=expected_mix(),
            locality_miss_penalty=10.0,
        )


def expected_mix() -> list[WorkloadClass]:
    """The trace's mix of worker sizes (GPUs per worker, weighted by arrivals x workers): what
    the fragmentation tier measures free GPUs against."""
    weights: dict[int, float] = {}
    for w, g, p in GANG_SIZES:
        weights[g] = weights.get(g, 0.0) + (1 - INFERENCE_SHARE) * p * w
    for g, p in INFERENCE_GPUS:
        weights[g] = weights.get(g, 0.0) + INFERENCE_SHARE * p
    return [WorkloadClass(g, 0, max(1, round(100 * v))) for g, v in sorted(weights.items())]


def topology_nodes(gpus: int) -> tuple[GpuNode, ...]:
    """The cluster's nodes: ``gpus / 8`` nodes in racks of 8 and blocks of 8 racks."""
    if gpus < GPUS_PER_NODE or gpus % GPUS_PER_NODE:
        raise ValueError(f"gpus={gpus}: expected a positive multiple of {GPUS_PER_NODE}")
    out = []
    for n in range(gpus // GPUS_PER_NODE):
        rack = n // NODES_PER_RACK
        block = rack // RACKS_PER_BLOCK
        out.append(
            GpuNode(
                name=f"b{block:02d}-r{rack:03d}-n{n:04d}",
                gpu_type="H100",
                gpu_count=GPUS_PER_NODE,
                gpu_memory_mib=81_920,
                nvlink_domain_size=GPUS_PER_NODE,
                cpu_milli=192_000,
                memory_mib=2_000_000,
                groups=(f"rack-{rack:03d}", f"block-{block:02d}"),
            )
        )
    return tuple(out)


def _duration(rng: np.random.Generator, demand: int, kind: str) -> float:
    if kind == "inference":
        median = DURATION_MEDIAN_H["inference"]
    elif demand < 8:
        median = DURATION_MEDIAN_H["small"]
    elif demand <= 32:
        median = DURATION_MEDIAN_H["medium"]
    else:
        median = DURATION_MEDIAN_H["large"]
    return float(min(MAX_DURATION_H, median * math.exp(DURATION_SIGMA * rng.standard_normal())))


def _mean_gpu_hours() -> float:
    """Expected GPU-hours of one arrival (for the arrival rate)."""
    spread = math.exp(DURATION_SIGMA**2 / 2)  # mean / median of a log-normal
    train = sum(p * w * g * _median(w * g) * spread for w, g, p in GANG_SIZES) / sum(
        p for _, _, p in GANG_SIZES
    )
    infer = sum(p * g for g, p in INFERENCE_GPUS) * DURATION_MEDIAN_H["inference"] * spread
    return (1 - INFERENCE_SHARE) * train + INFERENCE_SHARE * infer


def _median(demand: int) -> float:
    if demand < 8:
        return DURATION_MEDIAN_H["small"]
    return DURATION_MEDIAN_H["medium"] if demand <= 32 else DURATION_MEDIAN_H["large"]


def topology_trace(gpus: int, hours: float, seed: int) -> TopologyTrace:
    """The seeded cluster of ``gpus`` GPUs, its running pods at time 0 and ``hours`` of
    arrivals."""
    if hours <= 0:
        raise ValueError(f"hours={hours}: expected a positive number of hours")
    rng = np.random.default_rng(seed)
    nodes = topology_nodes(gpus)
    free = [GPUS_PER_NODE] * len(nodes)
    initial: list[tuple[int, int, float]] = []
    target = int(START_OCCUPIED * gpus)
    held = 0
    sizes = [g for g, _ in INFERENCE_GPUS]
    shares = np.array([p for _, p in INFERENCE_GPUS])
    while held < target:
        g = int(rng.choice(sizes, p=shares / shares.sum()))
        n = int(rng.integers(len(nodes)))
        if free[n] < g:
            continue
        free[n] -= g
        held += g
        # running work seen at a random moment: its run time is length-biased (a log-normal
        # with mu + sigma^2) and a uniform share of it is left (the residual life of a
        # renewal process); the median of the large gangs'
        biased = _duration(rng, 64, "train") * math.exp(DURATION_SIGMA**2)
        initial.append((n, g, biased * float(rng.random())))
    rate = OFFERED_LOAD * gpus / _mean_gpu_hours()  # arrivals per hour
    gang_p = np.array([p for _, _, p in GANG_SIZES])
    gang_p = gang_p / gang_p.sum()
    jobs: list[TraceJob] = []
    t = 0.0
    while True:
        t += float(rng.exponential(1 / rate))
        if t >= hours:
            break
        k = len(jobs)
        if rng.random() < INFERENCE_SHARE:
            g = int(rng.choice(sizes, p=shares / shares.sum()))
            jobs.append(
                TraceJob(f"infer-{k:05d}", t, _duration(rng, g, "inference"), 1, g, kind="infer")
            )
            continue
        w, g, _ = GANG_SIZES[int(rng.choice(len(GANG_SIZES), p=gang_p))]
        level = "rack" if w * g <= GPUS_PER_NODE * NODES_PER_RACK else "block"
        required = bool(rng.random() < REQUIRED_SHARE)
        jobs.append(
            TraceJob(f"train-{k:05d}", t, _duration(rng, w * g, "train"), w, g, level, required)
        )
    return TopologyTrace(gpus, nodes, tuple(initial), tuple(jobs), hours)
