"""Draw a partition: one bar per used device, its compute and transfer time, and its layers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from placement.models.partition.check import check, plan_stage_seconds
from placement.models.partition.cost_model import NS_PER_MS, edge_time_ns, layer_time_ns
from placement.models.partition.edge_split_plot import draw_edge_split
from placement.models.partition.instance import PartitionInstance, PartitionSolution

if TYPE_CHECKING:  # matplotlib is optional; only the annotation needs it
    from matplotlib.figure import Figure


def draw(instance: PartitionInstance, solution: PartitionSolution, out_path: str) -> Figure:
    """Write an image of ``solution``'s stages (format from the suffix of ``out_path``).

    Each used device gets a bar: its layers' time and the transfers it sends or receives, in
    milliseconds, labelled with its layer range(s) and memory use.

    Returns the figure, already closed, for a caller that inspects what it shows.
    """
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    if instance.workload.edge_split:
        return draw_edge_split(plt, instance, solution, out_path)
    if instance.workload.flow:
        return _draw_ranges(plt, instance, solution, out_path)
    if instance.workload.plan:
        return _draw_plan(plt, instance, solution, out_path)
    n_dev = len(instance.devices)
    compute = [0] * n_dev
    transfer = [0] * n_dev
    memory = [0] * n_dev
    for layer, d in enumerate(solution.device_of):
        if 0 <= d < n_dev:
            compute[d] += layer_time_ns(instance, layer, d)
            memory[d] += instance.layer_memory_bytes(layer)
    for e in instance.graph_edges:
        a, b = solution.device_of[e.src], solution.device_of[e.dst]
        if a != b and 0 <= a < n_dev and 0 <= b < n_dev:
            t = edge_time_ns(instance, e, a, b)
            transfer[a] += t
            transfer[b] += t
    stages = [s for s in solution.stages() if 0 <= s[0] < n_dev]
    used = list(dict.fromkeys(d for d, _, _ in stages))
    labels = []
    for d in used:
        ranges = [
            f"{instance.layers[i].name}..{instance.layers[j].name}"
            for dd, i, j in stages
            if dd == d
        ]
        dev = instance.devices[d]
        labels.append(
            f"{dev.name} ({dev.type}, {memory[d] / 2**30:.1f}/{dev.memory_bytes / 2**30:.1f} GiB)"
            f"\n{', '.join(ranges)}"
        )
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(used) + 1.5))
    y = list(range(len(used)))
    ax.barh(y, [compute[d] / NS_PER_MS for d in used], label="layers", color="#4c72b0")
    ax.barh(
        y,
        [transfer[d] / NS_PER_MS for d in used],
        left=[compute[d] / NS_PER_MS for d in used],
        label="transfers",
        color="#dd8452",
    )
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time per micro-batch / step / sample (ms)")
    report = check(instance, solution)
    terms = ", ".join(f"{k} {v:.4g}" for k, v in report.terms.items())
    ax.set_title(
        f"{instance.name or 'partition'}: {terms}; {len(stages)} stage(s) on {len(used)} of "
        f"{n_dev} devices" + ("" if report.feasible else " (INFEASIBLE: see placement check)"),
        fontsize=9,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
    return fig


def _draw_ranges(
    plt: Any, instance: PartitionInstance, solution: PartitionSolution, out_path: str
) -> Figure:
    """LLM_SERVING_FLOW: one row per device (devices in instance order, unused ones left
    empty), a bar over the layers it holds, coloured by device type."""
    n_dev, n_layers = len(instance.devices), len(instance.layers)
    held = {d: (s, k) for d, s, k in solution.ranges if 0 <= d < n_dev}
    types = sorted({dev.type for dev in instance.devices})
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9, 0.25 * n_dev + 1.5))
    for d, dev in enumerate(instance.devices):
        if d in held:
            first, count = held[d]
            ax.barh(d, count, left=first, color=colours(types.index(dev.type) % 10))
    ax.set_yticks(
        range(n_dev), [f"{dev.name} ({dev.type})" for dev in instance.devices], fontsize=6
    )
    ax.invert_yaxis()
    ax.set_xlim(0, n_layers)
    ax.set_xlabel("layer")
    report = check(instance, solution)
    value = report.terms.get("tokens_per_s", 0.0)
    ax.set_title(
        f"{instance.name or 'partition'}: max flow {value:.6g} tokens/s; {len(held)} of "
        f"{n_dev} devices hold layers"
        + ("" if report.feasible else " (INFEASIBLE: see placement check)"),
        fontsize=9,
    )
    # matplotlib is loaded by draw() already
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=colours(i % 10), label=t) for i, t in enumerate(types)], fontsize=8
    )
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
    return fig


def _draw_plan(
    plt: Any, instance: PartitionInstance, solution: PartitionSolution, out_path: str
) -> Figure:
    """Serving plans: one row per stage (pipelines one after another), a bar of its decode
    step's milliseconds, labelled with its devices and layer range."""
    n_dev, n_layers = len(instance.devices), len(instance.layers)
    labels: list[str] = []
    times: list[float] = []
    for p, stages in enumerate(solution.pipelines, start=1):
        for s, (devs, first, count) in enumerate(stages, start=1):
            ok = [d for d in devs if 0 <= d < n_dev]
            names = ", ".join(instance.devices[d].name for d in ok) or "?"
            labels.append(f"P{p}.{s} {names}: layers {first}..{first + count - 1}")
            valid = ok and len(ok) == len(devs) and count > 0 and first + count <= n_layers
            seconds = plan_stage_seconds(instance, tuple(ok), first, count) if valid else 0.0
            times.append(seconds * 1e3)
    fig, ax = plt.subplots(figsize=(9, 0.3 * max(len(labels), 1) + 1.5))
    y = list(range(len(labels)))
    ax.barh(y, times, color="#4c72b0")
    ax.set_yticks(y, labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("decode step of one micro-batch (ms)")
    report = check(instance, solution)
    value = report.terms.get("tokens_per_s", 0.0)
    ax.set_title(
        f"{instance.name or 'partition'}: {value:.6g} tokens/s; {len(solution.pipelines)} "
        f"pipeline(s), {len(labels)} stage(s)"
        + ("" if report.feasible else " (INFEASIBLE: see placement check)"),
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
    return fig
