"""MILP encoding of DAG scheduling in PuLP (HiGHS by default, CBC selectable).

Two models (see ``docs/formulations/dag.md`` for the algebra and why):

- the assignment model (R||Cmax) for independent tasks without release times, dataset
  delays or deadlines on one-slot machines: binaries x[t, m] and the makespan C >= each
  machine's load. Its LP relaxation is tight on the Braun instances (0.06-0.53 %).
- the disjunctive model for DAGs: x[t, u] (task on unit u: a machine, or one slot of a
  multi-slot machine when every task holds one core), start times, zone indicators, a
  same-machine indicator per edge with transfers, and one order binary per pair of tasks that
  no path orders, with big-M = the incumbent's makespan (or a serial schedule's length).
  Tasks holding several cores on multi-slot machines are not modelled: the encoding says so
  and the portfolio keeps the heuristic schedule.

A MILP solution is turned into exact start times by :func:`~.greedy.semi_active` (same
machines, same order), so the solver's float tolerances never reach the checker.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.dag.bound import integer_scale, makespan_grid_bound
from placement.models.dag.check import evaluate
from placement.models.dag.cpsat import (
    canonical_machines,
    identical_machine_classes,
    proof_by_bound,
    schedule_horizon,
)
from placement.models.dag.greedy import pure_assignment, semi_active
from placement.models.dag.instance import DagInstance, DagSolution
from placement.models.dag.rcmax.search import applicable, solve_assignment
from placement.solver.backends.base import RunStatus
from placement.solver.backends.milp import milp_solver
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

MAX_DISJUNCTIVE_ROWS = 2_000_000
"""Largest pairs x units count the disjunctive model is built for."""


def _units(instance: DagInstance) -> list[int]:
    """Machine of each unit: one unit per machine, or one per slot when all tasks hold one core."""
    if all(m.slots == 1 for m in instance.machines):
        return list(range(len(instance.machines)))
    if all(t.cores == 1 for t in instance.tasks):
        return [m for m, mach in enumerate(instance.machines) for _ in range(mach.slots)]
    raise ValueError(
        "the MILP encoding does not model tasks holding several cores on multi-slot machines; "
        "use backend cpsat"
    )


def _reachability(instance: DagInstance) -> list[int]:
    """``reach[t]``: bitset of the tasks reachable from ``t`` along edges."""
    reach = [0] * len(instance.tasks)
    for t in reversed(instance.topological_order):
        r = 0
        for c, _ in instance.children[t]:
            r |= reach[c] | (1 << c)
        reach[t] = r
    return reach


class MilpEncoding:
    """The exact MILP encoding of the DAG family."""

    def solve(self, instance: DagInstance, ctx: ExactContext) -> ExactOutcome:
        """Build, warm-start with the incumbent, solve, report every improving schedule."""
        # PuLP is imported when a MILP is built, not with the family (start-up time).
        import pulp

        name, solver = milp_solver(ctx.options)
        source = f"milp-{name}"
        n, k = len(instance.tasks), len(instance.machines)
        d = instance.duration
        eligible = np.isfinite(d)
        incumbent: DagSolution | None = ctx.incumbent()
        early = proof_by_bound(instance, incumbent)
        if early is not None:
            return early
        if name == "highs" and applicable(instance):
            # R||Cmax: HiGHS on the assignment model beside a large-neighbourhood search.
            return solve_assignment(instance, ctx)
        horizon = schedule_horizon(instance, incumbent)
        prob = pulp.LpProblem("dag", pulp.LpMinimize)
        makespan = pulp.LpVariable("C", makespan_grid_bound(instance))
        assignment = pure_assignment(instance)
        units = list(range(k)) if assignment else _units(instance)
        if not assignment and n * (n - 1) // 2 * len(units) > MAX_DISJUNCTIVE_ROWS:
            # PuLP cannot be interrupted while it builds: refuse before spending the deadline.
            raise ValueError(
                f"{n} tasks on {len(units)} units need up to {n * (n - 1) // 2 * len(units):,} "
                f"disjunctive rows (limit {MAX_DISJUNCTIVE_ROWS:,}); use backend cpsat"
            )
        x: dict[tuple[int, int], Any] = {}
        for t in range(n):
            for u, m in enumerate(units):
                if eligible[t, m]:
                    x[t, u] = pulp.LpVariable(f"x_{t}_{u}", cat=pulp.LpBinary)
            prob += pulp.lpSum(x[t, u] for u in range(len(units)) if (t, u) in x) == 1
        # Symmetry of interchangeable machines, as in the CP-SAT model (one-slot units only).
        if len(units) == k:
            groups = identical_machine_classes(instance)
            if incumbent is not None:
                incumbent = DagSolution(
                    canonical_machines(incumbent.machine, groups), incumbent.start_s
                )
            for group in groups:
                users = [t for t in range(n) if all(eligible[t, m] for m in group)]
                for i, t in enumerate(users[: len(group)]):
                    for m in group[i + 1 :]:
                        prob += x[t, m] == 0
        warm: dict[Any, float] = {}
        starts: list[Any] = []
        if assignment:
            for m in range(k):
                load = pulp.lpSum(float(d[t, m]) * x[t, m] for t in range(n) if (t, m) in x)
                prob += load <= makespan
        else:
            starts = self._disjunctive(prob, instance, units, x, makespan, horizon, incumbent, warm)
        if instance.makespan_limit_s > 0:
            prob += makespan <= instance.makespan_limit_s
        cost = instance.cost_rate * np.where(eligible, d, 0.0)
        wm = {"makespan": 1.0, "cost": 0.0}.get(instance.objective, instance.makespan_weight)
        wc = {"makespan": 0.0, "cost": 1.0}.get(instance.objective, instance.cost_weight)
        objective = wm * makespan
        if wc:
            objective += pulp.lpSum(
                wc * float(cost[t, units[u]]) * var for (t, u), var in x.items()
            )
        prob.setObjective(objective)

        if incumbent is not None:
            unit_of = _unit_assignment(instance, incumbent, units)
            for (t, u), var in x.items():
                warm[var] = 1.0 if unit_of[t] == u else 0.0
            warm[makespan] = evaluate(instance, incumbent)[0]
            if not assignment:
                for t, s in enumerate(starts):
                    warm[s] = float(incumbent.start_s[t])

        def decode(values: dict[Any, float]) -> DagSolution:
            machine = np.full(n, -1, dtype=np.int64)
            for (t, u), var in x.items():
                if values.get(var, 0.0) > 0.5:
                    machine[t] = units[u]
            if assignment:
                key = np.arange(n, dtype=float)
            else:
                key = np.array([values.get(s, 0.0) for s in starts])
            return semi_active(instance, machine, key)

        def on_solution(values: dict[Any, float], objective_value: float) -> None:
            del objective_value
            ctx.report(decode(values), source)

        scale, exact = 1.0, False
        if instance.objective == "makespan":
            # With times integral at scale S, an optimal semi-active schedule's makespan is a
            # multiple of 1/S: the solver's float bound rounds up to it.
            times = np.concatenate([d[eligible], instance.earliest_start.ravel()])
            if not instance.independent:
                lat, per_byte = instance.network
                data = instance.edge_arrays[2]
                times = np.concatenate(
                    [times, (lat[None] + data[:, None, None] * per_byte[None]).ravel()]
                )
            scale, exact = integer_scale(times)

        def instance_bound(value: float) -> float:
            return math.ceil(value * scale - 1e-6) / scale if exact else value

        def on_bound(value: float) -> None:
            ctx.update_bound(instance_bound(value))

        run = solver.run(
            prob,
            ctx.options,
            ctx.cancel,
            ctx.time_left(),
            warm_start=warm or None,
            on_solution=on_solution,
            on_bound=on_bound,
        )
        final = None
        if run.has_solution and run.values:
            final = decode(run.values)
            ctx.report(final, source)
        bound = None if run.bound is None else instance_bound(run.bound)
        proven = run.stop_reason == StopReason.PROVEN and final is not None
        return ExactOutcome(
            stop_reason=run.stop_reason,
            bound=bound,
            proven_optimal=proven,
            proven_solution=final if proven else None,
            proven_infeasible=run.status == RunStatus.INFEASIBLE,
            message=run.message,
        )

    @staticmethod
    def _disjunctive(
        prob: Any,
        instance: DagInstance,
        units: list[int],
        x: dict[tuple[int, int], Any],
        makespan: Any,
        horizon: float,
        incumbent: DagSolution | None,
        warm: dict[Any, float],
    ) -> list[Any]:
        # PuLP is imported when a MILP is built, not with the family (start-up time).
        import pulp

        n = len(instance.tasks)
        d, est = instance.duration, instance.earliest_start
        big_m = horizon + float(np.where(np.isfinite(d), d, 0.0).max()) + 1.0
        zone = instance.machine_zone
        n_zones = len(instance.zones)
        s = [pulp.LpVariable(f"s_{t}", 0) for t in range(n)]
        dur = [
            pulp.lpSum(float(d[t, units[u]]) * var for (tt, u), var in x.items() if tt == t)
            for t in range(n)
        ]
        by_task: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
        for (t, u), var in x.items():
            by_task[t].append((u, var))
        for t, task in enumerate(instance.tasks):
            prob += s[t] >= pulp.lpSum(float(est[t, units[u]]) * var for u, var in by_task[t])
            prob += makespan >= s[t] + dur[t]
            if task.deadline_s > 0:
                prob += s[t] + dur[t] <= task.deadline_s
        unit_of = _unit_assignment(instance, incumbent, units) if incumbent is not None else None

        def zone_sum(t: int, z: int) -> Any:
            return pulp.lpSum(var for u, var in by_task[t] if zone[units[u]] == z)

        latency, per_byte = instance.network
        for e in instance.edges:
            a_task, b_task = instance.task_index[e.parent], instance.task_index[e.child]
            delay = latency + e.data_bytes * per_byte
            prob += s[b_task] >= s[a_task] + dur[a_task]
            if not np.any(delay > 0):
                continue
            same = pulp.LpVariable(f"same_{a_task}_{b_task}", 0, 1)
            machines = sorted(
                {units[u] for u, _ in by_task[a_task]} & {units[u] for u, _ in by_task[b_task]}
            )
            ys = []
            for m in machines:
                y = pulp.LpVariable(f"y_{a_task}_{b_task}_{m}", 0, 1)
                prob += y <= pulp.lpSum(v for u, v in by_task[a_task] if units[u] == m)
                prob += y <= pulp.lpSum(v for u, v in by_task[b_task] if units[u] == m)
                ys.append((m, y))
            prob += same <= pulp.lpSum(y for _, y in ys)
            if unit_of is not None:
                ma, mb = units[unit_of[a_task]], units[unit_of[b_task]]
                warm[same] = 1.0 if ma == mb else 0.0
                for m, y in ys:
                    warm[y] = 1.0 if ma == mb == m else 0.0
            for za in range(n_zones):
                for zb in range(n_zones):
                    c = float(delay[za, zb])
                    if c <= 0:
                        continue
                    rhs = zone_sum(a_task, za) + zone_sum(b_task, zb) - 1
                    if za == zb:
                        rhs = rhs - same
                    prob += s[b_task] >= s[a_task] + dur[a_task] + c * rhs

        reach = _reachability(instance)
        n_units = len(units)
        for i in range(n):
            for j in range(i + 1, n):
                if (reach[i] >> j) & 1 or (reach[j] >> i) & 1:
                    continue
                shared = [u for u in range(n_units) if (i, u) in x and (j, u) in x]
                if not shared:
                    continue
                together = pulp.LpVariable(f"w_{i}_{j}", 0, 1)
                for u in shared:
                    prob += together >= x[i, u] + x[j, u] - 1
                first = pulp.LpVariable(f"o_{i}_{j}", cat=pulp.LpBinary)
                prob += s[j] >= s[i] + dur[i] - big_m * (1 - first) - big_m * (1 - together)
                prob += s[i] >= s[j] + dur[j] - big_m * first - big_m * (1 - together)
                if unit_of is not None and incumbent is not None:
                    warm[together] = 1.0 if unit_of[i] == unit_of[j] else 0.0
                    warm[first] = 1.0 if incumbent.start_s[i] <= incumbent.start_s[j] else 0.0
        return s


def _unit_assignment(instance: DagInstance, solution: DagSolution, units: list[int]) -> list[int]:
    """The unit of each task of a schedule: for multi-slot machines, lanes by interval
    partitioning (tasks in start order, each on the lane that freed first)."""
    first_unit: dict[int, list[int]] = {}
    for u, m in enumerate(units):
        first_unit.setdefault(m, []).append(u)
    lane_free: dict[int, list[float]] = {m: [0.0] * len(us) for m, us in first_unit.items()}
    out = [0] * len(instance.tasks)
    order = sorted(range(len(instance.tasks)), key=lambda t: (solution.start_s[t], t))
    for t in order:
        m = int(solution.machine[t])
        free = lane_free[m]
        lane = min(range(len(free)), key=lambda i: (free[i] > solution.start_s[t] + 1e-9, free[i]))
        free[lane] = float(solution.start_s[t] + instance.duration[t, m])
        out[t] = first_unit[m][lane]
    return out
