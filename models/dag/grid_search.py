"""The R||Cmax search: independent tasks on unrelated one-slot machines, makespan objective.

The grid-scheduling case of the dag family where only machine loads matter
(:func:`~.greedy.pure_assignment` with the makespan objective): give each task a machine so
that the largest load is smallest. The Braun et al. ETC instances are of this kind.

Pieces:

- :func:`lp_rounding`: the LP relaxation (a lower bound; within 0.06-0.53 % of the best
  known on Braun) and an assignment rounded from it;
- :func:`descend`: a variable-neighbourhood descent with moves, swaps and 2-move ejection
  chains (a task leaves a machine and pushes one task of its new machine on to a third),
  each neighbourhood evaluated with numpy over every candidate at once. The objective is
  lexicographic: (makespan, number of critical machines, sum of squared loads). A step
  leaves every machine it touches below the makespan and either relieves a critical
  machine or lowers the sum of squares (less total work, better balance);
- :class:`MachineLns`: large-neighbourhood steps. The most loaded machine and a few others
  (drawn from a seeded generator) get their tasks re-assigned among themselves by an exact
  MILP (:func:`reoptimise`, HiGHS, warm-started, never worse), then a descent around them.
  Subsets proved to hold nothing better are not retried while their loads stay the same;
  when most of them are spent, the subsets grow by one machine;
- :func:`solve_assignment`: the exact phase. HiGHS on the whole assignment model in a
  background thread and :class:`MachineLns` in the caller's, side by side until the
  deadline, each adopting the other's better assignments. HiGHS is good at the global
  structure (its LP-guided heuristics reach about 0.2 % of the best known); the subset
  steps polish what it finds (to within 0.1 %), and their results go back to HiGHS as
  user solutions, which tighten its pruning.

Every assignment leaves through the caller's ``ctx.report`` (the portfolio's checker). With
``deterministic`` the search runs on a work budget (steps and MILP nodes per step, never
the clock) and HiGHS on the whole model runs after it, so the search's part is
reproducible; the full MILP, like every MILP backend here, stops on wall time.

References: Braun et al., JPDC 61(6) 2001 (the instances); Fanjul-Peyro, Ruiz, EJOR 207(1)
2010 (local search for unrelated parallel machines); Ahuja, Orlin, Sharma, Math. Prog. 91
2001 (ejection chains and very large-scale neighbourhoods); Danna, Rothberg, Le Pape, Math.
Prog. 102 2005 (MILP-based neighbourhoods).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.dag.instance import DagInstance
from placement.solver.options import deterministic_wall_limit

REL_EPS = 1e-9
"""Relative tolerance below which two loads count as equal (float sums of ETC values)."""

FULL_SWAP_MAX_TASKS = 1024
"""Above this many tasks the descent's swaps start only from the two most loaded machines
(all pairs need several tasks x tasks matrices)."""


class Loads:
    """An assignment of tasks to machines with its machine loads, updated in place.

    Parameters
    ----------
    duration:
        (tasks, machines) running times, ``inf`` where a task may not run.
    machine:
        The machine of each task (every task on a machine where it may run).
    """

    def __init__(self, duration: np.ndarray, machine: np.ndarray) -> None:
        self.d = np.asarray(duration, dtype=float)
        n, k = self.d.shape
        self.a = np.asarray(machine, dtype=np.int64).copy()
        if self.a.shape != (n,) or np.any(self.a < 0) or np.any(self.a >= k):
            raise ValueError(f"machine must hold one machine in [0, {k}) for each of {n} tasks")
        self.own = self.d[np.arange(n), self.a]
        if not np.all(np.isfinite(self.own)):
            raise ValueError("the start assignment puts a task on a machine it cannot run on")
        self.load = np.bincount(self.a, weights=self.own, minlength=k).astype(float)

    @property
    def makespan(self) -> float:
        """The largest machine load."""
        return float(self.load.max())

    def move(self, t: int, m: int) -> None:
        """Put task ``t`` on machine ``m``."""
        self.load[self.a[t]] -= self.own[t]
        self.a[t], self.own[t] = m, self.d[t, m]
        self.load[m] += self.own[t]

    def assign(self, tasks: np.ndarray, machines: np.ndarray) -> None:
        """Put each of ``tasks`` on the matching machine and recompute every load exactly."""
        self.a[tasks] = machines
        n = len(self.a)
        self.own = self.d[np.arange(n), self.a]
        self.load = np.bincount(self.a, weights=self.own, minlength=len(self.load)).astype(float)

    def resync(self) -> None:
        """Recompute the loads from scratch (drops the drift of incremental updates)."""
        self.assign(np.arange(0), np.arange(0))


def _pick(s: Loads, before: np.ndarray, after: np.ndarray, d_square: np.ndarray) -> int | None:
    """Index of the step to take among candidates, or None when none improves.

    ``before`` and ``after`` are the largest load among the machines a step touches, before
    and after it; ``d_square`` the change of the sum of squared loads. A step improves the
    lexicographic objective (makespan, number of critical machines, sum of squared loads)
    when it leaves every machine it touches below the makespan and either relieves a
    critical machine or lowers the sum of squares. Relieving steps come first; among equals,
    the largest fall of the sum of squares.
    """
    cmax = float(s.load.max())
    eps = REL_EPS * max(1.0, cmax)
    below = after < cmax - eps
    relieve = below & (before >= cmax - eps)
    pool = relieve if relieve.any() else below & (d_square < -eps * cmax)
    if not pool.any():
        return None
    return int(np.argmin(np.where(pool, d_square, np.inf)))


def _try_move(s: Loads) -> bool:
    """The best single-task move (every task, every machine)."""
    n = len(s.a)
    src = s.load[s.a]  # (n,)
    new_src = src - s.own
    new_dst = s.load[None, :] + s.d  # (n, k), inf where ineligible
    before = np.maximum(src[:, None], s.load[None, :])
    after = np.maximum(new_src[:, None], new_dst)
    after[np.arange(n), s.a] = np.inf
    d_square = (new_src**2 - src**2)[:, None] + new_dst**2 - s.load[None, :] ** 2
    i = _pick(s, before.ravel(), after.ravel(), d_square.ravel())
    if i is None:
        return False
    t, m = divmod(i, s.d.shape[1])
    s.move(t, m)
    return True


def _try_swap(s: Loads, tasks: np.ndarray | None = None) -> bool:
    """The best swap of one of ``tasks`` (default: every task) with a task on another
    machine."""
    if tasks is None:
        tasks = np.arange(len(s.a))
    ma, mb = s.a[tasks], s.a  # (T,), (n,)
    la, lb = s.load[ma], s.load[mb]
    # new_a[i, u]: the machine of tasks[i] after it leaves and u arrives; new_b: u's.
    new_a = la[:, None] - s.own[tasks][:, None] + s.d[:, ma].T
    new_b = lb[None, :] - s.own[None, :] + s.d[tasks][:, mb]
    before = np.maximum(la[:, None], lb[None, :])
    after = np.maximum(new_a, new_b)
    after[ma[:, None] == mb[None, :]] = np.inf
    d_square = new_a**2 + new_b**2 - (la**2)[:, None] - (lb**2)[None, :]
    i = _pick(s, before.ravel(), after.ravel(), np.nan_to_num(d_square, nan=np.inf).ravel())
    if i is None:
        return False
    ti, u = divmod(i, len(s.a))
    t = int(tasks[ti])
    mt, mu = int(s.a[t]), int(s.a[u])
    s.move(t, mu)
    s.move(u, mt)
    return True


def _try_chain(s: Loads, source: int) -> bool:
    """The best 2-move ejection chain from ``source``: task t goes to machine m2 and a task
    u of m2 goes on to a third machine m3 (the one where u ends earliest)."""
    tasks = np.flatnonzero(s.a == source)
    others = np.flatnonzero(s.a != source)
    if not len(tasks) or not len(others) or s.d.shape[1] < 3:
        return False
    rows = np.arange(len(others))
    m2 = s.a[others]  # (U,)
    # u's best third machine: not the source, not its own.
    third = s.load[None, :] + s.d[others]  # (U, k)
    third[:, source] = np.inf
    third[rows, m2] = np.inf
    m3 = np.argmin(third, axis=1)
    new_m3 = third[rows, m3]
    new_m2 = s.load[m2][None, :] - s.own[others][None, :] + s.d[tasks][:, m2]  # (T, U)
    new_src = s.load[source] - s.own[tasks]  # (T,)
    l_src, l2, l3 = s.load[source], s.load[m2], s.load[m3]
    before = np.maximum(np.maximum(l_src, l2), l3)  # (U,)
    after = np.maximum(np.maximum(new_src[:, None], new_m2), new_m3[None, :])
    before = np.broadcast_to(before[None, :], after.shape)
    d_square = (
        (new_src**2 - l_src**2)[:, None]
        + new_m2**2
        - (l2**2)[None, :]
        + (new_m3**2 - l3**2)[None, :]
    )
    i = _pick(s, before.ravel(), after.ravel(), np.nan_to_num(d_square, nan=np.inf).ravel())
    if i is None:
        return False
    ti, ui = divmod(i, len(others))
    t, u = int(tasks[ti]), int(others[ui])
    mu = int(s.a[u])
    s.move(u, int(m3[ui]))
    s.move(t, mu)
    return True


def descend(
    s: Loads,
    max_steps: int,
    should_stop: Callable[[], bool] | None = None,
    machines: np.ndarray | None = None,
) -> int:
    """Variable-neighbourhood descent: moves, then swaps, then ejection chains, each tried
    only when the smaller neighbourhoods have no improving step. Returns the steps taken.

    ``machines`` limits swaps and chains to those that start on these machines (moves are
    cheap and always scan everything). Chains start from the machines in decreasing load
    order (the most loaded first), so the critical machine is relieved first.
    """
    steps = 0
    while steps < max_steps:
        if should_stop is not None and steps % 64 == 0 and should_stop():
            break
        if machines is not None:
            tasks = np.flatnonzero(np.isin(s.a, machines))
        elif len(s.a) > FULL_SWAP_MAX_TASKS:
            # All pairs would not fit in memory: swaps from the two most loaded machines.
            tasks = np.flatnonzero(np.isin(s.a, np.argsort(-s.load, kind="stable")[:2]))
        else:
            tasks = None
        if _try_move(s) or _try_swap(s, tasks):
            steps += 1
            continue
        order = np.argsort(-s.load, kind="stable")
        if machines is not None:
            order = order[np.isin(order, machines)]
        if not any(_try_chain(s, int(m)) for m in order):
            break
        steps += 1
    s.resync()
    return steps


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
    import highspy

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
    lp = highspy.HighsLp()
    lp.num_col_ = ncols
    lp.num_row_ = n_t + n_m
    old_work = float(s.own[tasks].sum())
    if cap is None:
        lp.col_cost_ = np.concatenate([np.zeros(len(ti)), [1.0]])
        lp.col_lower_ = np.concatenate([np.zeros(len(ti)), [float(fixed.max())]])
        lp.col_upper_ = np.concatenate([np.ones(len(ti)), [old_max]])
        room = -fixed
    else:
        # z is pinned at 0; each load row gets its cap instead.
        cap = np.maximum(np.asarray(cap, dtype=float), s.load[machines])
        lp.col_cost_ = np.concatenate([d[ti, mi], [0.0]])
        lp.col_lower_ = np.zeros(ncols)
        lp.col_upper_ = np.concatenate([np.ones(len(ti)), [0.0]])
        room = cap - fixed
    # Rows: each task once; fixed[m] + sum_t d[t, m] x[t, m] - z <= 0 (or <= cap[m]).
    lp.row_lower_ = np.concatenate([np.ones(n_t), np.full(n_m, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([np.ones(n_t), room])
    rows = np.concatenate([np.stack([ti, n_t + mi], axis=1).ravel(), n_t + np.arange(n_m)])
    vals = np.concatenate([np.stack([np.ones(len(ti)), d[ti, mi]], axis=1).ravel(), -np.ones(n_m)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([2 * np.arange(len(ti) + 1), [len(rows)]]).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = vals
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(ti) + [highspy.HighsVarType.kContinuous]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", int(seed) % 2_147_483_647)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", REL_EPS * max(1.0, old_max if cap is None else old_work))
    if max_nodes is not None:
        h.setOptionValue("mip_max_nodes", int(max_nodes))
    h.passModel(lp)
    start = np.zeros(ncols)
    start[np.flatnonzero(mi == current[ti])] = 1.0
    start[-1] = old_max if cap is None else 0.0
    sol = highspy.HighsSolution()
    sol.col_value = list(start)
    sol.value_valid = True
    h.setSolution(sol)
    h.run()
    info = h.getInfo()
    nodes = int(getattr(info, "mip_node_count", 0) or 0)
    proven = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    if info.primal_solution_status != 2:  # no feasible solution kept
        return MilpStep(False, nodes, proven)
    x = np.asarray(h.getSolution().col_value[: len(ti)])
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


def _assignment_lp(d: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
    """The LP relaxation of R||Cmax for ``d`` and the (task, machine) of each column but the
    last (the makespan)."""
    import highspy

    n, k = d.shape
    ok = np.isfinite(d)
    ti, mi = np.nonzero(ok)
    ncols = len(ti) + 1
    lp = highspy.HighsLp()
    lp.num_col_ = ncols
    lp.num_row_ = n + k
    lp.col_cost_ = np.concatenate([np.zeros(len(ti)), [1.0]])
    lp.col_lower_ = np.zeros(ncols)
    lp.col_upper_ = np.concatenate([np.ones(len(ti)), [highspy.kHighsInf]])
    lp.row_lower_ = np.concatenate([np.ones(n), np.full(k, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([np.ones(n), np.zeros(k)])
    rows = np.stack([ti, n + mi], axis=1).ravel()
    vals = np.stack([np.ones(len(ti)), d[ti, mi]], axis=1).ravel()
    starts = 2 * np.arange(len(ti) + 1)
    rows = np.concatenate([rows, n + np.arange(k)])
    vals = np.concatenate([vals, -np.ones(k)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([starts, [len(rows)]]).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = vals
    return lp, ti, mi


def lp_rounding(d: np.ndarray, time_limit_s: float) -> tuple[np.ndarray, float] | None:
    """Solve the LP relaxation; each task to the machine carrying most of it; and the LP
    value (a lower bound on the makespan). None when the LP did not finish in time."""
    import highspy

    lp, ti, mi = _assignment_lp(d)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value[: len(ti)])
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
    return machine, float(h.getInfo().objective_function_value)


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
        descend(self.s, 10_000, machines=subset)
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


# -------------------------------------------------------------------------------------------
# The exact phase for R||Cmax: HiGHS on the whole model and the search side by side.

MAX_CELLS = 2_000_000
"""Tasks x machines above which the search is not run (the dense matrices of a step)."""

DETERMINISTIC_STEPS_PER_S = 4
"""Large-neighbourhood steps per second of ``time_limit_s`` under ``deterministic``."""

DETERMINISTIC_STEP_NODES = 200
"""MILP nodes per step under ``deterministic`` (instead of a time limit)."""

FINISH_MARGIN_S = 0.2
"""Seconds kept before the deadline to stop the threads and hand back the result."""

MAKE_ROOM = True
"""After a subset step that cannot lower the subset's largest load, a second MILP lowers the
subset's total work under per-machine caps (see :meth:`MachineLns.step`)."""

