"""A Gantt chart of a DAG schedule: machines x time, transfers between machines as arrows."""

from __future__ import annotations

import colorsys
from typing import TYPE_CHECKING

import numpy as np

from placement.models.dag.check import evaluate
from placement.models.dag.instance import DagInstance, DagSolution, end_times

if TYPE_CHECKING:  # matplotlib is optional; only the annotation needs it
    from matplotlib.figure import Figure

MAX_ARROWS = 400
"""Transfers drawn at most (the rest would hide the schedule)."""
MAX_WIDTH_IN = 24.0
"""The chart grows with the tasks (so that their names fit) up to this width."""
LABEL_MIN_PT = 4.5
"""A task's name is written inside its bar when it fits at this font size or larger."""


def _seconds(value: float) -> str:
    """``66.714 s`` or, from 100,000 s on, ``1,540,970 s`` (no exponent)."""
    return f"{value:,.0f} s" if abs(value) >= 1e5 else f"{value:g} s"


def task_colours(n: int) -> list[tuple[float, float, float]]:
    """``n`` distinct colours, consecutive ones far apart: hues stepped by the golden ratio,
    lightness and saturation cycling so that close hues still differ."""
    out = []
    for i in range(n):
        hue = (i * 0.618033988749895) % 1.0
        light = (0.62, 0.48, 0.74)[i % 3]
        sat = (0.75, 0.55, 0.9)[(i // 3) % 3]
        out.append(colorsys.hls_to_rgb(hue, light, sat))
    return out


def draw(instance: DagInstance, solution: DagSolution, out_path: str) -> Figure:
    """Write a Gantt chart of ``solution`` to ``out_path`` (format from the suffix).

    Returns the figure, already closed, for a caller that inspects what it shows.
    """
    # matplotlib is an optional dependency (plots only), imported when a chart is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the Agg backend (no display here)

    k = len(instance.machines)
    n = len(instance.tasks)
    ends = end_times(instance, solution)
    height = max(2.5, 0.5 * k + 1.4)
    width = min(MAX_WIDTH_IN, max(11.0, 0.14 * n))
    fig, ax = plt.subplots(figsize=(width, min(height, 40)))
    colours = task_colours(n)
    makespan_s = float(max(ends, default=0.0)) or 1.0
    # Points per second of the time axis (about 85 % of the figure is the axis).
    pt_per_s = width * 0.85 * 72 / makespan_s
    centre = np.zeros(n)
    # Lane inside a multi-slot machine: stack concurrent tasks so that they do not hide.
    lane = np.zeros(len(instance.tasks))
    labelled = 0
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
            (bar,) = ax.barh(
                y + h / 2,
                ends[t] - solution.start_s[t],
                left=solution.start_s[t],
                height=h,
                color=colours[t],
                edgecolor="black",
                linewidth=0.4,
            )
            bar.set_gid(instance.tasks[t].name)
            centre[t] = y + h / 2
            name = instance.tasks[t].name
            # A name goes inside its bar when it fits there (about 0.6 em per character).
            span_pt = (ends[t] - solution.start_s[t]) * pt_per_s
            size = min(7.0, span_pt / (0.62 * max(len(name), 1)))
            if size >= LABEL_MIN_PT:
                ax.text(
                    (solution.start_s[t] + ends[t]) / 2,
                    y + h / 2,
                    name,
                    ha="center",
                    va="center",
                    fontsize=size,
                )
                labelled += 1
        del mach
    drawn = 0
    for e in instance.edges:
        p, c = instance.task_index[e.parent], instance.task_index[e.child]
        mp, mc = int(solution.machine[p]), int(solution.machine[c])
        if mp == mc or mp < 0 or mc < 0 or drawn >= MAX_ARROWS:
            continue
        arrive = ends[p] + instance.transfer_s(e.data_bytes, mp, mc)
        # From the parent's bar end to the child's bar, at the time the data arrives.
        arrow = ax.annotate(
            "",
            xy=(arrive, centre[c]),
            xytext=(ends[p], centre[p]),
            arrowprops={
                "arrowstyle": "->",
                "color": "0.35",
                "lw": 0.6,
                "alpha": 0.6,
                "shrinkA": 0,
                "shrinkB": 0,
            },
        )
        arrow.set_gid(f"{e.parent}->{e.child}")
        drawn += 1
    makespan, cost = evaluate(instance, solution)
    ax.set_yticks(range(k))
    # The zone only where there are several.
    zoned = len({m.zone for m in instance.machines}) > 1
    ax.set_yticklabels(
        [f"{m.name} ({m.zone})" if zoned else m.name for m in instance.machines], fontsize=8
    )
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(
        f"{instance.name or 'schedule'}: makespan {_seconds(makespan)}, cost {cost:.4g}"
        + (" (grey arrows: transfers, ending when the data arrives)" if drawn else ""),
        fontsize=9,
    )
    if labelled < n:
        ax.set_xlabel(
            f"time (s)    [{n - labelled} of {n} tasks too short to be named here; "
            "the solution file lists every task]"
        )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return fig
