"""A REPS-style peer: LP relaxation of provisioning, then rounding (Zhao and Qiao, INFOCOM
2021).

REPS's provisioning step solves a multi-commodity flow LP whose edge capacities are the
expected numbers of successful links, then rounds. Ours is :mod:`.reps_lp` without swaps
(as in REPS), with a small cost per channel used (:data:`CHANNEL_PENALTY`). Rounding: decompose each request's flow into widest paths; a path carrying
phi expected pairs needs phi / success channels on each link, so its fractional width is
phi / (its smallest success); each path gets the floor of it, then single channels are
added in order of the largest fractional parts while capacity remains. Paths below the
request's fidelity threshold are dropped (REPS has no fidelity).
This heuristic solves an LP (HiGHS, through the backend
wrapper): it is a peer to compare with, not the fallback.
"""

from __future__ import annotations

import heapq
import math

from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementSolution,
    RoutedPath,
)
from placement.models.entanglement.paths import fidelity_of, max_width
from placement.models.entanglement.peers.reps_lp import solve_flow_lp
from placement.solver.options import SolveOptions

FLOW_EPS = 1e-6
CHANNEL_PENALTY = 1e-3
"""Expected pairs the LP gives up per channel used: no useless circulations, and a simplex
that finishes (without it the LP at 200 nodes ran past 120 s)."""
LP_SHARE = 0.25
"""Share of the solve's time limit the LP may take."""


def _widest_path(
    flow: dict[tuple[int, int], float], source: int, destination: int, n: int
) -> tuple[float, tuple[int, ...]] | None:
    """The path of largest bottleneck in a flow given per arc, or None."""
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (u, v), value in flow.items():
        if value > FLOW_EPS:
            out[u].append((v, value))
    best = {source: math.inf}
    prev: dict[int, int] = {}
    heap = [(-math.inf, source)]
    done: set[int] = set()
    while heap:
        neg, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u == destination:
            path = [u]
            while path[-1] != source:
                path.append(prev[path[-1]])
            return -neg, tuple(reversed(path))
        for v, value in out[u]:
            b = min(-neg, value)
            if v not in done and b > best.get(v, 0.0):
                best[v] = b
                prev[v] = u
                heapq.heappush(heap, (-b, v))
    return None


def reps_rounding(
    instance: EntanglementInstance, options: SolveOptions | None = None
) -> EntanglementSolution:
    """The REPS-style routing (empty if the LP does not solve in its time share)."""
    options = options or SolveOptions()
    requests = instance.requests
    if not requests:
        return EntanglementSolution()
    limit = max(0.5, LP_SHARE * options.time_limit_s)
    lp = solve_flow_lp(
        instance,
        options,
        limit,
        cancel=options.cancel,
        channel_penalty=CHANNEL_PENALTY,
    )
    if not lp.flow:
        return EntanglementSolution()
    arcs = lp.arcs
    n_links = len(instance.links)

    # Decompose each request's flow into widest paths; a path carrying phi expected pairs
    # needs phi / success channels on each of its links, so its width is the largest.
    pieces: list[tuple[float, int, tuple[int, ...]]] = []
    for r, req in enumerate(requests):
        flow: dict[tuple[int, int], float] = {}
        for k, (u, v, _) in enumerate(arcs):
            value = lp.flow.get((r, k), 0.0)
            if value > FLOW_EPS:
                flow[u, v] = flow.get((u, v), 0.0) + value
        for _ in range(4 * n_links + 1):
            found = _widest_path(flow, req.source, req.destination, len(instance.nodes))
            if found is None or found[0] <= FLOW_EPS:
                break
            amount, nodes = found
            links = [instance.link_between(u, v) for u, v in zip(nodes, nodes[1:], strict=False)]
            for u, v in zip(nodes, nodes[1:], strict=False):
                flow[u, v] -= amount
            channels = amount * max(1.0 / instance.links[i].success for i in links)  # type: ignore[index]
            if fidelity_of(instance, nodes) >= req.min_fidelity:
                pieces.append((channels, r, nodes))

    channels_left = [lk.channels for lk in instance.links]
    qubits_left = [n.qubits for n in instance.nodes]
    widths: dict[tuple[int, tuple[int, ...]], int] = {}

    def reserve(r: int, nodes: tuple[int, ...], width: int) -> None:
        for u, v in zip(nodes, nodes[1:], strict=False):
            channels_left[instance.link_between(u, v)] -= width  # type: ignore[index]
        for pos, v in enumerate(nodes):
            qubits_left[v] -= width if pos in (0, len(nodes) - 1) else 2 * width
        widths[r, nodes] = widths.get((r, nodes), 0) + width

    for amount, r, nodes in sorted(pieces, key=lambda p: -p[0]):
        width = min(
            math.floor(amount + FLOW_EPS), max_width(instance, nodes, channels_left, qubits_left)
        )
        if width >= 1:
            reserve(r, nodes, width)
    for amount, r, nodes in sorted(pieces, key=lambda p: -(p[0] - math.floor(p[0] + FLOW_EPS))):
        if (
            amount - math.floor(amount + FLOW_EPS) > FLOW_EPS
            and max_width(instance, nodes, channels_left, qubits_left) >= 1
        ):
            reserve(r, nodes, 1)
    paths = tuple(RoutedPath(r, nodes, w) for (r, nodes), w in widths.items() if w >= 1)
    return EntanglementSolution(paths)
