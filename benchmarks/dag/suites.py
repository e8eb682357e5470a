"""The DAG family's benchmark suites (``placement bench NAME``).

Each suite is three functions, declared in :mod:`placement.benchmarks.dag`:
``cases_<suite>(config)``, ``run_<suite>(case, config)`` (one case, in a worker process or a
Ray task) and ``report_<suite>(rows, config)`` (Markdown, and PNG plots in ``config.out``).

- ``dag-topcuoglu``: the HEFT paper's 10-task, 3-processor example: HEFT, PEFT and CPOP
  against the paper's figures, our greedy phase, and each exact backend with its proof.
- ``dag-stg``: the Standard Task Graph Set (Kasahara), P|prec|Cmax, against the published
  optima (closed cases) and bounds (open cases); one case per (graph, processors).
- ``dag-stg-verify``: a second opinion on three new STG proofs from a different model and
  solver (the disjunctive MILP on HiGHS).
- ``grid-braun``: the Braun et al. 512 x 16 ETC instances (R||Cmax) against the best known
  makespans.
- ``dag-wfcommons``: the WfCommons workflows on a heterogeneous machine set, against HEFT,
  PEFT and CPOP.
- ``dag-scale``: heuristic times (best of 3) and exact backends at 1,000 tasks x 32 machines
  (a random DAG) and on independent tasks at 512 x 16 and 4,096 x 128.

Every solution a case produces (each heuristic's and each solve's) goes through the family's
independent checker (:func:`placement.benchmarks.runner.recheck`); the ``invalid`` column counts the
rejected ones.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from placement.benchmarks.dag.wfcommons_recipes import available, generate_workflow
from placement.benchmarks.runner import load_1min, recheck
from placement.models.dag.formats.loaders import (
    load_braun,
    load_stg,
    load_topcuoglu,
    load_wfcommons,
)
from placement.models.dag.generate import grid_instance, machine_set, random_dag
from placement.models.dag.greedy import (
    DAG_HEURISTICS,
    GRID_HEURISTICS,
    cpop,
    heft,
    min_min,
    peft,
    sufferage,
)
from placement.models.dag.instance import DagSolution
from placement.models.dag.plot import draw
from placement.solver import SolveOptions, solve

FAMILY_NAME = "dag"


def _checked(instance: Any, solution: Any) -> tuple[float | None, int]:
    """``(makespan, invalid)`` of a solution by the family's independent checker."""

    report, invalid = recheck(FAMILY_NAME, instance, solution)
    return (None if report is None else report.objective), invalid


def _solve(
    instance: Any, time_limit_s: float, backend: str, threads: int, milp: str = "highs"
) -> tuple[Any, float, float]:
    """A portfolio solve; returns ``(result, wall_s, load_1min before)``."""

    load = load_1min()
    t0 = time.perf_counter()
    result = solve(
        instance,
        SolveOptions(time_limit_s=time_limit_s, backend=backend, milp_solver=milp, threads=threads),
    )
    return result, time.perf_counter() - t0, load


def _round(value: float | None, digits: int) -> float | str:
    return "" if value is None else round(value, digits)