LNS_MACHINES = 3
"""Machines per subset step at first (the most loaded one and others drawn at random)."""

AFFINITY_RATIO = 1.5
"""A machine is a likely partner of the most loaded one for each of its tasks that runs there
within this factor of its current time (0: uniform draws only)."""

STEP_TIME_LIMIT_S = 0.5
"""Wall-clock limit of each subset MILP (outside ``deterministic``)."""


def applicable(instance: DagInstance) -> bool:
    """R||Cmax: independent tasks, only machine loads matter, and the makespan objective."""
    from placement.models.dag.greedy import pure_assignment

    n, k = instance.duration.shape
    return (
        instance.objective == "makespan"
        and pure_assignment(instance)
        and k >= 2
        and n * k <= MAX_CELLS
    )


def lower_bound_from_lp(instance: DagInstance, lp_value: float) -> float:
    """A safe makespan bound from an LP (or MIP dual) value: shaved by a tolerance
    (``REL_EPS`` relative, at least 1e-6) for the solver's float error, then rounded up to the
    time grid when every running time lies on one."""
    from placement.models.dag.cpsat import integer_scale

    d = instance.duration
    bound = lp_value - max(REL_EPS * abs(lp_value), 1e-6)
    scale, exact = integer_scale(d[np.isfinite(d)])
    if exact:
        bound = math.ceil(bound * scale - 1e-6) / scale
    return bound


