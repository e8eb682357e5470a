"""Large-neighbourhood steps of the R||Cmax search: machine subsets re-assigned by a MILP.

:func:`reoptimise` re-assigns the tasks of a few machines among themselves by an exact MILP
(HiGHS, warm-started, never worse); :class:`MachineLns` chooses the subsets and follows each
step with a descent around them; :func:`improve` runs a descent and then the steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.dag.rcmax.descent import descend
from placement.models.dag.rcmax.loads import REL_EPS, Loads
from placement.solver.backends.highs import HighsModel

MAKE_ROOM = True
"""After a subset step that cannot lower the subset's largest load, a second MILP lowers the
subset's total work under per-machine caps (see :meth:`MachineLns.step`)."""

AFFINITY_RATIO = 1.5
"""A machine is a likely partner of the most loaded one for each of its tasks that runs there
within this factor of its current time (0: uniform draws only)."""


@dataclass
class MilpStep:
    """What one large-neighbourhood step did."""

    improved: bool
    nodes: int
    proven: bool


def reoptimise(
    s: Loads,
    tasks: np.ndarray,
    machines: np.ndarray,
    time_limit_s: float,
    seed: int,
    max_nodes: int | None = None,
    cap: np.ndarray | None = None,
) -> MilpStep:
    """Re-assign ``tasks`` among ``machines`` by a MILP; every other task stays where it is.

    Without ``cap``: minimise the largest load of ``machines``. The current assignment is
    the MIP start and the current largest load among ``machines`` the upper bound on the new
    one, so the result is never worse; it is applied when it is no worse (a sideways step
    reshapes the machines for the next one). ``improved``: the largest load fell.

    With ``cap`` (one load limit per machine of ``machines``, each at least its current
    load): minimise the total running time of ``tasks`` with every load within its cap. It
    makes room on these machines for later steps without raising the makespan.
    ``improved``: the total fell.

    Each of ``tasks`` must sit on one of ``machines``.
    """
    machines = np.asarray(machines, dtype=np.int64)
    tasks = np.asarray(tasks, dtype=np.int64)
    if len(tasks) == 0 or len(machines) < 2:
        return MilpStep(False, 0, True)
    if not np.all(np.isin(s.a[tasks], machines)):
        raise ValueError("every task to re-assign must be on one of the machines")
    d = s.d[np.ix_(tasks, machines)]  # (T, M)
    n_t, n_m = len(tasks), len(machines)
    ti, mi = np.nonzero(np.isfinite(d))  # one column per eligible (task, machine)
    ncols = len(ti) + 1
    old_max = float(s.load[machines].max())
    pos = np.full(s.d.shape[1], -1, dtype=np.int64)
    pos[machines] = np.arange(n_m)
    current = pos[s.a[tasks]]
    fixed = s.load[machines] - np.bincount(current, weights=s.own[tasks], minlength=n_m)
    old_work = float(s.own[tasks].sum())
    if cap is None:
        cost = np.concatenate([np.zeros(len(ti)), [1.0]])
        col_lower = np.concatenate([np.zeros(len(ti)), [float(fixed.max())]])
        col_upper = np.concatenate([np.ones(len(ti)), [old_max]])
        room = -fixed
    else:
        # z is pinned at 0; each load row gets its cap instead.
        cap = np.maximum(np.asarray(cap, dtype=float), s.load[machines])
        cost = np.concatenate([d[ti, mi], [0.0]])
        col_lower = np.zeros(ncols)
        col_upper = np.concatenate([np.ones(len(ti)), [0.0]])
        room = cap - fixed
    # Rows: each task once; fixed[m] + sum_t d[t, m] x[t, m] - z <= 0 (or <= cap[m]).
    rows = np.concatenate([np.stack([ti, n_t + mi], axis=1).ravel(), n_t + np.arange(n_m)])
    vals = np.concatenate([np.stack([np.ones(len(ti)), d[ti, mi]], axis=1).ravel(), -np.ones(n_m)])
    # HiGHS's thread count is the process's (new_highs, HIGHS_THREADS): not set per model.
    options: dict[str, Any] = {
        "random_seed": int(seed) % 2_147_483_647,
        "mip_rel_gap": 0.0,
        "mip_abs_gap": REL_EPS * max(1.0, old_max if cap is None else old_work),
    }
    if max_nodes is not None:
        options["mip_max_nodes"] = int(max_nodes)
    model = HighsModel(**options)
    model.load(
        cost,
        col_lower,
        col_upper,
        row_lower=np.concatenate([np.ones(n_t), np.full(n_m, -math.inf)]),
        row_upper=np.concatenate([np.ones(n_t), room]),
        start=np.concatenate([2 * np.arange(len(ti) + 1), [len(rows)]]),
        index=rows,
        value=vals,
        integer=np.concatenate([np.ones(len(ti), bool), [False]]),
    )
    start = np.zeros(ncols)
    start[np.flatnonzero(mi == current[ti])] = 1.0
    start[-1] = old_max if cap is None else 0.0
    model.set_start(start)
    run = model.run(max(0.01, float(time_limit_s)))
    nodes = run.nodes
    proven = run.solved
    if run.x is None:  # no feasible solution kept
        return MilpStep(False, nodes, proven)
    x = run.x[: len(ti)]
    pick = np.full(n_t, -1, dtype=np.int64)
    chosen = np.flatnonzero(x > 0.5)
    pick[ti[chosen]] = mi[chosen]
    if np.any(pick < 0):
        return MilpStep(False, nodes, proven)
    new_load = fixed + np.bincount(pick, weights=d[np.arange(n_t), pick], minlength=n_m)
    tol = REL_EPS * max(1.0, old_max)
    if cap is None:
        if new_load.max() > old_max + tol:
            return MilpStep(False, nodes, proven)
        s.assign(tasks, machines[pick])
        return MilpStep(bool(new_load.max() < old_max - tol), nodes, proven)
    new_work = float(d[np.arange(n_t), pick].sum())
    if np.any(new_load > cap + tol) or new_work >= old_work - REL_EPS * max(1.0, old_work):
        return MilpStep(False, nodes, proven)
    s.assign(tasks, machines[pick])
    return MilpStep(True, nodes, proven)


