"""A start solution (an earlier configuration, by names) adapted to the instance being solved.

The start's deployments whose kinds still exist are kept (cut to the GPUs there are, in the
start's order); its routes are kept when the checker accepts them with those deployments, else
the classes are routed again onto the kept deployments (:func:`.routing.route_fill`).
"""

from __future__ import annotations

from typing import Any

from placement.models.serving.check import check
from placement.models.serving.instance import (
    ServingInstance,
    kind_index,
    solution_from_message,
)
from placement.models.serving.routing import gpus_fit, route_fill
from placement.solver.errors import InputError
from placement.solver.family import StartAdaptation, known_pieces


def adapt_start(instance: ServingInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.ServingSolution`` the instance admits (see the module)."""
    dropped: list[tuple[str, str]] = []
    index = kind_index(instance)
    counts: dict[int, int] = {}
    for d, name, k in known_pieces(
        msg.deployments, lambda d: d.name, index, "kind", "deployed twice", dropped
    ):
        n = int(d.instances)
        while n > 0 and not gpus_fit(instance, {**counts, k: n}):
            n -= 1
        if n <= 0:
            dropped.append((name, f"kind {name!r}: no GPUs left for it"))
            continue
        counts[k] = n
    pieces = len(msg.deployments)
    try:
        whole = solution_from_message(instance, msg)
        if check(instance, whole).feasible:
            return StartAdaptation(whole, pieces, pieces)
    except InputError:
        pass
    solution = route_fill(instance, counts)
    return StartAdaptation(
        solution, pieces, len(counts), dropped, note="classes routed again onto the kept kinds"
    )
