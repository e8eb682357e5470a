"""Loader for the layer graphs of Tarnawski et al. (NeurIPS 2020), msr-fiddle/dnn-partitioning.

Format (one JSON object): ``maxSizePerFPGA`` (bytes per accelerator), ``maxFPGAs``,
``maxCPUs``; ``nodes[]`` with ``id``, ``supportedOnFpga``, ``cpuLatency``, ``fpgaLatency``,
``isBackwardNode``, ``colorClass`` (nodes of one class must share a device), ``size``
(bytes); ``edges[]`` with ``sourceId``, ``destId``, ``cost`` (transfer time).

Mapping (docs/formulations/partition.md, "Loaders"):

* each colour class becomes one layer: its forward nodes' ``fpgaLatency`` sum is the forward
  time, its backward nodes' sum the backward time (latencies and costs are read as
  milliseconds), its nodes' ``size`` sum is ``extra_memory_bytes`` (rounded up);
* classes are ordered topologically along the forward edges (ties by smallest node id);
* the ``cost`` of every edge between two classes (forward and backward) is summed into one
  edge with a fixed ``transfer_s``;
* ``maxFPGAs`` devices of type ``accelerator`` with ``maxSizePerFPGA`` bytes; the CPU is not
  modelled (every node of the published graphs is supported on the accelerator; a graph
  with a node that is not is refused);
* workload TRAINING_PIPELINE: the objective is the max-load of the most loaded device (time
  per sample), a device's load counting its layers and the transfers it sends or receives.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx

from placement.models.partition.instance import (
    MAX_DEVICES,
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionInstance,
    Workload,
)
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import finite, load_json

DEVICE_TYPE = "accelerator"
MS = 1e-3


def _number(obj: dict[str, Any], key: str, path: str, file: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not finite(value):
        raise InputError.single(f"{path}.{key}", value, "a finite number", file=file)
    if value < 0:
        raise InputError.single(f"{path}.{key}", value, "a number >= 0", file=file)
    return float(value)


def load_tarnawski(path: str | Path, name: str | None = None) -> PartitionInstance:
    """Read one layer-graph JSON file into a partition instance (see the module docstring).

    Raises
    ------
    InputError
        Naming the file and the field (e.g. ``nodes[3].fpgaLatency``) on a malformed input.
    """
    file = str(path)
    data = load_json(path)
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list) or (key == "nodes" and not data[key]):
            raise InputError.single(key, data.get(key), "a non-empty JSON list", file=file)
    max_size = _number(data, "maxSizePerFPGA", "", file)
    n_acc = _number(data, "maxFPGAs", "", file)
    if not 1 <= n_acc <= MAX_DEVICES or not float(n_acc).is_integer():
        raise InputError.single(
            "maxFPGAs", data["maxFPGAs"], f"an integer in [1, {MAX_DEVICES}]", file=file
        )

    by_id: dict[int, dict[str, Any]] = {}
    for k, node in enumerate(data["nodes"]):
        p = f"nodes[{k}]"
        if not isinstance(node, dict):
            raise InputError.single(p, node, "a JSON object", file=file)
        nid = node.get("id")
        if isinstance(nid, bool) or not isinstance(nid, int):
            raise InputError.single(f"{p}.id", nid, "an integer node id", file=file)
        if nid in by_id:
            raise InputError.single(f"{p}.id", nid, "a node id used once", file=file)
        if not node.get("supportedOnFpga", 1):
            raise InputError.single(
                f"{p}.supportedOnFpga",
                node.get("supportedOnFpga"),
                "1 (CPU-only nodes are not modelled)",
                file=file,
            )
        cls = node.get("colorClass", nid)
        if isinstance(cls, bool) or not isinstance(cls, int):
            raise InputError.single(f"{p}.colorClass", cls, "an integer class", file=file)
        by_id[nid] = dict(
            cls=cls,
            latency=_number(node, "fpgaLatency", p, file),
            size=_number(node, "size", p, file),
            backward=bool(node.get("isBackwardNode", 0)),
        )

    edges_raw = []
    for k, e in enumerate(data["edges"]):
        p = f"edges[{k}]"
        if not isinstance(e, dict):
            raise InputError.single(p, e, "a JSON object", file=file)
        src, dst = e.get("sourceId"), e.get("destId")
        for key, v in (("sourceId", src), ("destId", dst)):
            if isinstance(v, bool) or not isinstance(v, int) or v not in by_id:
                raise InputError.single(f"{p}.{key}", v, "the id of a node", file=file)
        edges_raw.append((src, dst, _number(e, "cost", p, file)))

    classes = sorted({n["cls"] for n in by_id.values()})
    first_id = {c: min(i for i, n in by_id.items() if n["cls"] == c) for c in classes}
    forward = nx.DiGraph()
    forward.add_nodes_from(classes)
    for src, dst, _ in edges_raw:
        a, b = by_id[src], by_id[dst]
        if a["cls"] != b["cls"] and not a["backward"] and not b["backward"]:
            forward.add_edge(a["cls"], b["cls"])
    try:
        order = list(nx.lexicographical_topological_sort(forward, key=lambda c: first_id[c]))
    except nx.NetworkXUnfeasible:
        raise InputError.single(
            "edges", "a cycle between colour classes", "forward edges forming a DAG", file=file
        ) from None
    position = {c: i for i, c in enumerate(order)}

    fwd = dict.fromkeys(classes, 0.0)
    bwd = dict.fromkeys(classes, 0.0)
    size = dict.fromkeys(classes, 0.0)
    for n in by_id.values():
        (bwd if n["backward"] else fwd)[n["cls"]] += n["latency"]
        size[n["cls"]] += n["size"]
    for c in classes:
        if not (finite(fwd[c]) and finite(bwd[c]) and finite(size[c])):
            raise InputError.single(
                "nodes",
                f"colour class {c}",
                "latencies and sizes whose sums per colour class are finite",
                file=file,
            )
    layers = [
        Layer(
            name=f"class{c}",
            extra_memory_bytes=int(math.ceil(size[c])),
            times=(LayerTime(DEVICE_TYPE, fwd[c] * MS, bwd[c] * MS),),
        )
        for c in order
    ]
    pair_cost: dict[tuple[int, int], float] = {}
    for src, dst, cost in edges_raw:
        a, b = position[by_id[src]["cls"]], position[by_id[dst]["cls"]]
        if a != b and cost > 0:
            key = (min(a, b), max(a, b))
            pair_cost[key] = pair_cost.get(key, 0.0) + cost
    if not all(finite(c) for c in pair_cost.values()):
        raise InputError.single("edges", "cost", "costs whose sums are finite", file=file)
    edges = [Edge(a, b, 0, cost * MS) for (a, b), cost in sorted(pair_cost.items())]
    devices = [Device(f"acc{k}", DEVICE_TYPE, int(max_size)) for k in range(int(n_acc))]
    stem = Path(file).stem
    return PartitionInstance(
        layers=layers,
        devices=devices,
        links=Links(),
        workload=Workload(mode=Mode.TRAINING),
        edges=edges,
        name=name or f"tarnawski-{stem}",
        description=(
            f"Tarnawski et al. (NeurIPS 2020) layer graph {Path(file).name}: {len(by_id)} "
            f"nodes in {len(layers)} colour classes, {len(edges)} class edges, {int(n_acc)} "
            f"accelerators of {int(max_size)} bytes; max-load objective, contiguous splits "
            f"of the classes' topological order. Made by: placement import tarnawski {file}"
        ),
        validated=False,
    )


IMPORTERS = (
    Importer(
        format="tarnawski",
        family="partition",
        help="a layer graph of Tarnawski et al. (NeurIPS 2020), max-load objective",
        description=(
            "Read a JSON layer graph of msr-fiddle/dnn-partitioning: each colour class becomes "
            "a layer (forward and backward times summed, sizes summed), classes in topological "
            "order, edge costs as fixed transfer times, maxFPGAs accelerators of "
            "maxSizePerFPGA bytes, training-pipeline (max-load) objective."
        ),
        parameters=(
            Parameter(
                "graph",
                "path",
                positional=True,
                metavar="GRAPH.json",
                help="a layer graph of msr-fiddle/dnn-partitioning (Tarnawski et al.)",
            ),
            Parameter("name", "str", None, help="instance name (default: from the file)"),
        ),
        build=lambda p: load_tarnawski(p["graph"], name=p["name"]),
    ),
)
"""``placement import tarnawski``."""
