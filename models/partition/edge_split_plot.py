"""Draw an EDGE_SPLIT_QUANTIZED plan: each layer's bit-width (device layers) or the server,
and the request's figures in the title."""

from __future__ import annotations

from typing import Any

from placement.models.partition.edge_split import instance_tables
from placement.models.partition.edge_split_check import check_edge_split, plan_figures
from placement.models.partition.instance import PartitionInstance, PartitionSolution


def draw_edge_split(
    plt: Any, instance: PartitionInstance, solution: PartitionSolution, out_path: str
) -> Any:
    """Bars of bits per layer: device layers at their width, server layers at full precision
    in another colour; the title gives the request cost, payload and accuracy loss."""
    t = instance_tables(instance)
    report = check_edge_split(instance, solution)
    choice = solution.edge_split
    p = choice.device_layers if choice is not None and report.feasible else 0
    bits = list(choice.bits) if choice is not None and report.feasible else []
    full = t.options[-1]
    names = [lay.name for lay in instance.layers]
    heights = bits + [full] * (len(names) - p)
    colours = ["tab:orange"] * p + ["tab:blue"] * (len(names) - p)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(names)), 4.0))
    ax.bar(range(len(names)), heights, color=colours)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_ylabel("bits (orange: device, quantized; blue: server)")
    if report.feasible and choice is not None:
        fig_ = plan_figures(t, choice)
        ratio = fig_.payload_bits / fig_.full_precision_payload_bits if fig_.payload_bits else 0
        ax.set_title(
            f"split after {p} layers: cost {fig_.cost:.4g}, payload {fig_.payload_bits / 8e6:.3g} "
            f"MB ({100 * ratio:.1f} % of full precision), loss {fig_.loss_pp:.3g} pp",
            fontsize=9,
        )
    else:
        ax.set_title("infeasible plan: " + "; ".join(report.violations)[:120], fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
    return fig
