"""PipeDream's planner as Tarnawski et al. ran it on their layer graphs (the paper's baseline).

PipeDream (Narayanan et al., SOSP 2019; msr-fiddle/pipedream, ``optimizer/``) plans over a
*chain* of layers. To run it on DAGs, Tarnawski et al. contract the graph like PipeDream and
then solve the chain with their own DP and cost model: ``dp.cpp -pipeDream`` in
msr-fiddle/dnn-partitioning at commit b207b6ad27a1407d321f1e028cea96d7f2c90e3e
(``InputInstance::fillDccIdsWithBiconnectedComponent``, ``fuseDccs``, ``linearize``):

1. the biconnected components of the undirected graph are found and, for each, the tails of
   its edges are fused into one node (so a fork-join block becomes one stage candidate);
   as in the authors' code, edges out of the input nodes PipeDream would ignore are skipped
   for BERT-24 (node 4) and GNMT (nodes 2, 40, 46), recognised, as there, by the node count;
2. the contracted forward graph is linearised: a topological order (the authors' stack
   order) whose consecutive nodes are joined by artificial edges, making it a chain;
3. the chain is split optimally by the DP (only prefixes are ideals of a chain) under the
   paper's own cost model (accelerators and CPU, per-tensor transfers).

Ours: :func:`pipedream_split` computes the same with :mod:`.ideals` (prefixes of the chain
of contracted units as the ideals); the split is a valid convex split of the instance and
the checker scores it.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from placement.models.partition.ideals import IdealsResult, layer_graph, solve_ideals
from placement.models.partition.instance import PartitionInstance

_SKIPPED_SOURCES = {32: {"node4"}, 96: {"node2", "node40", "node46"}}
"""dp.cpp's special cases, by forward node count: BERT-24 and GNMT input nodes."""


def pipedream_split(instance: PartitionInstance) -> IdealsResult:
    """The optimal split of the PipeDream-contracted, linearised chain (module docstring)."""
    g = layer_graph(instance)
    layers = instance.layers
    forward = [i for i, lay in enumerate(layers) if not lay.backward]
    skipped = _SKIPPED_SOURCES.get(len(forward), set())
    skip_units = {g.unit_of[i] for i in forward if layers[i].name in skipped}
    # 1. Biconnected components of the undirected unit graph; fuse each one's edge tails.
    undirected = nx.Graph()
    undirected.add_nodes_from(range(g.n_units))
    directed = set(g.arcs)
    for a, b in g.arcs:
        if a not in skip_units:
            undirected.add_edge(a, b)
    parent = list(range(g.n_units))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for component in nx.biconnected_component_edges(undirected):
        tails = [a if (a, b) in directed else b for a, b in component]
        for t in tails[1:]:
            parent[find(t)] = find(tails[0])
    merged = nx.DiGraph()
    merged.add_nodes_from({find(u) for u in range(g.n_units)})
    for a, b in g.arcs:
        if find(a) != find(b):
            merged.add_edge(find(a), find(b))
    # Fusing may close cycles: those must share a device (as dp.cpp fuses SCCs).
    for comp in nx.strongly_connected_components(merged):
        first = min(comp)
        for a in comp:
            parent[find(a)] = find(first)
    contracted = nx.DiGraph()
    contracted.add_nodes_from({find(u) for u in range(g.n_units)})
    for a, b in g.arcs:
        if find(a) != find(b):
            contracted.add_edge(find(a), find(b))
    # 2. Linearise: the authors' stack-ordered topological sort.
    indegree = {v: contracted.in_degree(v) for v in contracted}
    stack = sorted((v for v, d in indegree.items() if d == 0), reverse=True)
    order: list[int] = []
    while stack:
        v = stack.pop()
        order.append(v)
        for w in sorted(contracted.successors(v)):
            indegree[w] -= 1
            if indegree[w] == 0:
                stack.append(w)
    # 3. Prefixes of the chain as the ideals.
    members: dict[int, list[int]] = {}
    for u in range(g.n_units):
        members.setdefault(find(u), []).append(u)
    rows = [np.zeros(g.n_units, dtype=bool)]
    for v in order:
        row = rows[-1].copy()
        row[members[v]] = True
        rows.append(row)
    return solve_ideals(g, np.array(rows))
