"""Loader for the layer graphs of Tarnawski et al. (NeurIPS 2020), msr-fiddle/dnn-partitioning.

Format (one JSON object): ``maxSizePerFPGA`` (bytes per accelerator), ``maxFPGAs``,
``maxCPUs``; ``nodes[]`` with ``id``, ``supportedOnFpga``, ``cpuLatency``, ``fpgaLatency``,
``isBackwardNode``, ``colorClass`` (nodes of one class must share a device), ``size``
(bytes); ``edges[]`` with ``sourceId``, ``destId``, ``cost`` (transfer time of the source
node's output between an accelerator and CPU DRAM, the same on all edges out of a node).

**The paper's problem** (default, :func:`load_tarnawski`), as the authors' code defines it
(msr-fiddle/dnn-partitioning at commit b207b6ad27a1407d321f1e028cea96d7f2c90e3e:
``throughput-dp/dp.cpp``, ``computeLoadForResultOrg`` and ``Graph::prepareCachedScores``;
``throughput-ip/ip.py``):

* every node is a layer (layers in a topological order of the whole graph, ties by node
  id); its ``fpgaLatency`` is its time on type ``accelerator``, its ``cpuLatency`` on type
  ``cpu`` (milliseconds); ``size`` is ``extra_memory_bytes`` (rounded up); a node with
  ``supportedOnFpga = 0`` may run on ``cpu`` only; ``isBackwardNode`` marks it ``backward``;
* a colour class with more than one node is a colocation group;
* every edge is an edge whose ``transfer_s`` is its source's ``cost``;
* ``maxFPGAs`` accelerators of ``maxSizePerFPGA`` bytes and ``maxCPUs`` host CPUs (type
  ``cpu``; no memory limit in the authors' code: ``ip.py`` puts the size constraint on the
  accelerators only; 1 PiB stands for it here);
* workload TRAINING_PIPELINE (max-load: the load of the most loaded device, forward plus
  backward), contiguity CONVEX (the DP's ideal-difference splits; every device, CPUs too, as
  ``ip.py`` with ``ALSO_FORCE_ON_CPUS``) or NONE (``ip.py noncontig``), and transfers
  TRANSFER_PER_TENSOR_VIA_HOST: a node's output crossing devices costs ``cost`` once on its
  device and once on each distinct other device that consumes it; CPUs pay none ("the
  CPUs don't pay for communication (data is already in RAM)").

**The previous simplification** (``model="classes-in-order"``, kept for comparison and
labelled as such in the instance's description), :func:`load_tarnawski_classes_in_order`:

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

It is not the paper's problem: no CPU, contiguity over one fixed order, and per-edge
transfers summed between classes and charged on both ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from placement.models.partition.instance import (
    MAX_BYTES,
    MAX_DEVICES,
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionContiguity,
    PartitionInstance,
    PartitionTransferAccounting,
    Workload,
    instance_from_message,
    instance_to_message,
)
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import finite, load_json

DEVICE_TYPE = "accelerator"
CPU_TYPE = "cpu"
MS = 1e-3
MODELS = ("paper", "classes-in-order")
"""``paper``: the problem as published (default); ``classes-in-order``: the previous
simplification (colour classes in one order, no CPU, per-edge transfers)."""
CONTIGUITIES = {"convex": PartitionContiguity.CONVEX, "none": PartitionContiguity.NONE}


def _number(obj: dict[str, Any], key: str, path: str, file: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not finite(value):
        raise InputError.single(f"{path}.{key}", value, "a finite number", file=file)
    if value < 0:
        raise InputError.single(f"{path}.{key}", value, "a number >= 0", file=file)
    return float(value)


@dataclass
class _LayerGraph:
    """One layer-graph file, every field checked (the file format, before either model)."""

    file: str
    max_size: float
    max_fpgas: int
    max_cpus: int
    nodes: dict[int, dict[str, Any]]
    """Node id -> cls, fpga, cpu, size, supported, backward, name (in the file's order)."""
    edges: list[tuple[int, int, float]]
    """(sourceId, destId, cost) in the file's order."""


def _read_layer_graph(path: str | Path) -> _LayerGraph:
    """Read and check one layer-graph JSON file: the rules of the authors' loaders, for
    both models (one reader, so a file is refused for the same reason by either)."""
    file = str(path)
    data = load_json(path)
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list) or (key == "nodes" and not data[key]):
            raise InputError.single(key, data.get(key), "a non-empty JSON list", file=file)
    max_size = _number(data, "maxSizePerFPGA", "", file)
    counts = {}
    # maxCPUs absent: none (the authors' files always give it).
    for key, low in (("maxFPGAs", 1), ("maxCPUs", 0)):
        value = _number(data, key, "", file) if key in data or low else 0.0
        if not low <= value <= MAX_DEVICES or not float(value).is_integer():
            raise InputError.single(
                key, data[key], f"an integer in [{low}, {MAX_DEVICES}]", file=file
            )
        counts[key] = int(value)

    nodes: dict[int, dict[str, Any]] = {}
    for k, node in enumerate(data["nodes"]):
        p = f"nodes[{k}]"
        if not isinstance(node, dict):
            raise InputError.single(p, node, "a JSON object", file=file)
        nid = node.get("id")
        if isinstance(nid, bool) or not isinstance(nid, int):
            raise InputError.single(f"{p}.id", nid, "an integer node id", file=file)
        if nid in nodes:
            raise InputError.single(f"{p}.id", nid, "a node id used once", file=file)
        cls = node.get("colorClass", f"own{nid}")
        if isinstance(cls, bool) or not isinstance(cls, int | str):
            raise InputError.single(f"{p}.colorClass", cls, "an integer class", file=file)
        supported = node.get("supportedOnFpga", 1)
        if supported not in (0, 1, True, False):
            raise InputError.single(f"{p}.supportedOnFpga", supported, "0 or 1", file=file)
        backward = node.get("isBackwardNode", 0)
        if backward not in (0, 1, True, False):
            raise InputError.single(f"{p}.isBackwardNode", backward, "0 or 1", file=file)
        size = _number(node, "size", p, file) if "size" in node else 0.0
        if size > MAX_BYTES:
            raise InputError.single(f"{p}.size", size, f"at most {MAX_BYTES} bytes", file=file)
        nodes[nid] = dict(
            cls=cls,
            fpga=_number(node, "fpgaLatency", p, file),
            cpu=_number(node, "cpuLatency", p, file) if "cpuLatency" in node else 0.0,
            size=size,
            supported=bool(supported),
            backward=bool(backward),
            name=node.get("name"),
        )

    edges: list[tuple[int, int, float]] = []
    cost_of: dict[int, float] = {}
    for k, e in enumerate(data["edges"]):
        p = f"edges[{k}]"
        if not isinstance(e, dict):
            raise InputError.single(p, e, "a JSON object", file=file)
        src, dst = e.get("sourceId"), e.get("destId")
        for key, v in (("sourceId", src), ("destId", dst)):
            if isinstance(v, bool) or not isinstance(v, int) or v not in nodes:
                raise InputError.single(f"{p}.{key}", v, "the id of a node", file=file)
        if src == dst:
            raise InputError.single(f"{p}.destId", dst, "a node other than sourceId", file=file)
        if nodes[src]["backward"] and not nodes[dst]["backward"]:
            raise InputError.single(
                f"{p}.destId", dst, "a backward node (an edge from a backward node)", file=file
            )
        cost = _number(e, "cost", p, file)
        first = cost_of.setdefault(src, cost)
        # The authors' loaders refuse two outgoing costs differing by more than 1e-6.
        if abs(first - cost) > 1e-6:
            raise InputError.single(
                f"{p}.cost",
                cost,
                f"{first}, the cost of the other edges out of node {src}",
                file=file,
            )
        edges.append((src, dst, cost))
    return _LayerGraph(file, max_size, counts["maxFPGAs"], counts["maxCPUs"], nodes, edges)


