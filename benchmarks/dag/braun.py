"""``grid-braun``: the Braun et al. 512 x 16 ETC instances (R||Cmax) against the best known
makespans, beside Min-Min and Sufferage."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from placement.benchmarks.dag.shared import bar_plot, checked_makespan, rounded, timed_solve
from placement.benchmarks.tables import rule
from placement.models.dag.formats.loaders import load_braun
from placement.models.dag.greedy import min_min, sufferage

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
    mm, mm_invalid = checked_makespan(instance, min_min(instance))
    sf, sf_invalid = checked_makespan(instance, sufferage(instance))
    kind, milp = BRAUN_BACKEND
    result, wall, load = timed_solve(instance, config.time_limit_s, kind, BRAUN_THREADS, milp)
    _, invalid = checked_makespan(instance, result.solution)
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
            "bound": rounded(result.bound, 3),
            "gap_to_bound_pct": rounded(None if result.gap is None else 100 * result.gap, 4),
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "source": result.backend,
            "time_to_0.1pct_s": rounded(within, 2),
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
        rule(10),
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

    bar_plot(
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
