"""What the CP-SAT and MILP encodings share: the stage-path model and the solve protocol.

The model (docs/formulations/partition.md, "Exact encodings") has one binary ``z_k`` per
allowed stage ``k = (class c, range [i, j))`` from :func:`.tables.band`. A split is a path of
stages from position 0 to position n:

* ``sum of z_k over stages starting at 0 = 1`` and, for every position 0 < p < n,
  ``sum over stages ending at p = sum over stages starting at p`` (flow conservation);
* ``sum of z_k over stages of class c <= number of devices of class c``;
* bottleneck modes: minimise ``T`` with ``T >= cost_k`` whenever ``z_k`` (CP-SAT: enforced
  rows) or ``T >= sum of cost_k z_k over the stages starting at p`` for every position p
  (MILP: a path starts at most one stage at each position; n rows and a tighter LP);
  latency: minimise ``sum cost_k z_k``.

With an incumbent of objective ``U`` (links uniform), only stages costing at most ``U - 1``
are modelled: every strictly better split uses only such stages (costs are non-negative
integers). The model is then infeasible exactly when the incumbent is optimal, and that
proof is a hop-limited path problem whose LP relaxation is nearly integral (integral with one
device class), which the solvers settle at the root, where proving ``T >= U`` through the
``T >= cost_k z_k`` rows alone is weak.

Devices of a class are interchangeable, so the model has no device symmetry. It is the
instance's problem exactly when every pair of devices has the same bandwidth; otherwise it is
solved over the slowest link (every split it returns is feasible and the checker scores it
with the real links) and the bound comes from the DP over the fastest link.

:func:`stage_linear` writes the shared rows once as a :class:`LinearModel`;
:class:`StageEncoding` runs the protocol, solves and decodes; :mod:`.cpsat` and :mod:`.milp`
supply the translator and their own bottleneck rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.partition.check import objective_ns
from placement.models.partition.dp import dp_applies, try_dp
from placement.models.partition.edge_split_solve import solve_edge_split
from placement.models.partition.explain import explain_infeasible, quick_bound_ns
from placement.models.partition.ideals import needs_layer_graph
from placement.models.partition.instance import NS_PER_MS, PartitionInstance, PartitionSolution
from placement.models.partition.layergraph_exact import solve_layer_graph
from placement.models.partition.serving_plan_solve import solve_plan
from placement.models.partition.tables import (
    INF,
    Tables,
    band,
    bandwidth_range,
    build_tables,
    comm_is_uniform,
)
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

MAX_STAGE_VARS = 400_000
"""Stages above this are not modelled (the encoding reports it and keeps the incumbent)."""
_TOO_LARGE = (
    f"too many stages to model (more than {MAX_STAGE_VARS} variables, or a band larger than "
    "the DP's table limit): the heuristic solution is returned without a proof"
)


@dataclass
class StageModel:
    """The allowed stages of an instance, as flat arrays."""

    tables: Tables
    cls: np.ndarray
    """cls[k]: the device class of stage k."""
    start: np.ndarray
    """start[k]: the first layer of stage k."""
    end: np.ndarray
    """end[k]: one past its last layer (the stage is the range [start, end))."""
    cost: np.ndarray
    """cost[k]: its cost in ns (:meth:`.tables.Tables.stage_cost`)."""
    counts: list[int]
    """Devices of each class: at most this many stages of the class."""
    costs_exact: bool = True
    """The costs are the instance's own. False over the slowest link (several link speeds):
    the model's objective then over-estimates the real one, so a solver's bound on the model
    is no bound on the instance and must not be reported."""

    @property
    def size(self) -> int:
        """Number of stage variables."""
        return len(self.cost)

    def stages_by_position(self) -> tuple[list[list[int]], list[list[int]]]:
        """(starts_at, ends_at): the stages starting, and those ending, at each position
        0..n (the rows of the flow conservation)."""
        starts_at: list[list[int]] = [[] for _ in range(self.tables.n + 1)]
        ends_at: list[list[int]] = [[] for _ in range(self.tables.n + 1)]
        for k in range(self.size):
            starts_at[int(self.start[k])].append(k)
            ends_at[int(self.end[k])].append(k)
        return starts_at, ends_at

    def decode(self, chosen: np.ndarray) -> PartitionSolution:
        """The solution of the chosen stages (a boolean mask over stages)."""
        n = self.tables.n
        device_of = [-1] * n
        used = [0] * len(self.counts)
        for k in np.flatnonzero(chosen):
            c, i, j = int(self.cls[k]), int(self.start[k]), int(self.end[k])
            devices = self.tables.classes[c].devices
            # More stages of a class than devices can only come from an infeasible candidate;
            # the checker rejects it (layers left unplaced).
            if used[c] < len(devices):
                device_of[i:j] = [devices[used[c]]] * (j - i)
            used[c] += 1
        return PartitionSolution(tuple(device_of))

    def hint(self, solution: PartitionSolution | None) -> np.ndarray | None:
        """The stage mask of a contiguous solution, if all its stages are in the model."""
        if solution is None:
            return None
        index = {
            (int(c), int(i), int(j)): k
            for k, (c, i, j) in enumerate(zip(self.cls, self.start, self.end, strict=True))
        }
        class_of = {d: c for c, cls in enumerate(self.tables.classes) for d in cls.devices}
        mask = np.zeros(self.size, dtype=bool)
        for d, i, last in solution.stages():
            k = index.get((class_of.get(d, -1), i, last + 1))
            if k is None:
                return None
            mask[k] = True
        return mask


def stage_model(tables: Tables, upper_bound_ns: int | None) -> StageModel | None:
    """Every allowed stage of every class (pruned by memory, cuts and ``upper_bound_ns``), or
    None when there are too many to tabulate."""
    parts = []
    for c in range(len(tables.classes)):
        try:
            b = band(tables, c, upper_bound_ns)
        except ValueError:
            return None
        jj, ww = np.nonzero(b.cost < INF)
        parts.append((np.full(len(jj), c), b.start[jj, ww], jj, b.cost[jj, ww]))
    cls = np.concatenate([p[0] for p in parts]).astype(np.int64)
    start = np.concatenate([p[1] for p in parts]).astype(np.int64)
    end = np.concatenate([p[2] for p in parts]).astype(np.int64)
    cost = np.concatenate([p[3] for p in parts]).astype(np.int64)
    counts = [len(c.devices) for c in tables.classes]
    return StageModel(tables, cls, start, end, cost, counts)


@dataclass
class StageLinear:
    """The stage-path model of a :class:`StageModel` as a :class:`LinearModel`, which each
    backend translates; variable ``k < model.size`` is ``z_k``."""

    model: LinearModel
    objective: dict[int, float]
    """Minimised: the stage count, the latency (``sum cost_k z_k``) or ``T``."""
    cost: list[int]
    """cost[k]: the cost of stage k in ns."""
    starts_at: list[list[int]]
    """The stages starting at each position."""
    top: int | None = None
    """The bottleneck ``T`` (bottleneck modes), bounded below by the backend's own rows."""


