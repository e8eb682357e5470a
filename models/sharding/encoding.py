"""The exact model of sharding, written once as a :class:`LinearModel` that CP-SAT
(:mod:`.cpsat`) and a MILP solver (:mod:`.milp`) solve as it is (docs/formulations/sharding.md).

Per table ``t`` and option ``o`` (:func:`.cost_model.options`):

* a fixed option (row-wise, table-row-wise on host ``h``, data-parallel) is a binary
  ``z[t,o]`` that puts its known cost and HBM on each device it uses;
* table-wise is a binary ``x[t,o,d]`` per device with room for the table;
* column-wise with ``k`` equal shards is a binary ``y[t,o]`` and integers ``n[t,o,d]`` in
  ``[0, min(k, hbm_d // shard_hbm)]`` with ``sum_d n[t,o,d] = k y[t,o]`` (the shards are
  identical, so only their count per device matters);
* one option per table: ``sum_o (z + sum_d x + y) = 1``;
* per device ``d``: ``sum cost * vars <= M`` and ``sum hbm * vars <= hbm_d``.

Tier 1 minimises ``M`` (integer ns); tier 2 fixes ``M`` at its proved optimum and minimises
the total communication ``sum_o comm_o * (selection of o)``. Costs are the checker's integers
(:mod:`.cost_model`), so the model's optimum is the checker's exactly; a proof is a proof under
the cost model, not of the step time on hardware.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from placement.models.sharding.check import check, device_loads
from placement.models.sharding.cost_model import Option, options, plan_from_option
from placement.models.sharding.explain import explain_infeasible
from placement.models.sharding.instance import (
    ShardingInstance,
    ShardingSolution,
    TablePlan,
)
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

TIER1_SHARE = 0.95
"""Of the time left, what the bottleneck tier may use. Communication is optimised only at a
proved bottleneck, so an unproved first tier leaves nothing for it: it gets what the first
tier's proof leaves."""


@dataclass
class ShardingLinear:
    """The model and where each option's variables are."""

    model: LinearModel
    opts: list[list[Option]]
    select: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    """(t, o) -> [(var, device or -1)]: the option's selection variables (x by device, or
    the single z / y with -1)."""
    counts: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    """(t, o) of a column-wise option -> [(n var, device)]."""
    bottleneck: int = -1
    comm: dict[int, float] = field(default_factory=dict)
    """The total communication, by variable."""
    symmetric: list[list[int]] = field(default_factory=list)
    """Groups of interchangeable devices (their costs are ordered in the model)."""


def quick_bound(instance: ShardingInstance) -> float:
    """A bound on the bottleneck, valid under the cost model: the largest of

    * the average over devices of every table's least total cost (rounded up);
    * pigeonhole: every option puts at least its peak (its largest cost on one device) on
      some device, so with ``p`` the tables' least peaks in decreasing order, among the first
      ``(k - 1) W + 1`` tables ``k`` share a device: ``M >= p[(k-1)W - k + 1] + ... +
      p[(k-1)W]`` (0-based), for every ``k >= 1`` (``k = 1``: the largest least peak).
    """
    opts = [options(instance, t) for t in range(len(instance.tables))]
    if any(not o for o in opts):
        return 0.0
    total = 0
    peaks = []
    for table_opts in opts:
        total += min(
            (
                sum(c for c, _ in o.fixed.values())
                if o.fixed is not None
                else o.free * min(o.free_cost)
            )
            for o in table_opts
        )
        peaks.append(
            min(
                (max(c for c, _ in o.fixed.values()) if o.fixed is not None else min(o.free_cost))
                for o in table_opts
            )
        )
    peaks.sort(reverse=True)
    W = instance.world_size
    best = math.ceil(total / W)
    k = 1
    while (k - 1) * W + 1 <= len(peaks):
        n = (k - 1) * W + 1
        best = max(best, sum(peaks[n - k : n]))
        k += 1
    return float(best)