class _Exchange:
    """Assignments passed between the HiGHS thread and the search (under one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.from_milp: list[np.ndarray] = []
        self.to_milp: np.ndarray | None = None
        self.stop = threading.Event()

    def from_milp_append(self, machine: np.ndarray) -> None:
        """Hand an assignment HiGHS found to the search."""
        with self.lock:
            self.from_milp.append(machine)


def solve_assignment(instance: DagInstance, ctx: Any, full_milp: bool = True) -> Any:
    """The exact phase for R||Cmax (an :class:`~placement.solver.family.ExactOutcome`).

    1. The LP relaxation: a lower bound, and a rounded assignment; the descent from it and
       from the portfolio's incumbent (the best heuristic).
    2. Until the deadline, side by side: HiGHS on the whole assignment model (warm-started,
       ``threads - 1`` threads) and :class:`MachineLns` in this thread. Each adopts the
       other's better assignments (HiGHS through its user-solution callback).

    Every assignment is reported through ``ctx.report`` (the checker) from this thread. With
    ``deterministic`` (or one thread) the two run one after the other instead: the search on
    a step budget first, then HiGHS for the time left. With ``full_milp=False`` only the
    search runs, for the whole time given.
    """
    from placement.models.dag.greedy import back_to_back
    from placement.solver.family import ExactOutcome
    from placement.solver.result import StopReason

    options = ctx.options
    d = instance.duration
    started = time.monotonic()
    deadline = started + ctx.time_left()
    deterministic = bool(options.deterministic)

    def left() -> float:
        return deadline - time.monotonic() - FINISH_MARGIN_S

    def over() -> bool:
        if ctx.cancel.cancelled:
            return True
        if deterministic:
            # A work budget, not the clock; the wall-clock guard is CP-SAT's.
            return time.monotonic() - started > deterministic_wall_limit(deadline - started)
        return left() <= 0

    best: list[Any] = [math.inf, None]  # makespan, schedule

    def report(machine: np.ndarray, source: str) -> None:
        span = float(np.bincount(machine, weights=d[np.arange(len(machine)), machine]).max())
        if span < best[0]:
            best[:] = [span, back_to_back(instance, machine)]
            ctx.report(best[1], source)

    def meets_bound() -> bool:
        return bound is not None and best[0] <= bound + REL_EPS * max(1.0, bound)

    bound: float | None = None
    starts: list[np.ndarray] = []
    incumbent = ctx.incumbent()
    if incumbent is not None:
        starts.append(np.asarray(incumbent.machine, dtype=np.int64))
    rounded = lp_rounding(d, max(1.0, left()) if deterministic else max(0.01, left()))
    if rounded is not None:
        starts.append(rounded[0])
        bound = lower_bound_from_lp(instance, rounded[1])
    if not starts:
        return ExactOutcome(stop_reason=StopReason.TIME_LIMIT, bound=bound)
    candidates = []
    for machine in starts:
        state = Loads(d, machine)
        descend(state, 100_000, over)
        candidates.append(state)
    state = min(candidates, key=lambda c: c.makespan)
    report(state.a, "grid-search")

    limit = STEP_TIME_LIMIT_S
    lns = MachineLns(
        state,
        options.seed,
        size=LNS_MACHINES,
        step_time_limit_s=1e6 if deterministic else limit,
        step_max_nodes=DETERMINISTIC_STEP_NODES if deterministic else None,
    )
    together = (
        full_milp and not deterministic and options.effective_threads >= 2 and not meets_bound()
    )
    milp_result: dict[str, Any] = {}
    exchange = _Exchange()
    thread = None
    if together:
        thread = threading.Thread(
            target=_run_highs,
            args=(
                d,
                state.a.copy(),
                options,
                max(1, options.effective_threads - 1),
                left(),
                ctx.cancel,
                exchange,
                milp_result,
            ),
            daemon=True,
        )
        thread.start()
    budget = int(DETERMINISTIC_STEPS_PER_S * float(options.time_limit_s)) if deterministic else None
    if full_milp and not together:
        # One after the other: half the time (or the step budget) for the search.
        search_until = time.monotonic() + 0.5 * max(0.0, left())
    else:
        search_until = math.inf
    exhausted = False
    try:
        while not over() and not exhausted and not meets_bound():
            if budget is not None and lns.steps >= budget:
                break
            if budget is None and time.monotonic() >= search_until:
                break
            if together:
                with exchange.lock:
                    found, exchange.from_milp = exchange.from_milp, []
                for machine in found:
                    report(machine, "milp-highs")
                better = [m for m in found if Loads(d, m).makespan < state.makespan]
                if better:
                    lns.adopt(min(better, key=lambda m: Loads(d, m).makespan))
                if thread is not None and not thread.is_alive() and milp_result.get("proven"):
                    break
            step_limit = None if deterministic else max(0.01, min(limit, left()))
            improved = lns.step(step_limit)
            if improved is None and thread is not None and thread.is_alive():
                # Nothing left for the search: leave HiGHS the time (its next solution
                # gives the search a new start).
                time.sleep(0.05)
            elif improved is None:
                exhausted = True
            elif improved:
                report(state.a, "grid-search")
                if together:
                    with exchange.lock:
                        exchange.to_milp = state.a.copy()
    finally:
        exchange.stop.set()
        if thread is not None:
            thread.join()
    if together:
        for machine in exchange.from_milp:
            report(machine, "milp-highs")
    elif full_milp and not ctx.cancel.cancelled and left() > 0 and not meets_bound():
        _run_highs(
            d,
            state.a.copy(),
            options,
            options.effective_threads,
            left(),
            ctx.cancel,
            exchange,
            milp_result,
        )
        for machine in exchange.from_milp:
            report(machine, "milp-highs")

    milp_bound = milp_result.get("bound")
    if milp_bound is not None:
        milp_bound = lower_bound_from_lp(instance, milp_bound)
        bound = milp_bound if bound is None else max(bound, milp_bound)
    # Optimal when HiGHS proved it, or when the LP bound (rounded to the time grid) is met.
    proven = best[1] is not None and (bool(milp_result.get("proven")) or meets_bound())
    if ctx.cancel.cancelled:
        stop = StopReason.CANCELLED
    elif proven:
        stop = StopReason.PROVEN
    elif exhausted and not full_milp:
        stop = StopReason.SEARCH_EXHAUSTED
    else:
        stop = StopReason.TIME_LIMIT
    return ExactOutcome(
        stop_reason=stop,
        bound=bound,
        proven_optimal=proven,
        proven_solution=best[1] if proven else None,
        message="; ".join(
            ([] if proven or full_milp else ["grid search only: no proof"])
            + (
                ["HiGHS did not stop at its time limit and was abandoned"]
                if milp_result.get("abandoned")
                else []
            )
        ),
    )


def _run_highs(
    d: np.ndarray,
    start: np.ndarray,
    options: Any,
    threads: int,
    time_limit_s: float,
    cancel: Any,
    exchange: _Exchange,
    out: dict[str, Any],
) -> None:
    """HiGHS on the whole assignment model, warm-started with ``start``: improving
    assignments go to ``exchange.from_milp``; ``exchange.to_milp`` is offered to HiGHS as a
    user solution; ``exchange.stop`` or ``cancel`` interrupt it. Writes ``bound`` (the MIP
    dual bound) and ``proven`` into ``out``."""
    import highspy

    from placement.solver.backends.milp import BoundedRun

    if time_limit_s <= 0:
        return
    lp, ti, mi = _assignment_lp(d)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(ti) + [highspy.HighsVarType.kContinuous]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("random_seed", int(options.seed) % 2_147_483_647)
    h.setOptionValue("mip_rel_gap", float(options.relative_gap))
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.passModel(lp)

    def columns(machine: np.ndarray) -> np.ndarray:
        x = np.zeros(len(ti) + 1)
        x[np.flatnonzero(mi == machine[ti])] = 1.0
        x[-1] = float(np.bincount(machine, weights=d[np.arange(len(machine)), machine]).max())
        return x

    sol = highspy.HighsSolution()
    sol.col_value = list(columns(start))
    sol.value_valid = True
    h.setSolution(sol)

    def decode(x: np.ndarray) -> np.ndarray:
        share = np.zeros(d.shape)
        share[ti, mi] = np.asarray(x[: len(ti)])
        return np.argmax(share, axis=1)

    bounded = BoundedRun(h)

    def improving(event: Any) -> None:
        bounded.deliver(exchange.from_milp_append, decode(event.data_out.mip_solution))

    def user_solution(event: Any) -> None:
        if bounded.abandoned.is_set():
            return
        with exchange.lock:
            machine, exchange.to_milp = exchange.to_milp, None
        if machine is not None:
            event.data_in.setSolution(columns(machine))

    def interrupt(event: Any) -> None:
        if exchange.stop.is_set() or cancel.cancelled or bounded.abandoned.is_set():
            event.interrupt()

    h.cbMipImprovingSolution.subscribe(improving)
    h.cbMipUserSolution.subscribe(user_solution)
    h.cbMipInterrupt.subscribe(interrupt)
    h.cbSimplexInterrupt.subscribe(interrupt)
    if not bounded.wait(time_limit_s):
        out["abandoned"] = True
        return
    info = h.getInfo()
    if math.isfinite(info.mip_dual_bound):
        out["bound"] = float(info.mip_dual_bound)
        # Optimal only when the bound meets the solution (not a relative gap reached).
        value = float(info.objective_function_value)
        out["proven"] = (
            h.getModelStatus() == highspy.HighsModelStatus.kOptimal
            and info.primal_solution_status == 2
            and value - info.mip_dual_bound <= REL_EPS * max(1.0, abs(value))
        )


class AutoEncoding:
    """The dag family's ``auto`` exact phase: :func:`solve_assignment` for R||Cmax (the
    search and HiGHS beat CP-SAT there), ``inner`` (CP-SAT) for everything else and whenever
    a backend was named explicitly."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def solve(self, instance: DagInstance, ctx: Any) -> Any:
        """Route the instance; see the class docstring."""
        from placement.models.dag.cpsat import proof_by_bound
        from placement.solver.options import Backend

        if ctx.options.backend != Backend.AUTO or not applicable(instance):
            return self.inner.solve(instance, ctx)
        early = proof_by_bound(instance, ctx.incumbent())
        if early is not None:
            return early
        return solve_assignment(instance, ctx)


class RcmaxEncoding:
    """The dag family's ``rcmax`` exact phase (what ``auto`` runs on R||Cmax instances): a
    proof by the bound when the incumbent already meets it, else :func:`solve_assignment`."""

    def solve(self, instance: DagInstance, ctx: Any) -> Any:
        """Search and prove; see the class docstring."""
        from placement.models.dag.cpsat import proof_by_bound

        early = proof_by_bound(instance, ctx.incumbent())
        if early is not None:
            return early
        return solve_assignment(instance, ctx)