def load_tarnawski(
    path: str | Path,
    name: str | None = None,
    model: str = "paper",
    contiguity: str = "convex",
) -> PartitionInstance:
    """Read one layer-graph JSON file into a partition instance: the paper's problem
    (``model="paper"``, with ``contiguity`` ``convex`` or ``none``) or the previous
    simplification (``model="classes-in-order"``); see the module docstring.

    Raises
    ------
    InputError
        Naming the file and the field (e.g. ``nodes[3].fpgaLatency``) on a malformed input,
        or the option on a bad ``model`` / ``contiguity``.
    """
    if model not in MODELS:
        raise InputError.single("--model", model, " or ".join(MODELS))
    if model == "classes-in-order":
        return load_tarnawski_classes_in_order(path, name)
    if contiguity not in CONTIGUITIES:
        raise InputError.single("--contiguity", contiguity, " or ".join(CONTIGUITIES))
    g = _read_layer_graph(path)
    file, nodes = g.file, g.nodes
    forward_classes = {n["cls"] for n in nodes.values() if not n["backward"]}
    for nid, n in nodes.items():
        if n["backward"] and n["cls"] not in forward_classes:
            raise InputError.single(
                "nodes",
                f"backward node {nid} (colour class {n['cls']})",
                "a colour class with a forward node (backward-only classes are not modelled)",
                file=file,
            )

    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((src, dst) for src, dst, _ in g.edges)
    try:
        order = list(nx.lexicographical_topological_sort(graph))
    except nx.NetworkXUnfeasible:
        raise InputError.single("edges", "a cycle", "edges forming a DAG", file=file) from None
    position = {nid: i for i, nid in enumerate(order)}
    names = [nodes[nid]["name"] for nid in order]
    unique = all(isinstance(x, str) and x for x in names) and len(set(names)) == len(names)
    class_size: dict[Any, int] = {}
    for n in nodes.values():
        class_size[n["cls"]] = class_size.get(n["cls"], 0) + 1
    layers = []
    for nid in order:
        n = nodes[nid]
        if not (finite(n["fpga"] * MS) and finite(n["cpu"] * MS)):
            raise InputError.single("nodes", f"node {nid}", "finite latencies", file=file)
        fwd, bwd = (0.0, 1.0) if n["backward"] else (1.0, 0.0)
        layers.append(
            Layer(
                name=n["name"] if unique else f"n{nid}",
                extra_memory_bytes=int(math.ceil(n["size"])),
                colocation_group=f"class{n['cls']}" if class_size[n["cls"]] > 1 else "",
                times=(
                    LayerTime(DEVICE_TYPE, fwd * n["fpga"] * MS, bwd * n["fpga"] * MS),
                    LayerTime(CPU_TYPE, fwd * n["cpu"] * MS, bwd * n["cpu"] * MS),
                ),
                allowed_device_types=() if n["supported"] else (CPU_TYPE,),
                backward=n["backward"],
            )
        )
    edges = [Edge(position[src], position[dst], 0, cost * MS) for src, dst, cost in g.edges]
    devices = [Device(f"acc{k}", DEVICE_TYPE, int(g.max_size)) for k in range(g.max_fpgas)] + [
        Device(f"cpu{k}", CPU_TYPE, MAX_BYTES, host=True) for k in range(g.max_cpus)
    ]
    stem = Path(file).stem
    rule = CONTIGUITIES[contiguity]
    instance = PartitionInstance(
        layers=layers,
        devices=devices,
        links=Links(),
        workload=Workload(
            mode=Mode.TRAINING,
            contiguity_rule=rule,
            transfer_accounting=PartitionTransferAccounting.PER_TENSOR_VIA_HOST,
        ),
        edges=edges,
        name=name or f"tarnawski-{stem}",
        description=(
            f"Tarnawski et al. (NeurIPS 2020) layer graph {Path(file).name}, the paper's "
            f"problem: {len(layers)} nodes, {len(edges)} edges, {g.max_fpgas} "
            f"accelerators of {int(g.max_size)} bytes and {g.max_cpus} CPU(s); max-load "
            f"objective, {contiguity} splits, per-tensor transfers via the host. Made by: "
            f"placement import tarnawski {file}"
            + ("" if contiguity == "convex" else f" --contiguity {contiguity}")
        ),
        validated=False,
    )
    # Through the message, so that the instance is validated like any other input.
    try:
        return instance_from_message(
            instance_to_message(instance), instance.name, instance.description
        )
    except InputError as error:
        raise error.with_file(file) from None


