"""``placement bench gpu-reclaim``: the Lyra scenario (issue 18).

Training jobs (about half elastic) run on inference servers lent to them; inference comes
back and needs N whole servers. Which servers to reclaim, and what to preempt or shrink?
:func:`placement.models.gpu.peers.lyra.reclaim_instance` writes each case as a re-optimization
instance; three methods answer it and the family's checker judges every answer:

* ``lyra`` -- Lyra's greedy on server preemption cost (Li et al., EuroSys 2023;
  :func:`placement.models.gpu.peers.lyra.lyra_reclaim`);
* ``evict_lowest`` -- the Kueue / KAI-Scheduler / Volcano preemption
  (:func:`placement.models.gpu.reopt_greedy.evict_lowest`);
* ``ours`` -- the exact re-optimization through the portfolio (CP-SAT), whose tier-1 bound
  gives a lower bound on the training workers any solution that serves all N servers must
  preempt or shrink.

Columns: inference servers served, preempted workers (jobs preempted and elastic workers
removed), preempted jobs, shrunk jobs, restarted workers, lost GPU-hours (work since the last
checkpoint of every preempted worker), the proven lower bound on preempted workers, wall time.
"""

from __future__ import annotations

import time
from typing import Any

from placement.benchmarks.runner import Rechecker, load_average
from placement.benchmarks.tables import rule
from placement.models.gpu.check import running_decisions
from placement.models.gpu.peers.lyra import GPUS_PER_SERVER, INFERENCE_PRIORITY, lyra_reclaim
from placement.models.gpu.peers.lyra import reclaim_instance as make_instance
from placement.models.gpu.reopt_greedy import evict_lowest
from placement.solver import SolveOptions, solve

FULL = {"servers": 32, "reclaims": (4, 8), "seeds": (1, 2, 3, 4, 5)}
QUICK = {"servers": 8, "reclaims": (2,), "seeds": (1,)}
METHODS = ("lyra", "evict_lowest", "ours")


def cases_reclaim(config: Any) -> list[dict[str, Any]]:
    """Every (N reclaimed, seed); ``--param servers=S``, ``--param reclaim=4,8`` and
    ``--param seeds=1-5`` choose a subset (defaults: the full protocol, or ``--quick``)."""
    plan = QUICK if config.quick else FULL
    servers = int(config.params.get("servers") or plan["servers"])
    reclaims = _ints(config.params.get("reclaim"), plan["reclaims"])
    seeds = _ints(config.params.get("seeds"), plan["seeds"])
    return [
        {
            "case": f"{servers} servers reclaim {n} seed {seed}",
            "servers": servers,
            "reclaim": n,
            "seed": seed,
            "time_limit_s": config.time_limit_s,
        }
        for n in reclaims
        for seed in seeds
    ]


def _ints(value: Any, default: tuple[int, ...]) -> tuple[int, ...]:
    """``("4", "8")`` or ``("1-5",)`` (a ``name_list``) as a tuple of ints; ``default`` when
    not given."""
    if not value:
        return default
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    out: list[int] = []
    for part in parts:
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return tuple(out)


