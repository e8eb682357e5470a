"""Seeded synthetic networks in Q-CAST's setup (Shi and Qian, SIGCOMM 2020, Section 6.1).

``n`` nodes uniformly in a 100 x 100 area; links by a Waxman model whose scale is tuned so
that the expected average degree is ``degree`` (pairs then drawn independently; components
are joined by their closest node pair, so the network is connected); 10-14 qubits per node;
3-7 channels per link; link success exp(-alpha * length) with alpha tuned so that the mean
success over the links is ``success``; one swap probability ``swap`` for every node;
``pairs`` source-destination requests between distinct random nodes. All randomness comes
from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from placement.models.entanglement.instance import (
    MAX_CANDIDATE_PATHS,
    EntanglementInstance,
    QuantumLink,
    QuantumNode,
    Request,
)
from placement.solver.errors import InputError
from placement.solver.family import validate
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import check_count, size_limit

AREA = 100.0
WAXMAN_ALPHA = 0.4
"""Waxman's distance scale, as a share of the largest distance."""
MAX_NODES = 5_000
"""Nodes a generated network may have: the Waxman model holds the distance of every pair of
nodes (24 bytes a pair: 600 MB at 5,000 nodes)."""
MAX_PAIRS = size_limit("requests")
"""Requests a generated instance may have (the instance limit on a list)."""


def _tune(f: callable, target: float, lo: float, hi: float) -> float:  # type: ignore[valid-type]
    """x in [lo, hi] with f(x) = target for an increasing f (bisection)."""
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def generate(
    nodes: int = 100,
    degree: float = 6.0,
    success: float = 0.6,
    swap: float = 0.9,
    pairs: int = 10,
    seed: int = 0,
    min_fidelity: float = 0.0,
    link_fidelity: tuple[float, float] = (1.0, 1.0),
    candidate_paths: int | None = None,
    out: str | None = None,
) -> EntanglementInstance:
    """A Q-CAST-style instance.

    Parameters
    ----------
    nodes, degree:
        Node count (>= 2) and target average degree (> 0, < nodes - 1).
    success:
        Target mean link success probability, in (0, 1).
    swap:
        Swap success probability of every node, in (0, 1].
    pairs:
        Number of source-destination requests (>= 0).
    seed:
        Seed of ``numpy.random.default_rng``.
    min_fidelity:
        Fidelity threshold of every request, in [0, 1].
    link_fidelity:
        (low, high): each link's fidelity is uniform in this range, inside (0.25, 1].
    candidate_paths:
        The instance's ``candidate_paths`` (default: the schema's default).
    out:
        The output file named in the description's command.

    Returns
    -------
    EntanglementInstance
        Named ``qcast-n{nodes}-d{degree}-p{success}-q{swap}-s{seed}``; the description holds
        the command that makes it again.

    Raises
    ------
    InputError
        On a parameter out of range.
    """
    check_count("nodes", nodes, 2, MAX_NODES)
    check_count("pairs", pairs, 0, MAX_PAIRS)
    checks = [
        ("degree", degree, 0 < degree <= nodes - 1, f"a degree in (0, {nodes - 1}]"),
        ("success", success, 0 < success < 1, "a probability in (0, 1)"),
        ("swap", swap, 0 < swap <= 1, "a probability in (0, 1]"),
        ("min_fidelity", min_fidelity, 0 <= min_fidelity <= 1, "a fidelity in [0, 1]"),
        (
            "link_fidelity",
            link_fidelity,
            0.25 < link_fidelity[0] <= link_fidelity[1] <= 1,
            "low <= high in (0.25, 1]",
        ),
    ]
    for name, value, ok, expected in checks:
        if not ok:
            raise InputError.single(name, value, expected)
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0.0, AREA, size=(nodes, 2))
    dist = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
    iu = np.triu_indices(nodes, k=1)
    d = dist[iu]
    waxman = np.exp(-d / (WAXMAN_ALPHA * max(float(d.max()), 1e-9)))
    target_edges = nodes * degree / 2

    def expected_edges(log_beta: float) -> float:
        return float(np.minimum(1.0, math.exp(log_beta) * waxman).sum())

    beta = math.exp(_tune(expected_edges, target_edges, -30.0, 30.0))
    keep = rng.random(d.size) < np.minimum(1.0, beta * waxman)
    graph = nx.Graph()
    graph.add_nodes_from(range(nodes))
    graph.add_edges_from(zip(iu[0][keep].tolist(), iu[1][keep].tolist(), strict=True))
    components = [sorted(c) for c in nx.connected_components(graph)]
    while len(components) > 1:
        # Join the first component to the closest node of any other.
        a = components[0]
        rest = [v for c in components[1:] for v in c]
        sub = dist[np.ix_(a, rest)]
        i, j = np.unravel_index(int(np.argmin(sub)), sub.shape)
        graph.add_edge(a[i], rest[j])
        components = [sorted(c) for c in nx.connected_components(graph)]
    edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges)
    lengths = np.array([dist[u, v] for u, v in edges])

    def mean_success(neg_alpha: float) -> float:
        return float(np.exp(neg_alpha * lengths).mean())

    alpha = -_tune(mean_success, success, -10.0, 0.0)
    qubits = rng.integers(10, 15, size=nodes)
    channels = rng.integers(3, 8, size=len(edges))
    fid = rng.uniform(link_fidelity[0], link_fidelity[1], size=len(edges))
    node_list = [
        QuantumNode(f"n{i}", int(qubits[i]), float(swap), float(xy[i, 0]), float(xy[i, 1]))
        for i in range(nodes)
    ]
    links = [
        QuantumLink(
            u,
            v,
            int(channels[k]),
            float(math.exp(-alpha * lengths[k])),
            float(fid[k]),
            float(lengths[k]),
        )
        for k, (u, v) in enumerate(edges)
    ]
    requests = []
    for k in range(pairs):
        s, t = rng.choice(nodes, size=2, replace=False)
        requests.append(Request(f"sd{k}", int(s), int(t), 1.0, float(min_fidelity)))
    name = f"qcast-n{nodes}-d{degree:g}-p{success:g}-q{swap:g}-s{seed}"
    command = GENERATORS[0].command(
        {
            "nodes": nodes,
            "degree": degree,
            "success": success,
            "swap": swap,
            "pairs": pairs,
            "seed": seed,
            "min_fidelity": min_fidelity,
            "link_fidelity": tuple(link_fidelity),
            "candidate_paths": candidate_paths,
            "out": out,
        }
    )
    instance = EntanglementInstance(
        nodes=node_list,
        links=links,
        requests=requests,
        attenuation_per_km=0.0,
        objective="throughput",
        candidate_paths=candidate_paths or 8,
        name=name,
        description=(
            f"Q-CAST setup: {nodes} nodes in a 100 x 100 area, Waxman links (average degree "
            f"{2 * len(edges) / nodes:.2f}, target {degree:g}), link success exp(-{alpha:.5f} "
            f"x length) with mean {success:g}, swap {swap:g}, {pairs} S-D pairs. "
            f"Made by: {command}"
        ),
    )
    validate(instance)
    return instance


