"""The exact EDGE_SPLIT_QUANTIZED model: QPART's split point and bit-widths as one integer
program, on CP-SAT or a MILP solver (the same :class:`~placement.solver.linear.LinearModel`).

Variables (docs/formulations/partition.md, "Quantized edge splits (QPART)"): ``s_p`` = 1 when
the first ``p`` layers run on the device (``p = 0..L``); ``x_{l,k}`` = 1 when layer ``l`` runs
on the device at ``options[k]`` bits; ``z_{l,k}`` = 1 when layer ``l`` is the last device layer
and runs at ``options[k]`` bits (its output goes up at that width). Rows::

    sum_p s_p = 1
    sum_k x_{l,k} = sum_{p > l} s_p                      (layer l on the device iff p > l)
    sum_k z_{l,k} = s_{l+1},   z_{l,k} <= x_{l,k}
    sum dev_ns x <= device budget
    sum down_ns x + sum up_ns z + in_ns s_0 <= channel budget
    sum loss x <= accuracy budget

Objective: ``sum dev_obj x + sum up_obj z + in_obj s_0 + sum_p S_p s_p`` with ``S_p`` the
server's terms for layers ``p..L-1``: every coefficient an integer of
:func:`.edge_split.edge_tables`, so CP-SAT's proof is exact and a MILP's dual bound is
rounded up to the next integer. Options whose loss alone exceeds the budget are fixed to 0.
"""

from __future__ import annotations

import math

from placement.models.partition.edge_split import (
    UNITS,
    EdgeSplitChoice,
    EdgeTables,
    instance_tables,
)
from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel, Objective
from placement.solver.linear_backends import CpSatLinear, LinearBackend, MilpLinear
from placement.solver.result import StopReason


class EdgeModel:
    """The integer program of one request and the decoding of its values."""

    def __init__(self, instance: PartitionInstance) -> None:
        t = instance_tables(instance)
        self.tables = t
        n, n_opt = t.layers, len(t.options)
        m = LinearModel()
        self.model = m
        self.s = [m.var(0, 1, "s") for _ in range(n + 1)]
        self.x = [
            [m.var(0, 1 if t.loss[lay][k] <= t.loss_budget else 0, "x") for k in range(n_opt)]
            for lay in range(n)
        ]
        self.z = [[m.var(0, 1, "z") for _ in range(n_opt)] for _ in range(n)]
        m.row([(v, 1) for v in self.s], 1, 1)
        for lay in range(n):
            on = [(v, 1) for v in self.x[lay]] + [(self.s[p], -1) for p in range(lay + 1, n + 1)]
            m.row(on, 0, 0)
            m.row([(v, 1) for v in self.z[lay]] + [(self.s[lay + 1], -1)], 0, 0)
            for k in range(n_opt):
                m.row([(self.z[lay][k], 1), (self.x[lay][k], -1)], None, 0)
        if t.device_budget_ns is not None:
            m.row(self._terms(t.dev_ns, None, 0), None, t.device_budget_ns)
        if t.channel_budget_ns is not None:
            m.row(self._terms(t.down_ns, t.up_ns, t.in_ns), None, t.channel_budget_ns)
        m.row(self._terms(t.loss, None, 0), None, t.loss_budget)
        obj = Objective()
        for var, coef in self._terms(t.dev_obj, t.up_obj, t.in_obj):
            obj.add(var, coef)
        for p in range(n + 1):
            obj.add(self.s[p], t.server_obj_from(p))
        self.objective = obj

    def _terms(
        self,
        on_device: tuple[tuple[int, ...], ...],
        sent_up: tuple[tuple[int, ...], ...] | None,
        input_term: int,
    ) -> list[tuple[int, int]]:
        """A row's terms: per (layer, option) on the device, per (layer, option) sent up,
        and the input's term on ``s_0``."""
        out = [(self.x[lay][k], c) for lay, row in enumerate(on_device) for k, c in enumerate(row)]
        if sent_up is not None:
            out += [
                (self.z[lay][k], c) for lay, row in enumerate(sent_up) for k, c in enumerate(row)
            ]
        if input_term:
            out.append((self.s[0], input_term))
        return out

    def decode(self, values: list[float]) -> PartitionSolution:
        """The plan of a solution's values."""
        p = next((i for i, v in enumerate(self.s) if values[v] > 0.5), 0)
        bits = []
        for lay in range(p):
            k = next((k for k, v in enumerate(self.x[lay]) if values[v] > 0.5), 0)
            bits.append(self.tables.options[k])
        return PartitionSolution(edge_split=EdgeSplitChoice(p, tuple(bits)))

    def hint(self, solution: PartitionSolution | None) -> list[int] | None:
        """The values of a plan (None when it is not one of this request)."""
        choice = None if solution is None else solution.edge_split
        t = self.tables
        if choice is None or not 0 <= choice.device_layers <= t.layers:
            return None
        if len(choice.bits) != choice.device_layers or any(b not in t.options for b in choice.bits):
            return None
        values = [0] * self.model.num_vars
        values[self.s[choice.device_layers]] = 1
        for lay, b in enumerate(choice.bits):
            k = t.options.index(b)
            values[self.x[lay][k]] = 1
            if lay == choice.device_layers - 1:
                values[self.z[lay][k]] = 1
        return values


