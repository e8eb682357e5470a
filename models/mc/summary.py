"""The rows ``placement solve``'s summary shows of an mc solution, from its JSON form."""

from __future__ import annotations

from typing import Any

from placement.solver.text import fmt_num, names_or_more, natural_key


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per core (by name): its tasks, its LO-mode and HI-mode utilisation and its slack; then
    the dropped tasks."""
    tasks_on: dict[str, list[str]] = {}
    for a in section.get("assignments", []):
        tasks_on.setdefault(a.get("core", "?"), []).append(a.get("task", "?"))
    tests = {c.get("core", "?"): c for c in section.get("cores", [])}
    width = max((len(c) for c in tasks_on), default=0)
    rows = []
    for core, tasks in sorted(tasks_on.items(), key=lambda kv: natural_key(kv[0])):
        test = tests.get(core, {})
        lo = test.get("lo_utilisation", 0.0) + test.get("hi_utilisation_lo_mode", 0.0)
        hi = test.get("hi_utilisation_hi_mode", 0.0)
        slack = f", slack {fmt_num(round(test['slack'], 4))}" if "slack" in test else ""
        rows.append(
            f"{core:<{width}}  {len(tasks)} task(s), U(LO) {lo:.3f}, U(HI) {hi:.3f}{slack}: "
            + names_or_more(sorted(tasks, key=natural_key))
        )
    dropped = section.get("dropped", [])
    if dropped:
        rows.append(f"dropped  {len(dropped)} LO task(s): " + names_or_more(list(dropped)))
    return "cores", rows
