"""The LP of an assignment relaxation with heads, tails and windowed energy: a makespan
lower bound for DAGs on heterogeneous machines.

Machines with the same running times and heads for every task (the same type, speed and
zone) form a *kind* ``g`` with ``S_g`` slots in all. Columns: ``x[t, g] in [0, 1]`` (the share
of task ``t`` on kind ``g``, eligible pairs only) and the makespan ``C``. Rows:

- ``sum_g x[t, g] = 1`` (every task runs);
- ``C >= sum_g (h[t, g] + d[t, g]) x[t, g] + q[t]`` (head, body, tail: the task starts no
  earlier than its head on the kind it is on, and its tail follows its end);
- windowed energy, for thresholds ``a`` (on heads) and ``b`` (on tails) and each kind:
  ``sum_{t: h[t, g] >= a, q[t] >= b} c_t d[t, g] x[t, g] <= S_g (C - a - b)`` (those tasks
  run inside ``[a, C - b]`` on the kind's ``S_g`` slots). With no such task on the kind the
  row says ``C >= a + b``, so it is added only when ``a + b`` is at most a proven lower bound
  (the ``floor`` of :func:`assignment_lp_bound`, also ``C``'s lower bound).

Every schedule gives a 0/1 point of it, so its optimum is a lower bound. The bound reported is
not HiGHS's float objective but the value the row duals certify (weak duality with the
column bounds: for any ``y``, ``c'x >= sum_i min(y_i L_i, y_i U_i) + sum_j min(r_j l_j,
r_j u_j)`` with ``r = c - A'y``), shaved by 10^-12 relative for the arithmetic of that sum:
valid whatever HiGHS's tolerances.
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.dag.instance import DagInstance
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel

MAX_COLUMNS = 60_000
"""Task-kind pairs above which the LP is not built (its time would show in every solve)."""
THRESHOLDS = 10
"""Head and tail thresholds each (quantiles of the tasks' heads and tails)."""
LP_TIME_LIMIT_S = 2.0
"""Seconds HiGHS may spend on the LP; without an optimal basis no bound is reported."""


def machine_kinds(instance: DagInstance, head: np.ndarray) -> list[list[int]]:
    """Machines grouped by identical running-time and head columns."""
    d = instance.duration
    groups: dict[bytes, list[int]] = {}
    for m in range(len(instance.machines)):
        key = np.concatenate([d[:, m], head[:, m]]).tobytes()
        groups.setdefault(key, []).append(m)
    return list(groups.values())


def _thresholds(values: np.ndarray) -> np.ndarray:
    """0 and up to :data:`THRESHOLDS` - 1 distinct quantiles of ``values``."""
    qs = np.quantile(values, np.linspace(0.0, 1.0, THRESHOLDS)[1:])
    return np.unique(np.concatenate([[0.0], qs]))


def assignment_lp_bound(
    instance: DagInstance, head: np.ndarray, tail: np.ndarray, floor: float
) -> float:
    """The certified optimum of the LP of the module docstring, given a proven lower bound
    ``floor`` on the makespan (``floor`` when the LP is not built or not solved: above
    :data:`MAX_COLUMNS`, or HiGHS without an optimal basis)."""
    n = len(instance.tasks)
    d = instance.duration
    kinds = machine_kinds(instance, head)
    dg = np.stack([d[:, g[0]] for g in kinds], axis=1)
    hg = np.stack([head[:, g[0]] for g in kinds], axis=1)
    slots = np.array([sum(instance.machines[m].slots for m in g) for g in kinds], dtype=float)
    cores = np.array([t.cores for t in instance.tasks], dtype=float)
    ti, gi = np.nonzero(np.isfinite(dg))
    if len(ti) + 1 > MAX_COLUMNS or n == 0:
        return floor
    ncol = len(ti) + 1
    c_col = ncol - 1
    # An upper bound for C (every column needs finite bounds for the certificate): every
    # task one after another, each at its slowest, after the largest head and before the
    # largest tail.
    top = float(np.max(hg[np.isfinite(hg)]) + np.max(dg[ti, gi]) * n + np.max(tail)) + 1.0
    top = max(top, float(np.sum(dg[ti, gi])) + float(np.max(hg[np.isfinite(hg)])) + 1.0)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lower: list[float] = []
    upper: list[float] = []
    r = 0
    # each task once
    rows.append(ti.astype(np.int64))
    cols.append(np.arange(len(ti)))
    vals.append(np.ones(len(ti)))
    lower += [1.0] * n
    upper += [1.0] * n
    r += n
    # head + body + tail <= C
    rows.append(r + ti)
    cols.append(np.arange(len(ti)))
    vals.append(hg[ti, gi] + dg[ti, gi])
    rows.append(r + np.arange(n))
    cols.append(np.full(n, c_col))
    vals.append(-np.ones(n))
    lower += [-math.inf] * n
    upper += list(-tail)
    r += n
    # windowed energy per kind
    finite_heads = np.where(np.isfinite(hg), hg, np.inf).min(axis=1)
    for a in _thresholds(finite_heads):
        for b in _thresholds(tail):
            if a + b > floor:
                # The row would force C >= a + b even with no such task on the kind: it
                # holds for every schedule only when C >= a + b is known already.
                continue
            for g in range(len(kinds)):
                sel = np.flatnonzero((gi == g) & (hg[ti, g] >= a) & (tail[ti] >= b))
                if not len(sel):
                    continue
                rows.append(np.full(len(sel) + 1, r))
                cols.append(np.append(sel, c_col))
                vals.append(np.append(cores[ti[sel]] * dg[ti[sel], g], -slots[g]))
                lower.append(-math.inf)
                upper.append(-slots[g] * (a + b))
                r += 1
    row = np.concatenate(rows)
    col = np.concatenate(cols)
    val = np.concatenate(vals)
    order = np.lexsort((row, col))
    row, col, val = row[order], col[order], val[order]
    start = np.searchsorted(col, np.arange(ncol + 1))
    cost = np.zeros(ncol)
    cost[c_col] = 1.0
    col_lower = np.zeros(ncol)
    col_lower[c_col] = floor
    col_upper = np.ones(ncol)
    col_upper[c_col] = max(top, floor)
    row_lower, row_upper = np.array(lower), np.array(upper)
    model = HighsModel(threads=1)
    model.load(cost, col_lower, col_upper, row_lower, row_upper, start, row, val)
    run = model.run(LP_TIME_LIMIT_S)
    if run.status != RunStatus.OPTIMAL or run.row_dual is None:
        return floor
    # The certificate: clip each dual to the side its row is bounded on.
    y = np.asarray(run.row_dual, dtype=float).copy()
    y[(y > 0) & ~np.isfinite(row_lower)] = 0.0
    y[(y < 0) & ~np.isfinite(row_upper)] = 0.0
    rows_part = np.where(y > 0, y * np.where(np.isfinite(row_lower), row_lower, 0.0), 0.0)
    rows_part += np.where(y < 0, y * np.where(np.isfinite(row_upper), row_upper, 0.0), 0.0)
    reduced = cost - np.bincount(col, weights=val * y[row], minlength=ncol)
    cols_part = np.minimum(reduced * col_lower, reduced * col_upper)
    certified = float(math.fsum(rows_part) + math.fsum(cols_part))
    return max(floor, certified - 1e-12 * max(1.0, abs(certified)) * (ncol + len(y)))
