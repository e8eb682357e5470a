"""Draw a routing: the network, the chosen paths and their widths, the requests' end points."""

from __future__ import annotations

from placement.models.entanglement.instance import EntanglementInstance, EntanglementSolution


def draw(
    instance: EntanglementInstance, solution: EntanglementSolution, out_path: str
) -> None:
    """Write an image of the routing (format from the suffix of ``out_path``): the network at
    its coordinates, each path in its request's colour with line width growing with the
    channels, and the requests' end points as squares."""
    # matplotlib is an optional dependency (plots only), imported when a chart is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the Agg backend (no display here)

    fig, ax = plt.subplots(figsize=(8, 8))
    xs = [n.x for n in instance.nodes]
    ys = [n.y for n in instance.nodes]
    for lk in instance.links:
        ax.plot([xs[lk.a], xs[lk.b]], [ys[lk.a], ys[lk.b]], color="0.85", lw=0.8, zorder=1)
    ax.scatter(xs, ys, s=10, color="0.4", zorder=2)
    colours = plt.get_cmap("tab10")
    for p in solution.paths:
        c = colours(p.request % 10)
        ax.plot(
            [xs[v] for v in p.nodes],
            [ys[v] for v in p.nodes],
            color=c,
            lw=0.8 + 0.6 * p.width,
            alpha=0.7,
            zorder=3,
        )
    for r, req in enumerate(instance.requests):
        c = colours(r % 10)
        ax.scatter(
            [xs[req.source], xs[req.destination]],
            [ys[req.source], ys[req.destination]],
            s=60,
            color=c,
            marker="s",
            zorder=4,
        )
        ax.annotate(req.name, (xs[req.source], ys[req.source]), fontsize=7)
    ax.set_title(f"{instance.name}: {len(solution.paths)} paths (line width ~ channels)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
