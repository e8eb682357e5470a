"""The typed entanglement-routing instance and solution, their JSON form, and validation.

A quantum repeater network (nodes with qubit memories and a swap success probability, links
with parallel channels, a per-channel entanglement success probability and a link fidelity)
and source-destination requests. A solution gives each request a set of simple paths and a
width (channels) per path. Units: probabilities in [0, 1], lengths in km, attenuation per km,
throughput in expected end-to-end entangled pairs per time slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import (
    FieldRange,
    check_ranges,
    finite,
    instance_message,
    register_ranges,
)
from placement.solver.schema.v1 import entanglement_pb2 as pb

OBJECTIVES = ("throughput", "max_min")
"""``throughput``: weighted expected throughput; ``max_min``: the smallest request's
throughput first, then the weighted throughput."""
DEFAULT_CANDIDATE_PATHS = 8
MAX_CANDIDATE_PATHS = 1000
MAX_QUBITS = 1_000_000
MAX_CHANNELS = 10_000
MAX_KM = 10**5
MAX_WEIGHT = 10**6

RANGES = register_ranges(
    {
        "QuantumNode.qubits": FieldRange(0, MAX_QUBITS, integer=True),
        "QuantumNode.swap_success": FieldRange(0, 1, lo_open=True, unit="a probability"),
        "QuantumNode.x": FieldRange(-(10**9), 10**9),
        "QuantumNode.y": FieldRange(-(10**9), 10**9),
        "QuantumLink.channels": FieldRange(1, MAX_CHANNELS, integer=True),
        "QuantumLink.success": FieldRange(0, 1, lo_open=True, unit="a probability"),
        "QuantumLink.length_km": FieldRange(0, MAX_KM, unit="km"),
        "EntanglementRequest.weight": FieldRange(0, MAX_WEIGHT, lo_open=True),
        "EntanglementRequest.min_fidelity": FieldRange(0, 1, unit="0 = no threshold"),
        "EntanglementRequest.demand": FieldRange(
            0, MAX_WEIGHT, lo_open=True, unit="pairs per slot"
        ),
        "EntanglementInstance.attenuation_per_km": FieldRange(0, 100, unit="loss per km"),
        "EntanglementInstance.candidate_paths": FieldRange(1, MAX_CANDIDATE_PATHS, integer=True),
    }
)
"""The documented range of every numeric field but the link fidelity (whose lower limit is
MIN_LINK_FIDELITY, checked below); docs/library.md lists them."""
MIN_LINK_FIDELITY = 0.25
"""A Werner state of fidelity 1/4 is the maximally mixed state: no entanglement left."""


@dataclass(frozen=True)
class QuantumNode:
    """A repeater or end node: ``qubits`` memories, swap success ``swap_success``."""

    name: str
    qubits: int
    swap_success: float = 1.0
    x: float = 0.0
    y: float = 0.0


@dataclass(frozen=True)
class QuantumLink:
    """An undirected link between node indices ``a`` and ``b`` with ``channels`` channels.

    ``success`` is the per-channel entanglement success probability of one slot (resolved
    from ``length_km`` and the instance's attenuation when a file gives only the length).
    """

    a: int
    b: int
    channels: int
    success: float
    fidelity: float = 1.0
    length_km: float = 0.0


@dataclass(frozen=True)
class EntanglementRequest:
    """Entanglement wanted between node indices ``source`` and ``destination``.

    ``demand`` (pairs per slot) caps the throughput that counts; None = no cap.
    """

    name: str
    source: int
    destination: int
    weight: float = 1.0
    min_fidelity: float = 0.0
    demand: float | None = None


@dataclass(eq=False)
class EntanglementInstance:
    """A network and its requests for one time slot."""

    family_name = "entanglement"

    nodes: list[QuantumNode]
    links: list[QuantumLink]
    requests: list[EntanglementRequest]
    attenuation_per_km: float = 0.0
    objective: str = "throughput"
    candidate_paths: int = DEFAULT_CANDIDATE_PATHS
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, compare=False)

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Node name -> index."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    @cached_property
    def request_index(self) -> dict[str, int]:
        """Request name -> index."""
        return {r.name: i for i, r in enumerate(self.requests)}

    @cached_property
    def link_index(self) -> dict[tuple[int, int], int]:
        """(smaller node index, larger node index) -> link index."""
        return {(min(lk.a, lk.b), max(lk.a, lk.b)): i for i, lk in enumerate(self.links)}

    @cached_property
    def neighbours(self) -> list[list[tuple[int, int]]]:
        """Per node, the (neighbour, link index) pairs."""
        out: list[list[tuple[int, int]]] = [[] for _ in self.nodes]
        for i, lk in enumerate(self.links):
            out[lk.a].append((lk.b, i))
            out[lk.b].append((lk.a, i))
        return out

    def link_between(self, u: int, v: int) -> int | None:
        """The index of the link between nodes ``u`` and ``v``, or None."""
        return self.link_index.get((min(u, v), max(u, v)))


@dataclass(frozen=True)
class RoutedPath:
    """A path of node indices from a request's source to its destination, ``width`` channels."""

    request: int
    nodes: tuple[int, ...]
    width: int


@dataclass
class EntanglementSolution:
    """The paths chosen for one slot (any number per request, including none)."""

    paths: tuple[RoutedPath, ...] = ()


def instance_from_message(msg: Any, name: str = "", description: str = "") -> EntanglementInstance:
    """Build and validate an :class:`EntanglementInstance` from its ``placement.v1`` message.

    Raises :class:`InputError` listing every bad field with its path (e.g.
    ``entanglement.links[3].channels``) and the expected value.
    """
    v = ValidationCollector()
    P = "entanglement"
    check_ranges(msg, RANGES, P, v)
    alpha = float(msg.attenuation_per_km)
    objective = msg.objective or "throughput"
    v.require(objective in OBJECTIVES, f"{P}.objective", msg.objective, " or ".join(OBJECTIVES))
    k = msg.candidate_paths if msg.HasField("candidate_paths") else DEFAULT_CANDIDATE_PATHS

    nodes: list[QuantumNode] = []
    index: dict[str, int] = {}
    v.require(len(msg.nodes) >= 2, f"{P}.nodes", len(msg.nodes), "at least 2 nodes")
    for i, nd in enumerate(msg.nodes):
        path = f"{P}.nodes[{i}]"
        v.unique_name(f"{path}.name", nd.name, index, "node")
        index.setdefault(nd.name, i)
        q = nd.swap_success if nd.HasField("swap_success") else 1.0
        nodes.append(QuantumNode(nd.name, int(nd.qubits), float(q), float(nd.x), float(nd.y)))

    links: list[QuantumLink] = []
    pairs: set[tuple[int, int]] = set()
    for i, lk in enumerate(msg.links):
        path = f"{P}.links[{i}]"
        a, b = index.get(lk.a), index.get(lk.b)
        v.require(a is not None, f"{path}.a", lk.a, "the name of a node of the instance")
        v.require(b is not None, f"{path}.b", lk.b, "the name of a node of the instance")
        if (
            a is not None
            and b is not None
            and v.require(a != b, f"{path}.b", lk.b, f"a node other than a={lk.a!r}")
        ):
            pair = (min(a, b), max(a, b))
            v.require(pair not in pairs, path, f"{lk.a}-{lk.b}", "at most one link per node pair")
            pairs.add(pair)
        if lk.HasField("success"):
            p = float(lk.success)
        elif finite(alpha) and alpha >= 0 and finite(lk.length_km) and lk.length_km >= 0:
            exponent = alpha * lk.length_km
            p = math.exp(-exponent) if finite(exponent) else 0.0
            v.require(
                p > 0,
                f"{path}.length_km",
                lk.length_km,
                "a length whose success exp(-attenuation_per_km * length_km) is > 0, "
                "or an explicit success",
            )
        else:
            p = 0.0  # attenuation_per_km or length_km is bad: reported above
        f = lk.fidelity if lk.HasField("fidelity") else 1.0
        v.require(
            finite(f) and MIN_LINK_FIDELITY < f <= 1,
            f"{path}.fidelity",
            f,
            f"a fidelity in ({MIN_LINK_FIDELITY}, 1]",
        )
        links.append(
            QuantumLink(
                a if a is not None else -1,
                b if b is not None else -1,
                int(lk.channels),
                p,
                float(f),
                float(lk.length_km),
            )
        )

    requests: list[EntanglementRequest] = []
    names: set[str] = set()
    for i, rq in enumerate(msg.requests):
        path = f"{P}.requests[{i}]"
        v.unique_name(f"{path}.name", rq.name, names, "request")
        names.add(rq.name)
        s, d = index.get(rq.source), index.get(rq.destination)
        v.require(s is not None, f"{path}.source", rq.source, "the name of a node of the instance")
        v.require(
            d is not None,
            f"{path}.destination",
            rq.destination,
            "the name of a node of the instance",
        )
        if s is not None and d is not None:
            v.require(
                s != d,
                f"{path}.destination",
                rq.destination,
                f"a node other than the source {rq.source!r}",
            )
        w = rq.weight if rq.HasField("weight") else 1.0
        demand = None
        if rq.HasField("demand"):
            demand = float(rq.demand)
        requests.append(
            EntanglementRequest(
                rq.name,
                s if s is not None else -1,
                d if d is not None else -1,
                float(w),
                float(rq.min_fidelity),
                demand,
            )
        )
    v.raise_if_any()
    instance = EntanglementInstance(
        nodes=nodes,
        links=links,
        requests=requests,
        attenuation_per_km=alpha,
        objective=objective,
        candidate_paths=int(k),
        name=name,
        description=description,
    )
    instance.validated = True
    return instance


def instance_to_message(instance: EntanglementInstance) -> Any:
    """The ``placement.v1.EntanglementInstance`` message of an instance (success resolved)."""
    msg = pb.EntanglementInstance()
    names = [n.name for n in instance.nodes]

    def name_of(i: int) -> str:
        return names[i] if 0 <= i < len(names) else f"#{i}"

    for n in instance.nodes:
        msg.nodes.add(name=n.name, qubits=n.qubits, swap_success=n.swap_success, x=n.x, y=n.y)
    for lk in instance.links:
        msg.links.add(
            a=name_of(lk.a),
            b=name_of(lk.b),
            channels=lk.channels,
            success=lk.success,
            length_km=lk.length_km,
            fidelity=lk.fidelity,
        )
    for r in instance.requests:
        rq = msg.requests.add(
            name=r.name,
            source=name_of(r.source),
            destination=name_of(r.destination),
            weight=r.weight,
            min_fidelity=r.min_fidelity,
        )
        if r.demand is not None:
            rq.demand = r.demand
    msg.attenuation_per_km = instance.attenuation_per_km
    msg.objective = instance.objective
    msg.candidate_paths = instance.candidate_paths
    return msg


def instance_from_dict(data: dict[str, Any]) -> EntanglementInstance:
    """An instance from the JSON form of its ``entanglement`` section (validated)."""
    return instance_from_message(instance_message({"entanglement": data}).entanglement)


def validate_fields(instance: EntanglementInstance) -> None:
    """The rules of a typed instance built in code that its message cannot express: node
    indices of links and requests in range (InputError naming every bad field)."""
    v = ValidationCollector()
    n = len(instance.nodes)
    for i, lk in enumerate(instance.links):
        for end in ("a", "b"):
            idx = getattr(lk, end)
            v.require(
                isinstance(idx, int) and 0 <= idx < n,
                f"entanglement.links[{i}].{end}",
                idx,
                f"a node index in [0, {n})",
            )
    for i, r in enumerate(instance.requests):
        for end in ("source", "destination"):
            idx = getattr(r, end)
            v.require(
                isinstance(idx, int) and 0 <= idx < n,
                f"entanglement.requests[{i}].{end}",
                idx,
                f"a node index in [0, {n})",
            )
    v.raise_if_any()


def solution_from_message(instance: EntanglementInstance, msg: Any) -> EntanglementSolution:
    """An :class:`EntanglementSolution` from its ``placement.v1`` message.

    Names must exist in the instance (InputError otherwise); everything else (paths that are
    not paths, widths, capacities, fidelity) is left for the checker to judge.
    """
    v = ValidationCollector()
    paths: list[RoutedPath] = []
    for i, rp in enumerate(msg.paths):
        path = f"entanglement.paths[{i}]"
        r = instance.request_index.get(rp.request)
        v.require(
            r is not None, f"{path}.request", rp.request, "the name of a request of the instance"
        )
        nodes = []
        for k, name in enumerate(rp.nodes):
            idx = instance.node_index.get(name)
            if v.require(
                idx is not None, f"{path}.nodes[{k}]", name, "the name of a node of the instance"
            ):
                nodes.append(idx)
        if r is not None:
            paths.append(RoutedPath(r, tuple(nodes), int(rp.width)))
    v.raise_if_any()
    return EntanglementSolution(tuple(paths))


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedRoute:
    """One routed path by node names, with its width in channels."""

    nodes: tuple[str, ...]
    width: int


@dataclass(frozen=True)
class NamedEntanglementSolution:
    """An :class:`EntanglementSolution` by name: ``routes["r1"][0].nodes``; requests with no
    path are in ``unserved``."""

    routes: dict[str, tuple[NamedRoute, ...]]
    unserved: tuple[str, ...]


def named_solution(
    instance: EntanglementInstance, solution: EntanglementSolution
) -> NamedEntanglementSolution:
    """The paths keyed by request name (requests in instance order)."""
    by_request: dict[int, list[NamedRoute]] = {}
    for path in solution.paths:
        route = NamedRoute(tuple(instance.nodes[n].name for n in path.nodes), int(path.width))
        by_request.setdefault(path.request, []).append(route)
    routes = {
        instance.requests[r].name: tuple(by_request[r])
        for r in range(len(instance.requests))
        if r in by_request
    }
    unserved = tuple(rq.name for rq in instance.requests if rq.name not in routes)
    return NamedEntanglementSolution(routes, unserved)


# The name before the family-prefixed convention (docs/library.md, "Names"), kept for callers.
Request = EntanglementRequest
