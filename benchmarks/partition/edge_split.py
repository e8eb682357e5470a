"""``placement bench partition-qpart``: QPART's quantized edge split, our proven optimum
beside QPART's own two-step rule (:mod:`placement.models.partition.peers.qpart`) on
generated requests (``placement generate partition --mode edge_split``).

Per request: the exact model's plan (CP-SAT, 1 thread) with its proof, QPART's plan, and
everything on the server at full precision; for each plan the request cost (the checker's
objective), the payload on the channel (bits), the payload as a share of the same split at
full precision (QPART's "computation payload" figure) and of the server-only plan's (the
input sent up), and the accuracy loss.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from placement.benchmarks.runner import Rechecker, load_1min
from placement.benchmarks.tables import markdown_table
from placement.models.partition.edge_split import EdgeSplitChoice, instance_tables
from placement.models.partition.edge_split_check import plan_figures
from placement.models.partition.edge_split_generate import generate_edge_split
from placement.models.partition.instance import PartitionSolution
from placement.models.partition.peers.qpart import qpart_plan
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.family import instance_document, instance_from_document

FULL = {"layers": (8, 12, 16, 24, 32), "seeds": tuple(range(20)), "budgets": (0.5, 1.0)}
QUICK = {"layers": (6,), "seeds": (0, 1), "budgets": (1.0,)}


def cases_qpart(config: Any) -> list[dict[str, Any]]:
    """One case per (layers, accuracy budget, seed)."""
    grid = QUICK if config.quick else FULL
    return [
        {"case": f"{n} layers, {a} pp, seed {s}", "layers": n, "budget": a, "seed": s}
        for n in grid["layers"]
        for a in grid["budgets"]
        for s in grid["seeds"]
    ]


def _columns(prefix: str, fig: Any, server_bits: int) -> dict[str, Any]:
    return {
        f"{prefix}_cost": fig.cost,
        f"{prefix}_payload_mb": fig.payload_bits / 8e6,
        f"{prefix}_payload_vs_fp_split": fig.payload_bits / fig.full_precision_payload_bits,
        f"{prefix}_payload_vs_server": fig.payload_bits / server_bits,
        f"{prefix}_loss_pp": fig.loss_pp,
    }


def run_qpart(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The exact plan, QPART's and the server-only one on one generated request."""
    checked = Rechecker("partition")
    generated = generate_edge_split(case["layers"], case["seed"], case["budget"])
    inst = instance_from_document(instance_document(generated))
    t = instance_tables(inst)
    t0 = time.perf_counter()
    result = solve(inst, SolveOptions(time_limit_s=config.time_limit_s, threads=1))
    wall = time.perf_counter() - t0
    checked.result(inst, result)
    qpart = qpart_plan(inst)
    server = PartitionSolution(edge_split=EdgeSplitChoice(0, ()))
    row: dict[str, Any] = {
        "layers": case["layers"],
        "budget_pp": case["budget"],
        "seed": case["seed"],
        "proved": result.status is SolutionStatus.OPTIMAL,
        "solve_s": wall,
        "load_1min": load_1min(),
    }
    server_fig = plan_figures(t, server.edge_split)
    checked(inst, server)
    for name, plan in (("opt", result.solution), ("qpart", qpart)):
        row.update(dict.fromkeys(_columns(name, server_fig, 1), None))
        row[f"{name}_split"] = None
        if plan is None or not checked(inst, plan).feasible:
            continue
        row.update(_columns(name, plan_figures(t, plan.edge_split), server_fig.payload_bits))
        row[f"{name}_split"] = "/".join(map(str, plan.edge_split.bits)) or "server"
    row["server_cost"] = server_fig.cost
    row["gap"] = None
    if row["opt_cost"] and row["qpart_cost"]:
        row["gap"] = (row["qpart_cost"] - row["opt_cost"]) / row["opt_cost"]
    return [{**row, **checked.columns()}]


def _f(value: Any, digits: int = 3) -> str:
    if value in (None, ""):
        return "-"
    return f"{float(value):.{digits}f}"


