"""Building blocks of the hand-made GPU test instances, shared by the GPU test modules."""

from __future__ import annotations

from placement.models.gpu import GpuNode, TopologyLevel

LEVELS = [TopologyLevel("nvlink", 600), TopologyLevel("node", 64), TopologyLevel("rack", 25)]
"""NVLink 600 GB/s, node 64 GB/s, rack 25 GB/s."""


def gpu_node(
    name: str,
    gpus: int = 4,
    rack: str = "r0",
    domain: int = 0,
    used: tuple[int, ...] = (),
    *,
    gpu_type: str = "A100",
    cpu: int = 64_000,
    gpu_memory_mib: int = 80_000,
) -> GpuNode:
    """A node in ``rack``; the GPUs listed in ``used`` carry that much milli-GPU and 1000 MiB."""
    used = used or (0,) * gpus
    return GpuNode(
        name=name,
        gpu_type=gpu_type,
        gpu_count=gpus,
        gpu_memory_mib=gpu_memory_mib,
        nvlink_domain_size=domain,
        cpu_milli=cpu,
        memory_mib=512_000,
        groups=(rack,),
        gpu_milli_used=used,
        gpu_memory_mib_used=tuple(1000 if u else 0 for u in used),
    )
