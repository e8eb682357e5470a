"""``grid-large``: generated Braun-style R||Cmax instances at 1,024 x 32, 2,048 x 64 and
4,096 x 128 (the 12 classes of Braun et al. 2001 at each size, seeds fixed).

Per instance: Min-Min and Sufferage (each timed, each checked), then a portfolio solve
(``--backend auto``: the R||Cmax search) with our makespan, our bound (valid for the whole
instance), the gap between them, and the time at which our incumbent first beat both
heuristics. There are no published results at these sizes for these instances (the
Nesmachnow / CPR literature at 1,024 x 32 uses its own generated instances, which are not
in the shared data); the reference is our own bound.

With ``--param highs_after=SECONDS``, HiGHS then runs alone on the whole assignment model for
that long (one thread), warm-started with our schedule: how far more time moves the schedule
and the bound (the measured reason for the gaps the 60-s solves leave).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from placement.benchmarks.runner import load_1min, recheck
from placement.benchmarks.tables import rule
from placement.models.dag.braun import CLASSES, BraunClass, braun_instance
from placement.models.dag.greedy import back_to_back, min_min, sufferage
from placement.models.dag.rcmax.lp import (
    assignment_model,
    lower_bound_from_lp,
    model_assignment,
    model_start,
)
from placement.solver import SolveOptions, solve
from placement.solver.errors import InputError

FAMILY_NAME = "dag"
GRID_LARGE_THREADS = 2
GRID_LARGE_SIZES = ("1024x32", "2048x64", "4096x128")
GRID_LARGE_QUICK = {"sizes": ("64x4",), "classes": ("u_c_hihi", "u_i_lolo")}
GAP_TARGET_PCT = 0.3
FIRST_TARGET_S = 5.0


def _settings(config: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sizes": GRID_LARGE_SIZES,
        "classes": tuple(c.name for c in CLASSES),
        "seed": 0,
        "highs_after": 0.0,
    }
    if config.quick:
        params.update(GRID_LARGE_QUICK)
    params.update(config.params or {})
    return params


def parse_size(text: str) -> tuple[int, int]:
    """``TASKSxMACHINES`` of a ``--param sizes`` entry."""
    try:
        tasks, machines = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InputError.single("--param sizes", text, "TASKSxMACHINES, e.g. 1024x32") from None
    if tasks < 1 or machines < 2:
        raise InputError.single("--param sizes", text, "at least 1 task and 2 machines")
    return tasks, machines


def cases_grid_large(config: Any) -> list[dict[str, Any]]:
    """One case per (size, class), the largest size first (the longest cases start first)."""
    s = _settings(config)
    sizes = sorted((parse_size(v) for v in s["sizes"]), key=lambda nk: -nk[0] * nk[1])
    classes = [BraunClass.parse(c).name for c in s["classes"]]
    return [
        {
            "case": f"{c}-{n}x{k}",
            "klass": c,
            "tasks": n,
            "machines": k,
            "seed": int(s["seed"]),
        }
        for n, k in sizes
        for c in classes
    ]


def _checked(instance: Any, solution: Any) -> tuple[float | None, int]:
    report, invalid = recheck(FAMILY_NAME, instance, solution)
    return (None if report is None else report.objective), invalid


def _timed(fn: Any, instance: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(instance)
    return out, time.perf_counter() - t0


def highs_alone(instance: Any, machine: np.ndarray, seconds: float) -> dict[str, Any]:
    """HiGHS alone on the whole assignment model for ``seconds`` (one thread), warm-started
    with ``machine``: its schedule (checked; ``machine``'s when it found none better), its MIP
    bound made safe (:func:`~placement.models.dag.rcmax.lp.lower_bound_from_lp`), its nodes."""
    d = instance.duration
    machine = np.asarray(machine, dtype=np.int64)
    model, ti, mi = assignment_model(
        d, integer=True, threads=1, random_seed=0, mip_rel_gap=0.0, mip_abs_gap=1e-9
    )
    model.set_start(model_start(d, ti, mi, machine))
    t0 = time.perf_counter()
    run = model.run(float(seconds))
    wall = time.perf_counter() - t0
    best = machine if run.x is None else model_assignment(d, ti, mi, run.x)
    value, invalid = _checked(instance, back_to_back(instance, best))
    return {
        "highs_alone_s": round(wall, 1),
        "highs_alone_ours": "" if value is None else round(float(value), 4),
        "highs_alone_bound": ""
        if run.bound is None
        else round(lower_bound_from_lp(instance, float(run.bound)), 4),
        "highs_alone_nodes": run.nodes,
        "highs_alone_invalid": invalid,
    }


def run_grid_large(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Generate the instance, run Min-Min and Sufferage, then the portfolio (auto, 2
    threads); with ``highs_after``, then HiGHS alone from our schedule
    (:func:`highs_alone`)."""
    n, k = int(case["tasks"]), int(case["machines"])
    instance = braun_instance(n, k, case["klass"], seed=int(case["seed"]))
    mm_sol, mm_s = _timed(min_min, instance)
    sf_sol, sf_s = _timed(sufferage, instance)
    mm, mm_invalid = _checked(instance, mm_sol)
    sf, sf_invalid = _checked(instance, sf_sol)
    load = load_1min()
    t0 = time.perf_counter()
    result = solve(
        instance,
        SolveOptions(time_limit_s=config.time_limit_s, backend="auto", threads=GRID_LARGE_THREADS),
    )
    wall = time.perf_counter() - t0
    _, invalid = _checked(instance, result.solution)
    heuristic = min(v for v in (mm, sf) if v is not None)
    first = next(
        ((h.time_s, h.source) for h in result.history if h.objective < heuristic * (1 - 1e-9)),
        (None, ""),
    )
    exact_first = next(
        (h.time_s for h in result.history if not str(h.source).startswith("greedy")), None
    )
    ours = float(result.objective)
    bound = result.bound
    gap = None if bound is None else 100 * (ours - float(bound)) / ours
    after = float(_settings(config)["highs_after"])
    extra = highs_alone(instance, result.solution.machine, after) if after > 0 else {}
    return [
        {
            "instance": instance.name,
            "class": case["klass"],
            "size": f"{n}x{k}",
            "min_min": round(float(mm), 4),
            "min_min_s": round(mm_s, 3),
            "sufferage": round(float(sf), 4),
            "sufferage_s": round(sf_s, 3),
            "ours": round(ours, 4),
            "bound": "" if bound is None else round(float(bound), 4),
            "gap_to_bound_pct": "" if gap is None else round(gap, 4),
            "vs_best_heuristic_pct": round(100 * (ours - heuristic) / heuristic, 3),
            "first_improvement_s": "" if first[0] is None else round(first[0], 2),
            "first_improvement_by": first[1],
            "first_exact_s": "" if exact_first is None else round(exact_first, 2),
            "greedy_phase_s": round(float(result.phase_times_s.get("greedy", 0.0)), 2),
            "status": result.status.value,
            "source": result.backend,
            "wall_s": round(wall, 2),
            "load_1min": load,
            "invalid": mm_invalid + sf_invalid + invalid + extra.pop("highs_alone_invalid", 0),
            **extra,
        }
    ]


def _f(value: Any) -> float | None:
    return None if value in ("", None) else float(value)


def report_grid_large(rows: list[dict[str, Any]], config: Any) -> str:
    """Per instance the makespans, our bound and the gap, the time to the first
    improvement; then a summary per size against the targets."""
    lines = [
        f"Portfolio solves (`--backend auto`: the R||Cmax search, {GRID_LARGE_THREADS} threads, "
        f"{config.time_limit_s:g} s) on generated Braun-style instances "
        "(`placement.models.dag.braun`, seed 0; times in thousands of ETC units). `gap` is "
        "(ours - bound) / ours with our bound (valid for the whole instance); `first better` "
        "is when our incumbent first beat both Min-Min and Sufferage (seconds from the start "
        "of the solve, greedy phase included) and what found it; `greedy` is the portfolio's "
        "greedy phase; `load` the 1-minute load average before the solve.",
        "",
        "| instance | Min-Min | Sufferage | ours | bound | gap | vs best heuristic | "
        "first better | by | greedy | load |",
        rule(11),
    ]
    order = {s: i for i, s in enumerate(GRID_LARGE_SIZES)}
    rows = sorted(rows, key=lambda r: (order.get(r["size"], 99), r["class"]))
    for r in rows:
        gap = _f(r["gap_to_bound_pct"])
        lines.append(
            f"| {r['instance']} | {float(r['min_min']):,.3f} | {float(r['sufferage']):,.3f} | "
            f"{float(r['ours']):,.3f} | {r['bound']} | "
            f"{'' if gap is None else f'{gap:.3f} %'} | {float(r['vs_best_heuristic_pct']):.2f} % | "
            f"{r['first_improvement_s']} s | {r['first_improvement_by']} | "
            f"{r['greedy_phase_s']} s | {r['load_1min']} |"
        )
    lines += [
        "",
        "| size | instances | gap mean | gap max | within "
        f"{GAP_TARGET_PCT:g} % | first better: median / max | within {FIRST_TARGET_S:g} s | "
        "Min-Min / Sufferage time (max) | load |",
        rule(9),
    ]
    for size in sorted({r["size"] for r in rows}, key=lambda s: order.get(s, 99)):
        group = [r for r in rows if r["size"] == size]
        gaps = [g for g in (_f(r["gap_to_bound_pct"]) for r in group) if g is not None]
        firsts = [_f(r["first_improvement_s"]) for r in group]
        got = [f for f in firsts if f is not None]
        loads = [float(r["load_1min"]) for r in group]
        lines.append(
            f"| {size} | {len(group)} | "
            f"{statistics.mean(gaps):.3f} % | {max(gaps):.3f} % | "
            f"{sum(g <= GAP_TARGET_PCT for g in gaps)} of {len(group)} | "
            + (f"{statistics.median(got):.2f} s / {max(got):.2f} s" if got else "never")
            + f" | {sum(f <= FIRST_TARGET_S for f in got)} of {len(group)} | "
            f"{max(float(r['min_min_s']) for r in group):.2f} s / "
            f"{max(float(r['sufferage_s']) for r in group):.2f} s | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
            if gaps
            else f"| {size} | {len(group)} | | | | | | | |"
        )
    if any("highs_alone_bound" in r for r in rows):
        lines += [
            "",
            "Then HiGHS alone on the whole assignment model (one thread), warm-started with our "
            "schedule (`--param highs_after`): `gap then` takes the better schedule and the "
            "better bound of the two.",
            "",
            "| instance | ours / bound / gap after the solve | HiGHS alone: time, schedule / "
            "bound (nodes) | gap then |",
            rule(4),
        ]
        for r in rows:
            ours, bound = float(r["ours"]), _f(r["bound"])
            h_ours, h_bound = _f(r["highs_alone_ours"]), _f(r["highs_alone_bound"])
            best = min(v for v in (ours, h_ours) if v is not None)
            low = max((v for v in (bound, h_bound) if v is not None), default=None)
            gap = _f(r["gap_to_bound_pct"])
            lines.append(
                f"| {r['instance']} | {ours:,.4f} / {r['bound']} / "
                f"{'' if gap is None else f'{gap:.3f} %'} | {r['highs_alone_s']} s, "
                f"{r['highs_alone_ours']} / {r['highs_alone_bound']} ({r['highs_alone_nodes']}) | "
                + ("" if low is None else f"{100 * (best - low) / best:.3f} %")
                + " |"
            )
    return "\n".join(lines) + "\n"
