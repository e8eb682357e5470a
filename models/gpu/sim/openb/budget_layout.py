"""A from-scratch packing laid onto an openb end state with the fewest migrations found
(issue 42): the witness of the budget curve's unlimited point
(:meth:`.budget_curve.BudgetCurve.unlimited`). The packing comes from the configuration
bound (:mod:`.config_bound`), which knows node classes, not nodes; this module decides which
node of a class takes which packing, and which GPU of a node which slot, so that as many pods
as it can stay where they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from placement.models.gpu.sim.openb.replay import TraceState

BudgetCurve = Any
"""A :class:`.budget_curve.BudgetCurve` (that module imports this one)."""


def lay_out(
    curve: BudgetCurve, packing: Sequence[tuple[int, int, tuple[int, ...]]]
) -> dict[int, tuple[int, tuple[int, ...]]]:
    """A from-scratch packing ``[(pod, node, gpus)]`` of GPU pods as a placement of the
    arrivals that keeps as many pods of ``P`` where they are as it can: nodes of one
    class are interchangeable, so packings go to the nodes by an assignment (most
    residents of equal class kept, OR-Tools' linear sum assignment), then each node's
    GPUs are relabelled by a second one (most residents on the same GPU); a slot takes
    the resident of its class that is on its GPUs, else a displaced pod of its class,
    else a failed one. CPU-only pods of ``P`` stay on their node where it still has
    room, else go to the roomiest node (a migration)."""
    # OR-Tools loads a large native library: imported on first use.
    from ortools.graph.python import linear_sum_assignment

    cb, cluster = curve.cb, curve.cluster
    slots_of: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for pod, node, gpus in packing:
        slots_of.setdefault(int(node), []).append((int(cb.pod_class[pod]), tuple(gpus)))
    res_of = [
        [(int(curve.cls[a]), curve.gpus[a], int(a)) for a in curve.residents_of[n]]
        for n in range(cluster.n)
    ]
    target: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for members in cb.node_members:
        members = [int(n) for n in members]
        size = len(members)
        lsa = linear_sum_assignment.SimpleLinearSumAssignment()
        for i, n in enumerate(members):
            have = np.bincount([c for c, _, _ in res_of[n]], minlength=curve.n_classes)
            for j, w in enumerate(members):
                want = np.bincount([c for c, _ in slots_of.get(w, [])], minlength=curve.n_classes)
                lsa.add_arc_with_cost(i, j, -int(np.minimum(have, want).sum()))
        if size and lsa.solve() != lsa.OPTIMAL:
            raise RuntimeError("assignment of packings to nodes failed")
        for i, n in enumerate(members):
            target[n] = slots_of.get(members[lsa.right_mate(i)], [])
    where: dict[int, tuple[int, tuple[int, ...]]] = {}
    displaced: dict[int, list[int]] = {}
    todo: list[tuple[int, int, tuple[int, ...]]] = []
    for n in range(cluster.n):
        G = int(cluster.gpu_count[n])
        slots = target.get(n, [])
        if G and slots:
            lsa = linear_sum_assignment.SimpleLinearSumAssignment()
            for w in range(G):
                mine = [c for c, gs in slots if w in gs]
                for g in range(G):
                    theirs = [c for c, gs, _ in res_of[n] if g in gs]
                    common = sum(min(mine.count(c), theirs.count(c)) for c in set(mine))
                    lsa.add_arc_with_cost(w, g, -common)
            lsa.solve()
            relabel = {w: lsa.right_mate(w) for w in range(G)}
            slots = [(c, tuple(sorted(relabel[w] for w in gs))) for c, gs in slots]
        free = {(c, gs): [] for c, gs in slots}
        for c, gs, a in res_of[n]:
            if cb.k[c]:
                free.setdefault((c, gs), []).append(a)
        for c, gs in slots:
            if free.get((c, gs)):
                where[free[(c, gs)].pop()] = (n, gs)
            else:
                todo.append((c, n, gs))
        for (c, _gs), left in free.items():
            displaced.setdefault(c, []).extend(left)
    for a in np.flatnonzero(curve.node < 0):
        if curve.cb.k[curve.cls[a]]:
            displaced.setdefault(int(curve.cls[a]), []).insert(0, int(a))  # failed last
    for c, n, gs in todo:
        if displaced.get(c):
            where[displaced[c].pop()] = (n, gs)
    # CPU-only pods of P: stay where they fit, else the node with the most CPU left
    state = TraceState(cluster)
    for a, (n, gs) in where.items():
        state.place(curve.pods, int(curve.arrived[a]), n, list(gs))
    cpu_only = [int(a) for a in np.flatnonzero(curve.node >= 0) if not cb.k[curve.cls[a]]]
    for a in cpu_only:
        p, n = int(curve.arrived[a]), int(curve.node[a])
        if state.fits(curve.pods, p, n, ()):
            where[a] = (n, ())
        else:
            nodes = state.feasible(curve.pods, p)
            if not len(nodes):
                continue  # left out: the check reports it
            n = int(nodes[np.argmax(state.cpu_left[nodes])])
            where[a] = (n, ())
        state.place(curve.pods, p, n, [])
    return where
