"""``placement bench dispatch-policies``: every online policy replayed on each trace.

Cases: one synthetic trace per (load, seed) (:func:`placement.models.dispatch.generate`,
Weibull sizes, identical single-core servers) and the shared traces under the data root
(``jobs/pwa-nasa-ipsc-1993``: the SWF log on 2 servers of 64 processors, jobs of 128 left
out; ``jobs/cirrus-2024q1``: the sacct CSV on 280 nodes of 36 cores); a missing trace gives a
row that says so. Each case replays every policy (:mod:`placement.models.dispatch.sim`), the
family's checker checks every schedule (``invalid``), and the row carries the trace's lower
bound (:mod:`placement.models.dispatch.bound`) as a mean response. Then Yildiz et al.'s
server-count sweep on each trace (:mod:`.sweep`).
"""

from __future__ import annotations

import os
import statistics
from typing import Any

from placement.benchmarks.dispatch.sweep import LOAD, run_sweep, sweep_table, total_speed_for
from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.dispatch.bound import lower_bound, own_service_bound, srpt_bound
from placement.models.dispatch.check import figures
from placement.models.dispatch.formats.sacct import load_sacct
from placement.models.dispatch.formats.swf import load_swf
from placement.models.dispatch.generate import generate
from placement.models.dispatch.instance import BACKFILL
from placement.models.dispatch.schedule import easy_solution, fcfs_solution
from placement.models.dispatch.sim import POLICY_NAMES, make_policy, replay
from placement.solver import SolutionStatus, SolveOptions, solve

TRACES = {
    "nasa-ipsc-1993": "jobs/pwa-nasa-ipsc-1993/NASA-iPSC-1993-3.1-cln.swf.gz",
    "cirrus-2024q1": "jobs/cirrus-2024q1/2024_Q1_CPU-sacct-subset.csv",
}


def _settings(config: Any) -> dict[str, Any]:
    p = config.params
    quick = config.quick
    return {
        "jobs": 500 if quick else int(p.get("jobs", 10_000)),
        "servers": int(p.get("servers", 8)),
        "loads": [float(x) for x in p.get("loads", ("0.5", "0.7", "0.9", "0.95"))],
        "seeds": [int(x) for x in p.get("seeds", ("1",))],
        "cov": float(p.get("cov", 2.0)),
        "trace_jobs": 500 if quick else int(p.get("trace_jobs", 5_000)),
        "windows": int(p.get("windows", 20)),
    }


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per synthetic (load, seed), then one per shared trace."""
    s = _settings(config)
    out: list[dict[str, Any]] = [
        {
            "trace": "synthetic",
            "load": load,
            "seed": seed,
            "jobs": s["jobs"],
            "servers": s["servers"],
            "cov": s["cov"],
        }
        for load in s["loads"]
        for seed in s["seeds"]
    ]
    for name, rel in TRACES.items():
        out.append({"trace": name, "path": str(config.data_dir(rel)), "jobs": s["trace_jobs"]})
    for case in out:
        case["stage_budget_s"] = 2.0 if config.quick else None  # full: the whole grid
    out.append({"trace": "sweep", "sweep": "synthetic", "jobs": s["jobs"], "seed": s["seeds"][0]})
    for name, rel in TRACES.items():
        out.append(
            {
                "trace": "sweep",
                "sweep": name,
                "path": str(config.data_dir(rel)),
                "jobs": s["trace_jobs"],
            }
        )
    out.append(
        {
            "trace": "nasa-easy",
            "path": str(config.data_dir(TRACES["nasa-ipsc-1993"])),
            "jobs": s["trace_jobs"],
        }
    )
    out.append(
        {
            "trace": "windows",
            "windows": 3 if config.quick else s["windows"],
            "time_limit_s": config.time_limit_s,
        }
    )
    return out


def _instance(case: dict[str, Any]) -> Any:
    if case["trace"] == "synthetic":
        return generate(case["jobs"], case["servers"], case["load"], case["seed"], cov=case["cov"])
    if case["trace"] == "nasa-ipsc-1993":
        return load_swf(case["path"], servers=2, cores=64, limit=case["jobs"])
    return load_sacct(case["path"], limit=case["jobs"])


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


WINDOW_POLICIES = ("ect", "lwl", "jsq", "two-stage", "sita", "rr")
"""The policies compared with the offline optimum on small windows (the rollout needs 50 jobs
of history before it departs from ECT, so on 12 jobs it is ECT)."""


def run_windows(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Small traces (12 jobs, 2 single-core servers, load 0.95, Weibull sizes of mean 4, CoV
    2; seeds 1..N): each policy's total flow time over the offline optimum that CP-SAT proves
    (the time-indexed model, one thread); a window without a proof counts as not proved."""
    rows = []
    for seed in range(1, case["windows"] + 1):
        instance = generate(12, 2, 0.95, seed, mean_size=4.0)
        result = solve(
            instance,
            SolveOptions(backend="cpsat", time_limit_s=case["time_limit_s"], threads=1),
        )
        checker = Rechecker("dispatch")
        report = checker(instance, result.solution)
        proved = result.status == SolutionStatus.OPTIMAL
        row = {
            "trace": "windows",
            "load": 0.95,
            "seed": seed,
            "jobs": 12,
            "servers": 2,
            "policy": "offline optimum",
            "objective": report.objective if report is not None else "",
            "proved": int(proved),
            "invalid": 0 if report is None or report.feasible else 1,
        }
        rows.append(row)
        for name in WINDOW_POLICIES:
            r = replay(instance, name)
            policy_report = checker(instance, r.solution)
            rows.append(
                {
                    **{k: row[k] for k in ("trace", "load", "seed", "jobs", "servers")},
                    "policy": name,
                    "objective": policy_report.objective,
                    "ratio_to_optimum": round(policy_report.objective / report.objective, 4)
                    if proved
                    else "",
                    "invalid": 0 if policy_report.feasible else 1,
                }
            )
    return rows


