"""Monte Carlo simulation of time slots: what a routing really delivers.

Each slot, every channel reserved by a path independently yields an entangled pair with its
link's success probability; along a path of width W, the number of end-to-end chains that
can be attempted is the smallest number of successful channels over its hops, and each
chain then needs every swap at the path's intermediate nodes to succeed (each with the
node's swap probability). The pairs delivered are the chains whose swaps all succeed.

This module shares no code with the models: it reads the typed instance and routing only
(the benchmarks report it beside EXT as the ground truth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement.models.entanglement.instance import EntanglementInstance, EntanglementSolution


@dataclass(frozen=True)
class SimulationResult:
    """Delivered pairs per slot over ``slots`` simulated slots.

    ``per_path`` and ``per_request`` are the mean pairs per slot; ``per_path_std`` the
    sample standard deviation of each path's pairs per slot; ``weighted`` the mean of
    sum_r weight_r * min(delivered_r, demand_r) per slot (a demand caps what counts in each
    slot).
    """

    slots: int
    per_path: tuple[float, ...]
    per_path_std: tuple[float, ...]
    per_request: tuple[float, ...]
    weighted: float


def simulate(
    instance: EntanglementInstance,
    solution: EntanglementSolution,
    slots: int = 1000,
    seed: int = 0,
) -> SimulationResult:
    """Simulate ``slots`` slots of ``solution`` with ``numpy.random.default_rng(seed)``.

    Raises ValueError on a path whose consecutive nodes are not linked.
    """
    rng = np.random.default_rng(seed)
    link_of = {}
    for lk in instance.links:
        link_of[lk.a, lk.b] = lk
        link_of[lk.b, lk.a] = lk
    delivered = np.zeros((len(solution.paths), slots))
    for k, path in enumerate(solution.paths):
        hops = []
        for u, v in zip(path.nodes, path.nodes[1:], strict=False):
            if (u, v) not in link_of:
                raise ValueError(f"path {k}: nodes {u} and {v} are not linked")
            hops.append(link_of[u, v].success)
        width = path.width
        # Channel outcomes: slots x hops x width.
        ok = rng.random((slots, len(hops), width)) < np.asarray(hops)[None, :, None]
        chains = ok.sum(axis=2).min(axis=1)
        swaps = np.array([instance.nodes[v].swap_success for v in path.nodes[1:-1]])
        if swaps.size:
            swap_ok = (rng.random((slots, width, swaps.size)) < swaps[None, None, :]).all(axis=2)
            attempted = np.arange(width)[None, :] < chains[:, None]
            delivered[k] = (swap_ok & attempted).sum(axis=1)
        else:
            delivered[k] = chains
    per_request = np.zeros((len(instance.requests), slots))
    for k, path in enumerate(solution.paths):
        per_request[path.request] += delivered[k]
    weighted = np.zeros(slots)
    for r, req in enumerate(instance.requests):
        counted = per_request[r] if req.demand is None else np.minimum(per_request[r], req.demand)
        weighted += req.weight * counted
    return SimulationResult(
        slots=slots,
        per_path=tuple(float(x) for x in delivered.mean(axis=1)) if slots else (),
        per_path_std=tuple(float(x) for x in delivered.std(axis=1, ddof=1)) if slots > 1 else (),
        per_request=tuple(float(x) for x in per_request.mean(axis=1)),
        weighted=float(weighted.mean()),
    )
