"""Path quantities shared by the heuristics and the exact encodings (not by the checker).

EXT here is computed as ``prod(q) * sum_{i>=1} prod_k P(X_k >= i)`` with X_k ~ Bin(W, p_k):
the expected minimum of the hops' successful channels, written as a sum of tail
probabilities. It equals Q-CAST's recursion, which the checker evaluates independently.
"""

from __future__ import annotations

import heapq
import math
from functools import lru_cache
from itertools import islice

import networkx as nx

from placement.models.entanglement.instance import EntanglementInstance

MIN_WERNER_FIDELITY = 0.25
"""Fidelity of the maximally mixed state: a threshold at or below it excludes no path."""
CANDIDATE_SCAN_FACTOR = 4
"""The candidate search looks at most this many times ``candidate_paths`` simple paths when
some fail the fidelity threshold or cannot carry one channel."""


def werner_parameter(fidelity: float) -> float:
    """w = (4F - 1) / 3 of a Werner state of fidelity F."""
    return (4.0 * fidelity - 1.0) / 3.0


def fidelity_of(instance: EntanglementInstance, nodes: tuple[int, ...]) -> float:
    """End-to-end Werner fidelity of the simple path ``nodes`` (its links must exist)."""
    w = 1.0
    for u, v in zip(nodes, nodes[1:], strict=False):
        w *= werner_parameter(instance.links[instance.link_between(u, v)].fidelity)  # type: ignore[index]
    return (1.0 + 3.0 * w) / 4.0


@lru_cache(maxsize=65536)
def binomial_tails(p: float, width: int) -> tuple[float, ...]:
    """(P(X >= 1), ..., P(X >= width)) for X ~ Bin(width, p)."""
    pmf = [math.comb(width, i) * p**i * (1 - p) ** (width - i) for i in range(width + 1)]
    tails = []
    acc = 0.0
    for i in range(width, 0, -1):
        acc += pmf[i]
        tails.append(acc)
    return tuple(reversed(tails))


def ext(probabilities: list[float], swaps: list[float], width: int) -> float:
    """Expected end-to-end pairs of a path of ``width`` channels per hop."""
    if width < 1 or not probabilities:
        return 0.0
    acc = [1.0] * width
    for p in probabilities:
        tails = binomial_tails(p, width)
        acc = [a * t for a, t in zip(acc, tails, strict=True)]
    return math.prod(swaps) * sum(acc)


def path_links(instance: EntanglementInstance, nodes: tuple[int, ...]) -> list[int]:
    """Link indices along a path whose consecutive nodes are linked."""
    return [instance.link_between(u, v) for u, v in zip(nodes, nodes[1:], strict=False)]  # type: ignore[misc]


def path_ext(instance: EntanglementInstance, nodes: tuple[int, ...], width: int) -> float:
    """EXT of the simple path ``nodes`` at ``width``."""
    links = path_links(instance, nodes)
    return ext(
        [instance.links[i].success for i in links],
        [instance.nodes[v].swap_success for v in nodes[1:-1]],
        width,
    )


