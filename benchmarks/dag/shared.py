"""What every DAG suite shares: checked makespans, timed solves, number formats, a bar plot.

Every solution a case produces (each heuristic's and each solve's) goes through the family's
independent checker (:func:`checked_makespan`, by :func:`placement.benchmarks.runner.recheck`);
the ``invalid`` column counts the rejected ones.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import load_1min, recheck
from placement.solver import SolveOptions, solve

FAMILY_NAME = "dag"


def checked_makespan(instance: Any, solution: Any) -> tuple[float | None, int]:
    """``(makespan, invalid)`` of a solution by the family's independent checker."""

    report, invalid = recheck(FAMILY_NAME, instance, solution)
    return (None if report is None else report.objective), invalid


def timed_solve(
    instance: Any, time_limit_s: float, backend: str, threads: int, milp: str = "highs"
) -> tuple[Any, float, float]:
    """A portfolio solve; returns ``(result, wall_s, load_1min before)``."""

    load = load_1min()
    t0 = time.perf_counter()
    result = solve(
        instance,
        SolveOptions(time_limit_s=time_limit_s, backend=backend, milp_solver=milp, threads=threads),
    )
    return result, time.perf_counter() - t0, load


def rounded(value: float | None, digits: int) -> float | str:
    """``value`` rounded for a CSV cell; empty when there is none."""
    return "" if value is None else round(value, digits)


def bar_plot(
    path: Path,
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    ylabel: str,
    command: str,
    *,
    hline: tuple[float, str] | None = None,
    log: bool = False,
) -> None:
    """Grouped bars (one group per label, one bar per series), the reproduce command below."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 0.6 * len(labels) * n + 2)), 4.5))
    for i, (name, values) in enumerate(series.items()):
        xs = [x + (i - (n - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [math.nan if v is None else v for v in values], width, label=name)
    if hline is not None:
        ax.axhline(hline[0], color="black", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, command, fontsize=7, family="monospace")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def chosen_cases(cases: list[dict[str, Any]], config: Any) -> list[dict[str, Any]]:
    """The cases whose id matches one of ``--param cases=PATTERN,...`` (shell patterns), or
    all of them when none is given: the decisive cases of a suite rerun alone."""
    patterns = tuple((config.params or {}).get("cases") or ())
    if not patterns:
        return cases
    return [c for c in cases if any(fnmatch.fnmatchcase(c["case"], p) for p in patterns)]


def truthy(value: Any) -> bool:
    """Whether a cell is True (a bool, or its text read back from the CSV)."""
    return value is True or str(value) == "True"


def number_text(value: Any) -> str:
    """A number for a table: six significant digits, thousands separated; empty for none."""
    if value in ("", None):
        return ""
    return f"{float(value):,.6g}"
