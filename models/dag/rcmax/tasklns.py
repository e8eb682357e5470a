"""Large-neighbourhood steps over task subsets on every machine: the R||Cmax search at scale.

:class:`MachineLns` (:mod:`.lns`) re-solves all tasks of a few machines among themselves; at
4,096 x 128 nearly every machine ends close to the makespan, and no few machines together
hold the room to relieve the critical one. A step here frees a few hundred tasks instead
(those of the most loaded machines, of the least loaded ones, and a seeded random sample)
and re-assigns them by an exact MILP (HiGHS) over *all* machines, each task allowed on its
current machine and its few cheapest ones by the LP's reduced costs (the machines where it
costs least weighted work, :class:`~.lp.PricedLp`); every other task stays. The MILP
minimises the largest load, warm-started with the current assignment and capped by the
current makespan, so a step never makes it worse.
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.dag.rcmax.loads import REL_EPS, Loads
from placement.solver.backends.highs import HighsModel

TASK_LNS_TASKS = 384
"""Tasks a step frees (those of the extreme machines first, then random ones)."""

TASK_LNS_COLUMNS = 6
"""Machines each freed task may go to: its current one and its cheapest by reduced cost."""

TASK_LNS_EXTREMES = 4
"""The most and the least loaded machines whose tasks a step frees."""


def reassign(
    s: Loads, tasks: np.ndarray, allowed: np.ndarray, time_limit_s: float, seed: int
) -> bool:
    """Re-assign ``tasks`` (each to one of its ``allowed`` machines, a boolean (T, k) mask
    that includes its current one) minimising the largest load over all machines; every
    other task stays. Applied when the makespan does not rise; returns whether it fell."""
    d = s.d
    k = d.shape[1]
    tasks = np.asarray(tasks, dtype=np.int64)
    ok = allowed & np.isfinite(d[tasks])
    ok[np.arange(len(tasks)), s.a[tasks]] = True
    ti, mi = np.nonzero(ok)
    n_t = len(tasks)
    cmax = s.makespan
    fixed = s.load - np.bincount(s.a[tasks], weights=s.own[tasks], minlength=k)
    dur = d[tasks[ti], mi]
    ncols = len(ti) + 1
    rows = np.concatenate([np.stack([ti, n_t + mi], axis=1).ravel(), n_t + np.arange(k)])
    vals = np.concatenate([np.stack([np.ones(len(ti)), dur], axis=1).ravel(), -np.ones(k)])
    model = HighsModel(
        threads=1,
        random_seed=int(seed) % 2_147_483_647,
        mip_rel_gap=0.0,
        mip_abs_gap=REL_EPS * max(1.0, cmax),
    )
    model.load(
        cost=np.concatenate([np.zeros(len(ti)), [1.0]]),
        col_lower=np.concatenate([np.zeros(len(ti)), [float(fixed.max())]]),
        col_upper=np.concatenate([np.ones(len(ti)), [cmax]]),
        row_lower=np.concatenate([np.ones(n_t), np.full(k, -math.inf)]),
        row_upper=np.concatenate([np.ones(n_t), -fixed]),
        start=np.concatenate([2 * np.arange(len(ti) + 1), [len(rows)]]),
        index=rows,
        value=vals,
        integer=np.concatenate([np.ones(len(ti), bool), [False]]),
    )
    start = np.zeros(ncols)
    start[np.flatnonzero(mi == s.a[tasks][ti])] = 1.0
    start[-1] = cmax
    model.set_start(start)
    run = model.run(max(0.01, float(time_limit_s)))
    if run.x is None:
        return False
    x = run.x[: len(ti)]
    pick = np.full(n_t, -1, dtype=np.int64)
    chosen = np.flatnonzero(x > 0.5)
    pick[ti[chosen]] = mi[chosen]
    if np.any(pick < 0):
        return False
    new_load = fixed + np.bincount(pick, weights=d[tasks, pick], minlength=k)
    tol = REL_EPS * max(1.0, cmax)
    if new_load.max() > cmax + tol:
        return False
    s.assign(tasks, pick)
    return bool(s.makespan < cmax - tol)


class TaskLns:
    """Task-subset steps (:func:`reassign`) with a seeded choice of the tasks to free.

    ``reduced`` is the LP's reduced cost of each (task, machine) (:class:`~.lp.PricedLp`);
    each freed task may go to its current machine and its ``columns - 1`` cheapest others.
    """

    def __init__(
        self,
        state: Loads,
        reduced: np.ndarray,
        seed: int,
        tasks: int = TASK_LNS_TASKS,
        columns: int = TASK_LNS_COLUMNS,
    ) -> None:
        self.s = state
        self.rng = np.random.default_rng(seed)
        self.size = min(tasks, len(state.a))
        k = state.d.shape[1]
        self.cheap = np.argsort(reduced, axis=1, kind="stable")[:, : min(k, columns)]
        self.steps = 0

    def _tasks(self) -> np.ndarray:
        order = np.argsort(-self.s.load, kind="stable")
        m = TASK_LNS_EXTREMES
        extremes = np.concatenate([order[:m], order[-m:]])
        on = np.flatnonzero(np.isin(self.s.a, extremes))
        if len(on) > self.size:
            on = self.rng.choice(on, self.size, replace=False)
        rest = np.setdiff1d(np.arange(len(self.s.a)), on)
        extra = self.rng.choice(rest, min(len(rest), self.size - len(on)), replace=False)
        return np.sort(np.concatenate([on, extra]))

    def step(self, time_limit_s: float) -> bool:
        """One step; whether the makespan fell."""
        tasks = self._tasks()
        allowed = np.zeros((len(tasks), self.s.d.shape[1]), dtype=bool)
        allowed[np.arange(len(tasks))[:, None], self.cheap[tasks]] = True
        self.steps += 1
        return reassign(self.s, tasks, allowed, time_limit_s, seed=self.steps)