GENERATORS = (
    Generator(
        family="entanglement",
        help="a quantum repeater network and S-D requests (Q-CAST's setup)",
        description=(
            "Generate a seeded entanglement-routing instance in Q-CAST's setup: nodes uniformly "
            "in a 100 x 100 area, Waxman links tuned to an average degree, 10-14 qubits per "
            "node, 3-7 channels per link, link success exp(-alpha x length) tuned to a mean, "
            "one swap probability, random S-D pairs."
        ),
        parameters=(
            Parameter(
                "nodes",
                "positive_int",
                100,
                metavar="N",
                shown=True,
                maximum=MAX_NODES,
                help="nodes (default: 100)",
            ),
            Parameter(
                "degree",
                "positive_float",
                6.0,
                metavar="D",
                shown=True,
                help="average degree (default: 6)",
            ),
            Parameter(
                "success",
                "probability",
                0.6,
                metavar="P",
                shown=True,
                help="mean link success (default: 0.6)",
            ),
            Parameter(
                "swap",
                "probability",
                0.9,
                metavar="Q",
                shown=True,
                help="swap success (default: 0.9)",
            ),
            Parameter(
                "pairs",
                "non_negative_int",
                10,
                metavar="K",
                shown=True,
                maximum=MAX_PAIRS,
                help="S-D requests (default: 10)",
            ),
            SEED,
            Parameter(
                "min_fidelity",
                "fraction",
                0.0,
                metavar="F",
                help="every request's threshold (default: 0)",
            ),
            Parameter(
                "link_fidelity",
                "fraction_pair",
                (1.0, 1.0),
                metavar="LOW,HIGH",
                help="link fidelities uniform in [LOW, HIGH] (default: 1)",
            ),
            Parameter(
                "candidate_paths",
                "positive_int",
                None,
                maximum=MAX_CANDIDATE_PATHS,
                metavar="K",
                help="candidate paths per request of the exact models (default: 8)",
            ),
        ),
        build=lambda p: generate(
            p["nodes"],
            p["degree"],
            p["success"],
            p["swap"],
            p["pairs"],
            p["seed"],
            min_fidelity=p["min_fidelity"],
            link_fidelity=p["link_fidelity"],
            candidate_paths=p["candidate_paths"],
            out=p["out"],
        ),
    ),
)
"""``placement generate entanglement``."""
