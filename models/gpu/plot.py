"""Draw a GPU allocation: every GPU of the cluster as a cell, nodes grouped by rack and spine,
each GPU filled by the job(s) holding it (a fractional share fills its part of the cell), the
running work in grey, and the jobs left unplaced listed beside the cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from placement.models.gpu.check import check
from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.instance import MILLI, GpuInstance, GpuSolution

if TYPE_CHECKING:  # matplotlib is optional; only the annotation needs it
    from matplotlib.figure import Figure

LEGEND_JOBS = 20
"""Placed jobs named in the legend at most (beyond, the colours cycle and a note says so)."""
UNPLACED_LISTED = 20
"""Unplaced jobs listed beside the cluster at most (then "... N more")."""
NODE_LABELS = 48
"""Nodes named beside their GPUs when the cluster has at most this many."""
MAX_WIDTH_IN, MAX_HEIGHT_IN = 11.0, 11.0
"""The cluster's part of the picture at most (racks wrap into rows to fill it)."""
MAX_CELL_IN = 0.45
"""A GPU cell's size at most (a small cluster is not blown up to the page)."""
SIDE_WIDTH_IN = 3.6
RUNNING_COLOUR = "0.72"
FREE_COLOUR = "white"


def _blocks(instance: GpuInstance) -> list[tuple[tuple[str, ...], list[int]]]:
    """Nodes by innermost group (rack), racks ordered by their outer groups (spine first)."""
    by_group: dict[tuple[str, ...], list[int]] = {}
    for n, node in enumerate(instance.nodes):
        by_group.setdefault(tuple(reversed(node.groups)), []).append(n)
    return sorted(by_group.items(), key=lambda kv: kv[0])


def _colour_table(n: int) -> list[Any]:
    """``n`` distinguishable colours: tab20, then tab20b/tab20c, then a hue wheel."""
    import matplotlib.pyplot as plt  # already imported by draw (Agg chosen there)

    # tab20's strong colours first, then its pale ones: neighbours in job order differ most.
    tab20 = plt.get_cmap("tab20")
    # Greys are left out: grey is the running work.
    base = [tab20(i) for i in range(0, 20, 2) if i != 14]
    base += [tab20(i) for i in range(1, 20, 2) if i != 15]
    base += [plt.get_cmap("tab20b")(i) for i in range(20)]
    base += [plt.get_cmap("tab20c")(i) for i in range(16)]
    if n <= len(base):
        return base[:n]
    wheel = plt.get_cmap("hsv")
    return base + [wheel((i * 0.618034) % 1.0) for i in range(n - len(base))]


