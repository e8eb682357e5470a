"""Draw a plan: per device, its cost split by sharding type, and its HBM use."""

from __future__ import annotations

from placement.models.sharding.cost_model import NS_PER_MS, shard_hbm, shard_perf
from placement.models.sharding.instance import SHARDING_TYPES, ShardingInstance, ShardingSolution


def draw(instance: ShardingInstance, solution: ShardingSolution, out_path: str) -> None:
    """Write an image of ``solution`` (format from the suffix of ``out_path``): stacked bars
    of each device's cost (ms) by sharding type, and its HBM use against capacity."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    n = instance.world_size
    cost = {k: [0.0] * n for k in SHARDING_TYPES}
    hbm = [0] * n
    for table, plan in zip(instance.tables, solution.plans, strict=False):
        if plan is None:
            continue
        for s in plan.shards:
            if not 0 <= s.device < n:
                continue
            perf = shard_perf(instance, table, plan.sharding_type, s.cols, s.device)
            cost[plan.sharding_type][s.device] += perf.cost_ns / NS_PER_MS
            hbm[s.device] += shard_hbm(instance, table, plan.sharding_type, s.rows, s.cols)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(5.0, 0.25 * n + 3), 6), sharex=True)
    xs = list(range(n))
    bottom = [0.0] * n
    for kind in SHARDING_TYPES:
        if any(cost[kind]):
            ax.bar(xs, cost[kind], bottom=bottom, label=kind)
            bottom = [a + b for a, b in zip(bottom, cost[kind], strict=True)]
    ax.set_ylabel("cost (ms)")
    ax.legend(fontsize=7)
    ax.set_title(f"{instance.name or 'sharding'}: {len(instance.tables)} tables, {n} devices")
    ax2.bar(xs, [h / d.hbm_bytes for h, d in zip(hbm, instance.devices, strict=True)])
    ax2.axhline(1.0, color="grey", lw=0.8)
    ax2.set_ylabel("HBM used / capacity")
    ax2.set_xticks(xs, [d.name for d in instance.devices], rotation=90, fontsize=6)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