def solve_edge_split(instance: PartitionInstance, ctx: ExactContext, source: str) -> ExactOutcome:
    """The exact encoding's EDGE_SPLIT_QUANTIZED path: the integer program on ``source``'s
    backend (``cpsat``: CP-SAT; else the MILP solver of the options), hinted with the
    incumbent, every improving plan reported on ``ctx`` (the checker scores it)."""
    em = EdgeModel(instance)
    backend: LinearBackend
    if source == "cpsat":
        backend = CpSatLinear(ctx.options)
    else:
        backend = MilpLinear(ctx.options, "partition-edge-split", warm_start_on_highs=False)
    backend.load(em.model)

    def bound_of(raw: float | None) -> float | None:
        """A solver bound as the objective's: integer coefficients, so round up."""
        return None if raw is None else math.ceil(raw - 1e-6) / UNITS

    def on_values(values: list[float], solver_bound: float | None) -> None:
        ctx.report(em.decode(values), backend.source, bound_of(solver_bound))

    with deadline_token(ctx.cancel, ctx.time_left()) as token:
        run, final = backend.run(
            "min",
            em.objective.terms,
            0.0,
            em.hint(ctx.incumbent()),
            max(0.0, ctx.time_left()),
            token,
            on_values,
        )
    if run.status == RunStatus.INFEASIBLE:
        return ExactOutcome(
            StopReason.PROVEN,
            proven_infeasible=True,
            message=f"{why_infeasible(em.tables)} ({backend.source} proved no plan fits)",
        )
    if not run.has_solution or final is None:
        return ExactOutcome(
            StopReason.TIME_LIMIT if ctx.time_left() <= 0 else run.stop_reason,
            bound=bound_of(run.bound),
            message=f"{backend.source}: no plan ({run.message})",
        )
    plan = em.decode(final)
    value = round(em.objective.value(final))
    ctx.report(plan, backend.source, bound_of(run.bound))
    proven = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
    if proven and run.objective is not None and abs(run.objective - value) > 0.5:
        proven = False  # a wrapper's objective that its values do not reach proves nothing
    if proven:
        return ExactOutcome(
            StopReason.PROVEN,
            bound=value / UNITS,
            proven_optimal=True,
            proven_solution=plan,
            message=f"split after {plan.edge_split.device_layers} layers proved optimal by "
            f"{backend.source} (request cost {value / UNITS:.9g})",
        )
    return ExactOutcome(
        run.stop_reason,
        bound=bound_of(run.bound),
        message=f"{backend.source}: request cost {value / UNITS:.9g}, not proved",
    )


def edge_quick_bound(instance: PartitionInstance) -> float:
    """A lower bound on the request cost: the cheapest split with every device layer (and
    the output sent up) at its cheapest width, the budgets left out."""
    t = instance_tables(instance)
    best = t.in_obj + t.server_obj_from(0)
    prefix = 0
    for p in range(1, t.layers + 1):
        prefix += min(t.dev_obj[p - 1])
        best = min(best, prefix + min(t.up_obj[p - 1]) + t.server_obj_from(p))
    return best / UNITS


def why_infeasible(t: EdgeTables) -> str:
    """What no plan can meet, and by how much: the channel when even the cheapest plan on it
    (every device layer at its lowest width within the accuracy budget) is over its budget,
    else the budgets together."""
    channel = t.in_ns
    for p in range(1, t.layers + 1):
        allowed = [
            [k for k in range(len(t.options)) if t.loss[lay][k] <= t.loss_budget]
            for lay in range(p)
        ]
        least = sum(min(t.down_ns[lay][k] for k in ks) for lay, ks in enumerate(allowed))
        channel = min(channel, least + min(t.up_ns[p - 1][k] for k in allowed[-1]))
    if t.channel_budget_ns is not None and channel > t.channel_budget_ns:
        return (
            f"the channel: every plan needs at least {channel / UNITS:.6g} s on it "
            f"(everything on the server: {t.in_ns / UNITS:.6g} s for the input), the budget is "
            f"{t.channel_budget_ns / UNITS:.6g} s ({(channel - t.channel_budget_ns) / UNITS:.6g} "
            "s short)"
        )
    return (
        "no split and bit-widths meet the device, channel and accuracy budgets together "
        "(each alone can be met)"
    )
