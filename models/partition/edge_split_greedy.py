"""The fallback of EDGE_SPLIT_QUANTIZED: every split with one bit-width for all its device
layers, the cheapest within the budgets (everything on the server is among them).

QPART's own rule, the peer the bench measures, is :mod:`.peers.qpart`.
"""

from __future__ import annotations

from placement.models.partition.edge_split import EdgeSplitChoice, instance_tables
from placement.models.partition.edge_split_check import plan_figures, within_budgets
from placement.models.partition.instance import PartitionInstance, PartitionSolution


def uniform_width_plan(instance: PartitionInstance) -> PartitionSolution:
    """The cheapest plan ``(p, (b,) * p)`` within the budgets over every ``p`` and allowed
    ``b``; everything on the server when none fits (the checker then says why)."""
    t = instance_tables(instance)
    best = (None, EdgeSplitChoice(0, ()))
    for p in range(t.layers + 1):
        for b in t.options if p else (t.options[-1],):
            choice = EdgeSplitChoice(p, (b,) * p)
            fig = plan_figures(t, choice)
            if not within_budgets(t, fig):
                continue
            if best[0] is None or fig.objective < best[0]:
                best = (fig.objective, choice)
    return PartitionSolution(edge_split=best[1])
