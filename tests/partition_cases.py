"""Small partition instances shared by the partition tests (optima known by hand)."""

from __future__ import annotations

from placement.models.partition import (
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionInstance,
    Workload,
)

GB = 10**9


def timed(name: str, ms: dict[str, float], memory: int = 0, group: str = "") -> Layer:
    """A layer with measured forward times (ms) per device type and ``memory`` bytes."""
    return Layer(
        name,
        extra_memory_bytes=memory,
        colocation_group=group,
        times=tuple(LayerTime(t, v / 1000) for t, v in ms.items()),
    )


def two_way_split() -> PartitionInstance:
    """Layers of 4, 3, 2, 1 ms on two identical devices, no transfers: [4 | 3 2 1] = 6 ms."""
    layers = [timed(f"l{i}", {"g": t}) for i, t in enumerate((4, 3, 2, 1))]
    return PartitionInstance(layers, [Device("d0", "g", GB), Device("d1", "g", GB)])


def transfer_tradeoff(mode: Mode) -> PartitionInstance:
    """Two 5 ms layers, a 2 ms transfer between them, two devices.

    Bottleneck: split (5 + 2 on each device) = 7 ms beats one device (10 ms).
    Latency: one device (10 ms) beats the split (5 + 2 + 5 = 12 ms).
    """
    layers = [timed("a", {"g": 5}), timed("b", {"g": 5})]
    return PartitionInstance(
        layers,
        [Device("d0", "g", GB), Device("d1", "g", GB)],
        workload=Workload(mode=mode),
        edges=[Edge(0, 1, 0, 0.002)],
    )


def memory_forces_split() -> PartitionInstance:
    """Three 1 GB layers; fast device F (1 ms per layer) and slow S (3 ms), 2 GB each.

    F holds two layers, S one: max(2, 3) = 3 ms is optimal (the other way costs 6 ms).
    """
    layers = [timed(f"l{i}", {"F": 1, "S": 3}, memory=GB) for i in range(3)]
    return PartitionInstance(layers, [Device("slow", "S", 2 * GB), Device("fast", "F", 2 * GB)])


def serving_pipeline() -> PartitionInstance:
    """LLM serving: 4 layers of 2 ms per decode step, each 1 GB of weights plus, for the
    2 sequences x 2 micro-batches in flight, 0.5 GB of KV cache (1000 tokens x 125 kB) and
    20 MB of activations; 3.1 GB devices (two layers each at most); at most 2 stages.

    Optimum 5 ms (400 tokens/s): two stages of two layers, each 4 ms of compute plus the one
    1 ms transfer it sends or receives (2 sequences x 5 MB at 10 GB/s). Three stages do no
    better and are not allowed (2 micro-batches in flight).
    """
    layers = [
        Layer(
            f"block{i}",
            param_bytes=GB,
            activation_bytes=5_000_000,
            kv_cache_bytes_per_token=125_000,
            times=(LayerTime("gpu", 0.002),),
        )
        for i in range(4)
    ]
    devices = [Device(f"gpu{k}", "gpu", 3_100_000_000) for k in range(3)]
    return PartitionInstance(
        layers,
        devices,
        # 2 sequences x 5 MB = 10 MB per transfer at 10 GB/s = 1 ms.
        links=Links(10 * GB),
        workload=Workload(
            mode=Mode.SERVING, batch_size=2, context_length=1000, in_flight_microbatches=2
        ),
    )


def colocated() -> PartitionInstance:
    """Layers 1 and 3 must share a device (so 1..3 do, contiguously): 1 ms each, two devices.

    Stages [0 | 1 2 3] = 3 ms is optimal (without the group, [0 1 | 2 3] = 2 ms).
    """
    layers = [
        timed("l0", {"g": 1}),
        timed("l1", {"g": 1}, group="x"),
        timed("l2", {"g": 1}),
        timed("l3", {"g": 1}, group="x"),
    ]
    return PartitionInstance(layers, [Device("d0", "g", GB), Device("d1", "g", GB)])


# name -> (instance, optimum of the primary objective in ms)
KNOWN_OPTIMA: dict[str, tuple[PartitionInstance, float]] = {
    "two_way_split": (two_way_split(), 6.0),
    "transfer_bottleneck": (transfer_tradeoff(Mode.TRAINING), 7.0),
    "transfer_latency": (transfer_tradeoff(Mode.INFERENCE), 10.0),
    "memory_forces_split": (memory_forces_split(), 3.0),
    "serving_pipeline": (serving_pipeline(), 5.0),
    "colocated": (colocated(), 3.0),
}
