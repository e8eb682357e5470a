"""QPART's own decision rule, the peer of the exact EDGE_SPLIT_QUANTIZED model.

QPART (Xiangchen Li, Saeid Ghafouri, Bo Ji, Hans Vandierendonck, Deepu John, Dimitrios S.
Nikolopoulos, "QPART: Adaptive Model Quantization and Dynamic Workload Balancing for
Accuracy-aware Edge Inference", arXiv:2506.23934v1, 30 June 2025; no public code found)
decides in two steps (its "offline quantization algorithm" and "online serving algorithm"):

1. offline, for every partition point ``p`` and accuracy requirement, the layer-wise
   bit-widths of layers ``1..p`` that shrink the quantized segment's payload most while the
   accuracy-degradation measure stays within the requirement -- in the paper a closed form
   from the Lagrangian of payload under that measure (each layer's bits where its marginal
   payload saving per marginal degradation equals the multiplier);
2. online, for the device's compute, channel and accuracy requirement, the partition point
   whose pre-computed pattern minimises the weighted time, energy and cost among the ones
   the device and channel can take.

Ours, written from that description (the stored copies held the abstract and summaries,
not the paper's equations): step 1 is the discrete form of the equal-slope rule over the
request's loss table -- start every segment layer at full precision and repeatedly lower
by one allowed width the layer whose step saves the most payload bits per point of loss
added (steps adding no loss first), skipping steps that would break the accuracy budget,
until none fits; step 2 scores each split's pattern by the family's checker figures
(:func:`.edge_split_check.plan_figures`) and keeps the cheapest one within the device and
channel budgets. Both ignore what the exact model weighs jointly: step 1 shrinks payload,
not the weighted objective, and never trades bits between the segment and device time.
"""

from __future__ import annotations

from placement.models.partition.edge_split import EdgeSplitChoice, EdgeTables, instance_tables
from placement.models.partition.edge_split_check import plan_figures, within_budgets
from placement.models.partition.instance import PartitionInstance, PartitionSolution


def segment_bits(t: EdgeTables, p: int) -> tuple[int, ...]:
    """Step 1 for split ``p``: the bit-widths of layers ``0..p-1`` (full precision loses
    nothing, so the start is always within the accuracy budget)."""
    full = len(t.options) - 1
    ks = [full] * p
    loss = 0

    def payload(lay: int, k: int) -> int:
        return t.down_bits[lay][k] + (t.up_bits[lay][k] if lay == p - 1 else 0)

    while True:
        best: tuple[float, int] | None = None
        for lay in range(p):
            k = ks[lay]
            if k == 0:
                continue
            added = t.loss[lay][k - 1] - t.loss[lay][k]
            if loss + added > t.loss_budget:
                continue
            saved = payload(lay, k) - payload(lay, k - 1)
            ratio = float("inf") if added <= 0 else saved / added
            if best is None or ratio > best[0]:
                best = (ratio, lay)
        if best is None:
            break
        lay = best[1]
        loss += t.loss[lay][ks[lay] - 1] - t.loss[lay][ks[lay]]
        ks[lay] -= 1
    return tuple(t.options[k] for k in ks)


def qpart_plan(instance: PartitionInstance) -> PartitionSolution | None:
    """Step 2: the cheapest split's pattern within the device and channel budgets (None when
    no split's pattern fits them)."""
    t = instance_tables(instance)
    best: tuple[int, EdgeSplitChoice] | None = None
    for p in range(t.layers + 1):
        choice = EdgeSplitChoice(p, segment_bits(t, p))
        fig = plan_figures(t, choice)
        if not within_budgets(t, fig):
            continue
        if best is None or fig.objective < best[0]:
            best = (fig.objective, choice)
    return None if best is None else PartitionSolution(edge_split=best[1])


def server_only(instance: PartitionInstance) -> PartitionSolution:
    """Everything on the server at full precision: the input goes up (the plan every
    comparison is measured against)."""
    del instance
    return PartitionSolution(edge_split=EdgeSplitChoice(0, ()))