def _bar_plot(
    path: Path,
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    ylabel: str,
    command: str,
    *,
    hline: tuple[float, str] | None = None,
    log: bool = False,
) -> None:
    """Grouped bars (one group per label, one bar per series), the reproduce command below."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 0.6 * len(labels) * n + 2)), 4.5))
    for i, (name, values) in enumerate(series.items()):
        xs = [x + (i - (n - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [math.nan if v is None else v for v in values], width, label=name)
    if hline is not None:
        ax.axhline(hline[0], color="black", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, command, fontsize=7, family="monospace")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -------------------------------------------------------------------------------------------
# dag-topcuoglu: the HEFT paper's example

TOPCUOGLU_PUBLISHED = {"heft": 80.0, "cpop": 86.0}
"""Makespans published by Topcuoglu, Hariri and Wu (2002) for their example graph."""
TOPCUOGLU_EXACT = [("cpsat", "highs"), ("milp", "highs"), ("milp", "cbc")]


def _topcuoglu(config: Any) -> Any:

    base = config.data_dir("dag/topcuoglu-2002")
    return load_topcuoglu(base / "exec_time.csv", base / "edges_data.csv")


def _schedule(solution: Any) -> str:
    """A schedule as JSON (for the Gantt charts the report draws)."""
    if solution is None:
        return ""
    return json.dumps(
        {
            "machine": [int(m) for m in solution.machine],
            "start_s": list(map(float, solution.start_s)),
        }
    )


def cases_topcuoglu(config: Any) -> list[dict[str, Any]]:
    """The heuristics, the greedy phase, then each exact backend (the same in --quick: the
    graph has 10 tasks)."""
    out: list[dict[str, Any]] = [{"case": "heuristics"}, {"case": "greedy"}]
    out += [
        {
            "case": backend if backend == "cpsat" else f"{backend}-{milp}",
            "backend": backend,
            "milp": milp,
        }
        for backend, milp in TOPCUOGLU_EXACT
    ]
    return out


def run_topcuoglu(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """HEFT, PEFT and CPOP (case ``heuristics``), or one portfolio solve."""

    instance = _topcuoglu(config)
    if case["case"] == "heuristics":
        rows = []
        for name, fn in DAG_HEURISTICS.items():
            t0 = time.perf_counter()
            solution = fn(instance)
            wall = time.perf_counter() - t0
            makespan, invalid = _checked(instance, solution)
            rows.append(
                {
                    "method": name.upper(),
                    "makespan": makespan,
                    "published": TOPCUOGLU_PUBLISHED.get(name, ""),
                    "bound": "",
                    "status": "heuristic",
                    "stop_reason": "",
                    "proven": False,
                    "source": name,
                    "wall_s": round(wall, 4),
                    "load_1min": load_1min(),
                    "schedule": _schedule(solution),
                    "invalid": invalid,
                }
            )
        return rows
    backend = case.get("backend", "greedy")
    milp = case.get("milp", "highs")
    result, wall, load = _solve(instance, config.time_limit_s, backend, threads=1, milp=milp)
    makespan, invalid = _checked(instance, result.solution)
    label = {"greedy": "our greedy (best heuristic)", "cpsat": "CP-SAT"}.get(
        backend, f"MILP-{milp.upper() if milp == 'cbc' else 'HiGHS'}"
    )
    return [
        {
            "method": label,
            "makespan": makespan,
            "published": "",
            "bound": _round(result.bound, 6),
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "proven": result.status.value == "optimal",
            "source": result.backend,
            "wall_s": round(wall, 3),
            "load_1min": load,
            "schedule": _schedule(result.solution),
            "invalid": invalid,
        }
    ]


def report_topcuoglu(rows: list[dict[str, Any]], config: Any) -> str:
    """One table: each method's makespan beside the paper's, the bound and the proof; Gantt
    charts of HEFT's schedule and of the best one."""
    lines = [
        "The example graph of Topcuoglu, Hariri and Wu, *Performance-effective and "
        "low-complexity task scheduling for heterogeneous computing* (IEEE TPDS 2002), Fig. 2: "
        "10 tasks on 3 processors, communication costs as bytes over unit-bandwidth links "
        "(`placement import topcuoglu`). *Published* is the paper's makespan; *proof* means "
        "the backend's status is `optimal` with its bound equal to its makespan. Exact solves "
        "use one thread.",
        "",
        "| method | makespan | published | bound | status | proof | source | time | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        published = "" if r["published"] in ("", None) else f"{float(r['published']):g}"
        proof = "yes" if _truthy(r["proven"]) and _eq(r["bound"], r["makespan"]) else "no"
        if r["status"] == "heuristic":
            proof = ""
        lines.append(
            f"| {r['method']} | {_g(r['makespan'])} | {published} | {_g(r['bound'])} | "
            f"{r['status']}{'/' + r['stop_reason'] if r['stop_reason'] else ''} | {proof} | "
            f"{r['source']} | {float(r['wall_s']):.3f} s | {r['load_1min']} |"
        )
    notes = []
    for r in rows:
        key = str(r["method"]).lower()
        if key in TOPCUOGLU_PUBLISHED and not _eq(r["makespan"], TOPCUOGLU_PUBLISHED[key]):
            notes.append(
                f"**{r['method']} differs from the paper**: {_g(r['makespan'])} vs "
                f"{TOPCUOGLU_PUBLISHED[key]:g}."
            )
    exact = [r for r in rows if r["status"] not in ("heuristic",) and _truthy(r["proven"])]
    if exact:
        values = sorted({_g(r["makespan"]) for r in exact})
        notes.append(
            f"Proven optimum: {', '.join(values)} ({len(exact)} exact solve(s) proved it)."
        )
    charts = _topcuoglu_gantts(rows, config)
    lines += ["", *notes, "", *[f"![{c}]({c})" for c in charts]]
    return "\n".join(lines) + "\n"


def _topcuoglu_gantts(rows: list[dict[str, Any]], config: Any) -> list[str]:
    """Gantt charts of HEFT's schedule and of the best schedule found."""
    with_schedule = [r for r in rows if r.get("schedule")]
    if not with_schedule:
        return []
    instance = _topcuoglu(config)
    picks = [("heft", next((r for r in with_schedule if r["method"] == "HEFT"), None))]
    picks.append(("best", min(with_schedule, key=lambda r: float(r["makespan"]))))
    names = []
    for tag, row in picks:
        if row is None:
            continue
        data = json.loads(row["schedule"])
        solution = DagSolution(np.array(data["machine"]), np.array(data["start_s"]))
        name = f"{config.suite}-{tag}.png"
        draw(instance, solution, str(config.out / name))
        names.append(name)
    return names


def _chosen(cases: list[dict[str, Any]], config: Any) -> list[dict[str, Any]]:
    """The cases whose id matches one of ``--param cases=PATTERN,...`` (shell patterns), or
    all of them when none is given: the decisive cases of a suite rerun alone."""
    patterns = tuple((config.params or {}).get("cases") or ())
    if not patterns:
        return cases
    return [c for c in cases if any(fnmatch.fnmatchcase(c["case"], p) for p in patterns)]


def _truthy(value: Any) -> bool:
    return value is True or str(value) == "True"


def _eq(a: Any, b: Any) -> bool:
    try:
        return abs(float(a) - float(b)) <= 1e-6
    except (TypeError, ValueError):
        return False


def _g(value: Any) -> str:
    if value in ("", None):
        return ""
    return f"{float(value):,.6g}"


# -------------------------------------------------------------------------------------------
# dag-stg: the Standard Task Graph Set (Kasahara)

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
    return _chosen(out, config)


def run_stg(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """A portfolio solve (HEFT/PEFT/CPOP, then CP-SAT with :data:`STG_THREADS` workers) of
    one case."""

    instance = load_stg(config.data_dir("dag/stg") / case["path"], int(case["m"]))
    result, wall, load = _solve(instance, config.time_limit_s, STG_BACKEND, STG_THREADS)
    _, invalid = _checked(instance, result.solution)
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
            "proven": _truthy(r["proven"]),
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
        "|---|---|---|---|---|---|---|---|---|---|",
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
        lines += ["| graph | m | optimum | ours | our bound |", "|---|---|---|---|---|"]
        lines += [
            f"| {r['graph']} | {r['m']} | {r['opt']:g} | {r['ours']:g} | {_g(r['bound'])} |"
            for r in misses
        ]
    else:
        lines.append("None.")
    lines += ["", "## Open cases", ""]
    if open_:
        lines += [
            "| graph | m | published LB | published UB | ours | our bound | note |",
            "|---|---|---|---|---|---|---|",
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
                f"{_g(r['bound'])} | {', '.join(notes)} |"
            )
    else:
        lines.append("None in this selection.")
    plot = f"{config.suite}.png"
    keys = sorted({(r["size"], r["m"]) for r in closed})
    if keys:
        share = {k: [r for r in closed if (r["size"], r["m"]) == k] for k in keys}
        _bar_plot(
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


# -------------------------------------------------------------------------------------------
# dag-stg-verify: a second opinion on new STG proofs

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
    result, wall, load = _solve(instance, config.time_limit_s, "milp", threads=1)
    _, invalid = _checked(instance, result.solution)
    return [
        {
            "graph": path,
            "m": m,
            "published_lb": published.get("lb", published.get("opt")),
            "published_ub": published.get("ub", published.get("opt")),
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "ours": result.objective,
            "bound": _round(result.bound, 6),
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
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['graph']} | {r['m']} | [{_g(r['published_lb'])}, {_g(r['published_ub'])}] | "
            f"{_g(r['ours'])} | {_g(r['bound'])} | {r['status']}/{r['stop_reason']} | "
            f"{r['wall_s']} s | {r['load_1min']} |"
        )
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------
# grid-braun: Braun et al. 512 x 16 ETC instances

BRAUN_BACKEND = ("milp", "highs")
BRAUN_THREADS = 2
BRAUN_QUICK = ["u_c_hihi.0"]


def _braun_best_known(data: Path) -> dict[str, tuple[float, str]]:
    """Instance -> (best known makespan, method): the smaller of MS and CPR."""
    out: dict[str, tuple[float, str]] = {}
    with open(data / "best_known.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            value = float(row["best_known_makespan"])
            if row["instance"] not in out or value < out[row["instance"]][0]:
                out[row["instance"]] = (value, row["method"])
    return out


def cases_braun(config: Any) -> list[dict[str, Any]]:
    """The 12 instances (one in --quick)."""
    known = _braun_best_known(config.data_dir("grid/braun-512x16"))
    names = BRAUN_QUICK if config.quick else sorted(known)
    return [
        {"case": name, "instance": name, "best_known": known[name][0], "method": known[name][1]}
        for name in names
    ]


def run_braun(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Min-Min, Sufferage, then a portfolio solve (MILP-HiGHS, 2 threads) of one instance."""

    instance = load_braun(config.data_dir("grid/braun-512x16") / case["instance"])
    mm, mm_invalid = _checked(instance, min_min(instance))
    sf, sf_invalid = _checked(instance, sufferage(instance))
    kind, milp = BRAUN_BACKEND
    result, wall, load = _solve(instance, config.time_limit_s, kind, BRAUN_THREADS, milp)
    _, invalid = _checked(instance, result.solution)
    best = float(case["best_known"])
    within = next((h.time_s for h in result.history if h.objective <= best * 1.001 + 1e-9), None)
    return [
        {
            "instance": case["instance"],
            "best_known": best,
            "best_known_method": case["method"],
            "min_min": round(mm, 1),
            "sufferage": round(sf, 1),
            "ours": round(result.objective, 3),
            "gap_to_best_known_pct": round(100 * (result.objective - best) / best, 4),
            "bound": _round(result.bound, 3),
            "gap_to_bound_pct": _round(None if result.gap is None else 100 * result.gap, 4),
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "source": result.backend,
            "time_to_0.1pct_s": _round(within, 2),
            "wall_s": round(wall, 2),
            "load_1min": load,
            "invalid": mm_invalid + sf_invalid + invalid,
        }
    ]


def report_braun(rows: list[dict[str, Any]], config: Any) -> str:
    """Per instance: best known, Min-Min, Sufferage, ours, the gaps and the bound."""
    kind, milp = BRAUN_BACKEND
    lines = [
        f"Portfolio solves ({kind}-{milp}, {BRAUN_THREADS} threads, {config.time_limit_s:g} s; "
        "warm-started with the best heuristic) against the best known makespan (the smaller of "
        "MS and CPR in `best_known.csv`); `load` is the 1-minute load average before each "
        "solve.",
        "",
        "| instance | best known | Min-Min | Sufferage | ours | gap to best known | bound | "
        "gap to bound | within 0.1 % after | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        within = r["time_to_0.1pct_s"]
        gap_bound = r["gap_to_bound_pct"]
        lines.append(
            f"| {r['instance']} | {float(r['best_known']):,} ({r['best_known_method']}) | "
            f"{float(r['min_min']):,} | {float(r['sufferage']):,} | {float(r['ours']):,} | "
            f"{float(r['gap_to_best_known_pct']):.3f} % | {r['bound']} | "
            f"{'' if gap_bound == '' else f'{float(gap_bound):.3f} %'} | "
            f"{'not reached' if within in ('', None) else f'{within} s'} | {r['load_1min']} |"
        )
    gaps = [float(r["gap_to_best_known_pct"]) for r in rows]
    matched = [r["instance"] for r, g in zip(rows, gaps, strict=True) if g <= 0]
    lines += [
        "",
        f"Within 0.1 % of the best known: {sum(g <= 0.1 for g in gaps)} of {len(rows)}. "
        f"Matched or beaten: {', '.join(matched) or 'none'}.",
    ]
    plot = f"{config.suite}.png"
    names = [r["instance"] for r in rows]

    def gap(column: str) -> list[float]:
        return [
            100 * (float(r[column]) - float(r["best_known"])) / float(r["best_known"]) for r in rows
        ]

    _bar_plot(
        config.out / plot,
        "Braun 512 x 16: gap to the best known makespan",
        names,
        {"Min-Min": gap("min_min"), "Sufferage": gap("sufferage"), "ours": gaps},
        "% above best known (log)",
        config.command,
        hline=(0.1, "0.1 % target"),
        log=True,
    )
    lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------
# dag-wfcommons: WfCommons workflows vs HEFT, PEFT and CPOP, and vs our bound

WFCOMMONS_BACKEND = "cpsat"
WFCOMMONS_THREADS = 2
WFCOMMONS_QUICK = ["srasearch-chameleon-10a-001"]
WFCOMMONS_MACHINE_SETS: list[int | None] = [None, 1, 2]
"""The machine sets: None is ``default_machine_set()``, an integer the seed of
``generate.machine_set`` (--quick: the default one only)."""
WFCOMMONS_GENERATED = [
    ("blast", 300),
    ("cycles", 400),
    ("epigenomics", 500),
    ("1000genome", 600),
    ("montage", 700),
    ("seismology", 800),
    ("soykb", 900),
    ("srasearch", 1000),
]
"""Synthetic workflows drawn at run time by the wfcommons package's WfChef recipes
(:mod:`.wfcommons_recipes`), seed :data:`WFCOMMONS_SEED`: (recipe, at most this many tasks).
Skipped, with a note, when wfcommons is not installed; --quick: none."""
WFCOMMONS_SEED = 1


def _machine_set_name(seed: int | None) -> str:
    return "default" if seed is None else f"seed {seed}"


def cases_wfcommons(config: Any) -> list[dict[str, Any]]:
    """Each workflow JSON in the data folder (the smallest in --quick) and each generated
    workflow (:data:`WFCOMMONS_GENERATED`, when wfcommons is installed) on each machine
    set."""
    names = sorted(p.stem for p in config.data_dir("dag/wfcommons").glob("*.json"))
    sets = WFCOMMONS_MACHINE_SETS
    if config.quick:
        names = [n for n in names if n in WFCOMMONS_QUICK]
        sets = sets[:1]
        generated = []
    else:
        # available() imports wfcommons: seconds, and nothing --quick needs.
        generated = WFCOMMONS_GENERATED if available() is None else []
    out = [
        {"case": f"{name}@{_machine_set_name(seed)}", "workflow": name, "machine_seed": seed}
        for seed in sets
        for name in names
    ]
    out += [
        {
            "case": f"{recipe}-{tasks}-s{WFCOMMONS_SEED}@{_machine_set_name(seed)}",
            "workflow": f"{recipe}-{tasks}-s{WFCOMMONS_SEED}",
            "recipe": recipe,
            "tasks": tasks,
            "machine_seed": seed,
        }
        for seed in sets
        for recipe, tasks in generated
    ]
    return _chosen(out, config)


def run_wfcommons(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """HEFT (timed), PEFT, CPOP, then a portfolio solve (CP-SAT, 2 threads) of one workflow
    on one machine set; the gap between our schedule and our bound."""

    seed = case.get("machine_seed")
    machines, links = (None, None) if seed is None else machine_set(seed)
    if case.get("recipe"):
        instance = generate_workflow(
            case["recipe"], int(case["tasks"]), WFCOMMONS_SEED, machines, links
        )
    else:
        path = config.data_dir("dag/wfcommons") / f"{case['workflow']}.json"
        instance = load_wfcommons(path, machines, links)
    t0 = time.perf_counter()
    heft_solution = heft(instance)
    heft_wall = time.perf_counter() - t0
    h, h_invalid = _checked(instance, heft_solution)
    p, p_invalid = _checked(instance, peft(instance))
    c, c_invalid = _checked(instance, cpop(instance))
    result, wall, load = _solve(instance, config.time_limit_s, WFCOMMONS_BACKEND, WFCOMMONS_THREADS)
    _, invalid = _checked(instance, result.solution)
    ours = result.objective
    return [
        {
            "workflow": case["workflow"],
            "machines": _machine_set_name(seed),
            "tasks": len(instance.tasks),
            "edges": len(instance.edges),
            "heft_s": round(h, 4),
            "heft_wall_s": round(heft_wall, 3),
            "peft_s": round(p, 4),
            "cpop_s": round(c, 4),
            "ours_s": round(ours, 6),
            "vs_heft_pct": round(100 * (ours - h) / h, 3),
            "bound_s": _round(result.bound, 6),
            "gap_pct": _round(
                None if result.bound is None else 100 * (ours - result.bound) / ours, 4
            ),
            "room_pct": _round(None if result.bound is None else 100 * (result.bound - h) / h, 2),
            "status": result.status.value,
            "source": result.backend,
            "wall_s": round(wall, 2),
            "load_1min": load,
            "invalid": h_invalid + p_invalid + c_invalid + invalid,
        }
    ]


def report_wfcommons(rows: list[dict[str, Any]], config: Any) -> str:
    """Per workflow and machine set: the three heuristics, ours, the change vs HEFT, our
    bound and the gap between our schedule and it; per machine set and overall the mean and
    largest gap and the workflows proved optimal."""

    lines = [
        "Machine sets: `default` is `default_machine_set()`: eight machines of three types "
        "(speed 2 / 1 / 0.5) in two zones (1.25 GB/s inside a zone, 125 MB/s and 20 ms "
        "between); `seed N` is `generate.machine_set(N)` (`placement import wfcommons PATH "
        "--machine-seed N`): eight machines, three types, two zones, speeds, slots and the "
        "inter-zone link drawn. Workflows: the eight public Pegasus instances of the data "
        "folder, and synthetic ones named `RECIPE-N-s1`, drawn at run time by the wfcommons "
        "package's WfChef recipe with at most N tasks, seed 1 "
        "(`benchmarks/dag/wfcommons_recipes.py`). Portfolio solves: "
        f"{WFCOMMONS_BACKEND}, {WFCOMMONS_THREADS} threads, {config.time_limit_s:g} s. "
        "Makespans in seconds; `gap` is (ours - bound) / ours, the most our schedule can be "
        "above the optimum; `room` is (bound - HEFT) / HEFT; `HEFT time` is HEFT alone; "
        "`load` is the 1-minute load average before each solve. `optimal` is proved on the "
        "real-valued times (formulation 5.1.1).",
    ]
    described = []
    for seed in WFCOMMONS_MACHINE_SETS:
        if seed is None or not any(r["machines"] == _machine_set_name(seed) for r in rows):
            continue
        machines, links = machine_set(seed)
        kinds = sorted({(m.type, m.speed) for m in machines}, key=lambda k: -k[1])
        described.append(
            f"- `seed {seed}`: "
            + ", ".join(
                f"{sum(m.type == k for m in machines)} {k} (speed {v:g}, slots "
                f"{'/'.join(str(m.slots) for m in machines if m.type == k)})"
                for k, v in kinds
            )
            + f"; zones a/b: {sum(m.zone == 'a' for m in machines)}/"
            f"{sum(m.zone == 'b' for m in machines)} machines, "
            f"{links[2].bandwidth_bytes_per_s / 1e6:g} MB/s and "
            f"{links[2].latency_s * 1e3:g} ms between."
        )
    if described:
        lines += ["", *described]
    lines += [
        "",
        "| workflow | machines | tasks | edges | HEFT | HEFT time | PEFT | CPOP | ours | "
        "vs HEFT | bound | gap | status | source | wall | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        gap = "" if r.get("gap_pct") in ("", None) else f"{float(r['gap_pct']):.3f} %"
        lines.append(
            f"| {r['workflow']} | {r['machines']} | {r['tasks']} | "
            f"{r['edges']} | {_g(r['heft_s'])} | {float(r.get('heft_wall_s') or 0):.2f} s | "
            f"{_g(r['peft_s'])} | {_g(r['cpop_s'])} | {_g(r['ours_s'])} | "
            f"{float(r['vs_heft_pct']):+.2f} % | {_g(r['bound_s'])} | {gap} | {r['status']} | "
            f"{r['source']} | {r['wall_s']} s | {r['load_1min']} |"
        )
    lines.append("")

    def summary(label: str, mine: list[dict[str, Any]]) -> str:
        gaps = [float(r["gap_pct"]) for r in mine if r.get("gap_pct") not in ("", None)]
        ours = statistics.fmean(float(r["vs_heft_pct"]) for r in mine)
        proven = sum(str(r["status"]) == "optimal" for r in mine)
        worse = sum(float(r["vs_heft_pct"]) > 1e-9 for r in mine)
        text = f"- {label}: {len(mine)} solves, mean change vs HEFT {ours:+.2f} %"
        if gaps:
            text += (
                f"; gap to our bound mean **{statistics.fmean(gaps):.2f} %**, largest "
                f"{max(gaps):.2f} %"
            )
        text += f"; **{proven} proved optimal**; worse than HEFT: {worse}."
        return text

    for name in dict.fromkeys(str(r["machines"]) for r in rows):
        lines.append(summary(f"`{name}`", [r for r in rows if str(r["machines"]) == name]))
    public = [r for r in rows if "-chameleon-" in str(r["workflow"])]
    generated = [r for r in rows if "-chameleon-" not in str(r["workflow"])]
    if public and generated:
        lines.append(summary("public workflows", public))
        lines.append(summary("generated workflows (300-1,000 tasks)", generated))
    if not generated and not config.quick:
        why = available()
        if why:
            lines.append(f"- No generated workflows: {why}.")
    if generated:
        times = [float(r.get("heft_wall_s") or 0) for r in generated]
        lines.append(
            f"- HEFT on the generated workflows: at most {max(times):.2f} s "
            f"(median {statistics.median(times):.2f} s)."
        )
    lines += ["", summary("all", rows)]
    plot = f"{config.suite}.png"

    def rel(column: str) -> list[float | None]:
        return [
            None if r[column] in ("", None) else float(r[column]) / float(r["heft_s"]) for r in rows
        ]

    _bar_plot(
        config.out / plot,
        "WfCommons workflows: makespan relative to HEFT",
        [
            str(r["workflow"]).replace("-chameleon", "").removesuffix("-001")
            + ("" if r["machines"] == "default" else f" ({r['machines']})")
            for r in rows
        ],
        {
            "PEFT": rel("peft_s"),
            "CPOP": rel("cpop_s"),
            "ours": rel("ours_s"),
            "bound": rel("bound_s"),
        },
        "makespan / HEFT's",
        config.command,
        hline=(1.0, "HEFT"),
    )
    lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------
# dag-scale: heuristic times and exact backends at scale

SCALE_THREADS = 2
SCALE_SETUPS: dict[str, dict[str, Any]] = {
    "dag": {"kind": "dag", "tasks": 1000, "machines": 32, "backends": ["cpsat", "milp"]},
    "grid-medium": {"kind": "grid", "tasks": 512, "machines": 16, "backends": ["cpsat", "milp"]},
    "grid-large": {"kind": "grid", "tasks": 4096, "machines": 128, "backends": ["milp"]},
}
SCALE_GRID_UNIT = 1000.0
"""ETC units per second of the grid setups (``grid_instance``'s ``unit``)."""
SCALE_QUICK = {"dag": (40, 4), "grid-medium": (64, 4), "grid-large": (128, 8)}
"""--quick: the same setups at tiny sizes (tasks, machines)."""


def cases_scale(config: Any) -> list[dict[str, Any]]:
    """One case per setup: the random DAG, then the two grid sizes."""
    out = []
    for key, setup in SCALE_SETUPS.items():
        tasks, machines = SCALE_QUICK[key] if config.quick else (setup["tasks"], setup["machines"])
        out.append(
            {
                "case": key,
                "kind": setup["kind"],
                "tasks": tasks,
                "machines": machines,
                "backends": list(setup["backends"]),
            }
        )
    return out


def run_scale(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Each heuristic (best of 3 runs), then a portfolio solve per exact backend."""

    tasks, machines = int(case["tasks"]), int(case["machines"])
    heuristics: dict[str, Callable[[Any], Any]]
    if case["kind"] == "dag":
        label = f"random DAG {tasks:,} x {machines} (CCR 1, seed 1)"
        instance = random_dag(tasks, machines, seed=1)
        heuristics = dict(DAG_HEURISTICS)
    else:
        # Thousands of ETC units per second, as grid-large: a hi-hi matrix of 4,096 tasks in
        # ETC units adds up to six times the family's 1e9 s and is refused.
        label = f"grid {tasks:,} x {machines} (inconsistent, seed 1, times in {SCALE_GRID_UNIT:g} ETC units)"
        instance = grid_instance(tasks, machines, seed=1, unit=SCALE_GRID_UNIT)
        heuristics = {"heft": DAG_HEURISTICS["heft"], **GRID_HEURISTICS}
    rows = []
    heft_value = None
    for name, fn in heuristics.items():
        best = float("inf")
        solutions = []
        for _ in range(3):
            t0 = time.perf_counter()
            solutions.append(fn(instance))
            best = min(best, time.perf_counter() - t0)
        checked = [_checked(instance, s) for s in solutions]
        value = checked[-1][0]
        if name == "heft":
            heft_value = value
        rows.append(
            {
                "instance": label,
                "method": name,
                "makespan": round(value, 2),
                "vs_heft_pct": "",
                "bound": "",
                "status": "",
                "time_s": round(best, 5),
                "load_1min": load_1min(),
                "invalid": sum(invalid for _, invalid in checked),
            }
        )
    for backend in case["backends"]:
        result, wall, load = _solve(instance, config.time_limit_s, backend, SCALE_THREADS)
        _, invalid = _checked(instance, result.solution)
        exact_found = any(not h.source.startswith("greedy") for h in result.history)
        errors = "; ".join(result.backend_errors.values())[:120]
        rows.append(
            {
                "instance": label,
                "method": f"portfolio {backend}"
                + ("" if exact_found else " (no exact improvement)"),
                "makespan": round(result.objective, 2),
                "vs_heft_pct": round(100 * (result.objective - heft_value) / heft_value, 2),
                "bound": _round(result.bound, 2),
                "status": f"{result.status.value}/{result.stop_reason.value}"
                + (f" ({errors})" if errors else ""),
                "time_s": round(wall, 2),
                "load_1min": load,
                "invalid": invalid,
            }
        )
    return rows


def report_scale(rows: list[dict[str, Any]], config: Any) -> str:
    """Per instance and method: makespan, change vs HEFT, bound, status and time."""
    lines = [
        f"Heuristics: best of 3 runs. Exact backends: a portfolio solve each, {SCALE_THREADS} "
        f"threads, {config.time_limit_s:g} s. The cases run one at a time (timing is the "
        "measurement); `load` is the 1-minute load average at the time.",
        "",
        "| instance | method | makespan | vs HEFT | bound | status | time | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vs = "" if r["vs_heft_pct"] in ("", None) else f"{float(r['vs_heft_pct']):+.2f} %"
        lines.append(
            f"| {r['instance']} | {r['method']} | {float(r['makespan']):,} | {vs} | {r['bound']} | "
            f"{r['status']} | {r['time_s']} s | {r['load_1min']} |"
        )
    heuristic = [r for r in rows if r["vs_heft_pct"] in ("", None)]
    instances = list(dict.fromkeys(r["instance"] for r in heuristic))
    methods = list(dict.fromkeys(r["method"] for r in heuristic))
    # Clipped at 10 us: a log axis has no room for a time that rounds to 0.
    times = {(r["instance"], r["method"]): max(float(r["time_s"]), 1e-5) for r in heuristic}
    plot = f"{config.suite}.png"
    _bar_plot(
        config.out / plot,
        "Heuristic time (best of 3)",
        instances,
        {m: [times.get((i, m)) for i in instances] for m in methods},
        "seconds (log)",
        config.command,
        hline=(1.0, "1 s target (HEFT, 1,000 x 32)"),
        log=True,
    )
    lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"
