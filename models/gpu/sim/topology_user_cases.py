"""The two cases users file against topology-aware schedulers, as instances (the benchmark
``gpu-topology`` reports what each peer and ours do on them; tests/test_gpu_topology_cases.py
asserts it).

1. *A bin-packing choice a greedy gets wrong* (:func:`twenty_then_nineteen`): racks with 19,
   10 and 10 free GPUs; a 20-GPU gang that prefers a rack, then a 19-GPU gang that requires
   one. Taking the 19 and one of the 10s for the first leaves no rack for the second; the
   two 10s place both.
2. *A required-topology gang that fits only after moving one small pod*
   (:func:`small_pod_then_gang`): rack A has 8 + 7 + 1 free GPUs (16), rack B 8 + 6 + 0 (14);
   a 1-GPU pod arrives, then a 16-GPU gang that requires a rack. Bin-packing the pod onto the
   fullest node (rack A's 1-free node) leaves the gang waiting; the pod in rack B places both.
   :func:`running_pod_then_gang` is the same cluster *after* that choice, the pod running on
   rack A's last free GPU: the gang fits only if the pod moves, so only a policy that moves
   running work places it (``ours-migrate``); it is a short trace, simulated cycle by cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placement.models.gpu.instance import GpuInstance, GpuNode
from placement.models.gpu.reading import instance_from_dict
from placement.models.gpu.sim.topology_trace import TopologyTrace, TraceJob


def rack_cluster(racks: dict[str, list[int]], jobs: list[dict[str, Any]]) -> GpuInstance:
    """8-GPU nodes in one block; ``racks`` gives each rack's nodes by their GPUs in use."""
    nodes = []
    for rack, used in racks.items():
        for k, u in enumerate(used):
            nodes.append(
                {
                    "name": f"{rack}{k}",
                    "gpu_type": "H100",
                    "gpu_count": 8,
                    "cpu_milli": 64_000,
                    "memory_mib": 512_000,
                    "groups": [f"rack-{rack}", "block-0"],
                    "gpu_usage": [{"index": g, "milli_used": 1000} for g in range(u)],
                }
            )
    return instance_from_dict(
        {
            "cluster": {
                "levels": [
                    {"name": "nvlink", "bandwidth_gbps": 300},
                    {"name": "node", "bandwidth_gbps": 64},
                    {"name": "rack", "bandwidth_gbps": 50},
                    {"name": "block", "bandwidth_gbps": 25},
                ],
                "nodes": nodes,
            },
            "jobs": jobs,
        }
    )


def twenty_then_nineteen() -> GpuInstance:
    """Case 1: racks with 19, 10 and 10 free; a 20-GPU gang (rack preferred), then a 19-GPU
    gang (rack required)."""
    return rack_cluster(
        {"A": [0, 0, 5], "B": [0, 6], "C": [0, 6]},  # free: A 8+8+3=19, B 8+2=10, C 10
        [
            {"name": "train-20", "workers": 20, "gpus": 1, "locality_level": "rack"},
            {"name": "train-19", "workers": 19, "gpus": 1, "locality_level": "rack",
             "locality_required": True},
        ],
    )  # fmt: skip


def small_pod_then_gang() -> GpuInstance:
    """Case 2: rack A 8 + 7 + 1 free, rack B 8 + 6 + 0; a 1-GPU pod, then a 16-GPU gang that
    requires a rack."""
    return rack_cluster(
        {"A": [0, 1, 7], "B": [0, 2, 8]},  # free: A 8+7+1=16, B 8+6+0=14
        [
            {"name": "small", "workers": 1, "gpus": 1},
            {"name": "gang-16", "workers": 16, "gpus": 1, "locality_level": "rack",
             "locality_required": True},
        ],
    )  # fmt: skip


def running_pod_then_gang() -> TopologyTrace:
    """Case 2 after bin-packing: rack A 8 + 7 + 1 free with the 1-GPU pod running on the last
    one (A: 8 + 7 + 0), rack B 8 + 6 + 0; the 16-GPU gang (rack required) arrives at 0. The
    pods at time 0 run for 4 h; the trace lasts 5 min (six cycles of 60 s)."""
    nodes = tuple(
        GpuNode(
            name=f"{rack}{k}",
            gpu_type="H100",
            gpu_count=8,
            gpu_memory_mib=81_920,
            nvlink_domain_size=8,
            cpu_milli=64_000,
            memory_mib=512_000,
            groups=(f"rack-{rack}", "block-0"),
        )
        for rack in "AB"
        for k in range(3)
    )
    # (node, GPUs, end): A1 holds 1, A2 7 + the small pod's 1; B1 2, B2 8
    initial = ((1, 1, 4.0), (2, 7, 4.0), (2, 1, 4.0), (4, 2, 4.0), (5, 8, 4.0))
    gang = TraceJob("gang-16", 0.0, 1.0, 16, 1, "rack", True)
    return TopologyTrace(48, nodes, initial, (gang,), 5 / 60)


RUNNING_POD_CASE = "16-GPU gang requiring a rack, a 1-GPU pod running in its way"
"""The title of :func:`running_pod_then_gang` in the report."""

USER_CASES: dict[str, Callable[[], GpuInstance]] = {
    "20 GPUs from racks with 19, 10, 10 free, then 19 required": twenty_then_nineteen,
    "1-GPU pod, then a 16-GPU gang requiring a rack": small_pod_then_gang,
}
"""Title -> instance builder, in the report's order."""
