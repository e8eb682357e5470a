"""``dag-stg`` and ``dag-stg-verify``: the Standard Task Graph Set (Kasahara), P|prec|Cmax.

``dag-stg``: against the published optima (closed cases) and bounds (open cases), one case
per (graph, processors). ``dag-stg-verify``: a second opinion on three new STG proofs from a
different model and solver (the disjunctive MILP on HiGHS).
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any

from placement.benchmarks.dag.shared import (
    bar_plot,
    checked_makespan,
    chosen_cases,
    number_text,
    rounded,
    timed_solve,
    truthy,
)
from placement.benchmarks.tables import rule
from placement.models.dag.formats.loaders import load_stg

STG_SIZES = (50, 100)
STG_PROCESSORS = (2, 4, 8, 16)
STG_GRAPHS = range(0, 180)
STG_BACKEND = "cpsat"
STG_THREADS = 2
"""CP-SAT workers per case (the suite is ``exclusive``: one case at a time, on a 2-core
machine). A single worker misses the optimum on 51 closed cases in 10 s where two
workers (two different search strategies) reach it, mostly in 1-3 s."""
STG_QUICK = [
    ("50/rand0000.stg", 2),
    ("50/rand0001.stg", 2),
    ("50/rand0060.stg", 2),
    ("100/rand0000.stg", 16),
]
"""--quick: two closed and one open case on 2 processors, one closed 100-task case."""


def _stg_published(data: Path, size: int, m: int) -> dict[str, dict[str, Any]]:
    """Graph path -> ``{"opt": x}`` (closed) or ``{"lb": x, "ub": y}`` (open)."""
    out: dict[str, dict[str, Any]] = {}
    with open(data / "optimal" / f"Case{size}_{m}_OPT.csv", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            if not row or not row[0].endswith(".stg"):
                continue
            if len(row) == 3:
                out[row[0]] = {"opt": float(row[2])}
            else:
                out[row[0]] = {"lb": float(row[2]), "ub": float(row[3])}
    return out


def cases_stg(config: Any) -> list[dict[str, Any]]:
    """Every (graph, processors) of sizes 50 and 100, 2/4/8/16 processors, graphs 0-179."""
    data = config.data_dir("dag/stg")
    if config.quick:
        chosen = STG_QUICK
    else:
        chosen = []
        for size in STG_SIZES:
            for m in STG_PROCESSORS:
                for path in _stg_published(data, size, m):
                    if int(Path(path).stem.removeprefix("rand")) in STG_GRAPHS:
                        chosen.append((path, m))
    out = []
    for path, m in chosen:
        size = int(path.split("/")[0])
        published = _stg_published(data, size, m)[path]
        out.append({"case": f"{path}/{m}", "path": path, "m": m, **published})
    return chosen_cases(out, config)


def run_stg(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """A portfolio solve (HEFT/PEFT/CPOP, then CP-SAT with :data:`STG_THREADS` workers) of
    one case."""

    instance = load_stg(config.data_dir("dag/stg") / case["path"], int(case["m"]))
    result, wall, load = timed_solve(instance, config.time_limit_s, STG_BACKEND, STG_THREADS)
    _, invalid = checked_makespan(instance, result.solution)
    # Costs are integers, so the optimum is too: the bound rounds up.
    bound = math.ceil(result.bound - 1e-6) if result.bound is not None else None
    return [
        {
            "graph": case["path"],
            "size": int(case["path"].split("/")[0]),
            "m": case["m"],
            "opt": case.get("opt", ""),
            "lb": case.get("lb", ""),
            "ub": case.get("ub", ""),
            "ours": result.objective,
            "bound": "" if bound is None else bound,
            "proven": result.status.value == "optimal",
            "source": result.backend,
            "wall_s": round(wall, 3),
            "load_1min": load,
            "invalid": invalid,
        }
    ]


def _num(value: Any) -> float | None:
    return None if value in ("", None) else float(value)


def report_stg(rows: list[dict[str, Any]], config: Any) -> str:
    """Per size and together: optima reached and proven, open cases improved; every miss and
    every open case."""
    rows = [
        {
            **r,
            "opt": _num(r["opt"]),
            "lb": _num(r["lb"]),
            "ub": _num(r["ub"]),
            "ours": float(r["ours"]),
            "bound": _num(r["bound"]),
            "proven": truthy(r["proven"]),
            "size": int(r["size"]),
            "m": int(r["m"]),
            "wall_s": float(r["wall_s"]),
        }
        for r in rows
    ]
    loads = [float(r["load_1min"]) for r in rows]
    lines = [
        f"Portfolio solves (HEFT/PEFT/CPOP, then {STG_BACKEND} with {STG_THREADS} threads), "
        f"{config.time_limit_s:g} s each. A closed case has a published optimum; an open one "
        "a published [LB, UB]. Bounds round up (integer costs). 1-minute load average before "
        f"each solve: median {statistics.median(loads):.2f}, max {max(loads):.2f}.",
        "",
        "| tasks | cases | closed | optimum reached | optimum proven | median time (closed) "
        "| open | open: UB lowered | open: LB raised | open: new proofs |",
        rule(10),
    ]
    sizes = sorted({r["size"] for r in rows})
    groups = [(str(s), [r for r in rows if r["size"] == s]) for s in sizes]
    if len(groups) > 1:
        groups.append(("together", rows))
    for label, group in groups:
        lines.append(_stg_summary(label, group))
    closed = [r for r in rows if r["opt"] is not None]
    open_ = [r for r in rows if r["opt"] is None]
    wrong = [r for r in closed if r["ours"] < r["opt"] - 1e-9]
    above = [r for r in closed if r["bound"] is not None and r["bound"] > r["opt"] + 1e-9]
    lines.append("")
    if wrong or above:
        lines += [
            "**Below a published optimum, or a bound above one (a bug or a wrong optimum):** "
            + ", ".join(f"{r['graph']}/{r['m']}" for r in wrong + above),
            "",
        ]
    else:
        lines += ["No schedule below a published optimum and no bound above one.", ""]
    misses = [r for r in closed if not r["proven"]]
    lines += ["## Closed cases not proven optimal within the limit", ""]
    if misses:
        lines += ["| graph | m | optimum | ours | our bound |", rule(5)]
        lines += [
            f"| {r['graph']} | {r['m']} | {r['opt']:g} | {r['ours']:g} | {number_text(r['bound'])} |"
            for r in misses
        ]
    else:
        lines.append("None.")
    lines += ["", "## Open cases", ""]
    if open_:
        lines += [
            "| graph | m | published LB | published UB | ours | our bound | note |",
            rule(7),
        ]
        for r in open_:
            notes = []
            if r["ours"] < r["ub"] - 1e-9:
                notes.append("UB lowered")
            if r["bound"] is not None and r["bound"] > r["lb"] + 1e-9:
                notes.append("LB raised")
            if r["proven"]:
                notes.append("**proven optimal**")
            lines.append(
                f"| {r['graph']} | {r['m']} | {r['lb']:g} | {r['ub']:g} | {r['ours']:g} | "
                f"{number_text(r['bound'])} | {', '.join(notes)} |"
            )
    else:
        lines.append("None in this selection.")
    plot = f"{config.suite}.png"
    keys = sorted({(r["size"], r["m"]) for r in closed})
    if keys:
        share = {k: [r for r in closed if (r["size"], r["m"]) == k] for k in keys}
        bar_plot(
            config.out / plot,
            "STG closed cases: optimum reached and proven",
            [f"{s} tasks, m={m}" for s, m in keys],
            {
                "reached": [
                    100 * sum(r["ours"] <= r["opt"] + 1e-9 for r in share[k]) / len(share[k])
                    for k in keys
                ],
                "proven": [100 * sum(r["proven"] for r in share[k]) / len(share[k]) for k in keys],
            },
            "% of closed cases",
            config.command,
            hline=(95.0, "95 % target (proven)"),
        )
        lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"


def _stg_summary(label: str, rows: list[dict[str, Any]]) -> str:
    closed = [r for r in rows if r["opt"] is not None]
    reached = [r for r in closed if r["ours"] <= r["opt"] + 1e-9]
    proven = [r for r in closed if r["proven"]]
    open_ = [r for r in rows if r["opt"] is None]
    lower_ub = [r for r in open_ if r["ours"] < r["ub"] - 1e-9]
    raise_lb = [r for r in open_ if r["bound"] is not None and r["bound"] > r["lb"] + 1e-9]
    new_proof = [r for r in open_ if r["proven"]]
    times = [r["wall_s"] for r in closed]
    n = max(len(closed), 1)
    return (
        f"| {label} | {len(rows):,} | {len(closed):,} | {len(reached):,} "
        f"({100 * len(reached) / n:.1f} %) | {len(proven):,} ({100 * len(proven) / n:.1f} %) | "
        f"{statistics.median(times) if times else 0:.2f} s | {len(open_)} | {len(lower_ub)} | "
        f"{len(raise_lb)} | {len(new_proof)} |"
    )


STG_VERIFY_CASES = [("50/rand0113.stg", 8), ("50/rand0080.stg", 2), ("50/rand0098.stg", 8)]
"""Open STG cases CP-SAT proved optimal (lanes model), re-solved by the disjunctive MILP."""


def cases_stg_verify(config: Any) -> list[dict[str, Any]]:
    """The three cases (the first only in --quick)."""
    chosen = STG_VERIFY_CASES[:1] if config.quick else STG_VERIFY_CASES
    return [{"case": f"{path}/{m}", "path": path, "m": m} for path, m in chosen]


def run_stg_verify(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """MILP-HiGHS, one thread, on one case."""

    data = config.data_dir("dag/stg")
    path, m = case["path"], int(case["m"])
    published = _stg_published(data, int(path.split("/")[0]), m)[path]
    instance = load_stg(data / path, m)
    result, wall, load = timed_solve(instance, config.time_limit_s, "milp", threads=1)
    _, invalid = checked_makespan(instance, result.solution)
    return [
        {
            "graph": path,
            "m": m,
            "published_lb": published.get("lb", published.get("opt")),
            "published_ub": published.get("ub", published.get("opt")),
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "ours": result.objective,
            "bound": rounded(result.bound, 6),
            "source": result.backend,
            "wall_s": round(wall, 1),
            "load_1min": load,
            "invalid": invalid,
        }
    ]


def report_stg_verify(rows: list[dict[str, Any]], config: Any) -> str:
    """One row per case: HiGHS's status, makespan and bound beside the published interval."""
    lines = [
        "A second opinion on open STG cases that CP-SAT (lanes model) proved optimal: the "
        "disjunctive MILP on HiGHS, a different model and a different solver, one thread, "
        f"{config.time_limit_s:g} s each.",
        "",
        "| graph | m | published [LB, UB] | HiGHS makespan | HiGHS bound | status | time | load |",
        rule(8),
    ]
    for r in rows:
        lines.append(
            f"| {r['graph']} | {r['m']} | [{number_text(r['published_lb'])}, {number_text(r['published_ub'])}] | "
            f"{number_text(r['ours'])} | {number_text(r['bound'])} | {r['status']}/{r['stop_reason']} | "
            f"{r['wall_s']} s | {r['load_1min']} |"
        )
    return "\n".join(lines) + "\n"