class MachineLns:
    """Large-neighbourhood search over machine subsets, each step followed by a descent.

    A step takes the most loaded machine and ``size - 1`` others drawn from a seeded
    generator (every other draw weighted towards machines that run the top machine's tasks
    within ``AFFINITY_RATIO`` of their current time) and re-assigns all their tasks by
    :func:`reoptimise`, minimising the subset's largest load; when that cannot fall, a
    second MILP lowers the subset's total work without any machine reaching the makespan
    (room for later steps). A subset proved to have nothing better is remembered with its
    loads and not tried again while they stay the same; once most subsets of the current
    size are spent, the size grows by one (up to ``max_size``) and falls back when the
    makespan improves.
    """

    def __init__(
        self,
        state: Loads,
        seed: int,
        size: int = 3,
        max_size: int = 5,
        step_time_limit_s: float = 0.5,
        step_max_nodes: int | None = None,
    ) -> None:
        self.s = state
        self.rng = np.random.default_rng(seed)
        self.base_size = self.size = min(size, state.d.shape[1])
        self.max_size = max_size
        self.step_time_limit_s = step_time_limit_s
        self.step_max_nodes = step_max_nodes
        self.spent: dict[tuple[int, ...], tuple[float, ...]] = {}
        self.steps = 0

    def adopt(self, machine: np.ndarray) -> None:
        """Continue from another assignment (a better one found elsewhere)."""
        self.s.assign(np.arange(len(machine)), np.asarray(machine, dtype=np.int64))
        self.size = self.base_size

    def _subset(self) -> np.ndarray | None:
        k = self.s.d.shape[1]
        top = int(np.argmax(self.s.load))
        others = np.delete(np.arange(k), top)
        # Half the draws favour machines that run the top machine's tasks nearly as fast
        # (where its work can go), half are uniform (diversity).
        on_top = self.s.a == top
        with np.errstate(divide="ignore", invalid="ignore"):  # zero-length tasks
            ratio = self.s.d[on_top][:, others] / self.s.own[on_top][:, None]
        affinity = 1.0 + (ratio <= AFFINITY_RATIO).sum(axis=0)
        affinity = affinity / affinity.sum()
        while True:
            need = self.size - 1
            total = math.comb(len(others), need)
            for i in range(min(4 * total, 64)):
                p = affinity if (AFFINITY_RATIO > 0 and i % 2 == 0) else None
                pick = np.sort(self.rng.choice(others, need, replace=False, p=p))
                subset = np.concatenate([[top], pick])
                key = tuple(int(m) for m in subset)
                loads = tuple(float(v) for v in self.s.load[subset])
                if self.spent.get(key) != loads:
                    return subset
            # Most subsets of this size are spent: the next size up, if any.
            if self.size >= min(self.max_size, k):
                return None
            self.size += 1

    def step(self, time_limit_s: float | None = None) -> bool | None:
        """One step; whether the makespan fell, or None when every subset up to
        ``max_size`` machines is spent (a local optimum of the whole neighbourhood)."""
        before = self.s.makespan
        subset = self._subset()
        if subset is None:
            return None
        limit = self.step_time_limit_s if time_limit_s is None else time_limit_s
        tasks = np.flatnonzero(np.isin(self.s.a, subset))
        old = tuple(float(v) for v in self.s.load[subset])
        result = reoptimise(
            self.s, tasks, subset, limit, seed=self.steps, max_nodes=self.step_max_nodes
        )
        proven = result.proven
        if not result.improved and MAKE_ROOM:
            # The largest load of the subset cannot fall: at least make room on it for
            # later steps (less total work, no machine reaching the makespan).
            cmax = self.s.makespan
            eps = REL_EPS * max(1.0, cmax)
            loads_now = self.s.load[subset]
            cap = np.where(loads_now >= cmax - eps, loads_now, cmax - 2 * eps)
            tasks = np.flatnonzero(np.isin(self.s.a, subset))
            room = reoptimise(
                self.s,
                tasks,
                subset,
                limit,
                seed=self.steps,
                max_nodes=self.step_max_nodes,
                cap=cap,
            )
            proven = proven and room.proven
        self.steps += 1
        # Outside ``deterministic`` (no node budget) the descent after the step is held to
        # twice the step's time limit: at 4,096 x 128 each of its moves scans the whole
        # matrix, and unguarded it ran 48 s past a 60 s deadline.
        stop_at = time.monotonic() + 2 * max(0.05, limit)
        guard = None if self.step_max_nodes is not None else (lambda: time.monotonic() > stop_at)
        descend(self.s, 10_000, guard, machines=subset)
        loads = tuple(float(v) for v in self.s.load[subset])
        if proven and not result.improved and loads == old:
            self.spent[tuple(int(m) for m in subset)] = loads
        improved = self.s.makespan < before - REL_EPS * max(1.0, before)
        if improved:
            self.size = self.base_size
        return improved


