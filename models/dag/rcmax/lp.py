"""The assignment model of R||Cmax, its LP relaxation, an assignment rounded from it, and the
safe lower bound an LP (or MIP dual) value gives.

Columns: one ``x[t, m]`` per eligible (task, machine), then the makespan ``z``. Rows: each
task once (``sum_m x[t, m] = 1``), then each machine's load (``sum_t d[t, m] x[t, m] - z <=
0``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.dag.bound import integer_scale
from placement.models.dag.instance import DagInstance
from placement.models.dag.rcmax.loads import REL_EPS
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel


def assignment_model(
    d: np.ndarray, integer: bool = False, columns: np.ndarray | None = None, **options: Any
) -> tuple[HighsModel, np.ndarray, np.ndarray]:
    """The assignment model for ``d`` (its LP relaxation unless ``integer``) with HiGHS
    ``options``, and the (task, machine) of each column but the last (the makespan).

    ``columns`` (a boolean tasks x machines mask) keeps only those (task, machine) columns:
    a restricted model (every task needs at least one)."""
    n, k = d.shape
    ok = np.isfinite(d) if columns is None else (np.isfinite(d) & columns)
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


def model_start(d: np.ndarray, ti: np.ndarray, mi: np.ndarray, machine: np.ndarray) -> np.ndarray:
    """The column values of :func:`assignment_model` (columns ``ti``, ``mi``) for the
    assignment ``machine`` (a machine per task): a MIP start or user solution."""
    x = np.zeros(len(ti) + 1)
    x[np.flatnonzero(mi == machine[ti])] = 1.0
    x[-1] = float(np.bincount(machine, weights=d[np.arange(len(machine)), machine]).max())
    return x


def model_assignment(d: np.ndarray, ti: np.ndarray, mi: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The assignment (a machine per task) of :func:`assignment_model`'s integer solution
    ``x`` (columns ``ti``, ``mi``)."""
    share = np.zeros(d.shape)
    share[ti, mi] = np.asarray(x[: len(ti)])
    return np.argmax(share, axis=1)


def lp_rounding(d: np.ndarray, time_limit_s: float) -> tuple[np.ndarray, float] | None:
    """Solve the LP relaxation; each task to the machine carrying most of it; and the LP
    value (a lower bound on the makespan). None when the LP did not finish in time."""
    model, ti, mi = assignment_model(d, threads=1)
    run = model.run(max(0.01, float(time_limit_s)))
    if run.status != RunStatus.OPTIMAL or run.x is None or run.objective is None:
        return None
    share = np.zeros(d.shape)
    share[ti, mi] = run.x[: len(ti)]
    return lp_assignment(d, share), run.objective


def lagrangian_bound(d: np.ndarray, weight: np.ndarray) -> float:
    """``sum_t min_m weight[m] d[t, m]`` for machine weights normalised to sum 1: a lower
    bound on the makespan for any non-negative weights.

    Proof: for any assignment ``a``, ``Cmax >= sum_m weight[m] load[m] = sum_t
    weight[a(t)] d[t, a(t)] >= sum_t min_m weight[m] d[t, m]``. With the LP's load-row duals
    as weights it is the LP value of the *whole* model (LP duality), whatever columns the LP
    was solved on, once no column prices out; with any other weights it is still a bound.
    """
    w = np.maximum(np.asarray(weight, dtype=float), 0.0)
    if not np.isfinite(w).all() or w.sum() <= 0:
        return 0.0
    return float(weighted_times(d, w / w.sum()).min(axis=1).sum())


