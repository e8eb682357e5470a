"""Helpers shared by the partition benchmarks: running one exact encoding on its own, the
machine's load, and writing a markdown table and its CSV."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Any

from placement.models.partition import PartitionInstance, PartitionSolution
from placement.solver import SolveOptions
from placement.solver.family import ExactOutcome, get_family
from placement.solver.portfolio import _Run

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "benchmarks"
SHARED = REPO.parent / "shared" / "benchmarks" / "partition"
DEVICES = REPO / "instances" / "partition" / "devices"


def load_average() -> str:
    """The 1-minute load average (the machine is shared)."""
    return f"{os.getloadavg()[0]:.2f}"


def run_exact(
    encoding: Any,
    instance: PartitionInstance,
    time_limit_s: float,
    incumbent: PartitionSolution | None = None,
    threads: int = 1,
) -> tuple[ExactOutcome, float, _Run]:
    """One exact encoding on its own (no DP unless the encoding uses it), with the portfolio's
    context: every solution it reports goes through the checker. Returns the outcome, the wall
    time and the context (its best checked solution and bound)."""
    run = _Run(
        get_family("partition"),
        instance,
        SolveOptions(time_limit_s=time_limit_s, threads=threads),
        "bench",
    )
    if incumbent is not None:
        run.report(incumbent, "incumbent")
    started = time.perf_counter()
    outcome = encoding.solve(instance, run)
    if outcome.bound is not None:
        run.update_bound(outcome.bound)
    return outcome, time.perf_counter() - started, run


def write_table(
    name: str, title: str, command: str, header: list[str], rows: list[list[Any]], notes: str
) -> None:
    """Write ``docs/benchmarks/<name>.md`` and ``.csv``."""
    DOCS.mkdir(parents=True, exist_ok=True)
    with open(DOCS / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    lines = [f"# {title}", "", "```", command, "```", "", notes.strip(), ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    lines.append("")
    (DOCS / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
