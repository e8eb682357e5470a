"""The exact time-indexed model of immediate dispatch, written once as a
:class:`~placement.solver.linear.LinearModel` that CP-SAT (:mod:`.cpsat`) and a MILP solver
(:mod:`.milp`) both solve.

Variables ``y[j,s,t] = 1`` when job j starts on server s at integer time t, for s a server j
fits and ``t`` in ``[a_j, T_j - p_js]``. Rows:

* each job starts once: ``sum_{s,t} y[j,s,t] = 1``;
* cores: for each server s and time t, ``sum_j cores_j sum_{t-p_js < t' <= t} y[j,s,t'] <=
  cores_s`` (written only where the jobs that could run at t need more than ``cores_s``);
* FCFS (``immediate_dispatch`` mode only): for jobs j before k (arrival order) and server s, with ``x_js = sum_t y[j,s,t]`` and
  ``S_js = sum_t t y[j,s,t]``: ``(S_js - b x_js) - (S_ks - b x_ks) <= M (2 - x_js - x_ks)``,
  ``b`` = k's earliest start, ``M`` = j's latest start on s minus ``b`` (no row when ``M <=
  0``): with both on s, k may not start before j; with one, the row is slack.

Objective: ``min sum w_j (t + p_js - a_j) y[j,s,t]``. An optimal schedule with integer starts
exists (all data are integers; shift every job left until it starts at its arrival or at an
end on its server: each start is then an integer), so the model is exact on the window
``T_j`` below.

The horizon: a schedule of objective at most ``U`` (an incumbent's: the greedy's) has
``w_j F_j <= U - sum_{i != j} w_i min_s p_is``, so each job's end ``T_j = a_j + floor((U -
B1 + w_j min_s p_js) / w_j)`` bounds every schedule at least as good as the incumbent; the
optimum lies inside the model, and the solver's bound on the model is a bound on the whole
instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.models.dispatch.bound import lower_bound, own_service_bound, sweep_bound
from placement.models.dispatch.check import check
from placement.models.dispatch.greedy import dispatch, earliest_completion
from placement.models.dispatch.instance import (
    BACKFILL,
    BUDGET,
    BUNDLE,
    DispatchInstance,
    DispatchSolution,
)
from placement.models.dispatch.sweep import solve_sweep
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

MAX_VARIABLES = 40_000
"""Largest time-indexed model built (start variables); beyond it the encoding declines and
the heuristic stands."""
MAX_CORE_TERMS = 400_000
"""Largest number of core-row terms (start variables times their service times) built."""


@dataclass
class TimeIndexed:
    """The model and what decodes it."""

    model: LinearModel
    starts: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """Variable -> (job, server, start time)."""
    objective: dict[int, float] = field(default_factory=dict)


def horizons(instance: DispatchInstance, upper: int) -> list[int]:
    """Each job's latest end in any schedule of objective at most ``upper``."""
    b1 = own_service_bound(instance)
    out = []
    for j, job in enumerate(instance.jobs):
        own = min(instance.service[j][s] for s in instance.eligible[j])
        out.append(job.arrival + (upper - b1 + job.weight * own) // job.weight)
    return out


def size_of(instance: DispatchInstance, ends: list[int]) -> tuple[int, int]:
    """Start variables, and core-row terms at most, of the model of these horizons."""
    variables = terms = 0
    for j, job in enumerate(instance.jobs):
        for s in instance.eligible[j]:
            n = max(0, ends[j] - instance.service[j][s] - job.arrival + 1)
            variables += n
            terms += n * instance.service[j][s]
    return variables, terms


def time_indexed(instance: DispatchInstance, ends: list[int]) -> TimeIndexed:
    """The model (module docstring) with job j ending by ``ends[j]``."""
    lm = LinearModel()
    ti = TimeIndexed(lm)
    by: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for j, job in enumerate(instance.jobs):
        row = []
        for s in instance.eligible[j]:
            p = instance.service[j][s]
            cells = []
            for t in range(job.arrival, ends[j] - p + 1):
                v = lm.var(0, 1, "y")
                ti.starts[v] = (j, s, t)
                ti.objective[v] = float(job.weight * (t + p - job.arrival))
                cells.append((t, v))
                row.append((v, 1))
            by[(j, s)] = cells
        lm.row(row, 1, 1)
    for s, server in enumerate(instance.servers):
        jobs = [j for j in range(len(instance.jobs)) if by.get((j, s))]
        # Cores: only where the jobs that could be running need more than the server has.
        usage: dict[int, list[tuple[int, int]]] = {}
        for j in jobs:
            p, c = instance.service[j][s], instance.jobs[j].cores
            for t0, v in by[(j, s)]:
                for t in range(t0, t0 + p):
                    usage.setdefault(t, []).append((v, c))
        for terms in usage.values():
            touching: dict[int, int] = {}
            for v, c in terms:
                j = ti.starts[v][0]
                touching[j] = c
            if sum(touching.values()) > server.cores:
                lm.row(terms, None, server.cores)
        # FCFS rows; in backfill mode a server may reorder its jobs: none.
        order = [] if instance.mode == BACKFILL else [j for j in instance.order if j in set(jobs)]
        for x, j in enumerate(order):
            for k in order[x + 1 :]:
                cj, ck = by[(j, s)], by[(k, s)]
                base = ck[0][0]
                big_m = cj[-1][0] - base
                if big_m <= 0:
                    continue  # k cannot start on s before j's latest start: no row needed
                # (S_js - base x_js) - (S_ks - base x_ks) <= M (2 - x_js - x_ks): with both on
                # s it is S_js <= S_ks; with one, it holds over that job's window.
                terms = [(v, t - base + big_m) for t, v in cj] + [
                    (v, big_m - (t - base)) for t, v in ck
                ]
                lm.row(terms, None, 2 * big_m)
    return ti


def decode(instance: DispatchInstance, ti: TimeIndexed, values: list[float]) -> DispatchSolution:
    """The schedule of a solution's values."""
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    for v, (j, s, t) in ti.starts.items():
        if values[v] > 0.5:
            server_of[j], start[j] = s, t
    return DispatchSolution(tuple(server_of), tuple(start))


def hint_of(ti: TimeIndexed, solution: DispatchSolution) -> list[int]:
    """The model's values of a schedule (0 where it lies outside the model)."""
    out = [0] * ti.model.num_vars
    for v, (j, s, t) in ti.starts.items():
        if solution.server_of[j] == s and solution.start[j] == t:
            out[v] = 1
    return out


class DispatchEncoding:
    """The exact time-indexed encoding; :mod:`.cpsat` and :mod:`.milp` give the backend."""

    source = "model"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        raise NotImplementedError

    def solve(self, instance: DispatchInstance, ctx: ExactContext) -> ExactOutcome:
        """Build the model under the incumbent's horizon, solve, report, prove; in
        ``budget`` mode the count model of :mod:`.sweep` instead."""
        if instance.mode == BUNDLE:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED,
                bound=float(lower_bound(instance)),
                message=f"{self.source}: no exact model of bundle mode; the heuristic "
                "schedule stands with the trace's lower bound",
            )
        if instance.mode == BUDGET:
            return solve_sweep(
                instance, ctx, self._backend(ctx), self.source, sweep_bound(instance)
            )
        incumbent = ctx.incumbent()
        if incumbent is None or not check(instance, incumbent).feasible:
            incumbent = dispatch(instance, earliest_completion)
            ctx.report(incumbent, f"{self.source}:horizon")
        upper = int(check(instance, incumbent).objective)
        quick = lower_bound(instance)
        if upper <= quick:
            return ExactOutcome(
                StopReason.PROVEN,
                bound=float(quick),
                proven_optimal=True,
                proven_solution=incumbent,
                message=f"{self.source}: the schedule meets the lower bound",
            )
        ends = horizons(instance, upper)
        variables, terms = size_of(instance, ends)
        if variables > MAX_VARIABLES or terms > MAX_CORE_TERMS:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED,
                bound=float(quick),
                message=f"{self.source}: the time-indexed model would have {variables} start "
                f"variables and up to {terms} core-row terms (limits {MAX_VARIABLES}, "
                f"{MAX_CORE_TERMS}); the heuristic schedule stands",
            )
        ti = time_indexed(instance, ends)
        backend = self._backend(ctx)
        backend.load(ti.model)
        best: list[DispatchSolution] = []

        def on_values(values: list[float], bound: float | None) -> None:
            solution = decode(instance, ti, values)
            if ctx.report(solution, self.source, None):
                best.append(solution)

        run, final = backend.run(
            "min",
            ti.objective,
            0.0,
            hint_of(ti, incumbent),
            ctx.time_left(),
            ctx.cancel,
            on_values,
        )
        found = None
        if final is not None:
            found = decode(instance, ti, final)
            ctx.report(found, self.source)
        bound = quick
        if run.bound is not None:
            bound = max(bound, int(-(-(run.bound - 1e-6) // 1)))
        proven = run.stop_reason == StopReason.PROVEN and found is not None
        if proven:
            report = check(instance, found)
            proven = report.feasible and report.objective <= bound
        if proven:
            return ExactOutcome(
                StopReason.PROVEN,
                bound=float(bound),
                proven_optimal=True,
                proven_solution=found,
                message=f"{self.source}: optimal over {variables} start variables",
            )
        stop = (
            run.stop_reason if run.stop_reason != StopReason.PROVEN else StopReason.SEARCH_EXHAUSTED
        )
        return ExactOutcome(
            stop, bound=float(bound), message=f"{self.source}: {run.message}".strip()
        )
