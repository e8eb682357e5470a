"""The exact model of a parameter sweep on priced servers (``budget`` mode), over counts.

A sweep's jobs are few kinds (jobs of one size are interchangeable: each needs one core, is
ready at time 0 and costs and lasts the same on a given server), so the model counts jobs
instead of placing each one. On a server of ``C`` cores the jobs of a schedule can be laid on
its cores (at most ``C`` run at once, so the intervals can be coloured with ``C`` colours),
and a core's jobs, run back to back from 0, end at the sum of their service times: a schedule
is feasible if and only if every core's load fits. Integer variables, one per server ``s``,
core ``c`` and kind ``k``:

* ``n[s,c,k]`` jobs of kind k on core c of server s, ``0 <= n <= N_k`` (and ``<=
  floor(D / p_sk)`` under a deadline D);
* every job once: ``sum_{s,c} n[s,c,k] = N_k``;
* the deadline: ``load[s,c] = sum_k p_sk n[s,c,k] <= D``;
* the budget: ``sum cost_sk n[s,c,k] <= B`` with ``cost_sk = price_s * p_sk``;
* the makespan (objectives with a makespan tier): ``load[s,c] <= T``, T integer;
* symmetry: the cores of one server are identical, so ``load[s,c] >= load[s,c+1]``.

Objective: the cost ``sum cost_sk n[s,c,k]`` or the makespan ``T``; cost-time minimises the
cost, then with the cost fixed at its optimum the makespan. The model is the problem itself
(no relaxation, no window), so a bound the solver proves on it is a bound on the instance.
Its size is ``sum_s cores_s * kinds`` variables, whatever the number of jobs: a 10,000-job
sweep of 4 kinds on 100 servers of up to 8 cores has at most 3,200 counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from placement.models.dispatch.check import check
from placement.models.dispatch.instance import BUDGET_TIERS, DispatchInstance, DispatchSolution
from placement.solver.backends.base import RunStatus
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

MAX_COUNTS = 200_000
"""Largest count model built (servers' cores times kinds); beyond it the encoding declines."""


def kinds_of(instance: DispatchInstance) -> list[list[int]]:
    """The jobs of each kind (one size), kinds in order of first appearance."""
    by: dict[int, list[int]] = {}
    for j, job in enumerate(instance.jobs):
        by.setdefault(job.size, []).append(j)
    return list(by.values())


@dataclass
class SweepModel:
    """The count model and what decodes it."""

    model: LinearModel
    kinds: list[list[int]]
    cells: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """Variable -> (server, core, kind)."""
    cost: dict[int, float] = field(default_factory=dict)
    """The cost objective, by variable."""
    makespan: int | None = None
    """The makespan variable T, when a tier needs it."""


def count_model(instance: DispatchInstance) -> SweepModel:
    """The model of the module docstring for ``instance``."""
    lm = LinearModel()
    kinds = kinds_of(instance)
    sm = SweepModel(lm, kinds)
    deadline = instance.deadline
    horizon = deadline or sum(
        len(js) * max(instance.service[js[0]]) for js in kinds
    )  # every job on one core of the slowest server: no schedule ends later
    if "makespan" in BUDGET_TIERS[instance.budget_objective]:
        lo = max(min(instance.service[js[0]]) for js in kinds) if kinds else 0
        sm.makespan = lm.var(lo, horizon, "T")
    per_kind: list[list[tuple[int, int]]] = [[] for _ in kinds]
    budget_terms: list[tuple[int, int]] = []
    for s, server in enumerate(instance.servers):
        previous: list[tuple[int, int]] | None = None
        for c in range(server.cores):
            load: list[tuple[int, int]] = []
            for k, js in enumerate(kinds):
                p = instance.service[js[0]][s]
                ub = min(len(js), horizon // p)
                if ub <= 0:
                    continue
                v = lm.var(0, ub, "n")
                sm.cells[v] = (s, c, k)
                cost = instance.cost(js[0], s)
                if cost:
                    sm.cost[v] = float(cost)
                    budget_terms.append((v, cost))
                per_kind[k].append((v, 1))
                load.append((v, p))
            if deadline:
                lm.row(load, None, deadline)
            if sm.makespan is not None:
                lm.row(load + [(sm.makespan, -1)], None, 0)
            if previous is not None:
                lm.row(previous + [(v, -p) for v, p in load], 0, None)
            previous = load
    for k, js in enumerate(kinds):
        lm.row(per_kind[k], len(js), len(js))
    if instance.budget:
        lm.row(budget_terms, None, instance.budget)
    return sm


def size_of(instance: DispatchInstance) -> int:
    """Count variables the model would have, at most."""
    return sum(s.cores for s in instance.servers) * len(kinds_of(instance))


def decode(instance: DispatchInstance, sm: SweepModel, values: list[float]) -> DispatchSolution:
    """The schedule of a solution's counts: each core runs its jobs back to back from 0."""
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    queues = [list(js) for js in sm.kinds]
    loads: dict[tuple[int, int], int] = {}
    for v, (s, c, k) in sm.cells.items():
        for _ in range(round(values[v])):
            if not queues[k]:
                break  # more counted than exist: the checker rejects the jobs left out
            j = queues[k].pop()
            t = loads.get((s, c), 0)
            server_of[j], start[j] = s, t
            loads[(s, c)] = t + instance.service[j][s]
    return DispatchSolution(tuple(server_of), tuple(start))


def hint_of(instance: DispatchInstance, sm: SweepModel, solution: DispatchSolution) -> list[int]:
    """The counts of a schedule: its jobs laid on cores (each to the core free first, in
    start order), cores of a server ordered by decreasing load as the symmetry rows ask."""
    out = [0] * sm.model.num_vars
    kind_of = {j: k for k, js in enumerate(sm.kinds) for j in js}
    counts: dict[int, list[list[int]]] = {}
    free: dict[int, list[int]] = {}
    loads: dict[int, list[int]] = {}
    for j in sorted(range(len(instance.jobs)), key=lambda j: solution.start[j]):
        s = solution.server_of[j]
        cores = instance.servers[s].cores
        f = free.setdefault(s, [0] * cores)
        c = min(range(cores), key=lambda c: (f[c] > solution.start[j], c))
        f[c] = solution.start[j] + instance.service[j][s]
        counts.setdefault(s, [[0] * len(sm.kinds) for _ in range(cores)])[c][kind_of[j]] += 1
        loads.setdefault(s, [0] * cores)[c] += instance.service[j][s]
    index = {cell: v for v, cell in sm.cells.items()}
    makespan = 0
    for s, per_core in counts.items():
        order = sorted(range(len(per_core)), key=lambda c: -loads[s][c])
        for c_new, c_old in enumerate(order):
            makespan = max(makespan, loads[s][c_old])
            for k, n in enumerate(per_core[c_old]):
                if n and (s, c_new, k) in index:
                    out[index[(s, c_new, k)]] = n
    if sm.makespan is not None:
        out[sm.makespan] = makespan
    return out


def _ceil_bound(bound: float | None, floor: float) -> float:
    """A solver's bound on an integer objective, rounded up past a relative allowance for
    float tolerances, never below ``floor``."""
    if bound is None:
        return floor
    return max(floor, float(math.ceil(bound - 1e-6 * max(1.0, abs(bound)))))


def solve_sweep(
    instance: DispatchInstance, ctx: ExactContext, backend: LinearBackend, source: str, quick: float
) -> ExactOutcome:
    """Minimise the instance's tiers on the count model (cost-time: cost, then makespan with
    the cost fixed); report every decoded schedule through the checker."""
    size = size_of(instance)
    if size > MAX_COUNTS:
        return ExactOutcome(
            StopReason.SEARCH_EXHAUSTED,
            bound=quick,
            message=f"{source}: the count model would have {size} variables (limit "
            f"{MAX_COUNTS}); the heuristic schedule stands",
        )
    sm = count_model(instance)
    backend.load(sm.model)
    tiers = BUDGET_TIERS[instance.budget_objective]
    incumbent = ctx.incumbent()
    hint = None
    if incumbent is not None and check(instance, incumbent).feasible:
        hint = hint_of(instance, sm, incumbent)

    def on_values(values: list[float], bound: float | None) -> None:
        ctx.report(decode(instance, sm, values), source, None)

    tier_bounds: dict[str, float] = {}
    found = None
    for x, tier in enumerate(tiers):
        objective = sm.cost if tier == "cost" else {sm.makespan: 1.0}
        # An earlier tier leaves time for the later ones (most of it: it is the hard one).
        share = 1.0 if x == len(tiers) - 1 else 0.7
        run, final = backend.run(
            "min", dict(objective), 0.0, hint, share * ctx.time_left(), ctx.cancel, on_values
        )
        if run.status == RunStatus.INFEASIBLE:
            return ExactOutcome(
                StopReason.PROVEN,
                proven_infeasible=True,
                message=f"{source}: no schedule meets the deadline {instance.deadline or '-'}"
                f" within the budget {instance.budget or '-'} (proved on the count model)",
            )
        floor = quick if tier == tiers[0] else 0.0
        tier_bounds[tier] = _ceil_bound(run.bound, floor)
        if final is None:
            return ExactOutcome(
                run.stop_reason if run.stop_reason != StopReason.PROVEN else StopReason.ERROR,
                bound=tier_bounds[tiers[0]],
                tier_bounds=tier_bounds,
                message=f"{source}: {run.message}".strip(),
            )
        found = decode(instance, sm, final)
        ctx.report(found, source)
        report = check(instance, found)
        proven = (
            run.stop_reason == StopReason.PROVEN
            and report.feasible
            and report.terms[tier] <= tier_bounds[tier]
        )
        if not proven:
            return ExactOutcome(
                run.stop_reason
                if run.stop_reason != StopReason.PROVEN
                else StopReason.SEARCH_EXHAUSTED,
                bound=tier_bounds[tiers[0]],
                tier_bounds=tier_bounds,
                message=f"{source}: {run.message}".strip(),
            )
        if tier != tiers[-1]:
            # The next tier keeps this one at its proven optimum.
            backend.add_row(dict(objective), None, report.terms[tier])
            hint = [round(x) for x in final]
    return ExactOutcome(
        StopReason.PROVEN,
        bound=tier_bounds[tiers[0]],
        proven_optimal=True,
        proven_solution=found,
        tier_bounds=tier_bounds,
        message=f"{source}: optimal over {len(sm.cells)} counts of {len(sm.kinds)} kinds",
    )
