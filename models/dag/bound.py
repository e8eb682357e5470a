"""Cheap lower bounds on the DAG objective (valid for the whole instance).

- path bound: the earliest any task can end when every transfer is free and every task runs
  on its fastest machine (communication is never negative);
- area bound: the work of all tasks over the machines' capacity, in two measures (slot-seconds
  over the slots, and work at speed 1 over the slots times their speeds; each is valid alone);
- head-area-tail bound: for every task ``j``, its ancestors must all run before it starts and
  its descendants after it ends, so the makespan is at least
  ``min_m max(release_jm, path_head_j, area(ancestors)) + d_jm`` plus
  ``max(path_tail_j, area(descendants))`` (:func:`head_tail_bound`);
- subset heads and tails: the counting test on each task's ancestors (and descendants) raises
  its head (and tail), a parallel-machine bound on when a join can start
  (:func:`.energetic.subset_heads_and_tails`);
- counting bound: per task class, how many of its tasks each machine can finish by a trial
  makespan, bisected (:mod:`.energetic`), with the heads and tails above;
- assignment LP: the LP of the assignment relaxation with heads, tails and windowed energy
  per machine kind, certified by its duals (:mod:`.assignment_lp`);
- cost bound: every task on its cheapest machine.
"""

from __future__ import annotations

import weakref

import numpy as np

from placement.models.dag.assignment_lp import assignment_lp_bound
from placement.models.dag.energetic import counting_bound, subset_heads_and_tails
from placement.models.dag.instance import DagInstance

MAX_SCALE_EXPONENT = 6
"""The time grid is 10^-k s for some k <= this (see :func:`integer_scale`)."""
MAX_INT = 2**50
"""Scaled values stay below this (CP-SAT's integers, with room for sums)."""
HEAD_TAIL_MAX_TASKS = 5000
"""Above this many tasks (with edges) the head-area-tail bound is skipped: it keeps an
ancestor matrix of tasks x tasks booleans."""


def integer_scale(
    values: np.ndarray, max_int: int = MAX_INT, coarse: bool = False
) -> tuple[float, bool]:
    """The smallest 10^k (k <= 6) making every value integral; ``(scale, exact)``.

    When none does, the largest 10^k that keeps the values below ``max_int``, and False.
    With ``coarse``, when even 10^0 does not, the largest 10^-k that does (a grid of 10^k s),
    exact when every value is a multiple of it: the problem scaled down rather than the
    integers overflowed.
    """
    v = np.abs(values[np.isfinite(values)])
    top = float(v.max()) if len(v) else 0.0
    if coarse and top > max_int:
        scale = coarse_scale(top, max_int)
        scaled = v * scale
        exact = bool(np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, scaled)))
        return scale, exact
    best = 1.0
    for k in range(MAX_SCALE_EXPONENT + 1):
        scale = 10.0**k
        if top * scale > max_int:
            break
        best = scale
        scaled = v * scale
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, scaled)):
            return scale, True
    return best, False


def coarse_scale(top: float, max_int: int) -> float:
    """The largest 10^-k (k >= 0) keeping ``top`` times it at most ``max_int``."""
    k = 0
    while top * 10.0**-k > max_int:
        k += 1
    return 10.0**-k


def _area_weights(instance: DagInstance) -> list[tuple[np.ndarray, float]]:
    """(per-task weight, capacity) pairs: a set of tasks needs at least
    ``weight[set].sum() / capacity`` seconds of the whole cluster, in either measure.

    A task on machine ``m`` occupies ``cores * d[t, m]`` of its ``slots`` for ``d[t, m]``
    seconds; weighting machine ``m`` by any ``s_m > 0``, the machines absorb at most
    ``C * sum_m s_m slots_m`` weighted slot-seconds by time ``C``, and the task needs at least
    ``cores * min_m s_m d[t, m]`` of them. ``s = 1`` and ``s = speed`` are used."""
    d = instance.duration
    cores = np.array([t.cores for t in instance.tasks], dtype=float)
    slots = np.array([m.slots for m in instance.machines], dtype=float)
    out = []
    for s in (np.ones(len(slots)), np.array([m.speed for m in instance.machines], dtype=float)):
        weighted = np.where(np.isfinite(d), d * s[None, :], np.inf)
        out.append((cores * np.min(weighted, axis=1), float((slots * s).sum())))
    return out


