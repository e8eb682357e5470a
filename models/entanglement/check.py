"""The independent checker of entanglement routings.

It recomputes everything from the instance: that each path is a simple path of existing
links from its request's source to its destination, that widths are whole and >= 1, that no
link carries more channels and no node holds more qubits than it has, that each path's
Werner fidelity reaches its request's threshold, and the objective: the expected throughput
(EXT) of each path by Q-CAST's recursion over hops (Shi and Qian, SIGCOMM 2020). It imports
nothing from the encodings or heuristics, which compute EXT another way (see
:mod:`.paths`), so a slip in either shows as a disagreement in the tests. The solution's
message (:func:`solution_to_message`) is written here too, since it carries each path's
throughput and fidelity as this checker computes them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.entanglement.instance import (
    MAX_CHANNELS,
    EntanglementInstance,
    EntanglementSolution,
    RoutedPath,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import entanglement_pb2 as pb

FIDELITY_TOLERANCE = 1e-9
"""A path's fidelity may fall short of its threshold by this much (float noise)."""


def _path_links(instance: EntanglementInstance, path: RoutedPath) -> list[int] | None:
    """The link indices along a path, or None if two consecutive nodes are not linked or a
    node index is out of range."""
    n = len(instance.nodes)
    if any(not (0 <= v < n) for v in path.nodes):
        return None
    out = []
    for u, v in zip(path.nodes, path.nodes[1:], strict=False):
        link = instance.link_index.get((min(u, v), max(u, v)))
        if link is None:
            return None
        out.append(link)
    return out


def _binomial(width: int, p: float) -> np.ndarray:
    """P[i successes of ``width`` channels of success ``p``], i = 0..width, in log space (no
    overflow for any width)."""
    out = np.zeros(width + 1)
    if p <= 0.0:
        out[0] = 1.0
    elif p >= 1.0:
        out[width] = 1.0
    else:
        i = np.arange(width + 1)
        log_comb = math.lgamma(width + 1) - np.array(
            [math.lgamma(k + 1) + math.lgamma(width - k + 1) for k in range(width + 1)]
        )
        out = np.exp(log_comb + i * math.log(p) + (width - i) * math.log1p(-p))
    return out


def _qcast_ext(probabilities: list[float], swaps: list[float], width: int) -> float:
    """Q-CAST's EXT of one path of ``width`` channels per hop.

    ``Q[i]`` after hop k is the probability that the smallest number of successful channels
    over hops 1..k is exactly i: either the chain so far has exactly i and hop k at least i,
    or hop k has exactly i and the chain so far more than i (suffix sums: linear per hop).
    Each of those i chains then needs every swap to succeed.
    """
    if width < 1 or not probabilities:
        return 0.0
    q = _binomial(width, probabilities[0])
    for p in probabilities[1:]:
        pk = _binomial(width, p)
        pk_at_least = np.cumsum(pk[::-1])[::-1]
        q_more = np.append(np.cumsum(q[::-1])[::-1][1:], 0.0)
        q = q * pk_at_least + pk * q_more
    swap = math.prod(swaps)
    return float(swap * np.dot(np.arange(1, width + 1), q[1:]))


def path_fidelity(instance: EntanglementInstance, path: RoutedPath) -> float:
    """End-to-end fidelity of a path's pairs by the Werner model (0 if it is not a path).

    A Werner state of fidelity F has parameter w = (4F - 1) / 3; a perfect swap of two Werner
    states multiplies their parameters, so the path's fidelity is (1 + 3 * prod w) / 4.
    """
    links = _path_links(instance, path)
    if not links:
        return 0.0
    w = math.prod((4 * instance.links[i].fidelity - 1) / 3 for i in links)
    return (1 + 3 * w) / 4


def path_expected_throughput(instance: EntanglementInstance, path: RoutedPath) -> float:
    """EXT of one path: expected end-to-end pairs per slot (0 if it is not a path)."""
    links = _path_links(instance, path)
    if not links:
        return 0.0
    swaps = [instance.nodes[v].swap_success for v in path.nodes[1:-1]]
    # No link has more than MAX_CHANNELS channels, so a wider path is infeasible (and
    # rejected); it is evaluated at that width, which keeps the time and memory bounded.
    width = min(path.width, MAX_CHANNELS)
    return _qcast_ext([instance.links[i].success for i in links], swaps, width)


def request_throughputs(
    instance: EntanglementInstance, solution: EntanglementSolution
) -> list[float]:
    """Per request, the throughput that counts: the sum of its paths' EXT, capped by its
    demand."""
    total = [0.0] * len(instance.requests)
    for p in solution.paths:
        if 0 <= p.request < len(total):
            total[p.request] += path_expected_throughput(instance, p)
    return [
        min(t, r.demand) if r.demand is not None else t
        for t, r in zip(total, instance.requests, strict=True)
    ]


