"""What the command line prints for people: numbers, gaps, the solve summary and the progress
lines of improving solutions."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

from placement.api.files import LoadedInstance, placed_count
from placement.solver import Incumbent, Result
from placement.solver.family import get_family
from placement.solver.text import fmt_num

UNPLACED_SHOWN = 20
"""Unplaced jobs listed in the solve summary unless --all-unplaced."""
ASSIGNMENT_ROWS = 12
"""Rows of the assignment (machines, stages, requests) the solve summary shows at most."""


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


def gap_scope(result: Result) -> str:
    """Which tier the bound and gap are on, when the objective has several (issue 41: a
    lexicographic solve ended ``gap 0.00%`` with its second tier open)."""
    names = list(result.objective_terms)
    if len(names) < 2 or result.gap is None:
        return ""
    text = f" on {names[0]}, the first of {len(names)} tiers"
    if result.status.value == "optimal":
        return text + "; every tier proved"
    if result.gap == 0.0:
        return text + "; a later tier is not proved" + (" (see note)" if result.message else "")
    return text


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
    row("gap", fmt_gap(result.gap) + gap_scope(result))
    row("backend", result.backend or "-")
    # Through the service, "service" is the whole call (queue and solve): that is the total.
    total = result.phase_times_s.get("service", result.phase_times_s.get("total", 0.0))
    phases = {k: v for k, v in result.phase_times_s.items() if k not in ("total", "service")}
    detail = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
    row("time", f"{total:.2f} s" + (f" ({detail})" if detail else ""))
    if result.warm_start is not None:
        row("start", result.warm_start.summary())
    if result.has_solution and section:
        summarize = get_family(loaded.family_name).summarize
        if summarize is not None:
            label, rows = summarize(section)
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
