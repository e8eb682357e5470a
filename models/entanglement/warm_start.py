"""A start solution (an earlier answer, by names) adapted to the instance being solved.

Each routed path of the start is kept if its request and nodes still exist and, taken with
the paths kept before it, the checker still accepts it (links still there, channels and
qubits still free, fidelity still met); every other path is dropped with the reason. Requests
new to the instance start unserved.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from placement.models.entanglement.check import check
from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementSolution,
    RoutedPath,
)
from placement.solver.family import StartAdaptation, keep_while_feasible


def adapt_start(instance: EntanglementInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.EntanglementSolution`` the instance admits (see the module)."""
    dropped: list[tuple[str, str]] = []
    pieces: list[tuple[str, RoutedPath]] = []
    for rp in msg.paths:
        name = rp.request
        r = instance.request_index.get(name)
        if r is None:
            dropped.append((name, f"request {name!r} no longer in the instance"))
            continue
        gone = [n for n in rp.nodes if n not in instance.node_index]
        if gone:
            dropped.append((name, f"request {name!r}: node {gone[0]!r} gone"))
            continue
        nodes = tuple(instance.node_index[n] for n in rp.nodes)
        pieces.append((name, RoutedPath(r, nodes, int(rp.width))))
    solution, kept, conflicts = keep_while_feasible(
        partial(check, instance), lambda ps: EntanglementSolution(tuple(ps)), pieces
    )
    return StartAdaptation(solution, len(msg.paths), len(kept), dropped + conflicts)
