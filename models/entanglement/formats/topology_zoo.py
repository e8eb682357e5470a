"""Loaders for real network topologies: GML and GraphML (Internet Topology Zoo style).

The topology gives the nodes and links; link lengths come from the nodes' ``Latitude`` /
``Longitude`` by the haversine formula. Files without geographic coordinates (many GraphML
files carry only drawing positions ``x``/``y``) need ``default_length_km``; the loader says
so, naming the file and the node. Qubits, channels, attenuation, link fidelity and swap
success are parameters (the files do not carry them), and ``pairs`` requests are drawn with
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from placement.models.entanglement.instance import (
    EntanglementInstance,
    QuantumLink,
    QuantumNode,
    Request,
)
from placement.solver.errors import InputError
from placement.solver.family import validate
from placement.solver.hooks import Importer, Parameter

EARTH_RADIUS_KM = 6371.0088
"""Mean Earth radius (IUGG)."""


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in km between two points given in degrees."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def _read(path: Path) -> nx.Graph:
    file = str(path)
    if not path.is_file():
        raise InputError.single("", file, "an existing GML or GraphML file", file=file)
    suffix = path.suffix.lower()
    try:
        if suffix == ".gml":
            graph = nx.read_gml(path, label="id")
        elif suffix == ".graphml":
            graph = nx.read_graphml(path)
        else:
            raise InputError.single("", path.suffix, "a .gml or .graphml file", file=file)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure is the file's fault
        raise InputError.single(
            "", str(exc)[:200], "a valid GML / GraphML file", file=file
        ) from None
    return graph


def _coordinate(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # an integer beyond a double: unusable
        return None
    return out if math.isfinite(out) else None


def load_topology(
    path: str | Path,
    *,
    qubits: int = 12,
    channels: int = 5,
    attenuation_per_km: float = 0.01,
    link_fidelity: float = 0.97,
    swap: float = 0.9,
    pairs: int = 10,
    seed: int = 0,
    min_fidelity: float = 0.0,
    default_length_km: float | None = None,
    name: str | None = None,
) -> EntanglementInstance:
    """An entanglement instance on the topology in ``path`` (GML or GraphML).

    Parameters
    ----------
    path:
        The topology file; direction and parallel edges are dropped, self-loops ignored.
    qubits, channels:
        Qubits of every node and channels of every link.
    attenuation_per_km:
        Link success exp(-attenuation_per_km * length_km).
    link_fidelity, swap:
        Fidelity of every link's pairs and every node's swap success.
    pairs, seed, min_fidelity:
        Requests between distinct random nodes, and their fidelity threshold.
    default_length_km:
        Length of a link with an end lacking Latitude/Longitude; None = such a file is an
        error.
    name:
        Instance name (default: the file's stem).

    Raises
    ------
    InputError
        Naming the file and the node or parameter at fault.
    """
    p = Path(path)
    file = str(path)
    graph = _read(p)
    params = [
        ("qubits", qubits, isinstance(qubits, int) and qubits >= 0, "an integer >= 0"),
        ("channels", channels, isinstance(channels, int) and channels >= 1, "an integer >= 1"),
        ("attenuation_per_km", attenuation_per_km, attenuation_per_km >= 0, "a loss per km >= 0"),
        ("link_fidelity", link_fidelity, 0.25 < link_fidelity <= 1, "a fidelity in (0.25, 1]"),
        ("swap", swap, 0 < swap <= 1, "a probability in (0, 1]"),
        ("pairs", pairs, isinstance(pairs, int) and pairs >= 0, "an integer >= 0"),
        ("min_fidelity", min_fidelity, 0 <= min_fidelity <= 1, "a fidelity in [0, 1]"),
    ]
    for field_name, value, ok, expected in params:
        if not ok:
            raise InputError.single(field_name, value, expected, file=file)
    ids = list(graph.nodes)
    if len(ids) < 2:
        raise InputError.single("nodes", len(ids), "a topology with at least 2 nodes", file=file)
    labels = [str(graph.nodes[i].get("label", i)) for i in ids]
    names = [
        lb if labels.count(lb) == 1 else f"{lb}#{i}" for lb, i in zip(labels, ids, strict=True)
    ]
    index = {node_id: k for k, node_id in enumerate(ids)}
    coords = []
    for node_id in ids:
        data = graph.nodes[node_id]
        lat, lon = _coordinate(data, "Latitude"), _coordinate(data, "Longitude")
        coords.append((lat, lon) if lat is not None and lon is not None else None)
    nodes = [
        QuantumNode(
            names[k],
            qubits,
            swap,
            float(coords[k][1]) if coords[k] else float(_coordinate(graph.nodes[i], "x") or 0.0),
            float(coords[k][0]) if coords[k] else -float(_coordinate(graph.nodes[i], "y") or 0.0),
        )
        for k, i in enumerate(ids)
    ]
    links: list[QuantumLink] = []
    seen: set[tuple[int, int]] = set()
    for u, v in graph.edges():
        a, b = index[u], index[v]
        if a == b or (min(a, b), max(a, b)) in seen:
            continue
        seen.add((min(a, b), max(a, b)))
        if coords[a] is not None and coords[b] is not None:
            length = haversine_km(coords[a][0], coords[a][1], coords[b][0], coords[b][1])
        elif default_length_km is not None:
            length = float(default_length_km)
        else:
            missing = names[a] if coords[a] is None else names[b]
            raise InputError.single(
                f"node {missing!r}",
                "no Latitude/Longitude",
                "geographic coordinates, or a default link length (--default-length-km)",
                file=file,
            )
        links.append(
            QuantumLink(
                a, b, channels, math.exp(-attenuation_per_km * length), link_fidelity, length
            )
        )
    rng = np.random.default_rng(seed)
    requests = []
    for k in range(pairs):
        s, t = rng.choice(len(nodes), size=2, replace=False)
        requests.append(Request(f"sd{k}", int(s), int(t), 1.0, float(min_fidelity)))
    instance = EntanglementInstance(
        nodes=nodes,
        links=links,
        requests=requests,
        attenuation_per_km=attenuation_per_km,
        name=name or p.stem,
        description=(
            f"{p.name}: {len(nodes)} nodes, {len(links)} links; {qubits} qubits per node, "
            f"{channels} channels per link, success exp(-{attenuation_per_km:g} x km), link "
            f"fidelity {link_fidelity:g}, swap {swap:g}; {pairs} random S-D pairs (seed {seed}) "
            f"with minimum fidelity {min_fidelity:g}."
        ),
    )
    try:
        validate(instance)
    except InputError as exc:
        raise exc.with_file(file) from None
    return instance


IMPORTERS = (
    Importer(
        format="quantum-topology",
        family="entanglement",
        help="a GML / GraphML network topology (Internet Topology Zoo) as a repeater network",
        description=(
            "Read a GML or GraphML topology: nodes become repeaters, edges links whose length "
            "is the haversine distance of the ends' Latitude/Longitude; qubits, channels, "
            "attenuation, fidelity and swap success are options; random S-D requests."
        ),
        parameters=(
            Parameter(
                "topology",
                "path",
                positional=True,
                metavar="FILE",
                help="a .gml or .graphml topology",
            ),
            Parameter("qubits", "non_negative_int", 12, help="qubits per node (default: 12)"),
            Parameter("channels", "positive_int", 5, help="channels per link (default: 5)"),
            Parameter(
                "attenuation_per_km",
                "float",
                0.01,
                metavar="A",
                help="link success exp(-A x km) (default: 0.01)",
            ),
            Parameter("link_fidelity", "float", 0.97, metavar="F", help="(default: 0.97)"),
            Parameter("swap", "probability", 0.9, metavar="Q", help="(default: 0.9)"),
            Parameter("pairs", "non_negative_int", 10, help="S-D requests (default: 10)"),
            Parameter("seed", "seed", 0, help="seed of the requests (default: 0)"),
            Parameter("min_fidelity", "fraction", 0.0, metavar="F", help="(default: 0)"),
            Parameter(
                "default_length_km",
                "positive_float",
                None,
                metavar="KM",
                help="length of links whose ends lack Latitude/Longitude (default: such files "
                "are refused)",
            ),
            Parameter("name", "str", None, help="instance name (default: the file's stem)"),
        ),
        build=lambda p: load_topology(
            p["topology"],
            qubits=p["qubits"],
            channels=p["channels"],
            attenuation_per_km=p["attenuation_per_km"],
            link_fidelity=p["link_fidelity"],
            swap=p["swap"],
            pairs=p["pairs"],
            seed=p["seed"],
            min_fidelity=p["min_fidelity"],
            default_length_km=p["default_length_km"],
            name=p["name"],
        ),
    ),
)
"""``placement import quantum-topology``."""
