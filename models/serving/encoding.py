"""The exact model of serving over configurations and class routing, written once as a
:class:`LinearModel` that CP-SAT (:mod:`.cpsat`) and a MILP solver (:mod:`.milp`) solve as it
is (docs/formulations/serving.md).

Variables: ``n[k]`` instances of each kind; per class ``c`` the rate (integer milli-requests
per second) ``x[c,k]`` on each mixed kind, ``p[c,k]`` on each prefill kind and ``d[c,k]`` on
each decode kind that can take it. Rows: per class ``sum_k p[c,k] = sum_k d[c,k]`` and
``sum_k x[c,k] + sum_k p[c,k] <= lambda_c`` (``=`` without a budget); per kind the fluid
model's prefill, decode and KV rows (:mod:`.fluid`); per GPU type its count; the budget.

With a budget, tier 1 maximises the served rate; tier 2, at that rate, the least peak load
``j`` (thousandths of capacity: every deployed kind's rows at ``n floor(j cap / 1000)``),
found by bisection over ``j`` on repeated goodput solves, each exact (no tolerance beyond
the integer grid of ``j``); tier 3, at that rate and peak load, the least cost. Without a budget,
one tier: the least cost. The rows are the checker's integers, so the model's optimum
is the checker's exactly, and a proof is a proof **for the fluid model**: what a configuration
serves within the targets request by request is the simulator's to measure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from placement.models.serving.check import HEADROOM_STEPS, check, peak_permille
from placement.models.serving.fluid import cost_milli, gpu_type_of, gpus_of, rows
from placement.models.serving.instance import (
    DECODE,
    MILLI,
    MIXED,
    PREFILL,
    Deployment,
    Route,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

TIER1_SHARE = 0.9
"""Of the time left, what the goodput tier may use; the peak-load and cost tiers get the rest."""

PROBE_SHARE = 0.5
"""Of the time left, what one probe of the peak-load bisection may use."""

FLUID = "the fluid model's"
OPTIMAL_MESSAGE = (
    "{source}: optimal for the fluid model (fluid capacities with SLO-feasible load limits; "
    "the simulator measures the real goodput)"
)


@dataclass
class ServingLinear:
    """The model and where its variables are."""

    model: LinearModel
    count: dict[int, int] = field(default_factory=dict)
    """kind -> n variable."""
    rate: dict[tuple[int, int], int] = field(default_factory=dict)
    """(class, kind) -> rate variable."""
    served: list[int] = field(default_factory=list)
    """The rate variables that count as served (mixed and prefill)."""
    cost: dict[int, float] = field(default_factory=dict)


def quick_bound(instance: ServingInstance) -> float:
    """With a budget: everything that arrives (req/s); without: the cost of the cheapest GPU
    capacity that covers the prefill work alone, rounded down (0 when nothing simpler)."""
    if instance.maximise_goodput:
        return sum(instance.class_rates_milli) / MILLI
    return 0.0


def serving_linear(instance: ServingInstance, permille: int = HEADROOM_STEPS) -> ServingLinear:
    """The model (module docstring), every kind's rows at ``permille`` thousandths of their
    capacity (``n floor(permille cap / 1000)``: the checker's :func:`.check.row_permille`)."""
    m = LinearModel()
    lin = ServingLinear(m)
    ks = kinds(instance)
    rs = rows(instance)
    per_type: list[list[tuple[int, int]]] = [[] for _ in instance.gpu_types]
    budget_terms: list[tuple[int, int]] = []
    for k, kind in enumerate(ks):
        tp = gpus_of(instance, kind)
        g = gpu_type_of(instance, kind)
        ub = instance.gpu_types[g].count // tp
        if instance.gpu_budget:
            ub = min(ub, instance.gpu_budget // tp)
        if ub <= 0:
            continue
        n = m.var(0, ub, "n")
        lin.count[k] = n
        lin.cost[n] = float(cost_milli(instance, kind))
        per_type[g].append((n, tp))
        budget_terms.append((n, tp))
    for c, lam in enumerate(instance.class_rates_milli):
        served: list[tuple[int, int]] = []
        flow: list[tuple[int, int]] = []
        for k, kind in enumerate(ks):
            if k not in lin.count or lam <= 0:
                continue
            row = rs[k]
            ok = (kind.role in (PREFILL, MIXED)) <= row.serves_prefill(c) and (
                kind.role in (DECODE, MIXED)
            ) <= row.serves_decode(c)
            if not ok:
                continue
            x = m.var(0, lam, {MIXED: "x", PREFILL: "p", DECODE: "d"}[kind.role])
            lin.rate[(c, k)] = x
            if kind.role != DECODE:
                served.append((x, 1))
                lin.served.append(x)
            if kind.role == PREFILL:
                flow.append((x, 1))
            if kind.role == DECODE:
                flow.append((x, -1))
        if flow:
            m.row(flow, 0, 0)
        if served:
            m.row(served, None if instance.maximise_goodput else lam, lam)
        elif not instance.maximise_goodput and lam > 0:
            m.row([], 1, 1)  # no kind can take the class: raises (explained before)
    for k, n in lin.count.items():
        row = rs[k]
        for coefs, cap in (
            (row.prefill, row.prefill_cap),
            (row.busy, row.busy_cap),
            (row.decode, row.decode_cap),
            (row.kv, row.kv_cap),
        ):
            terms = [
                (x, coefs[c] or 0)
                for (c, kk), x in lin.rate.items()
                if kk == k and coefs[c] is not None
            ]
            if terms:
                m.row([*terms, (n, -(cap * permille // HEADROOM_STEPS))], None, 0)
    for g, terms in enumerate(per_type):
        if terms:
            m.row(terms, None, instance.gpu_types[g].count)
    if instance.gpu_budget and budget_terms:
        m.row(budget_terms, None, instance.gpu_budget)
    return lin


def hint_values(
    instance: ServingInstance, lin: ServingLinear, solution: ServingSolution
) -> list[int] | None:
    """The model's values of a solution, or None when it is not in the model."""
    values = [0] * lin.model.num_vars
    for d in solution.deployments:
        if d.kind not in lin.count:
            return None
        values[lin.count[d.kind]] = d.instances
    for r in solution.routes:
        var = lin.rate.get((r.cls, solution.deployments[r.deployment].kind))
        if var is None:
            return None
        values[var] += r.rate_milli
    return values


def decode(instance: ServingInstance, lin: ServingLinear, values: list[float]) -> ServingSolution:
    """The solution of the model's values."""
    deployments: list[Deployment] = []
    where: dict[int, int] = {}
    for k, n in sorted(lin.count.items()):
        count = int(round(values[n]))
        if count > 0:
            where[k] = len(deployments)
            deployments.append(Deployment(k, count))
    routes = []
    for (c, k), x in sorted(lin.rate.items()):
        rate = int(round(values[x]))
        if rate > 0 and k in where:
            routes.append(Route(c, where[k], rate))
    return ServingSolution(tuple(deployments), tuple(routes))


class ServingEncoding:
    """The tiers on one backend (the subclasses give the backend)."""

    source = "serving"

    def __init__(self) -> None:
        self.last_stats: dict[str, float] = {}

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        raise NotImplementedError

    def _run(
        self,
        backend: LinearBackend,
        sense: str,
        objective: dict[int, float],
        hint: list[int] | None,
        share: float,
        ctx: ExactContext,
    ) -> tuple[Any, list[float] | None]:
        """One run of ``backend`` with ``share`` of the time left."""
        left = share * ctx.time_left()
        with deadline_token(ctx.cancel, left) as token:
            return backend.run(sense, objective, 0.0, hint, left, token, None)

    def solve(self, instance: ServingInstance, ctx: ExactContext) -> ExactOutcome:
        """Tier 1 (goodput, with a budget) then cost; or cost alone without a budget."""
        started = time.monotonic()
        lin = serving_linear(instance)
        backend = self._backend(ctx)
        self.source = backend.source
        backend.load(lin.model)
        self.last_stats = {
            "variables": lin.model.num_vars,
            "rows": len(lin.model.rows),
            "build_s": round(time.monotonic() - started, 3),
        }
        incumbent = ctx.incumbent()
        hint = None if incumbent is None else hint_values(instance, lin, incumbent)
        if not instance.maximise_goodput:
            return self._cost_tier(instance, ctx, lin, backend, hint, None)
        run, final = self._run(
            backend, "max", dict.fromkeys(lin.served, 1.0), hint, TIER1_SHARE, ctx
        )
        bound = quick_bound(instance)
        if run.bound is not None and math.isfinite(run.bound):
            bound = min(bound, math.floor(run.bound + 1e-6) / MILLI)
        if not run.has_solution or final is None:
            return ExactOutcome(
                deadline_stop(run.stop_reason, ctx.cancel),
                bound=bound,
                message=f"{self.source}: no configuration found ({run.stop_reason.value})",
            )
        best = decode(instance, lin, final)
        report = check(instance, best)
        ctx.report(best, self.source, bound)
        value = report.terms["goodput_per_s"] if report.feasible else None
        proven = (
            value is not None
            and run.status == RunStatus.OPTIMAL
            and run.stop_reason == StopReason.PROVEN
            and run.objective is not None
            and abs(run.objective / MILLI - value) < 0.5 / MILLI
        )
        if not proven:
            return ExactOutcome(
                deadline_stop(run.stop_reason, ctx.cancel),
                bound=bound,
                message=f"{self.source}: goodput not proved ({run.stop_reason.value}); the "
                f"bound is {FLUID}",
            )
        assert value is not None
        outcome = self._headroom_tiers(instance, ctx, best, round(value * MILLI))
        outcome.bound = value
        outcome.tier_bounds = {"goodput_per_s": value, **outcome.tier_bounds}
        return outcome

    def _at_headroom(
        self, instance: ServingInstance, ctx: ExactContext, permille: int
    ) -> tuple[ServingLinear, LinearBackend]:
        """The model with every row at ``permille`` thousandths of its capacity, loaded on a
        fresh backend."""
        lin = serving_linear(instance, permille)
        backend = self._backend(ctx)
        backend.load(lin.model)
        return lin, backend

    def _headroom_tiers(
        self,
        instance: ServingInstance,
        ctx: ExactContext,
        best: ServingSolution,
        goodput_milli: int,
    ) -> ExactOutcome:
        """Tier 2, the least peak load ``j`` (thousandths of every deployed row's capacity)
        at which the tier-1 goodput ``G`` is still served, by bisection over the integers
        ``j``: each probe maximises the goodput with the rows at ``j``; its proved bound below
        ``G`` proves ``j`` too small, a plan serving ``G`` has its own peak (by the checker)
        as the new upper end. The first probe is just below the upper end (at capacity the
        peak is the whole row, proved by one probe). Tier 3, the least cost serving ``G`` with
        the rows at the final ``j``."""
        goodput = goodput_milli / MILLI
        lo, hi = 0, peak_permille(instance, best)
        start = best
        probes = 0
        stop = StopReason.PROVEN
        while lo < hi:
            mid = hi - 1 if probes == 0 else (lo + hi) // 2
            lin, backend = self._at_headroom(instance, ctx, mid)
            run, final = self._run(
                backend, "max", dict.fromkeys(lin.served, 1.0), None, PROBE_SHARE, ctx
            )
            probes += 1
            stop = run.stop_reason
            most = run.bound if run.bound is not None and math.isfinite(run.bound) else None
            if most is None and run.status == RunStatus.OPTIMAL:
                most = run.objective
            if run.status == RunStatus.INFEASIBLE or (
                most is not None and math.floor(most + 1e-6) < goodput_milli
            ):
                lo = mid + 1
                continue
            plan = None if final is None else decode(instance, lin, final)
            report = None if plan is None else check(instance, plan)
            if plan is None or report is None or not report.feasible:
                break
            peak = peak_permille(instance, plan)
            if peak > mid or report.terms["goodput_per_s"] < goodput:
                break  # no plan serving G at mid yet (or the backend's tolerance let one slip)
            ctx.report(plan, self.source, goodput)
            hi, start = peak, plan
        self.last_stats["headroom_probes"] = probes
        if lo < hi:
            return ExactOutcome(
                deadline_stop(stop, ctx.cancel),
                message=f"{self.source}: goodput proved, peak load not proved (between "
                f"{lo / HEADROOM_STEPS} and {hi / HEADROOM_STEPS}); bounds are {FLUID}",
                tier_bounds={"peak_load": lo / HEADROOM_STEPS},
            )
        lin, backend = self._at_headroom(instance, ctx, hi)
        backend.add_row(dict.fromkeys(lin.served, 1.0), goodput_milli, None)
        outcome = self._cost_tier(
            instance, ctx, lin, backend, hint_values(instance, lin, start), goodput
        )
        outcome.tier_bounds = {"peak_load": hi / HEADROOM_STEPS}
        return outcome

    def _cost_tier(
        self,
        instance: ServingInstance,
        ctx: ExactContext,
        lin: ServingLinear,
        backend: LinearBackend,
        hint: list[int] | None,
        goodput: float | None,
    ) -> ExactOutcome:
        """The least cost (at ``goodput`` when given: tier 2), with its proof."""
        run, final = self._run(backend, "min", dict(lin.cost), hint, 1.0, ctx)
        bound = None
        if run.bound is not None and math.isfinite(run.bound):
            bound = math.ceil(run.bound - 1e-6) / 1000
        if not run.has_solution or final is None:
            if run.status == RunStatus.INFEASIBLE and goodput is None:
                return ExactOutcome(
                    StopReason.PROVEN,
                    proven_infeasible=True,
                    message=f"{self.source}: proved that the GPUs cannot serve every class "
                    f"within the targets under the fluid model (set gpu_budget for the most "
                    "goodput instead)",
                )
            return ExactOutcome(
                deadline_stop(run.stop_reason, ctx.cancel),
                bound=bound if goodput is None else goodput,
                message=f"{self.source}: no cheaper configuration found",
            )
        best = decode(instance, lin, final)
        report = check(instance, best)
        ctx.report(best, self.source, bound if goodput is None else goodput)
        proven = (
            report.feasible
            and run.status == RunStatus.OPTIMAL
            and run.stop_reason == StopReason.PROVEN
            and run.objective is not None
            and abs(run.objective / 1000 - report.terms["cost_per_hour"]) < 0.0005
        )
        what = "cost" if goodput is None else "goodput and peak load proved, cost"
        return ExactOutcome(
            StopReason.PROVEN if proven else deadline_stop(run.stop_reason, ctx.cancel),
            bound=bound if goodput is None else goodput,
            proven_optimal=proven,
            proven_solution=best if proven else None,
            message=(
                OPTIMAL_MESSAGE.format(source=self.source)
                if proven
                else f"{self.source}: {what} not proved; bounds are {FLUID}"
            ),
        )