def servable(instance: EntanglementInstance) -> list[bool]:
    """Per request, whether any routing can serve it: some simple path reaches its fidelity
    threshold with a qubit at each end and two at each intermediate node.

    The best Werner product from the source to every node, by label correction over the
    nodes that can relay (the product only shrinks along a path, so a simple path is best).
    """
    out = []
    for req in instance.requests:
        s, d = req.source, req.destination
        ok = instance.nodes[s].qubits >= 1 and instance.nodes[d].qubits >= 1
        best = [0.0] * len(instance.nodes)
        best[s] = 1.0
        frontier = [s]
        while ok and frontier:
            nxt = []
            for u in frontier:
                if u != s and (u == d or instance.nodes[u].qubits < 2):
                    continue
                for v, link in instance.neighbours[u]:
                    w = best[u] * (4 * instance.links[link].fidelity - 1) / 3
                    if w > best[v] * (1 + 1e-12):
                        best[v] = w
                        nxt.append(v)
            frontier = nxt
        fidelity = (1 + 3 * best[d]) / 4 if ok and best[d] > 0 else 0.0
        out.append(ok and fidelity > 0 and fidelity >= req.min_fidelity - FIDELITY_TOLERANCE)
    return out


def objective_terms(
    instance: EntanglementInstance, solution: EntanglementSolution
) -> tuple[dict[str, float], tuple[str, ...]]:
    """The objective tiers of a solution and their senses (every tier is maximised)."""
    served = request_throughputs(instance, solution)
    weighted = sum(r.weight * t for r, t in zip(instance.requests, served, strict=True))
    if instance.objective == "max_min":
        fair = [t for t, ok in zip(served, servable(instance), strict=True) if ok]
        return {"min_throughput": min(fair, default=0.0), "weighted_throughput": weighted}, (
            "max",
            "max",
        )
    return {"weighted_throughput": weighted}, ("max",)


def check(instance: EntanglementInstance, solution: EntanglementSolution) -> CheckReport:
    """Check a routing against every rule of the instance and evaluate its objective.

    Rules: each path belongs to an existing request; it starts at the request's source, ends
    at its destination, visits no node twice and follows existing links; its width is an
    integer >= 1; its fidelity is at least the request's ``min_fidelity``; the widths of the
    paths on a link add up to at most its channels; each node holds at most its qubits (one
    per unit of width at a path's ends, two at each intermediate node).
    """
    violations: list[str] = []
    channels_used = [0] * len(instance.links)
    qubits_used = [0] * len(instance.nodes)
    for k, p in enumerate(solution.paths):
        where = f"paths[{k}]"
        if not (0 <= p.request < len(instance.requests)):
            violations.append(f"{where}: request index {p.request} does not exist")
            continue
        req = instance.requests[p.request]
        where = f"paths[{k}] ({req.name})"
        if not isinstance(p.width, int) or p.width < 1:
            violations.append(f"{where}: width {p.width!r} is not an integer >= 1")
            continue
        if len(p.nodes) < 2 or p.nodes[0] != req.source or p.nodes[-1] != req.destination:
            violations.append(f"{where}: does not run from the request's source to its destination")
            continue
        if len(set(p.nodes)) != len(p.nodes):
            violations.append(f"{where}: visits a node twice")
            continue
        links = _path_links(instance, p)
        if links is None:
            violations.append(f"{where}: two consecutive nodes are not linked")
            continue
        fidelity = path_fidelity(instance, p)
        if fidelity < req.min_fidelity - FIDELITY_TOLERANCE:
            violations.append(
                f"{where}: fidelity {fidelity:.6f} below the request's minimum {req.min_fidelity}"
            )
        for link in links:
            channels_used[link] += p.width
        for pos, v in enumerate(p.nodes):
            end = pos == 0 or pos == len(p.nodes) - 1
            qubits_used[v] += p.width if end else 2 * p.width
    for i, used in enumerate(channels_used):
        if used > instance.links[i].channels:
            lk = instance.links[i]
            violations.append(
                f"link {instance.nodes[lk.a].name}-{instance.nodes[lk.b].name}: "
                f"{used} channels used, {lk.channels} available"
            )
    for i, used in enumerate(qubits_used):
        if used > instance.nodes[i].qubits:
            violations.append(
                f"node {instance.nodes[i].name}: {used} qubits used, "
                f"{instance.nodes[i].qubits} available"
            )
    terms, senses = objective_terms(instance, solution)
    return CheckReport(not violations, violations, terms, senses)


def solution_to_message(
    instance: EntanglementInstance,
    solution: EntanglementSolution,
    unplaced: list[dict[str, Any]] | None = None,
) -> Any:
    """The ``placement.v1.EntanglementSolution`` message of a solution, with each path's
    expected throughput and fidelity as the checker computes them."""
    msg = pb.EntanglementSolution()
    for p in solution.paths:
        msg.paths.add(
            request=instance.requests[p.request].name,
            nodes=[instance.nodes[i].name for i in p.nodes],
            width=p.width,
            expected_throughput=path_expected_throughput(instance, p),
            fidelity=path_fidelity(instance, p),
        )
    for reason in unplaced or []:
        msg.unplaced.add(**reason)
    return msg
