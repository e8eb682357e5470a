"""Q-CAST's greedy path selection (the fallback).

Shi and Qian (SIGCOMM 2020), phase P2: in the residual network, find for every request the
path of largest EXT with an extended Dijkstra search (the width of a prefix is the smallest
residual capacity along it), take the best path over all requests, reserve its width, and
repeat until no request can get another path. Our additions, for the instance's rules:
prefixes below a request's fidelity threshold are pruned (Werner fidelity only falls as a
path grows), a request stops once its demand is met, and the gain that ranks paths is the
request's weight times the throughput that still counts. Q-CAST's recovery paths (phase P4)
are not modelled: our objective is EXT of the chosen paths.
"""

from __future__ import annotations

import heapq
import math

from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementSolution,
    RoutedPath,
)
from placement.models.entanglement.paths import ext, werner_parameter


def best_path(
    instance: EntanglementInstance,
    request: int,
    channels_left: list[int],
    qubits_left: list[int],
) -> tuple[float, tuple[int, ...], int] | None:
    """Q-CAST's extended Dijkstra: (EXT, path, width) of the best path found, or None.

    Labels are settled in order of the EXT of their prefix, which never grows when a path
    is extended (one more hop's minimum, one more swap, a width that can only shrink).
    """
    req = instance.requests[request]
    s, d = req.source, req.destination
    if qubits_left[s] < 1 or qubits_left[d] < 1:
        return None
    need_w = werner_parameter(req.min_fidelity) if req.min_fidelity > 0.25 else -math.inf
    # heap entries: (-ext, tie, node, path, probabilities, width, werner)
    heap: list[tuple[float, int, int, tuple[int, ...], tuple[float, ...], int, float]] = []
    tie = 0
    heap.append((-math.inf, tie, s, (s,), (), qubits_left[s], 1.0))
    settled: set[int] = set()
    while heap:
        neg, _, u, path, probs, width, werner = heapq.heappop(heap)
        if u in settled:
            continue
        settled.add(u)
        if u == d:
            return -neg, path, width
        # u becomes an intermediate node when the path goes on: two qubits per channel.
        through = width if u == s else min(width, qubits_left[u] // 2)
        if through < 1:
            continue
        for v, link in instance.neighbours[u]:
            if v in settled or v in path:
                continue
            # v is judged as the path's end (one qubit per channel) until it is extended.
            w2 = min(through, channels_left[link], qubits_left[v])
            if w2 < 1:
                continue
            wer = werner * werner_parameter(instance.links[link].fidelity)
            if wer < need_w - 1e-12:
                continue
            p2 = (*probs, instance.links[link].success)
            path2 = (*path, v)
            value = ext(list(p2), [instance.nodes[x].swap_success for x in path2[1:-1]], w2)
            if value <= 0:
                continue
            tie += 1
            heapq.heappush(heap, (-value, tie, v, path2, p2, w2, wer))
    return None


def qcast_greedy(instance: EntanglementInstance) -> EntanglementSolution:
    """Q-CAST's greedy selection of major paths; always feasible (possibly empty)."""
    channels_left = [lk.channels for lk in instance.links]
    qubits_left = [n.qubits for n in instance.nodes]
    served = [0.0] * len(instance.requests)
    paths: list[RoutedPath] = []
    blocked: set[int] = set()
    while True:
        best: tuple[float, int, tuple[int, ...], int, float] | None = None
        for r, req in enumerate(instance.requests):
            if r in blocked:
                continue
            if req.demand is not None and served[r] >= req.demand - 1e-12:
                blocked.add(r)
                continue
            found = best_path(instance, r, channels_left, qubits_left)
            if found is None:
                blocked.add(r)
                continue
            value, nodes, width = found
            counted = value if req.demand is None else min(value, req.demand - served[r])
            gain = req.weight * counted
            if best is None or gain > best[0] + 1e-12:
                best = (gain, r, nodes, width, value)
        if best is None or best[0] <= 0:
            break
        _, r, nodes, width, value = best
        paths.append(RoutedPath(r, nodes, width))
        served[r] += value
        for u, v in zip(nodes, nodes[1:], strict=False):
            channels_left[instance.link_between(u, v)] -= width  # type: ignore[index]
        for pos, v in enumerate(nodes):
            qubits_left[v] -= width if pos in (0, len(nodes) - 1) else 2 * width
    return EntanglementSolution(tuple(paths))
