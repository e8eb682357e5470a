"""Why a request gets no throughput: no path, a fidelity no path reaches, or crowded out."""

from __future__ import annotations

from typing import Any

import networkx as nx

from placement.models.entanglement.check import request_throughputs
from placement.models.entanglement.instance import EntanglementInstance, EntanglementSolution
from placement.models.entanglement.paths import best_fidelity, network_graph, servable_requests

SERVED = 1e-12
"""A request with less throughput than this counts as unserved."""


def explain_unplaced(
    instance: EntanglementInstance, solution: EntanglementSolution, stop: object = None
) -> list[dict[str, Any]]:
    """One reason (the fields of ``placement.v1.UnplacedRequest``) per unserved request
    (each is cheap: ``stop`` is not needed)."""
    del stop
    graph = network_graph(instance)
    served = request_throughputs(instance, solution)
    out: list[dict[str, Any]] = []
    for r, req in enumerate(instance.requests):
        if served[r] > SERVED:
            continue
        src, dst = instance.nodes[req.source].name, instance.nodes[req.destination].name
        if not nx.has_path(graph, req.source, req.destination):
            kind = "no_path"
            best = 0.0
            message = f"{src} and {dst} are not connected"
        else:
            best = best_fidelity(instance, req.source, req.destination)
            if best < req.min_fidelity:
                kind = "fidelity_unreachable"
                message = (
                    f"the best path from {src} to {dst} reaches fidelity {best:.4f}, "
                    f"below the {req.min_fidelity} asked"
                )
            else:
                kind = "crowded_out"
                message = (
                    f"paths from {src} to {dst} reach the fidelity asked (best {best:.4f}), "
                    "but their qubits or channels serve other requests"
                )
        out.append(
            {
                "name": req.name,
                "kind": kind,
                "message": message,
                "best_fidelity": best,
                "min_fidelity": req.min_fidelity,
            }
        )
    return out


def capacity_bound(instance: EntanglementInstance) -> float:
    """A cheap upper bound on the primary objective.

    A path's EXT is at most its width times the success probability of its first (or last)
    link, so a request's throughput is at most, at either end v, min(sum over v's links of
    channels x success, qubits(v) x the best success of v's links); requests that no path
    serves at their fidelity get 0; demands cap the rest.
    """

    def end(v: int) -> float:
        links = [instance.links[i] for _, i in instance.neighbours[v]]
        if not links:
            return 0.0
        return min(
            sum(lk.channels * lk.success for lk in links),
            instance.nodes[v].qubits * max(lk.success for lk in links),
        )

    per_request = []
    for req in instance.requests:
        top = min(end(req.source), end(req.destination))
        if best_fidelity(instance, req.source, req.destination) < max(req.min_fidelity, 1e-300):
            top = 0.0
        if req.demand is not None:
            top = min(top, req.demand)
        per_request.append(top)
    if instance.objective == "max_min":
        return min((per_request[r] for r in servable_requests(instance)), default=0.0)
    return sum(req.weight * top for req, top in zip(instance.requests, per_request, strict=True))