def weighted_times(d: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``weight[m] d[t, m]``, ``inf`` where the task cannot run (``d`` infinite): the
    infinite times are not multiplied, since ``inf * 0`` is NaN for a machine of weight 0."""
    finite = np.isfinite(d)
    return np.where(finite, np.where(finite, d, 0.0) * weight[None, :], np.inf)


@dataclass
class PricedLp:
    """The assignment LP solved by column generation (:func:`priced_lp`).

    ``share`` is the LP solution (tasks x machines, zero outside the columns used),
    ``value`` the restricted LP's value, ``bound`` the Lagrangian bound of its duals on the
    whole matrix (:func:`lagrangian_bound`, valid for the full instance; equal to the full
    LP value when nothing prices out), ``weight`` those duals normalised to sum 1,
    ``reduced`` the reduced cost of every (task, machine) under them (``weight[m] d[t, m]
    - min_m' weight[m'] d[t, m']``, >= 0), ``rounds`` the LPs solved, ``columns`` the mask
    of the last one.
    """

    share: np.ndarray
    value: float
    bound: float
    weight: np.ndarray
    reduced: np.ndarray
    rounds: int
    columns: np.ndarray


PRICED_START_COLUMNS = 6
"""Columns per task in the first restricted LP: its fastest machines, its fastest relative to
each machine's mean, and its start one."""

PRICED_ADD_COLUMNS = 4
"""Columns added per task and round: its most negative reduced costs."""


def priced_lp(
    d: np.ndarray,
    time_limit_s: float,
    start: np.ndarray | None = None,
    max_rounds: int = 12,
    weight: np.ndarray | None = None,
) -> PricedLp | None:
    """The assignment LP by column generation: a restricted LP on a few columns per task
    (its fastest machines and its machine in ``start``), then columns priced out by the
    duals added until none has a negative reduced cost (the restricted LP is then the full
    one) or ``max_rounds``. At 4,096 x 128 the full LP has 524k columns; the restricted
    ones a few per task. None when no LP finished in time.

    With ``weight`` (estimated machine duals, e.g. from :func:`~.parametric.ascend`) the
    first columns are also each task's cheapest by weighted time: near the LP's support,
    so that one or two rounds usually finish (instead of five or more from times alone).

    The bound returned is :func:`lagrangian_bound` of the best duals seen on the whole
    matrix, valid however many rounds ran.
    """
    deadline = time.monotonic() + float(time_limit_s)
    n, k = d.shape
    finite = np.isfinite(d)
    columns = np.zeros((n, k), dtype=bool)
    dd = np.where(finite, d, np.inf)
    half = max(1, min(k, PRICED_START_COLUMNS) // 2)
    # Half by time, half by time relative to the machine's mean: on consistent matrices
    # every task's fastest machines are the same few, and the LP needs every machine.
    mean = np.array(
        [col[np.isfinite(col)].mean() if np.isfinite(col).any() else 1.0 for col in dd.T]
    )
    for key in (dd, dd / np.maximum(mean, 1e-300)[None, :]):
        columns[np.arange(n)[:, None], np.argsort(key, axis=1)[:, :half]] = True
    if start is not None:
        columns[np.arange(n), np.asarray(start, dtype=np.int64)] = True
    if weight is not None:
        priced = weighted_times(d, np.maximum(np.asarray(weight, dtype=float), 0.0))
        columns[np.arange(n)[:, None], np.argsort(priced, axis=1)[:, :PRICED_START_COLUMNS]] = True
    columns &= finite
    best: PricedLp | None = None
    for rounds in range(1, max_rounds + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        model, ti, mi = assignment_model(d, columns=columns, threads=1)
        run = model.run(max(0.01, left))
        if (
            run.status != RunStatus.OPTIMAL
            or run.x is None
            or run.objective is None
            or run.row_dual is None
        ):
            break
        weight = np.maximum(-np.asarray(run.row_dual[n:], dtype=float), 0.0)
        if weight.sum() <= 0:
            weight = np.ones(k)
        weight = weight / weight.sum()
        scaled = weighted_times(d, weight)
        low = scaled.min(axis=1)
        bound = float(low.sum())
        share = np.zeros((n, k))
        share[ti, mi] = run.x[: len(ti)]
        reduced = scaled - low[:, None]
        if best is None or bound > best.bound:
            best = PricedLp(share, float(run.objective), bound, weight, reduced, rounds, columns)
        else:
            best = PricedLp(
                best.share, best.value, best.bound, best.weight, best.reduced, rounds, columns
            )
        # Columns that price out: below each task's dual u_t (its restricted minimum).
        u = np.where(columns, scaled, np.inf).min(axis=1)
        tol = 1e-9 * max(1.0, float(run.objective))
        pricing = (scaled < (u - tol)[:, None]) & ~columns
        if not pricing.any():
            # The restricted LP is the full LP; its own value is then exact too.
            best = PricedLp(
                share,
                float(run.objective),
                max(bound, best.bound),
                weight,
                reduced,
                rounds,
                columns,
            )
            break
        # Per task, the few most negative reduced costs.
        gain = np.where(pricing, scaled - u[:, None], np.inf)
        pick = np.argsort(gain, axis=1)[:, :PRICED_ADD_COLUMNS]
        rows = np.arange(n)[:, None]
        columns[rows, pick] |= np.isfinite(gain[rows, pick])
    return best


def lp_assignment(d: np.ndarray, share: np.ndarray) -> np.ndarray:
    """An assignment rounded from an LP solution ``share``: each whole task where the LP
    put it; the split ones (at most about one per machine in a basic solution) where they
    end earliest on top of the whole ones, longest first."""
    machine = np.argmax(share, axis=1)
    whole = share.max(axis=1) > 1 - 1e-6
    load = np.bincount(machine[whole], weights=d[whole, machine[whole]], minlength=d.shape[1])
    split = np.flatnonzero(~whole)
    for t in split[np.argsort(-np.min(d[split], axis=1), kind="stable")]:
        m = int(np.argmin(load + d[t]))
        machine[t] = m
        load[m] += d[t, m]
    return machine


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
