"""The rows ``placement solve``'s summary shows of a GPU solution, from its JSON form."""

from __future__ import annotations

from typing import Any


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """What the decision does to running work: one row per job migrated, resized or preempted
    (its reason, the rule that allowed it, the workers and cost), then how many running jobs
    keep their placement. Nothing when the instance has no running jobs."""
    decisions = section.get("decisions") or []
    rows = []
    for d in decisions:
        if d.get("action", "keep") == "keep":
            continue
        detail = [f"{d.get('cost', 0)} cost"]
        if d.get("migrated_workers"):
            detail.append(f"{d['migrated_workers']} restarted")
        if d.get("preempted_workers"):
            detail.append(f"{d['preempted_workers']} preempted")
        if d.get("rule"):
            detail.append(f"rule: {d['rule']}")
        rows.append(f"{d.get('message') or d.get('job', '?')} ({', '.join(detail)})")
    kept = sum(1 for d in decisions if d.get("action", "keep") == "keep")
    if decisions:
        rows.append(f"{kept} of {len(decisions)} running jobs keep their placement")
    return "running", rows
