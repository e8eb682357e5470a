"""Cheap lower bounds on the DAG objective (valid for the whole instance).

- path bound: the earliest any task can end when every transfer is free and every task runs
  on its fastest machine (communication is never negative);
- area bound: the least core-seconds of all tasks over the total slots of the machines;
- cost bound: every task on its cheapest machine.
"""

from __future__ import annotations

import numpy as np

from placement.models.dag.instance import DagInstance


def makespan_lower_bound(instance: DagInstance) -> float:
    """max(path bound, area bound), in seconds."""
    d, est = instance.duration, instance.earliest_start
    end = np.zeros(len(instance.tasks))
    for t in instance.topological_order:
        ready = max((end[p] for p, _ in instance.parents[t]), default=0.0)
        end[t] = float(np.min(np.maximum(est[t], ready) + d[t]))
    path = float(end.max()) if len(end) else 0.0
    cores = np.array([t.cores for t in instance.tasks], dtype=float)
    area = float((np.min(d, axis=1) * cores).sum()) / sum(m.slots for m in instance.machines)
    return max(path, area)


def cost_lower_bound(instance: DagInstance) -> float:
    """Every task on its cheapest machine."""
    d = instance.duration
    c = np.where(np.isfinite(d), instance.cost_rate * np.where(np.isfinite(d), d, 0.0), np.inf)
    return float(np.min(c, axis=1).sum())


def lower_bound(instance: DagInstance) -> float:
    """A lower bound on the instance's objective."""
    if instance.objective == "cost":
        return cost_lower_bound(instance)
    if instance.objective == "weighted":
        return instance.makespan_weight * makespan_grid_bound(
            instance
        ) + instance.cost_weight * cost_lower_bound(instance)
    return makespan_grid_bound(instance)


def makespan_grid_bound(instance: DagInstance) -> float:
    """:func:`makespan_lower_bound`, rounded up to the time grid when there is one.

    With every time integral at a scale S (at most 10^6), an optimal schedule can be
    left-shifted until every start is a sum of times, so the optimal makespan is a multiple
    of 1/S.
    """
    from placement.models.dag.cpsat import integer_scale

    bound = makespan_lower_bound(instance)
    d = instance.duration
    times = [d[np.isfinite(d)], instance.earliest_start.ravel()]
    if instance.edges:
        latency, per_byte = instance.network
        data = instance.edge_arrays[2]
        times.append((latency[None] + data[:, None, None] * per_byte[None]).ravel())
    scale, exact = integer_scale(np.concatenate(times))
    if exact:
        bound = float(np.ceil(bound * scale - 1e-6) / scale)
    return bound


def proven_by_bound(instance: DagInstance, objective: float) -> float | None:
    """The lower bound when it proves ``objective`` optimal, else None."""
    bound = lower_bound(instance)
    if objective <= bound + 1e-9 * max(1.0, abs(bound)):
        return bound
    return None