def _path_heads(instance: DagInstance) -> tuple[np.ndarray, np.ndarray]:
    """``(ready, end)`` per task with free transfers and each task on its best machine:
    the earliest time every parent can have ended, and the earliest the task can end."""
    d, est = instance.duration, instance.earliest_start
    ready = np.zeros(len(instance.tasks))
    end = np.zeros(len(instance.tasks))
    for t in instance.topological_order:
        ready[t] = max((end[p] for p, _ in instance.parents[t]), default=0.0)
        end[t] = float(np.min(np.maximum(est[t], ready[t]) + d[t]))
    return ready, end


_BOUNDS: weakref.WeakKeyDictionary[DagInstance, float] = weakref.WeakKeyDictionary()
"""makespan_lower_bound per instance: a solve asks for it up to three times (the reported
bound, the exact model's floor, the proof without search), and at 4,000 tasks the
head-area-tail part takes 0.7 s."""


def makespan_lower_bound(instance: DagInstance) -> float:
    """max(path bound, area bound, head-area-tail bound, the subset heads and tails'
    bound, counting bound, the assignment LP's bound (:mod:`.assignment_lp`, DAGs only)), in
    seconds; the last two use the subset heads and tails."""
    cached = _BOUNDS.get(instance)
    if cached is not None:
        return cached
    ready, end = _path_heads(instance)
    weights = _area_weights(instance)
    path = float(end.max()) if len(end) else 0.0
    area = max(float(w.sum()) / cap for w, cap in weights)
    head_tail, head, tail = _head_tail(instance, ready, weights)
    head, tail = subset_heads_and_tails(instance, head, tail)
    subset = float(np.max(np.min(head + instance.duration, axis=1) + tail)) if len(tail) else 0.0
    bound = max(path, area, head_tail, subset)
    bound = counting_bound(instance, head, tail, bound)
    if instance.edges:
        # Independent tasks: the LP is R||Cmax's assignment LP, which rcmax solves itself.
        bound = assignment_lp_bound(instance, head, tail, bound)
    _BOUNDS[instance] = bound
    return bound


def head_tail_bound(instance: DagInstance) -> float:
    """The head-area-tail bound (0 without edges, or above :data:`HEAD_TAIL_MAX_TASKS`).

    For each task ``j``: it starts no earlier than its release (per machine), than the path
    bound's end of every parent, and than the area of all its ancestors; after it ends, the
    longest chain of descendants (fastest machines, free transfers) and the area of all its
    descendants still have to run. Both areas use :func:`_area_weights`.
    """
    return _head_tail(instance, _path_heads(instance)[0], _area_weights(instance))[0]


def heads_and_tails(instance: DagInstance) -> tuple[np.ndarray, np.ndarray]:
    """``(head[t, m], tail[t])``: the earliest start of ``t`` on ``m`` (release, dataset,
    the path of its ancestors, their area) and the least time from its end to the makespan
    (the longest chain of descendants, their area), as the head-area-tail bound uses them."""
    _, head, tail = _head_tail(instance, _path_heads(instance)[0], _area_weights(instance))
    return head, tail


def _head_tail(
    instance: DagInstance, ready: np.ndarray, weights: list[tuple[np.ndarray, float]]
) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`head_tail_bound` from the path pass's ``ready`` times and the area weights,
    with the heads (tasks x machines) and tails (per task) it uses. Without edges, or above
    :data:`HEAD_TAIL_MAX_TASKS`, the bound is 0 and heads and tails leave the areas out."""
    n = len(instance.tasks)
    d, est = instance.duration, instance.earliest_start
    order = instance.topological_order
    shortest = np.min(d, axis=1)
    tail = np.zeros(n)
    for t in reversed(order):
        tail[t] = max((shortest[c] + tail[c] for c, _ in instance.children[t]), default=0.0)
    if not instance.edges or n > HEAD_TAIL_MAX_TASKS:
        return 0.0, np.maximum(est, ready[:, None]), tail
    ancestors = np.zeros((n, n), dtype=bool)
    for t in order:
        ps = [p for p, _ in instance.parents[t]]
        if ps:
            ancestors[t] = ancestors[ps].any(axis=0)
            ancestors[t, ps] = True
    head_area = np.zeros(n)
    tail_area = np.zeros(n)
    for weight, capacity in weights:
        head_area = np.maximum(head_area, ancestors @ weight / capacity)
        tail_area = np.maximum(tail_area, ancestors.T @ weight / capacity)
    start = np.maximum(est, np.maximum(ready, head_area)[:, None])
    tail = np.maximum(tail, tail_area)
    ends = np.min(start + d, axis=1)
    return float(np.max(ends + tail)), start, tail


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