def _pct(value: Any, digits: int = 1) -> str:
    return "-" if value in (None, "") else f"{100 * float(value):.{digits}f} %"


def report_qpart(rows: list[dict[str, Any]], config: Any) -> str:
    """A summary per (layers, budget) and one line per request."""
    groups: dict[tuple[int, float], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((int(r["layers"]), float(r["budget_pp"])), []).append(r)
    summary = []
    for (n, a), rs in sorted(groups.items()):
        gaps = [float(r["gap"]) for r in rs if r.get("gap") not in (None, "")]

        def mean(key: str, rs: list[dict[str, Any]] = rs) -> float:
            vals = [float(r[key]) for r in rs if r.get(key) not in (None, "")]
            return statistics.mean(vals) if vals else float("nan")

        summary.append(
            [
                n,
                a,
                len(rs),
                sum(str(r["proved"]) == "True" for r in rs),
                _pct(1 - mean("opt_payload_vs_fp_split")),
                _pct(1 - mean("qpart_payload_vs_fp_split")),
                _pct(1 - mean("opt_payload_vs_server")),
                _pct(1 - mean("qpart_payload_vs_server")),
                _f(mean("opt_loss_pp")),
                _f(mean("qpart_loss_pp")),
                _pct(1 - mean("opt_cost") / mean("server_cost")),
                _pct(statistics.mean(gaps) if gaps else None, 2),
                _pct(max(gaps) if gaps else None, 2),
                sum(g <= 1e-12 for g in gaps),
                _f(max(float(r["solve_s"]) for r in rs), 2),
                _f(max(float(r["load_1min"]) for r in rs), 2),
                sum(int(r["invalid"]) for r in rs),
            ]
        )
    header = [
        "layers",
        "budget (pp)",
        "requests",
        "proved",
        "payload cut vs FP split, ours",
        "QPART's",
        "payload cut vs server-only, ours",
        "QPART's",
        "loss (pp), ours",
        "QPART's",
        "cost cut vs server-only, ours",
        "QPART's gap, mean",
        "max",
        "QPART optimal",
        "solve (s), max",
        "load avg, max",
        "invalid",
    ]
    detail_header = [
        "layers",
        "budget",
        "seed",
        "ours: bits",
        "cost",
        "QPART: bits",
        "cost",
        "gap",
        "server-only cost",
        "solve (s)",
        "load avg",
    ]
    detail = [
        [
            r["layers"],
            r["budget_pp"],
            r["seed"],
            r.get("opt_split") or "-",
            _f(r.get("opt_cost"), 4),
            r.get("qpart_split") or "-",
            _f(r.get("qpart_cost"), 4),
            _pct(r.get("gap"), 2),
            _f(r.get("server_cost"), 4),
            _f(r["solve_s"], 3),
            _f(r["load_1min"], 2),
        ]
        for r in rows
    ]
    notes = f"""\
Generated requests (`placement generate partition --mode edge_split --layers N --devices 2
--seed S`, accuracy budget as shown; a CNN-shaped chain, synthetic loss tables: see
`models/partition/edge_split_generate.py`). "Ours" is the exact model's plan (CP-SAT, 1
thread, time limit {config.time_limit_s:g} s; "proved": optimal over every split and
bit-width vector of the request); QPART's is its two-step rule as written from the paper
(`models/partition/peers/qpart.py`). Payload cut vs FP split: 1 - the plan's channel bits /
the same split's at full precision (QPART's "computation payload" figure); vs server-only:
1 - the plan's channel bits / the full-precision input's (everything on the server). Loss:
the additive model's sum over device layers. Cost cut: 1 - request cost / server-only's.
Gap: QPART's request cost over ours, minus 1. Every plan was re-checked by the family's
checker (`invalid` must be 0). Wall-clock; `load avg` is the 1-minute load.
"""
    return (
        notes
        + "\n"
        + "\n".join(markdown_table(header, summary))
        + "\n\n"
        + "\n".join(markdown_table(detail_header, detail))
        + "\n"
    )
