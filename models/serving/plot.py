"""Draw a configuration: instances per deployment with the fluid model's loads (the latency
distributions the simulator measures are drawn by the benchmark report,
``benchmarks/serving``: the family's own modules do not import :mod:`.sim`)."""

from __future__ import annotations

from placement.models.serving.check import deployment_loads
from placement.models.serving.fluid import rows
from placement.models.serving.instance import ServingInstance, ServingSolution, kinds


def draw(instance: ServingInstance, solution: ServingSolution, out_path: str) -> None:
    """Write an image of ``solution`` (format from the suffix of ``out_path``): per
    deployment its instances, labelled with its prefill and decode loads."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    ks = kinds(instance)
    rs = rows(instance)
    loads = deployment_loads(instance, solution)
    fig, ax = plt.subplots(1, 1, figsize=(max(5.0, 0.6 * len(solution.deployments) + 3), 4))
    names = [ks[d.kind].name for d in solution.deployments]
    xs = list(range(len(names)))
    ax.bar(xs, [d.instances for d in solution.deployments])
    ax.set_xticks(xs, names, rotation=60, fontsize=6, ha="right")
    ax.set_ylabel("instances")
    for i, (d, load) in enumerate(zip(solution.deployments, loads, strict=True)):
        row = rs[d.kind]
        shown = [
            load.prefill / (d.instances * row.prefill_cap) if row.prefill_cap else 0,
            load.decode / (d.instances * row.decode_cap) if row.decode_cap else 0,
        ]
        ax.text(
            i,
            d.instances,
            " / ".join(f"{100 * s:.0f}%" for s in shown),
            ha="center",
            fontsize=6,
            va="bottom",
        )
    ax.set_title(f"{instance.name or 'serving'} (prefill / decode load)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
