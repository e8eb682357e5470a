"""``placement bench dispatch-budget``: Nimrod/G's three DBC heuristics against the exact
cost-time front on generated parameter sweeps.

Cases: sweeps of 1,000-10,000 one-core jobs of 4 sizes on 10-100 priced heterogeneous
servers (:func:`placement.models.dispatch.generate.generate_sweep`), each at several points of
the front: the cost-minimal schedule for a deadline (deadlines at utilisation 0.5, 0.7 and
0.9 of the servers' total speed: loose to tight) and the makespan-minimal schedule for a
budget (1.1, 1.3 and 1.6 times the cheapest schedule's cost). At each point: the exact solve
(``--backend auto``: the configuration LP by column generation, its integer master, the
per-core model for what is left; :mod:`placement.models.dispatch.patterns`), its proven bound
and gap, and each DBC heuristic's figure, whether it met the deadline and budget, and its gap
to the proven bound. Every schedule goes through the family's checker (``invalid``).
"""

from __future__ import annotations

import time
from typing import Any

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.dispatch.dbc import DBC
from placement.models.dispatch.generate import generate_sweep
from placement.solver import SolveOptions, solve
from placement.solver.result import relative_gap

SIZES = ((1_000, 10), (2_000, 20), (5_000, 50), (10_000, 100))
"""(jobs, servers) of the sweeps."""
DEADLINE_LOADS = (0.5, 0.7, 0.9)
BUDGET_FACTORS = (1.1, 1.3, 1.6)


def cases_budget(config: Any) -> list[dict[str, Any]]:
    """One case per (size, point of the front); ``--quick``: 300 jobs on 5 servers, one
    deadline and one budget."""
    sizes = ((300, 5),) if config.quick else SIZES
    loads = DEADLINE_LOADS[1:2] if config.quick else DEADLINE_LOADS
    factors = BUDGET_FACTORS[1:2] if config.quick else BUDGET_FACTORS
    seed = int(config.params.get("seed", 1))
    out = []
    for jobs, servers in sizes:
        for load in loads:
            out.append({"jobs": jobs, "servers": servers, "seed": seed, "objective": "cost",
                        "load": load, "budget_factor": 0.0})  # fmt: skip
        for factor in factors:
            out.append({"jobs": jobs, "servers": servers, "seed": seed, "objective": "time",
                        "load": 1.0, "budget_factor": factor})  # fmt: skip
    return out


def run_budget(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The exact solve and the three heuristics at one point of the front."""
    instance = generate_sweep(
        case["jobs"],
        case["servers"],
        case["load"],
        case["seed"],
        kinds=4,
        budget_factor=case["budget_factor"],
        objective=case["objective"],
    )
    tier = "cost" if case["objective"] == "cost" else "makespan"
    base = {
        "jobs": case["jobs"],
        "servers": case["servers"],
        "seed": case["seed"],
        "front": case["objective"],
        "deadline": instance.deadline or "",
        "budget": instance.budget or "",
    }
    checker = Rechecker("dispatch")
    began = time.perf_counter()
    result = solve(instance, SolveOptions(time_limit_s=config.time_limit_s, threads=1))
    wall = time.perf_counter() - began
    report = checker.result(instance, result)
    bound = result.bound
    rows = [
        {
            **base,
            "method": "exact",
            "objective": int(report.terms[tier]) if report is not None and report.feasible else "",
            "bound": int(bound) if bound is not None else "",
            "gap": round(result.gap, 6) if result.gap is not None else "",
            "status": result.status.value,
            "seconds": round(wall, 2),
            "note": result.message[:120],
            "invalid": checker.invalid,
        }
    ]
    for name, heuristic in DBC.items():
        check = Rechecker("dispatch")
        solution = heuristic(instance)
        r = check(instance, solution)
        value = int(r.terms[tier]) if r.feasible else ""
        rows.append(
            {
                **base,
                "method": name,
                "objective": value,
                "bound": int(bound) if bound is not None else "",
                "gap": round(relative_gap(value, bound), 6)
                if value != "" and bound is not None
                else "",
                "status": "feasible" if r.feasible else "missed",
                "note": "" if r.feasible else "; ".join(r.violations)[:120],
                "invalid": 0,  # a heuristic that misses the deadline or budget is a result
            }
        )
    return rows


def report_budget(rows: list[dict[str, Any]], config: Any) -> str:
    """One table per sweep: each point of the front, the exact figure, its bound and gap,
    and each heuristic's figure and gap (or what it missed)."""
    del config
    out = [
        "Cost front: the cheapest schedule meeting each deadline (no budget); time front: the "
        "fastest schedule within each budget (no deadline). `exact`: the solver's checked "
        "schedule, its proven bound (the configuration LP by column generation, or the "
        "bisection's last impossible makespan + 1) and the gap between them; each DBC "
        "heuristic's gap is to that proven bound, `missed` when it broke the deadline or the "
        "budget (what and by how much in the CSV's note).",
        "",
    ]
    sweeps = sorted({(r["jobs"], r["servers"], r["seed"]) for r in rows})
    for jobs, servers, seed in sweeps:
        group = [r for r in rows if (r["jobs"], r["servers"], r["seed"]) == (jobs, servers, seed)]
        out += [f"### {jobs} jobs on {servers} servers, seed {seed}", ""]
        points = []
        for r in group:
            key = (r["front"], r["deadline"], r["budget"])
            if key not in points:
                points.append(key)
        table = []
        for front, deadline, budget in points:
            at = {
                r["method"]: r
                for r in group
                if (r["front"], r["deadline"], r["budget"]) == (front, deadline, budget)
            }
            exact = at.get("exact", {})
            cells = [
                "cost" if front == "cost" else "makespan",
                deadline or "-",
                budget or "-",
                exact.get("objective", ""),
                exact.get("bound", ""),
                _pct(exact.get("gap", "")),
                exact.get("seconds", ""),
            ]
            for name in DBC:
                h = at.get(name, {})
                cells.append(
                    f"{h.get('objective')} ({_pct(h.get('gap', ''))})"
                    if h.get("status") == "feasible"
                    else "missed"
                )
            cells.append(sum(int(r.get("invalid", 0) or 0) for r in at.values()))
            table.append(cells)
        out += markdown_table(
            ["min", "deadline", "budget", "exact", "bound", "gap", "s", *DBC, "invalid"],
            table,
            "lrrrrrrrrrr",
        )
        out.append("")
    return "\n".join(out)


def _pct(gap: Any) -> str:
    return "" if gap in ("", None) else f"{100 * float(gap):.2f}%"
