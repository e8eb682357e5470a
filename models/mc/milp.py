"""MILP encoding of mixed-criticality partitioning (HiGHS or CBC through PuLP): the rows of
:mod:`.encoding` in utilisation units (the integer tables divided by ``S``), with ``D`` and
``w`` continuous.

The MILP solver decides within its feasibility tolerance (1e-6 or so): a solution is checked
in exact rationals and a core that fails by a hair gets the no-good cut of the protocol, so
no unschedulable assignment is returned; a proof of infeasibility is the solver's, within
that tolerance (CP-SAT's is exact integer arithmetic).
"""

from __future__ import annotations

from typing import Any

from placement.models.mc.encoding import McEncoding, RunResult, Tables, stop_reason
from placement.solver.backends.base import RunStatus
from placement.solver.backends.milp import milp_solver
from placement.solver.cancel import deadline_token
from placement.solver.family import ExactContext
from placement.solver.result import StopReason


def build_milp(
    tables: Tables, tier: str | None, drop_limit: int | None
) -> tuple[Any, dict[tuple[int, int], Any], dict[int, Any]]:
    """The PuLP problem: (problem, x by (task, core), drop by task)."""
    # pulp loads in ~0.2 s: only when a model is built
    import pulp

    inst, S = tables.instance, float(tables.scale)
    n, m = len(inst.tasks), len(inst.cores)
    sense = pulp.LpMaximize if tier == "min_slack" else pulp.LpMinimize
    prob = pulp.LpProblem("mc", sense)
    x = {p: pulp.LpVariable(f"x{p[0]}_{p[1]}", cat=pulp.LpBinary) for p in tables.pairs}
    drop = {
        i: pulp.LpVariable(f"drop{i}", cat=pulp.LpBinary)
        for i, t in enumerate(inst.tasks)
        if t.droppable
    }
    by_task: list[list[Any]] = [[] for _ in range(n)]
    for (i, _), var in x.items():
        by_task[i].append(var)
    for i in range(n):
        extra = [drop[i]] if i in drop else []
        prob += pulp.lpSum(by_task[i] + extra) == 1, f"assign{i}"
    t = pulp.LpVariable("min_slack", 0, 1) if tier == "min_slack" else None
    for k in range(m):
        tasks = tables.tasks_on(k)
        lo = [i for i in tasks if not inst.tasks[i].hi]
        hi = [i for i in tasks if inst.tasks[i].hi]
        L = pulp.lpSum(tables.lo[(i, k)] / S * x[(i, k)] for i in lo)
        HH = pulp.lpSum(tables.hh[(i, k)] / S * x[(i, k)] for i in hi)
        HL = pulp.lpSum(tables.hl[(i, k)] / S * x[(i, k)] for i in hi)
        prob += L <= 1, f"lo{k}"
        prob += HH <= 1, f"hh{k}"
        prob += L + HL <= 1, f"lomode{k}"
        if tables.amc:
            continue  # AMC-rtb: the utilisation rows above, then the no-good loop
        product = pulp.LpAffineExpression()
        if lo and hi:
            D = pulp.LpVariable(f"D{k}", 0, 1)
            prob += pulp.lpSum(tables.d[(i, k)] / S * x[(i, k)] for i in hi) >= D, f"diff{k}"
            terms = []
            for i in lo:
                w = pulp.LpVariable(f"w{i}_{k}", 0, 1)
                prob += w <= D, f"wd{i}_{k}"
                prob += w <= x[(i, k)], f"wx{i}_{k}"
                terms.append((w, tables.lo[(i, k)] / S))
            product = pulp.LpAffineExpression(terms)
        slack = 1 - L - HH + product
        prob += slack >= 0, f"edfvd{k}"
        if t is not None:
            prob += t <= slack, f"min_slack{k}"
    for r, row in enumerate(tables.nogood_rows()):
        prob += pulp.lpSum(x[p] for p in row) <= len(row) - 1, f"nogood{r}"
    cost = pulp.lpSum(inst.tasks[i].drop_cost * v for i, v in drop.items())
    if drop_limit is not None and drop:
        prob += cost <= drop_limit, "drop_limit"
    if tier == "dropped_cost":
        prob.setObjective(cost)
    elif t is not None:
        prob.setObjective(pulp.LpAffineExpression([(t, 1.0)]))
    elif tier == "cores_used":
        used = []
        for k in range(m):
            y = pulp.LpVariable(f"used{k}", cat=pulp.LpBinary)
            for i in tables.tasks_on(k):
                prob += x[(i, k)] <= y, f"use{i}_{k}"
            used.append(y)
        prob.setObjective(pulp.lpSum(used))
    else:
        prob.setObjective(pulp.LpAffineExpression())
    return prob, x, drop


class MilpEncoding(McEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"

    def _run(
        self,
        tables: Tables,
        ctx: ExactContext,
        tier: str | None,
        drop_limit: int | None,
        hint: tuple[int, ...] | None,
    ) -> RunResult:
        name, solver = milp_solver(ctx.options)
        self.source = f"milp-{name}"
        prob, x, drop = build_milp(tables, tier, drop_limit)
        warm = None
        # No MIP start for HiGHS (see models/partition/milp.py: the wrapper can return the
        # start's values with the solved objective).
        if hint is not None and name != "highs":
            warm = {var: float(hint[i] == k) for (i, k), var in x.items()}
            warm.update({var: float(hint[i] == -1) for i, var in drop.items()})
        with deadline_token(ctx.cancel, ctx.time_left()) as token:
            run = solver.run(prob, ctx.options, token, ctx.time_left(), warm_start=warm)
        if not (run.has_solution and run.values):
            return RunResult(
                None,
                False,
                run.status == RunStatus.INFEASIBLE,
                stop_reason(run.stop_reason, ctx),
                message=run.message,
            )
        core_of = [-1] * len(tables.instance.tasks)
        for (i, k), var in x.items():
            if (run.values.get(var) or 0.0) > 0.5:
                core_of[i] = k
        proven = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        if tier is None:
            proven = True
        objective = run.objective
        if tier == "dropped_cost":
            objective = float(
                sum(tables.instance.tasks[i].drop_cost for i, k in enumerate(core_of) if k == -1)
            )
            if run.objective is not None and abs(objective - run.objective) > 0.5:
                proven = False
        return RunResult(
            tuple(core_of),
            proven,
            False,
            StopReason.PROVEN if proven else stop_reason(run.stop_reason, ctx),
            objective=objective,
            bound=run.bound,
            message=run.message,
        )
