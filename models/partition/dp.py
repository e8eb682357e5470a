"""The exact dynamic program for contiguous splits: the fast path.

States are the number of devices used of each class ``s = (s_1, ..., s_C)`` and a prefix
``j`` of the layer order. ``g[s][j]`` is the best objective of the first ``j`` layers placed
in ``sum(s)`` non-empty stages that use exactly ``s_c`` devices of class ``c``::

    g[0][0] = 0
    g[s][j] = min over c with s_c > 0, over i < j of  g[s - e_c][i] (+) cost_c(i, j)

where (+) is ``max`` for the bottleneck modes (training, serving) and ``+`` for latency, and
``cost_c`` is :meth:`.tables.Tables.stage_cost` (infinite when the stage does not fit in the
class's memory or cuts a colocation group). The optimum is ``min over s <= counts of
g[s][n]``. Devices of a class are interchangeable and stage costs do not depend on the
position of the stage, so this is exact whenever every pair of devices has the same
bandwidth (:func:`.tables.comm_is_uniform`): one class gives the homogeneous chain DP, one
device per class the DP over devices in any order. The inner minimum over ``i`` is one numpy
operation over a band of starts (:func:`.tables.band`), pruned by memory and by an upper
bound from a heuristic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement.models.partition.ideals import needs_layer_graph
from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.models.partition.tables import (
    INF,
    Tables,
    band,
    bandwidth_range,
    build_tables,
    comm_is_uniform,
    device_classes,
)

MAX_STATES = 200_000
"""Count vectors the DP may enumerate (product of class sizes + 1)."""
MAX_CELLS = 60_000_000
"""States x (layers + 1) the DP may hold."""


@dataclass
class DpResult:
    """What the DP found: the optimum (ns) and a solution, or that no split fits."""

    objective_ns: int | None
    solution: PartitionSolution | None
    exact: bool
    """True when the DP's model is the instance's (uniform links): the value is the optimum."""
    states: int
    """Device-count states enumerated."""
    max_prefix: int
    """The longest prefix of layers any number of stages can hold (n when feasible)."""
    min_stages: int | None = None
    """The fewest stages holding the whole model, ignoring a serving stage limit (None if
    no split fits at all)."""


def dp_applies(instance: PartitionInstance) -> str | None:
    """Why the DP cannot solve ``instance`` (None when it can)."""
    if needs_layer_graph(instance):
        return (
            "the instance uses rules of Tarnawski et al.'s layer graphs (convex splits, "
            "per-tensor transfers, CPUs, backward layers): the DP over ideals solves it"
        )
    if not instance.workload.contiguous:
        return "the DP needs contiguous splits (workload.non_contiguous is set)"
    states = 1
    for cls in device_classes(instance):
        states *= len(cls.devices) + 1
    if states > MAX_STATES:
        return f"{states} device-count states, more than the DP's {MAX_STATES}"
    if states * (len(instance.layers) + 1) > MAX_CELLS:
        return f"{states} states x {len(instance.layers) + 1} prefixes is too large for the DP"
    return None


def solve_dp(
    instance: PartitionInstance,
    upper_bound_ns: int | None = None,
    tables: Tables | None = None,
    bandwidth: float | None = None,
) -> DpResult:
    """Run the DP (see the module docstring).

    Parameters
    ----------
    instance:
        A validated instance with contiguous splits.
    upper_bound_ns:
        The objective of a known solution, for pruning (the result stays exact).
    tables:
        Prebuilt tables (their bandwidth is then used).
    bandwidth:
        One bandwidth for every pair of devices (default: the slowest link). With several
        link speeds in the instance the result is a solution of that model, not the optimum.

    Returns
    -------
    DpResult
        ``objective_ns`` is the DP model's optimum (None if no split fits).

    Raises
    ------
    ValueError
        If :func:`dp_applies` says no.
    """
    why = dp_applies(instance)
    if why is not None:
        raise ValueError(why)
    t = tables if tables is not None else build_tables(instance, bandwidth)
    n = t.n
    counts = [len(cls.devices) for cls in t.classes]
    n_classes = len(counts)
    radix = np.cumprod([1] + [k + 1 for k in counts])
    n_states = int(radix[-1])
    bands = [band(t, c, upper_bound_ns) for c in range(n_classes)]
    bottleneck = t.bottleneck

    g = np.full((n_states, n + 1), INF, dtype=np.int64)
    arg_start = np.full((n_states, n + 1), -1, dtype=np.int32)
    arg_class = np.full((n_states, n + 1), -1, dtype=np.int16)
    g[0, 0] = 0
    digits = np.zeros(n_classes, dtype=np.int64)
    reach = np.zeros(n + 1, dtype=bool)
    reach[0] = True
    for s in range(1, n_states):
        # Mixed-radix increment of the count vector.
        k = 0
        while True:
            digits[k] += 1
            if digits[k] <= counts[k]:
                break
            digits[k] = 0
            k += 1
        row, row_start, row_class = g[s], arg_start[s], arg_class[s]
        for c in range(n_classes):
            if digits[c] == 0:
                continue
            prev = g[s - int(radix[c])]
            if prev.min() >= INF:
                continue
            b = bands[c]
            before = prev[b.start]
            combined = np.maximum(before, b.cost) if bottleneck else before + b.cost
            combined = np.where((before >= INF) | (b.cost >= INF), INF, combined)
            w = combined.argmin(axis=1)
            best = combined[np.arange(n + 1), w]
            better = best < row
            if better.any():
                row[better] = best[better]
                row_start[better] = b.start[np.arange(n + 1), w][better]
                row_class[better] = c
        reach |= row < INF
    finals = g[:, n].copy()
    # Stages used by each state: the digit sum of its mixed-radix index.
    idx = np.arange(n_states, dtype=np.int64)
    used = np.zeros(n_states, dtype=np.int64)
    for c in range(n_classes):
        used += (idx // int(radix[c])) % (counts[c] + 1)
    min_stages = int(used[finals < INF].min()) if (finals < INF).any() else None
    limit = instance.workload.max_stages
    if limit is not None:
        finals[used > limit] = INF
    max_prefix = int(np.flatnonzero(reach).max())
    # Exact when the tables are the instance's model: one link speed, transfers added to the
    # stage (not PipeDream's overlap), and the instance's own bandwidth.
    exact = (
        comm_is_uniform(instance)
        and not t.overlap_comm
        and t.bandwidth == bandwidth_range(instance)[0]
    )
    if finals.min() >= INF:
        return DpResult(None, None, exact, n_states, max_prefix, min_stages)
    s = int(finals.argmin())
    value = int(finals[s])
    # Walk back: stages (class, start, end), then devices of each class in index order.
    stages: list[tuple[int, int, int]] = []
    j = n
    while j > 0:
        c, i = int(arg_class[s, j]), int(arg_start[s, j])
        stages.append((c, i, j))
        s -= int(radix[c])
        j = i
    stages.reverse()
    device_of = [-1] * n
    next_device = [0] * n_classes
    for c, i, j in stages:
        d = t.classes[c].devices[next_device[c]]
        next_device[c] += 1
        device_of[i:j] = [d] * (j - i)
    return DpResult(value, PartitionSolution(tuple(device_of)), exact, n_states, n, min_stages)


def try_dp(
    instance: PartitionInstance,
    upper_bound_ns: int | None = None,
    tables: Tables | None = None,
    bandwidth: float | None = None,
) -> DpResult | None:
    """:func:`solve_dp`, or None where the DP does not apply or would be too large."""
    if dp_applies(instance) is not None:
        return None
    try:
        return solve_dp(instance, upper_bound_ns, tables=tables, bandwidth=bandwidth)
    except ValueError:
        return None