def load_tarnawski_classes_in_order(path: str | Path, name: str | None = None) -> PartitionInstance:
    """The previous simplification (module docstring): colour classes as layers in one
    topological order, no CPU, per-edge transfers. Not the paper's problem. The file is read
    by the same checks as the paper's model; CPU-only nodes are refused on top.

    Raises
    ------
    InputError
        Naming the file and the field (e.g. ``nodes[3].fpgaLatency``) on a malformed input.
    """
    g = _read_layer_graph(path)
    file, by_id = g.file, g.nodes
    for k, node in enumerate(by_id.values()):
        if not node["supported"]:
            raise InputError.single(
                f"nodes[{k}].supportedOnFpga",
                0,
                "1 (CPU-only nodes are not modelled)",
                file=file,
            )
    # Classes as the file names them; a node without one is a class of its own.
    classes = sorted({n["cls"] for n in by_id.values()}, key=lambda c: (isinstance(c, str), c))
    first_id = {c: min(i for i, n in by_id.items() if n["cls"] == c) for c in classes}
    forward = nx.DiGraph()
    forward.add_nodes_from(classes)
    for src, dst, _ in g.edges:
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
        (bwd if n["backward"] else fwd)[n["cls"]] += n["fpga"]
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
    for src, dst, cost in g.edges:
        a, b = position[by_id[src]["cls"]], position[by_id[dst]["cls"]]
        if a != b and cost > 0:
            key = (min(a, b), max(a, b))
            pair_cost[key] = pair_cost.get(key, 0.0) + cost
    if not all(finite(c) for c in pair_cost.values()):
        raise InputError.single("edges", "cost", "costs whose sums are finite", file=file)
    edges = [Edge(a, b, 0, cost * MS) for (a, b), cost in sorted(pair_cost.items())]
    devices = [Device(f"acc{k}", DEVICE_TYPE, int(g.max_size)) for k in range(g.max_fpgas)]
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
            f"nodes in {len(layers)} colour classes, {len(edges)} class edges, {g.max_fpgas} "
            f"accelerators of {int(g.max_size)} bytes; max-load objective, contiguous splits "
            f"of the classes' topological order (a simplification, not the paper's problem: "
            f"no CPU, per-edge transfers). Made by: placement import tarnawski {file} "
            "--model classes-in-order"
        ),
        validated=False,
    )


