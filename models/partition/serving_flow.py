"""The one evaluator of layer placements on a Helix-style cluster: check, then max flow.

A placement gives each used node ``i`` one contiguous layer range ``[s_i, s_i + k_i)``
(unused nodes carry nothing). It is checked (every range inside ``[0, L)``, ``1 <= k_i <=``
the type's limit, node indices exist), then scored as the max flow, in tokens/s, of the
network the Helix model defines (see :mod:`.serving_cluster`): node ``i`` is split into ``in_i -> out_i``
of capacity ``T(type_i, k_i)``; ``source -> in_v`` when ``s_v = 0``, ``out_u -> sink`` when
``s_u + k_u = L``, ``out_u -> in_v`` when ``s_v = s_u + k_u``, each only where the cluster has
that link, with the link's capacity. This is the placement's value in Helix's own MILP (its
flow variables optimise exactly this network once ``start`` and ``hold`` are fixed), so
scoring Helix's ``ilp_sol.ini`` must give Helix's logged objective.

The max flow is computed with networkx (preflow-push) on capacities scaled to integers of
1e-6 tokens/s, so the figure is exact to 1e-6 and independent of float summation order.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from placement.models.partition.instance import SINK, SOURCE
from placement.models.partition.serving_cluster import HelixCluster

SCALE = 1_000_000
"""Capacities are integers of 1/SCALE tokens/s in the flow computation."""


@dataclass(frozen=True)
class FlowScore:
    """A placement's check and score: ``errors`` empty means feasible."""

    tokens_per_s: float
    errors: tuple[str, ...]
    used_nodes: int

    @property
    def feasible(self) -> bool:
        """True when the placement passed every check."""
        return not self.errors


def check_placement(cluster: HelixCluster, placement: dict[int, tuple[int, int]]) -> list[str]:
    """Every way ``placement`` breaks the model, one line each (empty: feasible)."""
    errors: list[str] = []
    n = len(cluster.nodes)
    for node, (start, count) in sorted(placement.items()):
        if not isinstance(node, int) or not 0 <= node < n:
            errors.append(f"node {node!r}: not a node of {cluster.name} (0..{n - 1})")
            continue
        name = cluster.nodes[node].name
        limit = cluster.limit(node)
        if not 1 <= count <= limit:
            errors.append(
                f"{name} ({cluster.nodes[node].type}): holds {count} layers, expected 1..{limit}"
            )
        if start < 0 or start + count > cluster.num_layers:
            errors.append(
                f"{name}: layers [{start}, {start + count}) outside [0, {cluster.num_layers})"
            )
    return errors


def flow_network(
    cluster: HelixCluster, placement: dict[int, tuple[int, int]], partial: bool = False
) -> nx.DiGraph:
    """The max-flow network of a (checked) placement, capacities in 1/SCALE tokens/s.

    ``partial``: Helix's partial-inference variant (``allow_partial_inference``), where
    ``u -> v`` is an edge when ``s_v <= e_u < e_v`` (``v`` runs only the layers after ``u``'s
    last), node capacities unchanged; the artifact's runs leave it off.
    """
    g = nx.DiGraph()
    g.add_node(SOURCE)
    g.add_node(SINK)
    end = {i: s + k for i, (s, k) in placement.items()}
    for i, (s, k) in placement.items():
        g.add_edge(("in", i), ("out", i), capacity=round(cluster.node_throughput(i, k) * SCALE))
        if s == 0 and (SOURCE, i) in cluster.links:
            g.add_edge(SOURCE, ("in", i), capacity=round(cluster.links[(SOURCE, i)] * SCALE))
        if end[i] == cluster.num_layers and (i, SINK) in cluster.links:
            g.add_edge(("out", i), SINK, capacity=round(cluster.links[(i, SINK)] * SCALE))
    for u in placement:
        for v, (sv, _) in placement.items():
            meets = sv <= end[u] < end[v] if partial else sv == end[u]
            if u != v and meets and (u, v) in cluster.links:
                g.add_edge(("out", u), ("in", v), capacity=round(cluster.links[(u, v)] * SCALE))
    return g


def score_placement(
    cluster: HelixCluster, placement: dict[int, tuple[int, int]], partial: bool = False
) -> FlowScore:
    """Check ``placement`` and, if feasible, its max flow in tokens/s (0 when infeasible);
    ``partial`` as in :func:`flow_network`."""
    errors = check_placement(cluster, placement)
    if errors:
        return FlowScore(0.0, tuple(errors), len(placement))
    g = flow_network(cluster, placement, partial)
    value = nx.maximum_flow_value(g, SOURCE, SINK) if g.number_of_edges() else 0
    return FlowScore(value / SCALE, (), len(placement))