def stage_linear(model: StageModel, count_only: bool = False) -> StageLinear:
    """The rows of the module docstring that both backends share (path, classes, stage
    limit) and the objective; ``count_only`` minimises the number of stages."""
    t = model.tables
    lm = LinearModel()
    z = [lm.var(0, 1, "z") for _ in range(model.size)]
    starts_at, ends_at = model.stages_by_position()
    if not starts_at[0]:
        # No stage left at position 0 (pruned by the incumbent): a row no path satisfies,
        # which the solver refutes.
        lm.row([(lm.var(0, 0, "empty"), 1)], 1, 1)
    else:
        lm.row([(z[k], 1) for k in starts_at[0]], 1, 1)
    for p in range(1, t.n):
        lm.row([(z[k], 1) for k in ends_at[p]] + [(z[k], -1) for k in starts_at[p]], 0, 0)
    for c, count in enumerate(model.counts):
        members = np.flatnonzero(model.cls == c)
        if len(members) > count:
            lm.row([(z[int(k)], 1) for k in members], None, count)
    limit = t.instance.workload.max_stages
    if limit is not None and model.size > limit:
        lm.row([(v, 1) for v in z], None, limit)
    cost = [int(v) for v in model.cost]
    if count_only:
        return StageLinear(lm, dict.fromkeys(z, 1.0), cost, starts_at)
    if t.bottleneck:
        top = lm.var(0, max(cost), "bottleneck")
        return StageLinear(lm, {top: 1.0}, cost, starts_at, top)
    return StageLinear(lm, {v: float(c) for v, c in zip(z, cost, strict=True)}, cost, starts_at)


