"""Draw a routing: the network, the chosen paths and their widths, the requests' end points
(sources and destinations labelled), a legend of the requests with their served rates, and the
unserved requests marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.models.entanglement.check import check, request_throughputs
from placement.models.entanglement.explain import SERVED, explain_unplaced
from placement.models.entanglement.instance import EntanglementInstance, EntanglementSolution

if TYPE_CHECKING:  # matplotlib is optional; only the annotation needs it
    from matplotlib.figure import Figure

LEGEND_REQUESTS = 30
"""Requests named in the legend at most (then "... N more")."""
UNSERVED_COLOUR = "#c00000"


def draw(instance: EntanglementInstance, solution: EntanglementSolution, out_path: str) -> Figure:
    """Write an image of the routing (format from the suffix of ``out_path``).

    The network at its coordinates; each path in its request's colour, line width growing
    with its channels; each request's source as a square and its destination as a triangle,
    both labelled with the node's name; an unserved request as a dashed red line between its
    end points with crosses on them. The legend gives each request's end points and its
    served rate (or why it is unserved).

    Returns the figure, already closed, for a caller that inspects what it shows.
    """
    # matplotlib is an optional dependency (plots only), imported when a chart is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the Agg backend (no display here)
    from matplotlib.lines import Line2D  # with pyplot (same optional import)

    fig, ax = plt.subplots(figsize=(11, 8))
    xs = [n.x for n in instance.nodes]
    ys = [n.y for n in instance.nodes]
    for lk in instance.links:
        ax.plot([xs[lk.a], xs[lk.b]], [ys[lk.a], ys[lk.b]], color="0.87", lw=0.7, zorder=1)
    ax.scatter(xs, ys, s=9, color="0.55", zorder=2)
    n_req = len(instance.requests)
    # Reds are left out: red marks the unserved requests.
    cmap = plt.get_cmap("tab10" if n_req <= 9 else "tab20")
    red = {3} if cmap.N == 10 else {6, 7}
    palette = [cmap(i) for i in range(cmap.N) if i not in red]
    colour = [palette[r % len(palette)] for r in range(n_req)]
    for p in solution.paths:
        ax.plot(
            [xs[v] for v in p.nodes],
            [ys[v] for v in p.nodes],
            color=colour[p.request],
            lw=0.8 + 0.6 * p.width,
            alpha=0.75,
            solid_capstyle="round",
            zorder=3,
        )
    rates = request_throughputs(instance, solution)
    why = {u["name"]: u["kind"] for u in explain_unplaced(instance, solution)}
    labelled: set[int] = set()
    handles = []
    for r, req in enumerate(instance.requests):
        served = rates[r] > SERVED
        c = colour[r] if served else UNSERVED_COLOUR
        s, d = req.source, req.destination
        if not served:
            ax.plot(
                [xs[s], xs[d]],
                [ys[s], ys[d]],
                color=UNSERVED_COLOUR,
                lw=1.2,
                ls="--",
                alpha=0.8,
                zorder=3,
            )
        ax.scatter(
            [xs[s]],
            [ys[s]],
            s=70,
            color=c,
            marker="s" if served else "X",
            edgecolor="black",
            linewidth=0.5,
            zorder=5,
        )
        ax.scatter(
            [xs[d]],
            [ys[d]],
            s=80,
            color=c,
            marker="^" if served else "X",
            edgecolor="black",
            linewidth=0.5,
            zorder=5,
        )
        for v in (s, d):
            if v not in labelled:
                labelled.add(v)
                ax.annotate(
                    instance.nodes[v].name,
                    (xs[v], ys[v]),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=7,
                    zorder=6,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
                )
        if r < LEGEND_REQUESTS:
            src, dst = instance.nodes[s].name, instance.nodes[d].name
            state = (
                f"served {rates[r]:.3g}/slot" if served else f"UNSERVED ({why.get(req.name, '')})"
            )
            handles.append(
                Line2D(
                    [],
                    [],
                    color=c,
                    lw=3 if served else 1.5,
                    ls="-" if served else "--",
                    label=f"{req.name}: {src} -> {dst}, {state}",
                )
            )
    if n_req > LEGEND_REQUESTS:
        handles.append(Line2D([], [], color="none", label=f"... {n_req - LEGEND_REQUESTS} more"))
    handles += [
        Line2D([], [], color="0.3", marker="s", ls="none", label="source"),
        Line2D([], [], color="0.3", marker="^", ls="none", label="destination"),
    ]
    if any(x <= SERVED for x in rates):
        handles.append(
            Line2D(
                [], [], color=UNSERVED_COLOUR, marker="X", ls="none", label="unserved end points"
            )
        )
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=7,
        title="requests (line width ~ channels)",
        title_fontsize=8,
        frameon=False,
    )
    report = check(instance, solution)
    served_n = sum(1 for x in rates if x > SERVED)
    ax.set_title(
        f"{instance.name}: {served_n} of {n_req} requests served, {len(solution.paths)} paths; "
        f"{report.terms and next(iter(report.terms))} {report.objective:.4g}",
        fontsize=9,
    )
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return fig