def sharding_linear(instance: ShardingInstance, upper: int | None) -> ShardingLinear:
    """The model (module docstring); ``upper`` bounds ``M`` (an incumbent's value)."""
    m = LinearModel()
    opts = [options(instance, t) for t in range(len(instance.tables))]
    lin = ShardingLinear(m, opts)
    n_dev = instance.world_size
    hbm = [d.hbm_bytes for d in instance.devices]
    cost_terms: list[list[tuple[int, int]]] = [[] for _ in range(n_dev)]
    hbm_terms: list[list[tuple[int, int]]] = [[] for _ in range(n_dev)]
    for t, table_opts in enumerate(opts):
        pick: list[tuple[int, int]] = []
        for o, opt in enumerate(table_opts):
            sel: list[tuple[int, int]] = []
            if opt.fixed is not None:
                if any(h > hbm[d] for d, (_, h) in opt.fixed.items()):
                    continue
                z = m.var(0, 1, "z")
                sel.append((z, -1))
                for d, (c, h) in opt.fixed.items():
                    cost_terms[d].append((z, c))
                    hbm_terms[d].append((z, h))
                lin.comm[z] = float(opt.comm_ns)
            elif opt.free == 1:
                for d in range(n_dev):
                    if opt.free_hbm > hbm[d]:
                        continue
                    x = m.var(0, 1, "x")
                    sel.append((x, d))
                    cost_terms[d].append((x, opt.free_cost[d]))
                    hbm_terms[d].append((x, opt.free_hbm))
                    lin.comm[x] = float(opt.comm_ns)
            else:
                ns = []
                for d in range(n_dev):
                    cap = min(opt.free, hbm[d] // max(1, opt.free_hbm))
                    if cap <= 0:
                        continue
                    n = m.var(0, cap, "n")
                    ns.append((n, d))
                    cost_terms[d].append((n, opt.free_cost[d]))
                    hbm_terms[d].append((n, opt.free_hbm))
                if sum(m.ub[n] for n, _ in ns) < opt.free:
                    continue
                y = m.var(0, 1, "y")
                m.row([(n, 1) for n, _ in ns] + [(y, -opt.free)], 0, 0)
                sel.append((y, -1))
                lin.counts[(t, o)] = ns
                lin.comm[y] = float(opt.comm_ns)
            if sel:
                lin.select[(t, o)] = sel
                pick.extend(sel)
        m.row([(v, 1) for v, _ in pick], 1, 1)
    high = (
        upper
        if upper is not None
        else sum(max(c for _, c in terms) if terms else 0 for terms in cost_terms)
        + sum(sum(c for _, c in terms) for terms in cost_terms)
    )
    bottleneck = m.var(0, max(0, int(high)), "M")
    lin.bottleneck = bottleneck
    for d in range(n_dev):
        m.row([*cost_terms[d], (bottleneck, -1)], None, 0)
        if hbm_terms[d]:
            m.row(hbm_terms[d], None, hbm[d])
    return lin


def hint_values(
    instance: ShardingInstance, lin: ShardingLinear, solution: ShardingSolution
) -> list[int] | None:
    """The model's values of a solution, or None when it is not in the model. Free shards
    move between interchangeable devices so that their costs decrease as the model orders
    them (:func:`sharding_linear`)."""
    values = [0] * lin.model.num_vars
    loads = device_loads(instance, solution)
    relabel = {d: d for d in range(instance.world_size)}
    for group in lin.symmetric:
        ranked = sorted(group, key=lambda d: (-loads[d].cost_ns, d))
        relabel.update(dict(zip(ranked, group, strict=True)))
    for t, plan in enumerate(solution.plans):
        if plan is None:
            return None
        found = False
        for o, opt in enumerate(lin.opts[t]):
            if opt.kind != plan.sharding_type or (t, o) not in lin.select:
                continue
            if opt.fixed is not None:
                if plan_from_option(instance, t, opt) != plan:
                    continue
                values[lin.select[(t, o)][0][0]] = 1
            elif opt.free == 1:
                device = relabel[plan.shards[0].device]
                var = next((v for v, d in lin.select[(t, o)] if d == device), None)
                if var is None:
                    return None
                values[var] = 1
            else:
                values[lin.select[(t, o)][0][0]] = 1
                where = {d: v for v, d in lin.counts[(t, o)]}
                for s in plan.shards:
                    if relabel[s.device] not in where:
                        return None
                    values[where[relabel[s.device]]] += 1
            found = True
            break
        if not found:
            return None
    values[lin.bottleneck] = int(check(instance, solution).terms["max_device_cost_ns"])
    return values


def decode(
    instance: ShardingInstance, lin: ShardingLinear, values: list[float]
) -> ShardingSolution:
    """The solution of the model's values."""
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    for (t, o), sel in lin.select.items():
        opt = lin.opts[t][o]
        if opt.fixed is not None or opt.free > 1:
            if values[sel[0][0]] < 0.5:
                continue
            devices: tuple[int, ...] = ()
            if opt.free > 1:
                devices = tuple(
                    d for n, d in lin.counts[(t, o)] for _ in range(int(round(values[n])))
                )
            plans[t] = plan_from_option(instance, t, opt, devices)
            continue
        for var, d in sel:
            if values[var] > 0.5:
                plans[t] = plan_from_option(instance, t, opt, (d,))
    return ShardingSolution(tuple(plans))


class ShardingEncoding:
    """The tiers on one backend (the subclasses give the backend)."""

    source = "sharding"

    def __init__(self) -> None:
        self.last_stats: dict[str, float] = {}

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        raise NotImplementedError

    def solve(self, instance: ShardingInstance, ctx: ExactContext) -> ExactOutcome:
        """Tier 1 (the bottleneck), then tier 2 (communication at that bottleneck)."""
        reasons = explain_infeasible(instance)
        if reasons:
            return ExactOutcome(
                StopReason.PROVEN,
                proven_infeasible=True,
                message="; ".join(r["message"] for r in reasons),
            )
        incumbent = ctx.incumbent()
        upper = None
        if incumbent is not None:
            report = check(instance, incumbent)
            if report.feasible:
                upper = int(report.terms["max_device_cost_ns"])
        started = time.monotonic()
        lin = sharding_linear(instance, upper)
        backend = self._backend(ctx)
        self.source = backend.source
        backend.load(lin.model)
        self.last_stats = {
            "variables": lin.model.num_vars,
            "rows": len(lin.model.rows),
            "build_s": round(time.monotonic() - started, 3),
        }
        hint = None if incumbent is None else hint_values(instance, lin, incumbent)
        quick = quick_bound(instance)
        left = ctx.time_left()
        with deadline_token(ctx.cancel, TIER1_SHARE * left) as token:
            run, final = backend.run(
                "min", {lin.bottleneck: 1.0}, 0.0, hint, TIER1_SHARE * left, token, None
            )
        bound = quick
        if run.bound is not None and math.isfinite(run.bound):
            bound = max(bound, float(math.ceil(run.bound - 1e-6)))
        if not run.has_solution or final is None:
            if run.status == RunStatus.INFEASIBLE:
                return ExactOutcome(
                    StopReason.PROVEN,
                    proven_infeasible=True,
                    message=f"{self.source}: proved that no plan fits every device's HBM",
                )
            return ExactOutcome(
                deadline_stop(run.stop_reason, ctx.cancel),
                bound=bound,
                message=f"{self.source}: no plan found ({run.stop_reason.value}) {run.message}",
            )
        best = decode(instance, lin, final)
        report = check(instance, best)
        ctx.report(best, self.source, bound)
        value = report.terms["max_device_cost_ns"]
        tier1_proven = (
            report.feasible
            and run.status == RunStatus.OPTIMAL
            and run.stop_reason == StopReason.PROVEN
            and run.objective is not None
            and abs(run.objective - value) < 0.5
        )
        if tier1_proven:
            bound = max(bound, value)
        if not tier1_proven:
            return ExactOutcome(
                deadline_stop(run.stop_reason, ctx.cancel),
                bound=bound,
                message=f"{self.source}: bottleneck not proved ({run.stop_reason.value})",
            )
        backend.add_row({lin.bottleneck: 1.0}, None, value)
        left = ctx.time_left()
        with deadline_token(ctx.cancel, left) as token:
            run2, final2 = backend.run(
                "min", dict(lin.comm), 0.0, hint_values(instance, lin, best), left, token, None
            )
        if run2.has_solution and final2 is not None:
            second = decode(instance, lin, final2)
            report2 = check(instance, second)
            if (
                report2.feasible
                and report2.better_than(report)
                or (report2.feasible and report2.score() == report.score())
            ):
                best, report = second, report2
                ctx.report(best, self.source, bound)
        proven = (
            run2.status == RunStatus.OPTIMAL
            and run2.stop_reason == StopReason.PROVEN
            and run2.objective is not None
            and abs(run2.objective - report.terms["total_comm_ns"])
            < 0.5 + 1e-9 * abs(run2.objective)
            and report.terms["max_device_cost_ns"] == value
        )
        return ExactOutcome(
            StopReason.PROVEN if proven else deadline_stop(run2.stop_reason, ctx.cancel),
            bound=bound,
            proven_optimal=proven,
            proven_solution=best if proven else None,
            tier_bounds={"max_device_cost_ns": value},
            message="" if proven else f"{self.source}: bottleneck proved, communication not",
        )