def bounded_slowdown(instance: Any, solution: Any, floor_s: int = 10) -> float:
    """Mean of ``max(1, response / max(size, floor_s))`` (the PWA's usual metric)."""
    total = 0.0
    for j, job in enumerate(instance.jobs):
        end = solution.start[j] + instance.service[j][solution.server_of[j]]
        total += max(1.0, (end - job.arrival) / max(job.size, floor_s))
    return total / len(instance.jobs)


def run_easy(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The NASA log on its own machine (one server of 128 processors, backfill mode): FCFS
    against EASY backfilling, the PWA's standard baselines, and the lower bound."""
    base = {"trace": "nasa-easy", "load": "", "seed": ""}
    if not os.path.exists(case["path"]):
        return [{**base, "policy": "-", "note": f"skipped: {case['path']} not found", "invalid": 0}]
    instance = load_swf(case["path"], servers=1, cores=128, limit=case["jobs"])
    instance.mode = BACKFILL
    n = len(instance.jobs)
    rows = [
        {**base, "jobs": n, "servers": 1, "policy": "lower bound",
         "mean_response": round(lower_bound(instance) / n, 3), "invalid": 0}
    ]  # fmt: skip
    assignment = (0,) * n
    for name, solution in (
        ("fcfs", fcfs_solution(instance, assignment)),
        ("easy", easy_solution(instance, assignment)),
    ):
        report = Rechecker("dispatch")(instance, solution)
        f = figures(instance, solution)
        rows.append(
            {
                **base,
                "jobs": n,
                "servers": 1,
                "policy": name,
                "mean_response": round(f["mean_response"], 3),
                "mean_slowdown": round(f["mean_slowdown"], 3),
                "bounded_slowdown": round(bounded_slowdown(instance, solution), 3),
                "p99_response": f["p99_response"],
                "objective": report.objective,
                "invalid": 0 if report.feasible else 1,
            }
        )
    return rows


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every policy on the case's trace: one row per policy, and one for the lower bound."""
    del config
    if case["trace"] == "windows":
        return run_windows(case)
    if case["trace"] == "nasa-easy":
        return run_easy(case)
    if case["trace"] == "sweep":
        return _run_sweep(case)
    base = {"trace": case["trace"], "load": case.get("load", ""), "seed": case.get("seed", "")}
    if case["trace"] != "synthetic" and not os.path.exists(case["path"]):
        return [{**base, "policy": "-", "note": f"skipped: {case['path']} not found", "invalid": 0}]
    instance = _instance(case)
    n = len(instance.jobs)
    bound = lower_bound(instance)
    rows = [
        {
            **base,
            "jobs": n,
            "servers": len(instance.servers),
            "policy": "lower bound",
            "mean_response": round(bound / n, 3),
            "note": f"max(own service {own_service_bound(instance)}, SRPT {srpt_bound(instance)}) / jobs",
            "invalid": 0,
        }
    ]
    for name in POLICY_NAMES:
        checker = Rechecker("dispatch")
        policy = make_policy(name)
        if hasattr(policy, "stage_budget_s"):
            policy.stage_budget_s = case["stage_budget_s"]
        r = replay(instance, policy)
        report = checker(instance, r.solution)
        us = [1e6 * x for x in r.decision_s]
        rows.append(
            {
                **base,
                "jobs": n,
                "servers": len(instance.servers),
                "policy": name,
                "mean_response": round(r.figures["mean_response"], 3),
                "mean_slowdown": round(r.figures["mean_slowdown"], 3),
                "p99_response": r.figures["p99_response"],
                "objective": report.objective,
                "decision_p50_us": round(statistics.median(us), 2),
                "decision_p99_us": round(_quantile(us, 0.99), 2),
                "fallbacks": getattr(policy, "fallbacks", ""),
                "invalid": 0 if report.feasible else 1,
            }
        )
    return rows


def _run_sweep(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Yildiz's server-count sweep on one trace (:mod:`.sweep`)."""
    base = {"trace": "sweep", "sweep": case["sweep"], "load": LOAD, "seed": case.get("seed", "")}
    if case["sweep"] == "synthetic":
        instance = generate(case["jobs"], 8, LOAD, case["seed"], cov=2.0)
    elif not os.path.exists(case["path"]):
        return [{**base, "policy": "-", "note": f"skipped: {case['path']} not found", "invalid": 0}]
    else:
        instance = _instance({**case, "trace": case["sweep"]})
    total = total_speed_for(instance, LOAD)
    return run_sweep({**base, "total_speed": str(total)}, instance, total)


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """One table per trace: each policy's figures, and the lower bound."""
    del config
    out = [
        "Every policy dispatches each job on arrival; servers run FCFS; every schedule is "
        "checked by the family's checker. `lower bound`: max(own service, one-machine SRPT) "
        "over the jobs, as a mean response (docs/formulations/dispatch.md); a policy at the "
        "bound is optimal. `staged-rollout` is ours (sim/rollout.py, sim/stages.py: the rollout "
        "inside a two-stage structure chosen by simulation from the trace's size distribution "
        "and mean rate); `rollout` the same without stages; `fallbacks`: their decisions that "
        "would scan more than 20,000 servers and took earliest completion's server (a count "
        "of work, not time: the decisions do not depend on the machine's load).",
        "",
    ]
    windows = [r for r in rows if r["trace"] == "windows"]
    easy = [r for r in rows if r["trace"] == "nasa-easy"]
    sweeps = [r for r in rows if r["trace"] == "sweep"]
    rows = [r for r in rows if r["trace"] not in ("windows", "nasa-easy", "sweep")]
    if windows:
        out += _windows_table(windows)
    if easy:
        out += _easy_table(easy)
    for name in dict.fromkeys(r["sweep"] for r in sweeps):
        group = [r for r in sweeps if r["sweep"] == name]
        if group[0]["policy"] == "-":
            out += [f"### {name}: server-count sweep", "", group[0]["note"], ""]
        else:
            out += sweep_table(group)
    keys = sorted({(str(r["trace"]), str(r["load"]), str(r["seed"])) for r in rows})
    for trace, load, seed in keys:
        group = [
            r
            for r in rows
            if (str(r["trace"]), str(r["load"]), str(r["seed"])) == (trace, load, seed)
        ]
        title = f"### {trace}" + (f", load {load}, seed {seed}" if trace == "synthetic" else "")
        out.append(title)
        out.append("")
        if group and group[0]["policy"] == "-":
            out.append(group[0]["note"])
            out.append("")
            continue
        jobs, servers = group[0].get("jobs", ""), group[0].get("servers", "")
        out.append(f"{jobs} jobs, {servers} servers.")
        out.append("")
        out += markdown_table(
            [
                "policy",
                "mean response",
                "mean slowdown",
                "p99 response",
                "decision p50 us",
                "decision p99 us",
                "fallbacks",
                "invalid",
            ],
            [
                [
                    r["policy"],
                    r.get("mean_response", ""),
                    r.get("mean_slowdown", ""),
                    r.get("p99_response", ""),
                    r.get("decision_p50_us", ""),
                    r.get("decision_p99_us", ""),
                    r.get("fallbacks", ""),
                    r.get("invalid", 0),
                ]
                for r in group
            ],
            "lrrrrrrr",
        )
        out.append("")
    return "\n".join(out)


def _windows_table(rows: list[dict[str, Any]]) -> list[str]:
    proved = {r["seed"] for r in rows if r["policy"] == "offline optimum" and int(r["proved"])}
    seeds = {r["seed"] for r in rows}
    lines = [
        "### Online policies against the offline optimum (small windows)",
        "",
        f"12 jobs on 2 single-core servers, load 0.95, Weibull sizes of mean 4 (CoV 2), "
        f"{len(seeds)} seeds; CP-SAT proved the optimum of {len(proved)}. Ratio: the policy's "
        "total flow time over the optimum, over the proved windows.",
        "",
    ]
    table = []
    for name in WINDOW_POLICIES:
        ratios = [
            float(r["ratio_to_optimum"])
            for r in rows
            if r["policy"] == name and r["seed"] in proved and r.get("ratio_to_optimum") != ""
        ]
        if ratios:
            table.append(
                [name, f"{statistics.mean(ratios):.3f}", f"{max(ratios):.3f}",
                 sum(1 for x in ratios if x <= 1.0 + 1e-9)]
            )  # fmt: skip
    lines += markdown_table(
        ["policy", "mean ratio", "worst ratio", "windows at the optimum"], table, "lrrr"
    )
    lines.append("")
    return lines


def _easy_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["### NASA iPSC/860 on its 128 processors: FCFS and EASY backfilling", ""]
    if rows[0]["policy"] == "-":
        return [*lines, rows[0]["note"], ""]
    lines += [
        f"{rows[0]['jobs']} jobs, one server of 128 processors (backfill mode); bounded "
        "slowdown with a 10 s floor.",
        "",
    ]
    lines += markdown_table(
        ["schedule", "mean response", "mean slowdown", "bounded slowdown", "p99 response",
         "invalid"],
        [
            [r["policy"], r.get("mean_response", ""), r.get("mean_slowdown", ""),
             r.get("bounded_slowdown", ""), r.get("p99_response", ""), r.get("invalid", 0)]
            for r in rows
        ],
        "lrrrrr",
    )  # fmt: skip
    lines.append("")
    return lines
