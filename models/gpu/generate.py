"""Seeded synthetic GPU clusters and job mixes.

A cluster of DGX-like 8-GPU nodes (NVLink domains of 8 GPUs for A100/H100, 4 for V100) in
racks of 4-16 nodes under spines, partly occupied by running work, and a mix of fractional
inference jobs, single-node training jobs, multi-node training gangs and CPU-only jobs.

Only ``numpy.random.default_rng(seed)`` is used: no global random state, no clock. The same
arguments give the identical instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from placement.models.gpu.instance import (
    MILLI,
    GpuInstance,
    GpuJob,
    GpuNode,
    TopologyLevel,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import check_count, size_limit

GPUS_PER_NODE = 8
MAX_GPUS = min(size_limit("gpus"), size_limit("nodes") * GPUS_PER_NODE)
"""GPUs a generated cluster may have: as many as the instance limits hold (nodes of
:data:`GPUS_PER_NODE`)."""
LEVELS = (
    TopologyLevel("nvlink", 600.0),  # NVLink / NVSwitch inside a domain
    TopologyLevel("node", 64.0),  # PCIe / host between domains of one node
    TopologyLevel("rack", 50.0),  # 400 Gb/s InfiniBand under one leaf switch
    TopologyLevel("spine", 25.0),  # oversubscribed spine between racks
)
"""Bandwidths in GB/s; non-increasing outward, as the validator requires."""


@dataclass(frozen=True)
class NodeSpec:
    """Hardware of one node type."""

    gpu_memory_mib: int
    nvlink_domain_size: int
    cpu_milli: int
    memory_mib: int


SPECS: dict[str, NodeSpec] = {
    # DGX A100: 8 x A100 80 GB, one NVSwitch domain, 2 x 64 cores (256 threads), 2 TiB.
    "A100": NodeSpec(81_920, 8, 256_000, 2_097_152),
    # DGX H100: 8 x H100 80 GB, one NVSwitch domain, 2 x 56 cores (224 threads), 2 TiB.
    "H100": NodeSpec(81_920, 8, 224_000, 2_097_152),
    # DGX-1 V100: 8 x V100 32 GB in two 4-GPU NVLink groups, 2 x 20 cores (80 threads), 512 GiB.
    "V100": NodeSpec(32_768, 4, 80_000, 524_288),
}
DEFAULT_SPEC = NodeSpec(24_576, 4, 64_000, 524_288)
"""Hardware of a GPU type not in :data:`SPECS`."""


def generate(
    gpus: int,
    jobs: int,
    seed: int,
    *,
    occupancy: float = 0.25,
    fractional_share: float = 0.3,
    gang_share: float = 0.2,
    cpu_share: float = 0.05,
    gpu_types: tuple[str, ...] = ("A100", "H100", "V100"),
    name: str | None = None,
    out: str | None = None,
) -> GpuInstance:
    """A seeded synthetic GPU-allocation instance.

    Parameters
    ----------
    gpus:
        GPUs wanted (>= 1); rounded up to whole 8-GPU nodes (the description says so).
    jobs:
        Number of jobs (>= 0).
    seed:
        Seed of ``numpy.random.default_rng``; the same arguments give the identical instance.
    occupancy:
        Fraction of the GPUs already used by running work (whole GPUs and shares), in [0, 1].
    fractional_share, gang_share, cpu_share:
        Expected fractions of fractional inference jobs, multi-node gangs and CPU-only jobs;
        the rest are single-node training jobs (1, 2, 4 or 8 GPUs). Their sum is at most 1.
    gpu_types:
        GPU types of the racks (one type per rack) and of the jobs' type restrictions.
    name:
        Instance name; default ``gpu-<gpus>g-<jobs>j-s<seed>``.
    out:
        The output file named in the description's command (``FILE`` when not given).

    Returns
    -------
    GpuInstance
        The instance; its description holds the command that makes it again.

    Raises
    ------
    InputError
        On an argument out of range.
    """
    _validate(gpus, jobs, occupancy, fractional_share, gang_share, cpu_share, gpu_types)
    rng = np.random.default_rng(seed)
    types = tuple(gpu_types)
    n_nodes = math.ceil(gpus / GPUS_PER_NODE)

    # Racks of 4-16 nodes, one GPU type per rack; spines of 2-8 racks.
    rack_sizes: list[int] = []
    racked = 0
    while racked < n_nodes:
        rack_sizes.append(min(int(rng.integers(4, 17)), n_nodes - racked))
        racked += rack_sizes[-1]
    rack_types = [types[int(rng.integers(len(types)))] for _ in rack_sizes]
    rack_spine: list[int] = []
    spines = 0
    while len(rack_spine) < len(rack_sizes):
        rack_spine.extend([spines] * int(rng.integers(2, 9)))
        spines += 1
    rack_spine = rack_spine[: len(rack_sizes)]

    specs: list[tuple[str, NodeSpec, str, str]] = []
    for r, size in enumerate(rack_sizes):
        spec = SPECS.get(rack_types[r], DEFAULT_SPEC)
        specs.extend(
            (rack_types[r], spec, f"rack-{r:03d}", f"spine-{rack_spine[r]:02d}")
            for _ in range(size)
        )

    milli_used = np.zeros((n_nodes, GPUS_PER_NODE), dtype=np.int64)
    mem_used = np.zeros((n_nodes, GPUS_PER_NODE), dtype=np.int64)
    _occupy(rng, specs, occupancy, milli_used, mem_used)

    nodes: list[GpuNode] = []
    width = max(4, len(str(n_nodes - 1)))
    for i, (gpu_type, spec, rack, spine) in enumerate(specs):
        share = milli_used[i].sum() / (MILLI * GPUS_PER_NODE)
        # Running work uses host CPU and memory roughly in proportion to its GPU share.
        cpu_used = int(spec.cpu_milli * share * rng.uniform(0.3, 0.9)) // 100 * 100
        host_used = int(spec.memory_mib * share * rng.uniform(0.3, 0.9)) // 1024 * 1024
        nodes.append(
            GpuNode(
                name=f"node-{i:0{width}d}",
                gpu_type=gpu_type,
                gpu_count=GPUS_PER_NODE,
                gpu_memory_mib=spec.gpu_memory_mib,
                nvlink_domain_size=spec.nvlink_domain_size,
                cpu_milli=spec.cpu_milli,
                memory_mib=spec.memory_mib,
                cpu_milli_used=cpu_used,
                memory_mib_used=host_used,
                groups=(rack, spine),
                gpu_milli_used=tuple(int(x) for x in milli_used[i]),
                gpu_memory_mib_used=tuple(int(x) for x in mem_used[i]),
            )
        )

    shares = np.array(
        [fractional_share, gang_share, cpu_share, 1.0 - fractional_share - gang_share - cpu_share]
    )
    shares = np.clip(shares, 0.0, None)
    kinds = rng.choice(4, size=jobs, p=shares / shares.sum())
    max_gang = min(8, max(2, n_nodes // 2))
    job_list = [_job(rng, int(kind), j, types, max_gang) for j, kind in enumerate(kinds)]

    counts = {
        k: int((kinds == i).sum()) for i, k in enumerate(("fractional", "gang", "cpu", "single"))
    }
    total = n_nodes * GPUS_PER_NODE
    used = milli_used.sum() / MILLI
    per_type = ", ".join(
        f"{sum(1 for s in specs if s[0] == t) * GPUS_PER_NODE} {t}"
        for t in types
        if any(s[0] == t for s in specs)
    )
    rounded = (
        "" if total == gpus else f" ({gpus} asked, rounded up to whole {GPUS_PER_NODE}-GPU nodes)"
    )
    command = GENERATORS[0].command(
        {
            "gpus": gpus,
            "jobs": jobs,
            "seed": seed,
            "occupancy": occupancy,
            "fractional_share": fractional_share,
            "gang_share": gang_share,
            "cpu_share": cpu_share,
            "gpu_types": types,
            "out": out,
        }
    )
    description = (
        f"Synthetic GPU cluster: {n_nodes} DGX-like nodes x {GPUS_PER_NODE} GPUs = {total} "
        f"GPUs{rounded} ({per_type}) in {len(rack_sizes)} racks of 4-16 nodes under "
        f"{len(set(rack_spine))} spines; "
        f"levels nvlink 600 / node 64 / rack 50 / spine 25 GB/s; {used:.1f} GPUs "
        f"({used / total:.0%}) already in use. {jobs} jobs: {counts['fractional']} fractional "
        "inference, "
        f"{counts['single']} single-node training, {counts['gang']} multi-node gangs, "
        f"{counts['cpu']} CPU-only; priorities 1-3. Made by: {command}"
    )
    return GpuInstance(
        levels=list(LEVELS),
        nodes=nodes,
        jobs=job_list,
        name=name or f"gpu-{gpus}g-{jobs}j-s{seed}",
        description=description,
    )


def _validate(
    gpus: int,
    jobs: int,
    occupancy: float,
    fractional_share: float,
    gang_share: float,
    cpu_share: float,
    gpu_types: tuple[str, ...],
) -> None:
    check_count("gpus", gpus, 1, MAX_GPUS)
    check_count("jobs", jobs, 0, size_limit("jobs"))
    if not 0 <= occupancy <= 1:
        raise InputError.single("occupancy", occupancy, "a fraction in [0, 1]")
    for label, share in (
        ("fractional_share", fractional_share),
        ("gang_share", gang_share),
        ("cpu_share", cpu_share),
    ):
        if not 0 <= share <= 1:
            raise InputError.single(label, share, "a fraction in [0, 1]")
    if fractional_share + gang_share + cpu_share > 1 + 1e-9:
        raise InputError.single(
            "fractional_share + gang_share + cpu_share",
            fractional_share + gang_share + cpu_share,
            "at most 1",
        )
    if not gpu_types or not all(isinstance(t, str) and t for t in gpu_types):
        raise InputError.single("gpu_types", list(gpu_types), "at least one GPU type name")


def _occupy(
    rng: np.random.Generator,
    specs: list[tuple[str, NodeSpec, str, str]],
    occupancy: float,
    milli_used: np.ndarray,
    mem_used: np.ndarray,
) -> None:
    """Fill GPUs with running work until ``occupancy`` of all GPU capacity is used.

    Nodes are visited in a random order, again and again while the target is not reached;
    each visit adds one node's worth of running work of a random pattern.
    """
    target = occupancy * len(specs) * GPUS_PER_NODE * MILLI
    used = 0
    order = rng.permutation(len(specs))
    while used < target:
        before = used
        for n in order:
            if used >= target:
                break
            cap = specs[n][1].gpu_memory_mib
            free = np.flatnonzero(milli_used[n] == 0)
            pattern = rng.random()
            if free.size and pattern < 0.75:
                if pattern < 0.35:
                    # One job takes every free GPU of the node (an 8-GPU job on an empty node).
                    gpus = free
                else:
                    # A few whole-GPU jobs scattered over the node (fragmentation, as in real
                    # clusters).
                    k = min(int(rng.choice([1, 2, 3, 4, 6])), free.size)
                    gpus = np.sort(rng.choice(free, size=k, replace=False))
                for g in gpus:
                    milli_used[n, g] = MILLI
                    mem_used[n, g] = int(rng.integers(cap // 2, cap + 1)) // 256 * 256
                    used += MILLI
                continue
            # Shared inference: 1-4 GPUs with room get a share.
            room = np.flatnonzero(milli_used[n] < MILLI)
            if room.size == 0:
                continue
            k = min(int(rng.integers(1, 5)), room.size)
            for g in rng.choice(room, size=k, replace=False):
                milli = min(50 * int(rng.integers(2, 19)), MILLI - int(milli_used[n, g]))
                share = int(cap * milli / MILLI * rng.uniform(0.5, 1.0)) // 256 * 256
                milli_used[n, g] += milli
                mem_used[n, g] = min(cap, int(mem_used[n, g]) + share)
                used += milli
        if used == before:
            break  # everything is in use


def _job(
    rng: np.random.Generator, kind: int, j: int, types: tuple[str, ...], max_gang: int
) -> GpuJob:
    priority = int(rng.integers(1, 4))
    if kind == 0:
        # Fractional inference: one replica, sometimes a few sharing the load.
        workers = 1 if rng.random() < 0.75 else int(rng.integers(2, 5))
        milli = 50 * int(rng.integers(2, 19))
        memory = 2048 * int(rng.integers(1, 9)) if rng.random() < 0.5 else 0
        return GpuJob(
            name=f"infer-{j:04d}",
            workers=workers,
            gpu_milli=milli,
            gpu_memory_mib=memory,
            cpu_milli=1000 * int(rng.integers(1, 5)),
            memory_mib=1024 * int(rng.integers(2, 17)),
            gpu_types=_types(rng, types, 0.2),
            priority=priority,
        )
    if kind == 1:
        # Multi-node data-parallel training: a gang of 8-GPU (sometimes 4-GPU) workers.
        workers = int(rng.integers(2, max_gang + 1))
        gpus = 8 if rng.random() < 0.8 else 4
        r = rng.random()
        locality, required = (
            ("rack", True) if r < 0.3 else (("rack", False) if r < 0.6 else ("", False))
        )
        return GpuJob(
            name=f"gang-{j:04d}",
            workers=workers,
            gpus=gpus,
            cpu_milli=gpus * 1000 * int(rng.integers(4, 9)),
            memory_mib=gpus * 1024 * int(rng.integers(16, 49)),
            gpu_types=_types(rng, types, 0.4),
            priority=priority,
            locality_level=locality,
            locality_required=required,
            traffic_gb=round(float(rng.uniform(10, 200)), 1),
        )
    if kind == 2:
        return GpuJob(
            name=f"etl-{j:04d}",
            workers=int(rng.integers(1, 5)),
            cpu_milli=1000 * int(rng.integers(2, 17)),
            memory_mib=1024 * int(rng.integers(4, 65)),
            priority=priority,
        )
    # Single-node training or fine-tuning.
    gpus = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.2, 0.2]))
    locality, required = "", False
    if gpus > 1:
        r = rng.random()
        if r < 0.05:
            locality, required = "nvlink", True
        elif r < 0.35:
            locality = "nvlink"
    return GpuJob(
        name=f"train-{j:04d}",
        gpus=gpus,
        gpu_memory_mib=40_960 if rng.random() < 0.2 else 0,
        cpu_milli=gpus * 1000 * int(rng.integers(4, 9)),
        memory_mib=gpus * 1024 * int(rng.integers(16, 49)),
        gpu_types=_types(rng, types, 0.25),
        priority=priority,
        locality_level=locality,
        locality_required=required,
        traffic_gb=round(float(rng.uniform(1, 20)) * gpus / 2, 1) if gpus > 1 else 0.0,
    )


def _types(rng: np.random.Generator, types: tuple[str, ...], p: float) -> tuple[str, ...]:
    """With probability ``p``, a restriction to one or two of ``types``."""
    if rng.random() >= p:
        return ()
    k = 1 if len(types) == 1 or rng.random() < 0.6 else 2
    picked = rng.choice(len(types), size=k, replace=False)
    return tuple(types[int(i)] for i in sorted(picked))


def _build(params: dict) -> GpuInstance:
    return generate(
        params["gpus"],
        params["jobs"],
        params["seed"],
        occupancy=params["occupancy"],
        fractional_share=params["fractional_share"],
        gang_share=params["gang_share"],
        cpu_share=params["cpu_share"],
        gpu_types=params["gpu_types"],
        out=params["out"],
    )


GENERATORS = (
    Generator(
        family="gpu",
        help="a topology-aware GPU cluster and a job mix",
        description=(
            "Generate a seeded GPU-allocation instance: nodes in NVLink domains, racks and "
            "spines, with part of the capacity already in use, and a mix of whole-GPU, "
            "fractional and CPU-only jobs, gangs, priorities and locality wishes."
        ),
        parameters=(
            Parameter(
                "gpus",
                "positive_int",
                required=True,
                metavar="N",
                maximum=MAX_GPUS,
                help="GPUs in the cluster",
            ),
            Parameter(
                "jobs",
                "non_negative_int",
                required=True,
                metavar="M",
                maximum=size_limit("jobs"),
                help="jobs to place",
            ),
            SEED,
            Parameter(
                "occupancy",
                "fraction",
                0.25,
                metavar="F",
                help="share of GPU capacity already used by running work, in [0, 1] (default: 0.25)",
            ),
            Parameter(
                "fractional_share",
                "fraction",
                0.3,
                metavar="F",
                help="expected share of fractional inference jobs (default: 0.3)",
            ),
            Parameter(
                "gang_share",
                "fraction",
                0.2,
                metavar="F",
                help="expected share of multi-node training gangs (default: 0.2)",
            ),
            Parameter(
                "cpu_share",
                "fraction",
                0.05,
                metavar="F",
                help="expected share of CPU-only jobs (default: 0.05); the rest are single-node "
                "training jobs, so the three shares add up to at most 1",
            ),
            Parameter(
                "gpu_types",
                "name_list",
                ("A100", "H100", "V100"),
                metavar="T,T,...",
                help="GPU types of the racks and of the jobs' type restrictions "
                "(default: A100,H100,V100)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate gpu``."""
