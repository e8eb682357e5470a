"""The rows ``placement solve``'s summary shows of a DAG solution, from its JSON form."""

from __future__ import annotations

from typing import Any

from placement.solver.text import fmt_num, names_or_more, natural_key


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per machine (by name): its tasks in start order and when it is last busy."""
    by_machine: dict[str, list[dict[str, Any]]] = {}
    for run in section.get("runs", []):
        by_machine.setdefault(run.get("machine", "?"), []).append(run)
    width = max((len(m) for m in by_machine), default=0)
    rows = []
    for machine, runs in sorted(by_machine.items(), key=lambda kv: natural_key(kv[0])):
        runs.sort(key=lambda r: (r.get("start_s", 0.0), r.get("task", "")))
        until = max(r.get("end_s", 0.0) for r in runs)
        names = [r.get("task", "?") for r in runs]
        rows.append(
            f"{machine:<{width}}  {len(runs)} task(s) until {fmt_num(float(until))} s: "
            + names_or_more(names)
        )
    return "schedule", rows
