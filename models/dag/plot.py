"""A Gantt chart of a DAG schedule: machines x time, transfers between machines as arrows."""

from __future__ import annotations

import numpy as np

from placement.models.dag.check import evaluate
from placement.models.dag.instance import DagInstance, DagSolution, end_times

MAX_ARROWS = 400
"""Transfers drawn at most (the rest would hide the schedule)."""


def draw(instance: DagInstance, solution: DagSolution, out_path: str) -> None:
    """Write a Gantt chart of ``solution`` to ``out_path`` (format from the suffix)."""
    # matplotlib is an optional dependency (plots only), imported when a chart is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the Agg backend (no display here)

    k = len(instance.machines)
    ends = end_times(instance, solution)
    height = max(2.5, 0.45 * k + 1.2)
    fig, ax = plt.subplots(figsize=(11, min(height, 40)))
    cmap = plt.get_cmap("tab20")
    # Lane inside a multi-slot machine: stack concurrent tasks so that they do not hide.
    lane = np.zeros(len(instance.tasks))
    for m, mach in enumerate(instance.machines):
        on_m = sorted(
            (t for t in range(len(instance.tasks)) if solution.machine[t] == m),
            key=lambda t: solution.start_s[t],
        )
        free: list[float] = []
        for t in on_m:
            i = next((i for i, f in enumerate(free) if f <= solution.start_s[t] + 1e-9), None)
            if i is None:
                free.append(float(ends[t]))
                i = len(free) - 1
            else:
                free[i] = float(ends[t])
            lane[t] = i
        lanes = max(len(free), 1)
        for t in on_m:
            h = 0.8 / lanes
            y = m - 0.4 + lane[t] * h
            ax.barh(
                y + h / 2,
                ends[t] - solution.start_s[t],
                left=solution.start_s[t],
                height=h,
                color=cmap(t % 20),
                edgecolor="black",
                linewidth=0.4,
            )
            if len(instance.tasks) <= 60:
                ax.text(
                    (solution.start_s[t] + ends[t]) / 2,
                    y + h / 2,
                    instance.tasks[t].name,
                    ha="center",
                    va="center",
                    fontsize=7,
                )
        del mach
    drawn = 0
    for e in instance.edges:
        p, c = instance.task_index[e.parent], instance.task_index[e.child]
        mp, mc = int(solution.machine[p]), int(solution.machine[c])
        if mp == mc or mp < 0 or mc < 0 or drawn >= MAX_ARROWS:
            continue
        arrive = ends[p] + instance.transfer_s(e.data_bytes, mp, mc)
        ax.annotate(
            "",
            xy=(arrive, mc),
            xytext=(ends[p], mp),
            arrowprops={"arrowstyle": "->", "color": "grey", "lw": 0.6, "alpha": 0.7},
        )
        drawn += 1
    makespan, cost = evaluate(instance, solution)
    ax.set_yticks(range(k))
    ax.set_yticklabels([f"{m.name} ({m.zone})" for m in instance.machines], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(
        f"{instance.name or 'schedule'}: makespan {makespan:g} s, cost {cost:.4g}"
        + (" (grey arrows: transfers)" if drawn else "")
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