def draw(instance: GpuInstance, solution: GpuSolution, out_path: str) -> Figure:
    """Write an image of ``solution`` to ``out_path`` (format from the suffix).

    One cell per GPU; a node is a row of its GPUs, a rack a column of its nodes, racks of one
    spine side by side under the spine's name. A cell's height is shared out in proportion to
    milli-GPU: grey for running work, the job's colour for each placed worker's share, white
    for what is left free. The legend names the placed jobs (the first ``LEGEND_JOBS``), and
    the unplaced jobs are listed with the reason kind.

    Returns the figure, already closed, for a caller that inspects what it shows.
    """
    # matplotlib is an optional dependency (plots only), imported when a chart is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the Agg backend (no display here)
    from matplotlib.collections import PatchCollection  # with pyplot (same optional import)
    from matplotlib.patches import Patch, Rectangle  # with pyplot (same optional import)

    placed = solution.placed_jobs()
    colours = dict(zip(placed, _colour_table(len(placed)), strict=True))
    # Per node and GPU, the (job, milli) shares the solution puts there.
    shares: dict[tuple[int, int], list[tuple[int, int]]] = {}
    cpu_only: dict[int, list[int]] = {}
    for j in placed:
        job = instance.jobs[j]
        for w in solution.placements[j]:
            if not w.gpus:
                cpu_only.setdefault(w.node, []).append(j)
            for g in w.gpus:
                milli = MILLI if job.kind == "whole" else job.gpu_milli
                shares.setdefault((w.node, g), []).append((j, milli))

    blocks = _blocks(instance)
    widest = max((n.gpu_count for n in instance.nodes), default=1) or 1
    tallest = max((len(b) for _, b in blocks), default=1)
    node_labels = len(instance.nodes) <= NODE_LABELS
    margin = 2.5 if node_labels else 0.0
    col_w, row_h = widest + 1.2 + margin, tallest + 2.6
    # Racks wrap into rows: the number per row that gives the largest cells on the page.
    best = (0.0, 1)
    for per_row in range(1, len(blocks) + 1):
        rows = -(-len(blocks) // per_row)
        inch = min(MAX_WIDTH_IN / (per_row * col_w), MAX_HEIGHT_IN / (rows * row_h), MAX_CELL_IN)
        if inch > best[0] + 1e-9:
            best = (inch, per_row)
    inch, per_row = best
    rows = -(-len(blocks) // per_row)
    label_pt = max(4.0, min(8.0, inch * 72 * 0.75))

    cells: list[Rectangle] = []
    cell_colours: list[Any] = []
    outlines: list[Rectangle] = []
    texts: list[tuple[float, float, str, dict[str, Any]]] = []
    last_outer: tuple[str, ...] | None = None
    for b, (groups, nodes) in enumerate(blocks):
        x0 = (b % per_row) * col_w + margin
        y0 = (b // per_row) * row_h + 1.6
        outer = groups[:-1]
        texts.append(
            (
                x0,
                y0 - 0.2,
                groups[-1] if groups else "cluster",
                {"fontsize": label_pt, "va": "bottom"},
            )
        )
        if outer and outer != last_outer:
            texts.append(
                (
                    x0,
                    y0 - 1.3,
                    "/".join(outer),
                    {"fontsize": label_pt, "va": "bottom", "weight": "bold"},
                )
            )
        last_outer = outer
        for r, n in enumerate(nodes):
            node = instance.nodes[n]
            y = y0 + r
            if node_labels:
                texts.append(
                    (
                        x0 - 0.2,
                        y + 0.45,
                        node.name,
                        {"fontsize": label_pt, "ha": "right", "va": "center"},
                    )
                )
            for g in range(node.gpu_count):
                x = x0 + g
                filled = 0.0
                used = min(node.gpu_milli_used[g], MILLI) / MILLI
                if used > 0:
                    cells.append(Rectangle((x, y + 0.9 - used * 0.9), 0.9, used * 0.9))
                    cell_colours.append(RUNNING_COLOUR)
                    filled = used
                for j, milli in shares.get((n, g), []):
                    h = min(milli / MILLI, 1.0 - filled)
                    top = y + 0.9 - filled * 0.9
                    cells.append(Rectangle((x, top - h * 0.9), 0.9, h * 0.9))
                    cell_colours.append(colours[j])
                    filled += h
                outlines.append(Rectangle((x, y), 0.9, 0.9))
            # CPU-only workers hold no GPU: a small square in each job's colour after the node.
            for k, j in enumerate(cpu_only.get(n, [])[:3]):
                cells.append(Rectangle((x0 + node.gpu_count + 0.05 + 0.35 * k, y + 0.3), 0.3, 0.3))
                cell_colours.append(colours[j])

    unplaced = [j for j in range(len(instance.jobs)) if j not in solution.placements]
    cluster_w, cluster_h = per_row * col_w * inch, rows * row_h * inch
    side_lines = min(len(placed), LEGEND_JOBS) + 5
    if unplaced:
        side_lines += min(len(unplaced), UNPLACED_LISTED) + 3
    fig_w, fig_h = cluster_w + SIDE_WIDTH_IN, max(cluster_h, 0.155 * side_lines) + 0.5
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes(
        (0.0, (fig_h - 0.5 - cluster_h) / fig_h, cluster_w / fig_w, cluster_h / fig_h)
    )
    side = fig.add_axes((cluster_w / fig_w, 0.0, SIDE_WIDTH_IN / fig_w, (fig_h - 0.5) / fig_h))
    side.axis("off")
    ax.add_collection(
        PatchCollection(outlines, facecolor=FREE_COLOUR, edgecolor="0.3", linewidth=0.4)
    )
    ax.add_collection(PatchCollection(cells, facecolor=cell_colours, edgecolor="none"))
    for x, y, text, kw in texts:
        ax.text(x, y, text, **kw)
    ax.set_xlim(-0.3, per_row * col_w)
    ax.set_ylim(rows * row_h, 0.0)
    ax.axis("off")

    handles = [
        Patch(facecolor=RUNNING_COLOUR, label="running work"),
        Patch(facecolor=FREE_COLOUR, edgecolor="0.3", label="free"),
    ]
    for j in placed[:LEGEND_JOBS]:
        job = instance.jobs[j]
        handles.append(
            Patch(
                facecolor=colours[j], label=f"{job.name} ({job.workers} x {job.describe_worker()})"
            )
        )
    if len(placed) > LEGEND_JOBS:
        handles.append(
            Patch(
                facecolor="none",
                edgecolor="none",
                label=f"... {len(placed) - LEGEND_JOBS} more placed jobs",
            )
        )
    placed_legend = side.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, 1.0),
        fontsize=7,
        title="GPUs held by",
        title_fontsize=8,
        frameon=False,
        alignment="left",
    )
    side.add_artist(placed_legend)

    if unplaced:
        kinds = {
            r.get("name", r.get("job")): r.get("kind", "")
            for r in explain_unplaced(instance, solution)
        }
        lines = []
        for j in unplaced[:UNPLACED_LISTED]:
            job = instance.jobs[j]
            why = kinds.get(job.name, "")
            lines.append(
                f"{job.name}: {job.workers} x {job.describe_worker()}"
                + (f" [{why}]" if why else "")
            )
        if len(unplaced) > UNPLACED_LISTED:
            lines.append(f"... {len(unplaced) - UNPLACED_LISTED} more")
        # Below the placed jobs' legend, wherever its last line ended.
        fig.canvas.draw()
        box = placed_legend.get_window_extent().transformed(side.transAxes.inverted())
        side.legend(
            handles=[Patch(facecolor="none", edgecolor="none", label=t) for t in lines],
            loc="upper left",
            bbox_to_anchor=(0.0, box.y0 - 0.01),
            fontsize=7,
            title=f"unplaced jobs ({len(unplaced)})",
            title_fontsize=8,
            frameon=False,
            alignment="left",
            labelcolor="#a00000",
            handlelength=0,
            handletextpad=0,
        )

    report = check(instance, solution)
    terms = ", ".join(f"{k} {v:.4g}" for k, v in report.terms.items())
    fig.suptitle(
        f"{instance.name or 'gpu'}: {len(placed)} of {len(instance.jobs)} jobs placed"
        + (f"; {terms}" if terms else ""),
        fontsize=9,
        x=0.01,
        ha="left",
        y=1 - 0.1 / fig_h,
        va="top",
    )
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return fig