def run_reclaim(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The three methods on one case, one row each."""
    del config
    instance = make_instance(case["seed"], servers=case["servers"], reclaim=case["reclaim"])
    training = [j for j in instance.running_jobs]
    total_workers = sum(len(instance.jobs[j].current) for j in training)
    rows = []
    for method in METHODS:
        checker = Rechecker("gpu")
        started = time.monotonic()
        bound = None
        status = ""
        if method == "lyra":
            solution = lyra_reclaim(instance)
        elif method == "evict_lowest":
            solution = evict_lowest(instance)
        else:
            result = solve(
                instance,
                SolveOptions(backend="cpsat", time_limit_s=case["time_limit_s"], threads=1),
            )
            solution, bound, status = result.solution, result.bound, result.status.value
            checker.dropped(result.rejected_candidates)
        wall = time.monotonic() - started
        report = checker(instance, solution)
        decisions, _ = running_decisions(instance, solution)
        served = sum(
            1 for j, job in enumerate(instance.jobs) if not job.running and j in solution.placements
        )
        lost_gpu_s = sum(
            d.preempted_workers * instance.jobs[d.job].preemption_cost for d in decisions
        )
        lb = None
        if bound is not None:
            # Every training worker is one GPU at priority 1: with all N servers served,
            # tier 1 = 800 N + training workers kept.
            kept_max = bound - INFERENCE_PRIORITY * GPUS_PER_SERVER * case["reclaim"]
            lb = max(0, total_workers - int(kept_max + 1e-9))
        rows.append(
            {
                "servers": case["servers"],
                "reclaim": case["reclaim"],
                "seed": case["seed"],
                "method": method,
                "training_jobs": len(training),
                "training_workers": total_workers,
                "served": served,
                "preempted_workers": sum(d.preempted_workers for d in decisions),
                "preempted_jobs": sum(1 for d in decisions if d.action == "preempt"),
                "shrunk_jobs": sum(
                    1 for d in decisions if d.action == "resize" and d.preempted_workers
                ),
                "restarted_workers": sum(d.migrated_workers for d in decisions),
                "lost_gpu_hours": round(lost_gpu_s / 3600, 3),
                "disruption_cost": report.terms.get("disruption_cost") if report else None,
                "preempted_workers_lb": lb,
                "status": status,
                "wall_s": round(wall, 3),
                "load": load_average(),
                **checker.columns(),
            }
        )
    return rows


def report_reclaim(rows: list[dict[str, Any]], config: Any) -> str:
    """One line per case and method, then the means per N and method."""
    lines = [
        "Lyra's reclaim scenario: training jobs (about half elastic, down to half their",
        "workers) hold 90 % of the lent inference servers' GPUs; N servers must be given back",
        "whole. `preempted` counts workers lost (whole jobs preempted plus elastic workers",
        "removed); `lost GPU-h` is the work since the last checkpoint of those workers;",
        "`restarted` counts workers restarted by a migration or a resize. `LB` is the proven",
        "lower bound on preempted workers of any solution that serves all N servers (from our",
        "tier-1 bound); `invalid` counts solutions the family's checker rejected.",
        "",
        "| servers | N | seed | method | served | preempted | LB | preempted jobs | shrunk jobs "
        "| restarted | lost GPU-h | wall s | status | invalid |",
        rule("rrrlrrrrrrrrlr"),
    ]
    for r in rows:
        lines.append(
            f"| {r['servers']} | {r['reclaim']} | {r['seed']} | {r['method']} | {r['served']} "
            f"| {r['preempted_workers']} | {_v(r.get('preempted_workers_lb'))} "
            f"| {r['preempted_jobs']} | {r['shrunk_jobs']} | {r['restarted_workers']} "
            f"| {float(r['lost_gpu_hours']):.2f} | {float(r['wall_s']):.2f} "
            f"| {r.get('status') or '-'} | {r['invalid']} |"
        )
    lines += [
        "",
        "Means over seeds:",
        "",
        "| N | method | preempted workers | lost GPU-h | preempted jobs | restarted |",
        rule("rlrrrr"),
    ]
    for n in sorted({int(r["reclaim"]) for r in rows}):
        for method in METHODS:
            sel = [r for r in rows if int(r["reclaim"]) == n and r["method"] == method]
            if not sel:
                continue

            def mean(key: str, sel: list[dict[str, Any]] = sel) -> float:
                return sum(float(r[key]) for r in sel) / len(sel)

            lines.append(
                f"| {n} | {method} | {mean('preempted_workers'):.1f} "
                f"| {mean('lost_gpu_hours'):.2f} | {mean('preempted_jobs'):.1f} "
                f"| {mean('restarted_workers'):.1f} |"
            )
    return "\n".join(lines) + "\n"


def _v(value: Any) -> str:
    return "-" if value in (None, "") else str(value)