def max_width(
    instance: EntanglementInstance,
    nodes: tuple[int, ...],
    channels_left: list[int] | None = None,
    qubits_left: list[int] | None = None,
) -> int:
    """The largest width the path can take with the given residual capacities (the whole
    capacities when omitted)."""
    links = path_links(instance, nodes)
    ch = channels_left or [lk.channels for lk in instance.links]
    qb = qubits_left or [n.qubits for n in instance.nodes]
    width = min(ch[i] for i in links)
    width = min(width, qb[nodes[0]], qb[nodes[-1]])
    for v in nodes[1:-1]:
        width = min(width, qb[v] // 2)
    return max(0, width)


def network_graph(instance: EntanglementInstance) -> nx.Graph:
    """The network as a networkx graph; edge attribute ``cost`` = -log(success)."""
    g = nx.Graph()
    g.add_nodes_from(range(len(instance.nodes)))
    for i, lk in enumerate(instance.links):
        g.add_edge(lk.a, lk.b, cost=-math.log(lk.success), link=i)
    return g


DFS_STEP_LIMIT = 20_000
"""Node expansions the exhaustive search of fidelity-bounded paths may take."""


def _fidelity_bounded_paths(
    instance: EntanglementInstance, request: int, cap: int
) -> list[tuple[int, ...]] | None:
    """Every usable simple path of a request with a fidelity threshold, if there are at most
    ``cap`` of them and the search finishes within :data:`DFS_STEP_LIMIT` steps; else None.

    Werner parameters only shrink as a path grows, so prefixes below the threshold are cut.
    """
    req = instance.requests[request]
    need = werner_parameter(req.min_fidelity)
    found: list[tuple[int, ...]] = []
    steps = 0
    stack: list[tuple[tuple[int, ...], float]] = [((req.source,), 1.0)]
    while stack:
        path, w = stack.pop()
        steps += 1
        if steps > DFS_STEP_LIMIT:
            return None
        u = path[-1]
        for v, link in instance.neighbours[u]:
            if v in path:
                continue
            w2 = w * werner_parameter(instance.links[link].fidelity)
            if w2 < need:
                continue
            if v == req.destination:
                nodes = (*path, v)
                if max_width(instance, nodes) >= 1:
                    found.append(nodes)
                    if len(found) > cap:
                        return None
            else:
                stack.append(((*path, v), w2))
    return found


def candidate_paths(
    instance: EntanglementInstance, request: int, graph: nx.Graph | None = None
) -> tuple[list[tuple[int, ...]], bool]:
    """The request's candidate paths and whether they are all of its usable paths.

    A request with a fidelity threshold whose usable paths number at most
    ``instance.candidate_paths`` gets all of them (found by a pruned exhaustive search).
    Otherwise: simple paths in order of -log(success) (most likely first), skipping those
    below the fidelity threshold or unable to carry one channel, up to
    ``instance.candidate_paths``; ``complete=True`` when the enumeration ran out of simple
    paths, so that no other path could serve the request.
    """
    g = graph if graph is not None else network_graph(instance)
    req = instance.requests[request]
    k = instance.candidate_paths
    out: list[tuple[int, ...]] = []
    if not nx.has_path(g, req.source, req.destination):
        return out, True
    if req.min_fidelity > MIN_WERNER_FIDELITY:
        every = _fidelity_bounded_paths(instance, request, k)
        if every is not None:
            cost = {
                p: sum(g.edges[u, v]["cost"] for u, v in zip(p, p[1:], strict=False)) for p in every
            }
            return sorted(every, key=lambda p: (cost[p], p)), True
    scanned = 0
    limit = CANDIDATE_SCAN_FACTOR * k
    for path in islice(
        nx.shortest_simple_paths(g, req.source, req.destination, weight="cost"), limit + 1
    ):
        scanned += 1
        if scanned > limit or len(out) >= k:
            return out, False
        nodes = tuple(path)
        if fidelity_of(instance, nodes) < req.min_fidelity:
            continue
        if max_width(instance, nodes) < 1:
            continue
        out.append(nodes)
    return out, True


def best_fidelity(instance: EntanglementInstance, source: int, destination: int) -> float:
    """The highest end-to-end fidelity of any path from ``source`` to ``destination`` (0 if
    none): Dijkstra on -log w, exact because Werner parameters multiply and lie in (0, 1]."""
    best = {source: 1.0}
    heap = [(-1.0, source)]
    done: set[int] = set()
    while heap:
        neg_w, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u == destination:
            return (1.0 + 3.0 * -neg_w) / 4.0
        for v, link in instance.neighbours[u]:
            w = -neg_w * werner_parameter(instance.links[link].fidelity)
            if w > best.get(v, 0.0):
                best[v] = w
                heapq.heappush(heap, (-w, v))
    return 0.0


def servable_requests(instance: EntanglementInstance) -> list[int]:
    """Requests that some routing can serve: a simple path reaching the fidelity threshold
    whose ends hold a qubit and whose intermediate nodes hold two (Dijkstra on -log w over
    those nodes). The fairness objective takes its minimum over these only."""
    out = []
    for r, req in enumerate(instance.requests):
        s, d = req.source, req.destination
        if instance.nodes[s].qubits < 1 or instance.nodes[d].qubits < 1:
            continue
        best = {s: 1.0}
        heap = [(-1.0, s)]
        done: set[int] = set()
        reached = 0.0
        while heap:
            neg_w, u = heapq.heappop(heap)
            if u in done:
                continue
            done.add(u)
            if u == d:
                reached = (1.0 + 3.0 * -neg_w) / 4.0
                break
            if u != s and instance.nodes[u].qubits < 2:
                continue
            for v, link in instance.neighbours[u]:
                w = -neg_w * werner_parameter(instance.links[link].fidelity)
                if w > best.get(v, 0.0):
                    best[v] = w
                    heapq.heappush(heap, (-w, v))
        if reached > 0 and reached >= req.min_fidelity:
            out.append(r)
    return out
