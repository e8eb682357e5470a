"""The rows ``placement solve``'s summary shows of a entanglement solution, from its JSON form."""

from __future__ import annotations

from typing import Any

from placement.solver.text import names_or_more


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per served request: its expected rate and its paths (nodes joined by ``-``, x width)."""
    by_request: dict[str, list[dict[str, Any]]] = {}
    for p in section.get("paths", []):
        by_request.setdefault(p.get("request", "?"), []).append(p)
    width = max((len(r) for r in by_request), default=0)
    rows = []
    for request, paths in by_request.items():
        rate = sum(p.get("expected_throughput", 0.0) for p in paths)
        routes = [f"{'-'.join(p.get('nodes', []))} x{p.get('width', 0)}" for p in paths]
        rows.append(f"{request:<{width}}  rate {rate:.4g}/slot: " + names_or_more(routes, 3))
    return "routes", rows
