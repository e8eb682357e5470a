"""The mc family's benchmark suite (``placement bench mc-partition``).

Schedulability ratio against normalised utilisation, the experiment of the partitioned
mixed-criticality literature (e.g. Ramanathan and Easwaran, DATE 2017, Section V): for each
platform (cores) and task count, for each normalised utilisation bound ``U`` (0.5 to 1.0 in
steps of 0.05), ``sets`` task sets from :func:`placement.models.mc.generate.generate` (seeded:
set ``j`` of point ``p`` has seed ``10_000 p + j``), and for each set:

* every heuristic of :mod:`placement.models.mc.greedy` (FFD, BFD, WFD, their
  criticality-aware variants, and MC-UDP, the paper's): schedulable or not;
* each exact backend on its own (no heuristic incumbent), asked the schedulability question
  only (``feasibility_only``), within the time limit: schedulable, proved unschedulable, or
  undecided.

A case is a chunk of sets of one point (so a run can be spread over worker processes or Ray).
Every solution goes through the family's checker again (the rows' ``invalid``, must be 0).
The suite's settings (``--param``): ``sets`` per point, ``cores``, ``tasks`` (pairs with
fewer than two tasks per core are skipped), ``utilisations``, ``backends``; the defaults are
the full protocol.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from placement.benchmarks.mc import PARAMETERS
from placement.benchmarks.runner import Rechecker
from placement.models.mc.cpsat import CpSatEncoding
from placement.models.mc.generate import generate
from placement.models.mc.greedy import HEURISTICS
from placement.models.mc.milp import MilpEncoding
from placement.solver import InputError, SolveOptions
from placement.solver.testing import ExactContext

QUICK = {"sets": 2, "cores": ("2",), "tasks": ("6",), "utilisations": ("0.80", "1.00")}
ENCODINGS = {"cpsat": CpSatEncoding, "milp": MilpEncoding}
HEURISTIC_ORDER = ("ffd", "bfd", "wfd", "ca-ffd", "ca-bfd", "ca-wfd", "udp")


def _settings(config: Any) -> dict[str, Any]:
    params = {p.name: p.default for p in PARAMETERS}
    if config.quick:
        params.update(QUICK)
    params.update(config.params or {})
    for name in params["backends"]:
        if name not in ENCODINGS:
            raise InputError.single("--param backends", name, "cpsat or milp")
    return params


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per chunk of task sets of one (cores, tasks, utilisation) point."""
    s = _settings(config)
    out = []
    point = 0
    for m in (int(c) for c in s["cores"]):
        for n in (int(t) for t in s["tasks"]):
            if n < 2 * m:
                continue
            for u in s["utilisations"]:
                point += 1
                for first in range(0, s["sets"], s["chunk"]):
                    out.append(
                        {
                            "cores": m,
                            "tasks": n,
                            "utilisation": float(u),
                            "point": point,
                            "first": first,
                            "count": min(s["chunk"], s["sets"] - first),
                            "backends": list(s["backends"]),
                        }
                    )
    return out


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every heuristic and exact backend on each task set of the case: one row per (set,
    method)."""
    rows = []
    for j in range(case["first"], case["first"] + case["count"]):
        seed = 10_000 * case["point"] + j
        inst = generate(case["tasks"], case["cores"], case["utilisation"], seed)
        base = {
            "cores": case["cores"],
            "tasks": case["tasks"],
            "utilisation": case["utilisation"],
            "seed": seed,
        }
        for name in HEURISTIC_ORDER:
            checker = Rechecker("mc")
            started = time.perf_counter()
            solution = HEURISTICS[name](inst)
            wall = time.perf_counter() - started
            report = checker(inst, solution)
            ok = report is not None and report.feasible
            rows.append(
                {
                    **base,
                    "method": name,
                    "schedulable": int(ok),
                    "proved_unschedulable": 0,
                    "time_s": round(wall, 4),
                    **checker.columns(),
                }
            )
        for backend in case["backends"]:
            checker = Rechecker("mc")
            encoding = ENCODINGS[backend](feasibility_only=True)
            ctx = ExactContext(
                inst, SolveOptions(time_limit_s=config.time_limit_s, threads=1), backend=backend
            )
            started = time.perf_counter()
            outcome = encoding.solve(inst, ctx)
            wall = time.perf_counter() - started
            checker.dropped(len(ctx.rejected))
            report = checker(inst, ctx.best)
            ok = report is not None and report.feasible
            rows.append(
                {
                    **base,
                    "method": backend,
                    "schedulable": int(ok),
                    "proved_unschedulable": int(outcome.proven_infeasible),
                    "time_s": round(wall, 4),
                    **checker.columns(),
                }
            )
    return rows


def _ratio(values: list[int]) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """Schedulability ratios per platform, the share of rejected sets proved unschedulable,
    the target checks, and one plot per platform."""
    s = _settings(config)
    methods = [m for m in (*HEURISTIC_ORDER, *s["backends"]) if any(r["method"] == m for r in rows)]
    exact = [m for m in s["backends"] if m in methods]
    by: dict[tuple[int, int, float], dict[str, dict[int, dict[str, int]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for r in rows:
        key = (int(r["cores"]), int(r["tasks"]), float(r["utilisation"]))
        by[key][r["method"]][int(r["seed"])] = {
            "ok": int(r["schedulable"]),
            "proved": int(r["proved_unschedulable"]),
        }
    platforms = sorted({(k[0], k[1]) for k in by})
    lines = [
        f"{s['sets']} task sets per point (reduced from the protocol's 500 when smaller); "
        f"exact backends alone (no heuristic incumbent), schedulability question only, "
        f"{config.time_limit_s:g} s per set, 1 thread.",
        "",
    ]
    missed_total = 0
    for m, n in platforms:
        lines += [f"### {m} cores, {n} tasks", ""]
        head = ["U", *methods, *[f"{e} proved unsched. / rejected" for e in exact]]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for key in sorted(k for k in by if (k[0], k[1]) == (m, n)):
            point = by[key]
            cells = [f"{key[2]:.2f}"]
            for method in methods:
                cells.append(f"{_ratio([v['ok'] for v in point[method].values()]):.2f}")
            for e in exact:
                rejected = [v for v in point[e].values() if not v["ok"]]
                proved = sum(v["proved"] for v in rejected)
                cells.append(f"{proved}/{len(rejected)}")
            lines.append("| " + " | ".join(cells) + " |")
            for e in exact:
                for seed, v in point[e].items():
                    if not v["ok"] and any(
                        point[h].get(seed, {}).get("ok") for h in HEURISTIC_ORDER if h in point
                    ):
                        missed_total += 1
        lines.append("")
    lines += [
        "Targets: sets some heuristic schedules that an exact backend (alone, within the "
        f"limit) does not: {missed_total}.",
    ]
    for e in exact:
        big = [
            v
            for (m, n, _), point in by.items()
            if (m, n) == (8, 40)
            for v in point[e].values()
            if not v["ok"]
        ]
        if big:
            decided = sum(v["proved"] for v in big) / len(big)
            lines.append(
                f"{e}, 8 cores x 40 tasks: {decided:.1%} of the sets it does not schedule are "
                "proved unschedulable within the limit."
            )
    _plot(by, platforms, methods, config)
    lines += ["", f"![schedulability ratio]({config.suite}.png)", ""]
    return "\n".join(lines)


def _plot(by: Any, platforms: list[tuple[int, int]], methods: list[str], config: Any) -> None:
    # matplotlib with pyplot loads in 1-2 s: only when the report is written
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    if not platforms:
        return
    fig, axes = plt.subplots(
        1, len(platforms), figsize=(4.2 * len(platforms), 3.6), squeeze=False, sharey=True
    )
    for ax, (m, n) in zip(axes[0], platforms, strict=True):
        keys = sorted(k for k in by if (k[0], k[1]) == (m, n))
        xs = [k[2] for k in keys]
        for method in methods:
            ys = [_ratio([v["ok"] for v in by[k][method].values()]) for k in keys]
            style = "-o" if method in ENCODINGS else "--."
            ax.plot(xs, ys, style, label=method, lw=1.6 if method in ENCODINGS else 1.0, ms=3)
        ax.set_title(f"{m} cores, {n} tasks")
        ax.set_xlabel("normalised utilisation")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("schedulability ratio")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    config.out.mkdir(parents=True, exist_ok=True)
    fig.savefig(config.out / f"{config.suite}.png", dpi=110)
    plt.close(fig)