def improve(
    d: np.ndarray,
    machine: np.ndarray,
    seed: int = 0,
    max_steps: int = 200,
    should_stop: Callable[[], bool] | None = None,
    on_improvement: Callable[[np.ndarray], None] | None = None,
    step_time_limit_s: float = 0.5,
    step_max_nodes: int | None = None,
) -> np.ndarray:
    """Descend from ``machine``, then run up to ``max_steps`` large-neighbourhood steps.

    Parameters
    ----------
    d:
        (tasks, machines) running times, ``inf`` where a task may not run.
    machine:
        The start assignment (a machine index per task).
    seed:
        Seed of the machine subsets (and of HiGHS in each step).
    max_steps:
        Large-neighbourhood steps at most.
    should_stop:
        Polled between steps (and inside the descent); True ends the search.
    on_improvement:
        Called with each assignment of a smaller makespan.
    step_time_limit_s, step_max_nodes:
        The limits of each step's MILP. With ``step_max_nodes`` set and a generous time
        limit the search does not depend on the clock.

    Returns
    -------
    numpy.ndarray
        The best assignment found (never a larger makespan than ``machine``'s).
    """
    state = Loads(d, machine)
    start = state.makespan
    descend(state, 100_000, should_stop)
    if state.makespan < start and on_improvement is not None:
        on_improvement(state.a.copy())
    lns = MachineLns(
        state, seed, step_time_limit_s=step_time_limit_s, step_max_nodes=step_max_nodes
    )
    for _ in range(max_steps):
        if should_stop is not None and should_stop():
            break
        improved = lns.step()
        if improved is None:
            break
        if improved and on_improvement is not None:
            on_improvement(state.a.copy())
    return state.a.copy()
