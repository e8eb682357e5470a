"""The rows ``placement solve``'s summary shows of a dispatch schedule, from its JSON form."""

from __future__ import annotations

from typing import Any

from placement.solver.text import natural_key


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """The figures, then per server: jobs, busy time, mean response."""
    per: dict[str, list[dict[str, Any]]] = {}
    for r in section.get("runs", []):
        per.setdefault(r.get("server", "?"), []).append(r)
    f = section.get("figures", {})
    rows = [
        f"mean response {float(f.get('mean_response', 0)):.4g}, mean slowdown "
        f"{float(f.get('mean_slowdown', 0)):.4g}, p99 response {float(f.get('p99_response', 0)):.4g}, "
        f"makespan {f.get('makespan', 0)}, deadlines missed {f.get('deadlines_missed', 0)}"
    ]
    width = max((len(s) for s in per), default=0)
    for server, runs in sorted(per.items(), key=lambda kv: natural_key(kv[0])):
        busy = sum(int(r.get("end", 0)) - int(r.get("start", 0)) for r in runs)
        mean = sum(int(r.get("response", 0)) for r in runs) / len(runs)
        rows.append(f"{server:<{width}}  {len(runs)} job(s), busy {busy}, mean response {mean:.4g}")
    return "servers", rows