def _value(model: StageModel, chosen: np.ndarray, count_only: bool) -> float:
    """The model objective of the chosen stages (ns, or the stage count)."""
    if count_only:
        return float(chosen.sum())
    costs = model.cost[chosen]
    if model.tables.bottleneck:
        return float(costs.max(initial=0))
    return float(costs.sum())


def stop_reason(run_stop: StopReason, ctx: ExactContext) -> StopReason:
    """Why a run under the context's deadline stopped, as the caller sees it."""
    return deadline_stop(run_stop, ctx.cancel)


@dataclass
class RunOutcome:
    """What a backend run on a :class:`StageModel` returns (objective and bound in ns)."""

    chosen: np.ndarray | None
    proven: bool
    infeasible: bool
    bound_ns: float | None
    stop: StopReason
    message: str = ""


class StageEncoding:
    """An exact encoding of the partition family over the stage-path model.

    Parameters
    ----------
    use_dp:
        Take the DP's proof when the DP is exact for the instance (the fast path). False runs
        the backend's own search and proof (benchmarks use it to prove each optimum twice).
    """

    source = "exact"
    parametric = False
    """Bottleneck modes: bisect over the stage costs with path-feasibility models instead of
    minimising T (the MILP: HiGHS settles those network LPs and stops at its deadline)."""

    layer_graph_ip = True
    """Layer-graph instances: run the CP-SAT IP where the ideals are too many for the DP."""

    hint_bottleneck = True
    """The hint gives ``T`` too (the hinted stages' largest cost), not only the stages."""

    def __init__(self, use_dp: bool = True) -> None:
        self.use_dp = use_dp
        self.last_stats: dict[str, Any] = {}

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        """The translator that solves the linear model (:mod:`.cpsat`, :mod:`.milp`)."""
        raise NotImplementedError

    def _bottleneck_rows(self, linear: StageLinear, backend: LinearBackend) -> None:
        """Add the rows ``T >= cost of the chosen stages`` to the loaded ``backend`` (they
        differ per backend: see :mod:`.cpsat` and :mod:`.milp`)."""
        raise NotImplementedError

    def _time_limit(self, ctx: ExactContext, model: StageModel) -> float:
        """The solver's time limit, taken after building: building counts against it."""
        del model
        return ctx.time_left()

    def _run(
        self,
        model: StageModel,
        ctx: ExactContext,
        hint: np.ndarray | None,
        count_only: bool,
    ) -> RunOutcome:
        """Solve ``model``: minimise the number of stages (``count_only``, a path-feasibility
        question) or the mode's objective. Every solution is reported as an incumbent, with
        the solver's bound when it gives one and the costs are the instance's."""
        linear = stage_linear(model, count_only)
        backend = self._backend(ctx)
        self.source = backend.source
        backend.load(linear.model)
        if linear.top is not None:
            self._bottleneck_rows(linear, backend)
        values = None
        if hint is not None:
            values = [0] * linear.model.num_vars
            for k in np.flatnonzero(hint):
                values[int(k)] = 1
            if linear.top is not None and self.hint_bottleneck:
                values[linear.top] = int(model.cost[hint].max(initial=0))
            else:
                values = values[: model.size]  # the stages only

        def chosen_of(solution: list[float]) -> np.ndarray:
            return np.asarray(solution[: model.size], dtype=np.float64) > 0.5

        def on_values(solution: list[float], solver_bound: float | None) -> None:
            """Report each solution as an incumbent, with the search's bound if any."""
            bound = None
            if solver_bound is not None and model.costs_exact:
                bound = np.ceil(solver_bound - 1e-6) / NS_PER_MS
            ctx.report(model.decode(chosen_of(solution)), backend.source, bound)

        with deadline_token(ctx.cancel, ctx.time_left()) as token:
            run, final = backend.run(
                "min",
                linear.objective,
                0.0,
                values,
                self._time_limit(ctx, model),
                token,
                on_values,
            )
        chosen = None
        proven = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        if run.has_solution and final is not None:
            chosen = chosen_of(final)
            # Trust a proof only when the values returned score the proved objective (a MILP
            # wrapper can return the solved objective with other values).
            if (
                run.objective is None
                or abs(_value(model, chosen, count_only) - run.objective) > 0.5
            ):
                proven = False
        return RunOutcome(
            chosen=chosen,
            proven=proven,
            infeasible=run.status == RunStatus.INFEASIBLE,
            bound_ns=run.bound,
            stop=stop_reason(run.stop_reason, ctx),
            message=run.message,
        )

    def solve(self, instance: PartitionInstance, ctx: ExactContext) -> ExactOutcome:
        """Prove the optimum (DP fast path or backend), report incumbents, or say why not.

        Rounds, each over the stages cheaper than the incumbent's objective ``U``: (1) is there
        a path at all (fewest stages; for latency directly the least total)? None: the
        incumbent is optimal (or, without one, no split fits). (2) Otherwise the best split
        among them, hinted with the path found; proved: done; else ``U`` drops and (1) again.
        """
        self.last_stats = {"rounds": 0}
        if instance.workload.plan:
            # Serving plans: the stage-shape planner of serving_tp whichever backend was asked
            # for (its enumeration is the proof; the message says what it is over).
            return dataclasses.replace(solve_plan(instance, ctx, "serving-tp"), ran="serving-tp")
        if instance.workload.edge_split:
            # QPART's request: one integer program over split and bit-widths (CP-SAT or MILP)
            return solve_edge_split(instance, ctx, self.source)
        if instance.workload.flow:
            # Helix's max-flow model has one exact encoding, the boundary-flow MILP on HiGHS,
            # whichever backend was asked for (the solve's message says so)
            from placement.models.partition.serving_milp import solve_flow  # loads networkx

            outcome = dataclasses.replace(solve_flow(instance, ctx, "milp-flow"), ran="highs")
            milp_solver = getattr(ctx.options.milp_solver, "value", "highs")
            if not self.source.startswith("milp"):
                outcome.message += f" (no {self.source} model for LLM_SERVING_FLOW)"
            elif milp_solver != "highs":
                outcome.message += f" (HiGHS: the flow MILP has no {milp_solver} path)"
            return outcome
        if needs_layer_graph(instance):
            # Convex splits, per-tensor transfers, CPUs, backward layers: the DP over ideals
            # or the layer-graph IP (Tarnawski et al.'s problem), not the stage model.
            return solve_layer_graph(instance, ctx, self.source, use_ip=self.layer_graph_ip)
        if not instance.workload.contiguous:
            return ExactOutcome(
                StopReason.HEURISTIC_ONLY,
                bound=quick_bound_ns(instance) / NS_PER_MS,
                message="no exact model for non-contiguous splits: heuristic solution only",
            )
        uniform = comm_is_uniform(instance)
        dp_why = dp_applies(instance)
        if self.use_dp and uniform and dp_why is None:
            return self._dp_fast_path(instance, ctx)
        if not uniform:
            return self._slowest_link(instance, ctx, dp_why is None)
        return self._stage_rounds(instance, ctx)

    def _stage_rounds(self, instance: PartitionInstance, ctx: ExactContext) -> ExactOutcome:
        """The rounds of the class docstring (links uniform)."""
        tables = build_tables(instance)
        if self.parametric and tables.bottleneck:
            return self._bisection(instance, ctx, tables)
        best = ctx.incumbent()
        upper = None if best is None else objective_ns(instance, best.device_of)
        bottleneck = tables.bottleneck
        while True:
            self.last_stats["rounds"] += 1
            model = stage_model(tables, None if upper is None else upper - 1)
            if model is None or model.size > MAX_STAGE_VARS:
                return ExactOutcome(StopReason.SEARCH_EXHAUSTED, message=_TOO_LARGE)
            self.last_stats["stages"] = model.size
            run = None
            if ctx.time_left() <= 0.05:
                return ExactOutcome(StopReason.TIME_LIMIT, message="no time left")
            if model.size:
                run = self._run(model, ctx, None, count_only=bottleneck)
            if run is None or run.infeasible:
                if best is not None and upper is not None:
                    return ExactOutcome(
                        StopReason.PROVEN,
                        bound=upper / NS_PER_MS,
                        proven_optimal=True,
                        proven_solution=best,
                        message=f"{self.source}: no split better than the incumbent",
                    )
                return self._infeasible(instance, True, None)
            if run.chosen is None:
                return ExactOutcome(run.stop, message=run.message)
            found = model.decode(run.chosen)
            ctx.report(found, self.source, None)
            value = objective_ns(instance, found.device_of)
            if not bottleneck:
                if run.proven:
                    return ExactOutcome(
                        StopReason.PROVEN,
                        bound=value / NS_PER_MS,
                        proven_optimal=True,
                        proven_solution=found,
                        message=run.message,
                    )
                return self._stopped(run, value)
            best, upper = found, value
            model = stage_model(tables, upper)
            if model is None:
                return ExactOutcome(StopReason.SEARCH_EXHAUSTED, message=_TOO_LARGE)
            self.last_stats["stages"] = model.size
            if ctx.time_left() <= 0.05:
                return ExactOutcome(StopReason.TIME_LIMIT, message="no time left")
            run = self._run(model, ctx, model.hint(best), count_only=False)
            if run.chosen is not None:
                found = model.decode(run.chosen)
                ctx.report(found, self.source, None)
                value = objective_ns(instance, found.device_of)
                if value <= upper:
                    best, upper = found, value
                if run.proven:
                    return ExactOutcome(
                        StopReason.PROVEN,
                        bound=value / NS_PER_MS,
                        proven_optimal=True,
                        proven_solution=found,
                        message=run.message,
                    )
            if run.stop is not StopReason.PROVEN and ctx.time_left() <= 0.05:
                return self._stopped(run, upper)

    def _bisection(
        self, instance: PartitionInstance, ctx: ExactContext, tables: Tables
    ) -> ExactOutcome:
        """Bottleneck by bisection over the distinct costs of the stages cheaper than the
        incumbent: the optimum is the cost of one of its stages. At a threshold theta the
        model holds the stages costing at most theta and asks for any path (fewest stages).
        Infeasible: every split has a bottleneck above theta (a solver proof). Feasible: the
        path found scores at most theta and becomes the incumbent. When the thresholds below
        the incumbent are all refuted, it is optimal; a time-out leaves the smallest threshold
        not refuted as the bound."""
        best = ctx.incumbent()
        upper = None if best is None else objective_ns(instance, best.device_of)
        full = stage_model(tables, None if upper is None else upper - 1)
        if full is None or full.size > MAX_STAGE_VARS:
            return ExactOutcome(StopReason.SEARCH_EXHAUSTED, message=_TOO_LARGE)
        self.last_stats["stages"] = full.size
        costs = np.unique(full.cost)
        lo = int(np.searchsorted(costs, quick_bound_ns(instance), side="left"))
        hi = len(costs)
        first = best is not None
        while lo < hi:
            if ctx.time_left() <= 0.05:
                return ExactOutcome(
                    StopReason.TIME_LIMIT,
                    bound=float(costs[lo]) / NS_PER_MS,
                    message=f"{self.source}: bisection stopped by the deadline",
                )
            self.last_stats["rounds"] += 1
            # First ask whether anything beats the incumbent at all (usually the proof).
            mid = hi - 1 if first else (lo + hi) // 2
            first = False
            keep = full.cost <= costs[mid]
            model = StageModel(
                tables,
                full.cls[keep],
                full.start[keep],
                full.end[keep],
                full.cost[keep],
                full.counts,
            )
            run = self._run(model, ctx, None, count_only=True)
            if run.infeasible:
                lo = mid + 1
            elif run.chosen is not None:
                best = model.decode(run.chosen)
                ctx.report(best, self.source, None)
                upper = objective_ns(instance, best.device_of)
                hi = int(np.searchsorted(costs, upper, side="left"))
            else:
                return ExactOutcome(
                    run.stop,
                    bound=float(costs[lo]) / NS_PER_MS,
                    message=run.message or f"{self.source}: bisection stopped",
                )
        if best is None or upper is None:
            return self._infeasible(instance, True, None)
        return ExactOutcome(
            StopReason.PROVEN,
            bound=upper / NS_PER_MS,
            proven_optimal=True,
            proven_solution=best,
            message=f"{self.source}: every smaller stage cost refuted",
        )

    @staticmethod
    def _stopped(run: RunOutcome, upper: int) -> ExactOutcome:
        """Stopped before a proof: the solver's bound on the splits it modelled, capped by
        the best split known (which the model may exclude)."""
        bound = None if run.bound_ns is None else min(float(np.ceil(run.bound_ns - 1e-6)), upper)
        return ExactOutcome(
            run.stop, bound=None if bound is None else bound / NS_PER_MS, message=run.message
        )

    def _slowest_link(
        self, instance: PartitionInstance, ctx: ExactContext, dp_ok: bool
    ) -> ExactOutcome:
        """Several link speeds: optimise over the slowest link; bound from the fastest."""
        model = stage_model(build_tables(instance), None)
        if model is not None:
            model.costs_exact = False
        bound_ns = None
        if dp_ok:
            optimistic = try_dp(instance, bandwidth=bandwidth_range(instance)[1])
            bound_ns = None if optimistic is None else optimistic.objective_ns
        note = (
            "several link speeds: optimised over the slowest link, bound from the DP over the "
            "fastest link"
        )
        bound = None if bound_ns is None else bound_ns / NS_PER_MS
        if model is None:
            return ExactOutcome(StopReason.SEARCH_EXHAUSTED, bound=bound, message=_TOO_LARGE)
        self.last_stats["stages"] = model.size
        if model.size == 0:
            return self._infeasible(instance, True, bound_ns)
        if model.size > MAX_STAGE_VARS:
            return ExactOutcome(StopReason.SEARCH_EXHAUSTED, bound=bound, message=note)
        if bound is not None:
            ctx.update_bound(bound)
        run = self._run(model, ctx, None, count_only=False)
        if run.infeasible:
            # Stage memory does not depend on the links: no split fits at all.
            return self._infeasible(instance, True, bound_ns)
        if run.chosen is not None:
            ctx.report(model.decode(run.chosen), self.source, None)
        stop = StopReason.SEARCH_EXHAUSTED if run.stop is StopReason.PROVEN else run.stop
        return ExactOutcome(stop, bound=bound, message=note)

    def _dp_fast_path(self, instance: PartitionInstance, ctx: ExactContext) -> ExactOutcome:
        """The DP's optimum and proof; the stage rounds when the DP's tables are too large."""
        incumbent = ctx.incumbent()
        upper = None if incumbent is None else objective_ns(instance, incumbent.device_of)
        result = try_dp(instance, upper)
        if result is None:
            return self._stage_rounds(instance, ctx)
        self.last_stats.update(dp_states=result.states, objective_ns=result.objective_ns)
        if result.solution is None:
            return self._infeasible(instance, upper is None, None)
        ctx.report(result.solution, "dp", result.objective_ns / NS_PER_MS)
        return ExactOutcome(
            StopReason.PROVEN,
            bound=result.objective_ns / NS_PER_MS,
            proven_optimal=True,
            proven_solution=result.solution,
            message="optimum proved by the exact DP",
            ran="dp",
        )

    def _infeasible(
        self, instance: PartitionInstance, proven: bool, bound_ns: float | None
    ) -> ExactOutcome:
        """No split found: proved infeasible (``proven``), or the model's search ended; the
        message says why no split fits (:func:`.explain.explain_infeasible`)."""
        shortfalls = explain_infeasible(instance)
        text = "; ".join(s["message"] for s in shortfalls[:5]) or "no contiguous split fits"
        if proven:
            return ExactOutcome(
                StopReason.PROVEN, proven_infeasible=True, message=f"no split fits: {text}"
            )
        return ExactOutcome(
            StopReason.SEARCH_EXHAUSTED,
            bound=None if bound_ns is None else bound_ns / NS_PER_MS,
            message=f"the model found no split: {text}",
        )