IMPORTERS = (
    Importer(
        format="tarnawski",
        family="partition",
        help="a layer graph of Tarnawski et al. (NeurIPS 2020), max-load objective",
        description=(
            "Read a JSON layer graph of msr-fiddle/dnn-partitioning as the paper's problem: "
            "every node a layer (accelerator and CPU times, supportedOnFpga, colour classes as "
            "colocation groups, backward nodes), maxFPGAs accelerators of maxSizePerFPGA "
            "bytes and maxCPUs host CPUs, convex (ideal-difference) splits, each node's "
            "output paid once by its device and once per distinct consumer device, CPUs "
            "paying none, max-load objective. --model classes-in-order gives the previous "
            "simplification (classes in one order, no CPU, per-edge transfers)."
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
            Parameter(
                "model",
                "str",
                "paper",
                choices=MODELS,
                help="paper (default): the published problem; classes-in-order: the previous "
                "simplification (colour classes in one topological order, no CPU, per-edge "
                "transfers), not the paper's problem",
            ),
            Parameter(
                "contiguity",
                "str",
                "convex",
                choices=tuple(CONTIGUITIES),
                help="paper model: convex (default; ideal-difference splits) or none (the "
                "paper's non-contiguous variant)",
            ),
        ),
        build=lambda p: load_tarnawski(
            p["graph"], name=p["name"], model=p["model"], contiguity=p["contiguity"]
        ),
    ),
)
"""``placement import tarnawski``."""
