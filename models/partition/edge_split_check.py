"""Independent checker of EDGE_SPLIT_QUANTIZED solutions (QPART's split and bit-widths).

It imports no encoding and no heuristic: it walks the plan layer by layer over the request's
integer tables (:func:`.edge_split.instance_tables`, the cost model) and checks, as in
docs/formulations/partition.md ("Quantized edge splits (QPART)"):

1. ``0 <= device_layers <= L`` and one bit-width per device layer;
2. each bit-width is one the request allows (its ``bit_widths`` or full precision);
3. the device's compute time (its layers' FLOPs x bits / full bits over its speed) is within
   ``device_compute_budget_s``;
4. the channel time (the device layers' weights at their bits sent down, the last device
   layer's output at its bits sent up; no device layer: the input sent up) is within
   ``channel_budget_s``;
5. the summed accuracy loss of the device layers is within ``accuracy_budget_pp``.

The objective, ``request_cost`` (minimised), is QPART's weighted sum of end-to-end time,
device energy and server cost, from the same integer terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.models.partition.edge_split import (
    LOSS_UNITS,
    UNITS,
    EdgeSplitChoice,
    EdgeTables,
    instance_tables,
)
from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.solver.family import CheckReport

OBJECTIVE = "request_cost"
"""The checker's one term."""


@dataclass(frozen=True)
class PlanFigures:
    """What a plan costs, in the tables' integers (see :class:`.edge_split.EdgeTables`)."""

    objective: int
    device_ns: int
    channel_ns: int
    loss: int
    payload_bits: int
    """Bits on the channel: the quantized segment down plus the output (or input) up."""
    full_precision_payload_bits: int
    """The same split's payload with every device layer at full precision."""

    @property
    def cost(self) -> float:
        """The objective in its unit."""
        return self.objective / UNITS

    @property
    def loss_pp(self) -> float:
        """The accuracy loss in percentage points."""
        return self.loss / LOSS_UNITS


def plan_figures(t: EdgeTables, choice: EdgeSplitChoice) -> PlanFigures:
    """The figures of a well-formed plan (split in range, allowed bit-widths)."""
    p = choice.device_layers
    ks = [t.options.index(b) for b in choice.bits]
    full = len(t.options) - 1
    objective = sum(t.dev_obj[lay][k] for lay, k in enumerate(ks)) + t.server_obj_from(p)
    device_ns = sum(t.dev_ns[lay][k] for lay, k in enumerate(ks))
    channel_ns = sum(t.down_ns[lay][k] for lay, k in enumerate(ks))
    loss = sum(t.loss[lay][k] for lay, k in enumerate(ks))
    payload = sum(t.down_bits[lay][k] for lay, k in enumerate(ks))
    full_payload = sum(t.down_bits[lay][full] for lay in range(p))
    if p == 0:
        objective += t.in_obj
        channel_ns += t.in_ns
        payload += t.in_bits
        full_payload += t.in_bits
    else:
        last = ks[-1]
        objective += t.up_obj[p - 1][last]
        channel_ns += t.up_ns[p - 1][last]
        payload += t.up_bits[p - 1][last]
        full_payload += t.up_bits[p - 1][full]
    return PlanFigures(objective, device_ns, channel_ns, loss, payload, full_payload)


def within_budgets(t: EdgeTables, fig: PlanFigures) -> bool:
    """Whether a well-formed plan's figures meet the device, channel and accuracy budgets."""
    device_ok = t.device_budget_ns is None or fig.device_ns <= t.device_budget_ns
    channel_ok = t.channel_budget_ns is None or fig.channel_ns <= t.channel_budget_ns
    return device_ok and channel_ok and fig.loss <= t.loss_budget


def _over(what: str, value: int, budget: int, unit: str, scale: int) -> str:
    return (
        f"{what} {value / scale:.9g} {unit} is over the budget {budget / scale:.9g} {unit} "
        f"(by {(value - budget) / scale:.9g})"
    )


def check_edge_split(instance: PartitionInstance, solution: PartitionSolution) -> CheckReport:
    """Check a plan of an EDGE_SPLIT_QUANTIZED instance; list every violation."""
    t = instance_tables(instance)
    violations: list[str] = []
    choice = solution.edge_split
    if solution.device_of or solution.ranges or solution.pipelines:
        violations.append(
            "assignments, ranges or pipelines given: an EDGE_SPLIT_QUANTIZED solution gives "
            "edge_split only"
        )
    if choice is None:
        violations.append("no edge_split (the split and the device layers' bit-widths)")
        return CheckReport(False, violations, {OBJECTIVE: float("inf")}, ("min",))
    p, bits = choice.device_layers, choice.bits
    names = [lay.name for lay in instance.layers]
    if not 0 <= p <= t.layers:
        violations.append(f"device_layers {p} is outside 0..{t.layers} (the model's layers)")
    elif len(bits) != p:
        violations.append(f"{len(bits)} bit-widths for {p} device layers (one per device layer)")
    else:
        for lay, b in enumerate(bits):
            if b not in t.options:
                violations.append(
                    f"layer {names[lay]!r}: {b} bits is not an allowed bit-width "
                    f"({', '.join(map(str, t.options))})"
                )
    if violations:
        return CheckReport(False, violations, {OBJECTIVE: float("inf")}, ("min",))
    fig = plan_figures(t, choice)
    if t.device_budget_ns is not None and fig.device_ns > t.device_budget_ns:
        violations.append(
            _over("device compute time", fig.device_ns, t.device_budget_ns, "s", UNITS)
        )
    if t.channel_budget_ns is not None and fig.channel_ns > t.channel_budget_ns:
        violations.append(_over("channel time", fig.channel_ns, t.channel_budget_ns, "s", UNITS))
    if fig.loss > t.loss_budget:
        violations.append(_over("accuracy loss", fig.loss, t.loss_budget, "pp", LOSS_UNITS))
    feasible = not violations
    value = fig.cost if feasible else float("inf")
    return CheckReport(feasible, violations, {OBJECTIVE: value}, ("min",))
