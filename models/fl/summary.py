"""The rows ``placement solve``'s summary shows of an FL assignment, from its JSON form."""

from __future__ import annotations

from typing import Any


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per job: its completion time under the convergence model and its rounds; then the
    average and Jain's index of participation."""
    jobs = section.get("jobs", [])
    width = max((len(j.get("job", "?")) for j in jobs), default=0)
    rows = [
        f"{j.get('job', '?'):<{width}}  completion {float(j.get('completion_time_s', 0.0)):.1f} s "
        f"over {int(j.get('rounds', 0))} round(s)"
        for j in jobs
    ]
    if jobs:
        mean = sum(float(j.get("completion_time_s", 0.0)) for j in jobs) / len(jobs)
        rows.append(
            f"average completion {mean:.1f} s; participation Jain index "
            f"{float(section.get('participation_jain', 0.0)):.3f}"
        )
    return "jobs", rows
