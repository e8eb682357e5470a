"""Seeded synthetic partition instances: chains or DAGs of layers and device sets.

Everything random comes from ``numpy.random.default_rng(seed)``: the same arguments give the
same instance. Layer weights are log-normal around ``mean_param_mib``; activations a few MiB;
FLOPs proportional to the weights (2 FLOPs per weight per token, 8-token micro-batches,
backward = 2 x forward). Device types come from :data:`DEVICE_TYPES`; device memory is then
scaled so that the model's memory under the workload fills ``memory_fill`` of all devices
together (memory is what makes partitioning hard; a fill near 1 is tight).
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.partition.edge_split_generate import generate_edge_split
from placement.models.partition.instance import (
    MAX_DEVICES,
    MAX_LAYERS,
    Device,
    Edge,
    Layer,
    Links,
    Mode,
    PartitionInstance,
    Workload,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import check_count

MIB = 2**20
DEVICE_TYPES: dict[str, tuple[float, float]] = {
    # name: (memory GiB, effective FLOP/s = ~40% of the dense fp16 tensor peak of the
    # vendor's datasheet: A100 312 TFLOPS, L4 121 TFLOPS, T4 65 TFLOPS)
    "A100": (80.0, 0.4 * 312e12),
    "L4": (24.0, 0.4 * 121e12),
    "T4": (16.0, 0.4 * 65e12),
}
"""Device types of the generator."""


def generate(
    n_layers: int,
    n_devices: int,
    seed: int = 0,
    *,
    dag: bool = False,
    mode: Mode = Mode.TRAINING,
    device_types: tuple[str, ...] = ("A100",),
    devices_per_node: int = 1,
    memory_fill: float = 0.6,
    mean_param_mib: float = 200.0,
    intra_node_gbps: float = 300.0,
    inter_node_gbps: float = 12.5,
    out: str | None = None,
) -> PartitionInstance:
    """A seeded synthetic instance (see the module docstring).

    Parameters
    ----------
    n_layers, n_devices:
        Sizes (>= 1).
    seed:
        Random seed.
    dag:
        Add skip edges (each layer also feeds one of the next 2..6 layers with probability
        0.3), making a DAG; otherwise a chain.
    mode:
        The workload mode.
    device_types:
        Types drawn uniformly for the devices (names of :data:`DEVICE_TYPES`).
    devices_per_node:
        Devices per node (consecutive devices share a node and its intra-node link).
    memory_fill:
        Model memory / total device memory, in (0, 2].
    mean_param_mib:
        Median weight MiB of a layer.
    intra_node_gbps, inter_node_gbps:
        Link bandwidths in GB/s (10^9 bytes/s).
    out:
        The output path, recorded in the description's command.

    Raises
    ------
    InputError
        On a size, type or fraction out of range.
    """
    check_count("layers", n_layers, 1, MAX_LAYERS)
    check_count("devices", n_devices, 1, MAX_DEVICES)
    for t in device_types:
        if t not in DEVICE_TYPES:
            raise InputError.single("device_types", t, "one of " + ", ".join(DEVICE_TYPES))
    if not 0 < memory_fill <= 2:
        raise InputError.single("memory_fill", memory_fill, "a number in (0, 2]")
    if devices_per_node < 1:
        raise InputError.single("devices_per_node", devices_per_node, "an integer >= 1")
    rng = np.random.default_rng(seed)
    params = np.maximum(1, rng.lognormal(math.log(mean_param_mib * MIB), 0.5, n_layers))
    params = params.astype(np.int64)
    acts = (rng.integers(1, 17, n_layers) * MIB).astype(np.int64)
    layers = [
        Layer(
            name=f"layer{i:04d}",
            param_bytes=int(params[i]),
            activation_bytes=int(acts[i]),
            # 2 FLOPs per weight (2-byte weights) per token, 8 tokens per micro-batch.
            forward_flops=float(params[i]) / 2 * 2 * 8,
            backward_flops=float(params[i]) / 2 * 2 * 8 * 2,
            kv_cache_bytes_per_token=int(acts[i] // 1024),
        )
        for i in range(n_layers)
    ]
    edges: list[Edge] = []
    if dag:
        for i in range(n_layers - 1):
            edges.append(Edge(i, i + 1, int(acts[i])))
            if rng.random() < 0.3 and i + 2 < n_layers:
                j = int(min(n_layers - 1, i + rng.integers(2, 7)))
                edges.append(Edge(i, j, int(acts[i] // 2)))
    types = [device_types[int(k)] for k in rng.integers(0, len(device_types), n_devices)]
    # Serving keeps a micro-batch in flight per stage: allow one per device.
    in_flight = n_devices if mode is Mode.SERVING else 2
    workload = Workload(
        mode=mode, batch_size=1, context_length=512, in_flight_microbatches=in_flight
    )
    probe = PartitionInstance(layers, [Device("probe", "A100", 1)], workload=workload)
    need = sum(probe.layer_memory_bytes(i) for i in range(n_layers))
    nominal = sum(DEVICE_TYPES[t][0] for t in types)
    scale = need / memory_fill / nominal  # bytes per nominal GiB
    devices = [
        Device(
            name=f"dev{k:03d}",
            type=t,
            memory_bytes=int(DEVICE_TYPES[t][0] * scale),
            flops_per_s=DEVICE_TYPES[t][1],
            node=f"node{k // devices_per_node:03d}",
        )
        for k, t in enumerate(types)
    ]
    shape = "DAG" if dag else "chain"
    command = GENERATORS[0].command(
        {
            "layers": n_layers,
            "devices": n_devices,
            "seed": seed,
            "dag": dag,
            "mode": mode.name.lower(),
            "device_types": tuple(device_types),
            "devices_per_node": devices_per_node,
            "memory_fill": memory_fill,
            "out": out,
        }
    )
    description = (
        f"Synthetic {shape} of {n_layers} layers on {n_devices} devices "
        f"({', '.join(f'{types.count(t)} x {t}' for t in sorted(set(types)))}), "
        f"{mode.value}, model memory {memory_fill:.0%} of device memory. Made by: {command}"
    )
    return PartitionInstance(
        layers=layers,
        devices=devices,
        links=Links(inter_node_gbps * 1e9, intra_node_gbps * 1e9),
        workload=workload,
        edges=edges,
        name=f"partition-{shape}-{n_layers}x{n_devices}-s{seed}",
        description=description,
        validated=False,
    )


def _build(params: dict) -> PartitionInstance:
    if params["mode"] == "edge_split":
        # QPART's request: one edge device and one server (edge_split_generate's docstring)
        if params["devices"] != 2:
            raise InputError.single(
                "devices", params["devices"], "2 with --mode edge_split (the device, the server)"
            )
        if params["dag"]:
            raise InputError.single("dag", True, "a chain with --mode edge_split (no --dag)")
        return generate_edge_split(params["layers"], params["seed"])
    return generate(
        params["layers"],
        params["devices"],
        params["seed"],
        dag=params["dag"],
        mode=Mode[params["mode"].upper()],
        device_types=tuple(params["device_types"]),
        devices_per_node=params["devices_per_node"],
        memory_fill=params["memory_fill"],
        out=params["out"],
    )


GENERATORS = (
    Generator(
        family="partition",
        help="a chain or DAG of layers and a set of devices to split it over",
        description=(
            "Generate a seeded model-partitioning instance: layers with log-normal weights, "
            "activations and FLOPs, devices of the given types (A100, L4, T4) whose memory is "
            "scaled so that the model fills --memory-fill of it, and nodes of "
            "--devices-per-node devices."
        ),
        parameters=(
            Parameter(
                "layers",
                "positive_int",
                required=True,
                metavar="N",
                maximum=MAX_LAYERS,
                help="layers of the model",
            ),
            Parameter(
                "devices",
                "positive_int",
                required=True,
                metavar="D",
                maximum=MAX_DEVICES,
                help="devices",
            ),
            SEED,
            Parameter(
                "dag", "flag", False, shown=True, help="add skip edges (a DAG); default: a chain"
            ),
            Parameter(
                "mode",
                "str",
                "training",
                choices=("edge_split", "inference", "serving", "training"),
                shown=True,
                help="workload mode (default: training); edge_split: a QPART request "
                "(quantized split between an edge device and a server, --devices 2)",
            ),
            Parameter(
                "device_types",
                "name_list",
                ("A100",),
                metavar="T,T,...",
                shown=True,
                help="device types drawn for the devices: A100, L4, T4 (default: A100)",
            ),
            Parameter(
                "devices_per_node",
                "positive_int",
                1,
                maximum=MAX_DEVICES,
                metavar="K",
                shown=True,
                help="devices per node sharing the intra-node link (default: 1)",
            ),
            Parameter(
                "memory_fill",
                "positive_float",
                0.6,
                metavar="F",
                shown=True,
                help="model memory / device memory, in (0, 2] (default: 0.6)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate partition``."""
