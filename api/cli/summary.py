"""What the command line prints for people: numbers, gaps, the solve summary and the progress
lines of improving solutions."""

from __future__ import annotations

import math
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any

from placement.api.files import LoadedInstance, placed_count
from placement.solver import Incumbent, Result

UNPLACED_SHOWN = 20
"""Unplaced jobs listed in the solve summary unless --all-unplaced."""
ASSIGNMENT_ROWS = 12
"""Rows of the assignment (machines, stages, requests) the solve summary shows at most."""
NAMES_PER_ROW = 8
"""Task names listed on one machine's row at most."""


def fmt_num(value: float | int | None) -> str:
    """A number for people: integers without ``.0``, others with up to 6 decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer():
            return str(int(value))
        if abs(value) < 1e-4:
            return f"{value:.3g}"
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def fmt_gap(gap: float | None) -> str:
    """A relative gap as a percentage."""
    return "-" if gap is None else f"{gap * 100:.2f}%"


class ProgressPrinter:
    """Prints each improving incumbent on stderr (called from solver threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, inc: Incumbent) -> None:
        parts = [f"{inc.time_s:8.2f}s", f"objective {fmt_num(inc.objective)}"]
        if inc.bound is not None:
            parts.append(f"bound {fmt_num(inc.bound)}")
        if inc.gap is not None:
            parts.append(f"gap {fmt_gap(inc.gap)}")
        parts.append(inc.source)
        with self._lock:
            print("  " + "  ".join(parts), file=sys.stderr, flush=True)


def format_summary(
    loaded: LoadedInstance,
    result: Result,
    section: dict[str, Any] | None,
    senses: Sequence[str] = (),
    max_unplaced: int | None = None,
) -> str:
    """The human summary of a solve; at most ``max_unplaced`` unplaced jobs (None: all)."""
    lines: list[str] = []

    def row(label: str, text: str) -> None:
        lines.append(f"{label:<12}{text}")

    row("instance", f"{loaded.display_name} ({loaded.family_name}) from {loaded.path}")
    row("status", result.status.value)
    row("stop reason", result.stop_reason.value)
    if result.objective_terms:
        width = max(len(k) for k in result.objective_terms)
        for i, (name, value) in enumerate(result.objective_terms.items()):
            sense = senses[i] if i < len(senses) else ""
            label = "objective" if i == 0 else ""
            row(label, f"{name:<{width}}  {fmt_num(value):>12}  {sense}".rstrip())
    else:
        row("objective", "-")
    row("bound", fmt_num(result.bound))
    row("gap", fmt_gap(result.gap))
    row("backend", result.backend or "-")
    phases = {k: v for k, v in result.phase_times_s.items() if k != "total"}
    detail = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
    row(
        "time",
        f"{result.phase_times_s.get('total', 0.0):.2f} s" + (f" ({detail})" if detail else ""),
    )
    if result.has_solution and section:
        assignment = ASSIGNMENTS.get(loaded.family_name)
        if assignment is not None:
            label, rows = assignment(section)
            for i, text in enumerate(rows[:ASSIGNMENT_ROWS]):
                row(label if i == 0 else "", text)
            if len(rows) > ASSIGNMENT_ROWS:
                row("", f"... {len(rows) - ASSIGNMENT_ROWS} more (the solution file has them all)")
    if result.has_solution:
        placed = placed_count(section)
        if placed is not None:
            row("placed", f"{placed} of {placed + len(result.unplaced)}")
        if result.unplaced:
            kinds: dict[str, int] = {}
            for item in result.unplaced:
                kinds[item.get("kind", "?")] = kinds.get(item.get("kind", "?"), 0) + 1
            by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            row("unplaced", f"{len(result.unplaced)} ({by_kind})")
            shown = result.unplaced if max_unplaced is None else result.unplaced[:max_unplaced]
            for item in shown:
                what = item.get("job") or item.get("name") or "?"
                row("", f"{what} ({item.get('kind', '?')}): {item.get('message', '')}")
            if len(shown) < len(result.unplaced):
                row(
                    "",
                    f"... {len(result.unplaced) - len(shown)} more (--all-unplaced lists them; "
                    "the solution file and --json have every reason)",
                )
    if result.message:
        row("note", result.message)
    for backend, error in result.backend_errors.items():
        if error not in result.message:
            row("note", f"{backend} failed: {error}")
    return "\n".join(lines)


def _natural(name: str) -> list[Any]:
    """A sort key putting ``p2`` before ``p10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _more(names: list[str], limit: int) -> str:
    """``a, b, c`` or ``a, b, ... N more``."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... {len(names) - limit} more"


def dag_assignment(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per machine (by name): its tasks in start order and when it is last busy."""
    by_machine: dict[str, list[dict[str, Any]]] = {}
    for run in section.get("runs", []):
        by_machine.setdefault(run.get("machine", "?"), []).append(run)
    width = max((len(m) for m in by_machine), default=0)
    rows = []
    for machine, runs in sorted(by_machine.items(), key=lambda kv: _natural(kv[0])):
        runs.sort(key=lambda r: (r.get("start_s", 0.0), r.get("task", "")))
        until = max(r.get("end_s", 0.0) for r in runs)
        names = [r.get("task", "?") for r in runs]
        rows.append(
            f"{machine:<{width}}  {len(runs)} task(s) until {fmt_num(float(until))} s: "
            + _more(names, NAMES_PER_ROW)
        )
    return "schedule", rows


def partition_assignment(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Stage by stage: its range of consecutive layers and the device it runs on."""
    stages: list[list[Any]] = []  # [device, first layer, last layer, count]
    for a in section.get("assignments", []):
        device, layer = a.get("device", "?"), a.get("layer", "?")
        if stages and stages[-1][0] == device:
            stages[-1][2] = layer
            stages[-1][3] += 1
        else:
            stages.append([device, layer, layer, 1])
    rows = []
    for i, (device, first, last, count) in enumerate(stages, start=1):
        span = first if count == 1 else f"{first}..{last}"
        rows.append(f"{i:>2}. {span} ({count} layer{'s' if count != 1 else ''}) -> {device}")
    return "stages", rows


def entanglement_assignment(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per served request: its expected rate and its paths (nodes joined by ``-``, x width)."""
    by_request: dict[str, list[dict[str, Any]]] = {}
    for p in section.get("paths", []):
        by_request.setdefault(p.get("request", "?"), []).append(p)
    width = max((len(r) for r in by_request), default=0)
    rows = []
    for request, paths in by_request.items():
        rate = sum(p.get("expected_throughput", 0.0) for p in paths)
        routes = [f"{'-'.join(p.get('nodes', []))} x{p.get('width', 0)}" for p in paths]
        rows.append(f"{request:<{width}}  rate {rate:.4g}/slot: " + _more(routes, 3))
    return "routes", rows


ASSIGNMENTS = {
    "dag": dag_assignment,
    "partition": partition_assignment,
    "entanglement": entanglement_assignment,
}
"""What the summary shows of a solution, per family, from its JSON form (the gpu family's
summary is its placed and unplaced jobs, shown for every family that has them)."""
