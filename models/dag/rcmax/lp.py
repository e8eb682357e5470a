"""The assignment model of R||Cmax, its LP relaxation, an assignment rounded from it, and the
safe lower bound an LP (or MIP dual) value gives.

Columns: one ``x[t, m]`` per eligible (task, machine), then the makespan ``z``. Rows: each
task once (``sum_m x[t, m] = 1``), then each machine's load (``sum_t d[t, m] x[t, m] - z <=
0``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.dag.bound import integer_scale
from placement.models.dag.instance import DagInstance
from placement.models.dag.rcmax.loads import REL_EPS
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel


def assignment_model(
    d: np.ndarray, integer: bool = False, **options: Any
) -> tuple[HighsModel, np.ndarray, np.ndarray]:
    """The assignment model for ``d`` (its LP relaxation unless ``integer``) with HiGHS
    ``options``, and the (task, machine) of each column but the last (the makespan)."""
    n, k = d.shape
    ok = np.isfinite(d)
    ti, mi = np.nonzero(ok)
    ncols = len(ti) + 1
    rows = np.stack([ti, n + mi], axis=1).ravel()
    vals = np.stack([np.ones(len(ti)), d[ti, mi]], axis=1).ravel()
    starts = 2 * np.arange(len(ti) + 1)
    rows = np.concatenate([rows, n + np.arange(k)])
    vals = np.concatenate([vals, -np.ones(k)])
    model = HighsModel(**options)
    model.load(
        cost=np.concatenate([np.zeros(len(ti)), [1.0]]),
        col_lower=np.zeros(ncols),
        col_upper=np.concatenate([np.ones(len(ti)), [math.inf]]),
        row_lower=np.concatenate([np.ones(n), np.full(k, -math.inf)]),
        row_upper=np.concatenate([np.ones(n), np.zeros(k)]),
        start=np.concatenate([starts, [len(rows)]]),
        index=rows,
        value=vals,
        integer=np.concatenate([np.ones(len(ti), bool), [False]]) if integer else None,
    )
    return model, ti, mi


def lp_rounding(d: np.ndarray, time_limit_s: float) -> tuple[np.ndarray, float] | None:
    """Solve the LP relaxation; each task to the machine carrying most of it; and the LP
    value (a lower bound on the makespan). None when the LP did not finish in time."""
    model, ti, mi = assignment_model(d, threads=1)
    run = model.run(max(0.01, float(time_limit_s)))
    if run.status != RunStatus.OPTIMAL or run.x is None or run.objective is None:
        return None
    x = run.x[: len(ti)]
    share = np.zeros(d.shape)
    share[ti, mi] = x
    machine = np.argmax(share, axis=1)
    whole = share.max(axis=1) > 1 - 1e-6
    # Split tasks (at most about one per machine in a basic solution) go where they end
    # earliest on top of the whole ones, longest first.
    load = np.bincount(machine[whole], weights=d[whole, machine[whole]], minlength=d.shape[1])
    split = np.flatnonzero(~whole)
    for t in split[np.argsort(-np.min(d[split], axis=1), kind="stable")]:
        m = int(np.argmin(load + d[t]))
        machine[t] = m
        load[m] += d[t, m]
    return machine, run.objective


def lower_bound_from_lp(instance: DagInstance, lp_value: float) -> float:
    """A safe makespan bound from an LP (or MIP dual) value: shaved by a tolerance
    (``REL_EPS`` relative, at least 1e-6) for the solver's float error, then rounded up to the
    time grid when every running time lies on one."""
    d = instance.duration
    bound = lp_value - max(REL_EPS * abs(lp_value), 1e-6)
    scale, exact = integer_scale(d[np.isfinite(d)])
    if exact:
        bound = math.ceil(bound * scale - 1e-6) / scale
    return bound
