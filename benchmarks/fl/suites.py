"""The fl family's benchmark suite (``placement bench fl-fleets``).

Per generated instance (:func:`placement.models.fl.generate.generate`: ``devices x jobs``,
``rounds`` rounds, a participation limit or none), every method's assignment scored by the
family's checker:

* ``ours``: ``placement solve`` (the fallback, then CP-SAT with it as hint) within the time
  limit, two threads; its bound and gap. Without a binding limit the rounds are independent
  and their per-round proofs add up to the horizon's; with one, the horizon's model is solved
  whole when small, else rolled round by round (each round proved given the rounds before,
  the horizon not: the bound is then the quick bound);
* ``fastest-cover``: our fallback heuristic alone;
* ``fedact``: FedACT's alignment-score greedy with participation fairness
  (:mod:`placement.models.fl.peers.fedact`);
* ``random``: FedAvg's random selection (:mod:`placement.models.fl.peers.random_selection`).

Columns: the mean round time over the running (round, job) pairs and the average job
completion time (seconds, under the convergence model: job ``j`` completes after its
``rounds_j`` rounds, back to back), Jain's index of the devices' participation, the bound on
the average JCT and each method's gap to it, whether ours is proved, the time.
"""

from __future__ import annotations

import re
import time
from typing import Any

from placement.benchmarks.fl import PARAMETERS
from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.fl import FAMILY
from placement.models.fl.check import completion_times_s, jain_index, participation
from placement.models.fl.generate import generate
from placement.models.fl.greedy import fastest_cover
from placement.models.fl.instance import FlInstance
from placement.models.fl.peers.fedact import fedact
from placement.models.fl.peers.random_selection import random_selection
from placement.models.fl.timing import US_PER_S
from placement.solver import InputError, SolveOptions, solve

QUICK = {"fleets": ("100x2", "1000x4"), "limits": ("2",), "rounds": 4}
METHODS = ("ours", "fastest-cover", "fedact", "random")


def _settings(config: Any) -> dict[str, Any]:
    params = {p.name: p.default for p in PARAMETERS}
    if config.quick:
        params.update(QUICK)
    params.update(config.params or {})
    return params


def _fleet(text: str) -> tuple[int, int]:
    try:
        devices, jobs = (int(x) for x in str(text).split("x"))
    except ValueError:
        raise InputError.single("--param fleets", text, "DEVICESxJOBS, e.g. 1000x4") from None
    return devices, jobs


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per (fleet, limit)."""
    s = _settings(config)
    out = []
    for fleet in s["fleets"]:
        devices, jobs = _fleet(fleet)
        for limit in s["limits"]:
            slack = 0.0 if str(limit) == "none" else float(limit)
            out.append(
                {
                    "devices": devices,
                    "jobs": jobs,
                    "slack": slack,
                    "rounds": int(s["rounds"]),
                    "seed": int(s["seed"]),
                }
            )
    return out


def _instance(case: dict[str, Any]) -> FlInstance:
    n, jobs = case["devices"], case["jobs"]
    max_k = min(100 if n >= 10_000 else 50, n // jobs)
    min_k = max(3, min(10, max_k // 2))
    return generate(
        n,
        jobs,
        rounds=case["rounds"],
        seed=case["seed"],
        min_k=min_k,
        max_k=max_k,
        participation_slack=case["slack"],
    )


def _row(
    case: dict[str, Any],
    inst: FlInstance,
    method: str,
    solution: Any,
    seconds: float,
    checker: Rechecker | None,
) -> dict[str, Any]:
    """The row of one method's assignment. ``checker`` counts a rejected one as invalid
    (ours: a rejection is a bug); the peers go without (a round they cannot cover is their
    known failure, shown with the checker's reason)."""
    before = checker.invalid if checker is not None else 0
    report = checker(inst, solution) if checker is not None else FAMILY.check(inst, solution)
    pairs = sum(inst.job_rounds(j) for j in range(len(inst.jobs)))
    row = {
        "devices": case["devices"],
        "jobs": case["jobs"],
        "limit": inst.max_rounds_per_device or "none",
        "method": method,
        "feasible": int(report.feasible),
        "mean_round_s": "",
        "avg_jct_s": "",
        "jain": "",
        "bound_avg_jct_s": "",
        "gap_pct": "",
        "proven": "",
        "time_s": round(seconds, 2),
        "note": "",
        "invalid": 0,
    }
    if report.feasible:
        total = report.objective / US_PER_S
        row["mean_round_s"] = round(total / pairs, 3)
        row["avg_jct_s"] = round(sum(completion_times_s(inst, solution)) / len(inst.jobs), 3)
        row["jain"] = round(jain_index(participation(inst, solution)), 4)
    else:
        row["note"] = report.violations[0][:120]
    row["invalid"] = (checker.invalid if checker is not None else 0) - before
    return row


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every method on the case's instance: one row per method."""
    # The solver libraries load before the clock starts.
    from ortools.sat.python import cp_model  # noqa: F401  - start-up time, not measured

    inst = _instance(case)
    checker = Rechecker("fl")
    rows = []
    started = time.monotonic()
    result = solve(inst, SolveOptions(time_limit_s=config.time_limit_s, threads=2))
    checker.dropped(result.rejected_candidates)
    if result.solution is None:
        row = _row(case, inst, "ours", None, time.monotonic() - started, None)
        row["note"] = result.message[:120]
        return [row]
    row = _row(case, inst, "ours", result.solution, time.monotonic() - started, checker)
    bound = None
    if result.bound is not None:
        bound = result.bound / US_PER_S / len(inst.jobs)
        row["bound_avg_jct_s"] = round(bound, 3)
    row["proven"] = "yes" if result.status.value == "optimal" else ""
    row["note"] = result.stop_reason.value + ("; rolled" if "rolled" in result.message else "")
    proved = re.search(r"(\d+) of (\d+) rounds proved", result.message)
    if proved:
        row["note"] += f"; {proved.group(1)}/{proved.group(2)} rounds proved"
    rows.append(row)
    for name, method in (
        ("fastest-cover", fastest_cover),
        ("fedact", fedact),
        ("random", random_selection),
    ):
        started = time.monotonic()
        solution = method(inst)
        rows.append(_row(case, inst, name, solution, time.monotonic() - started, None))
    for r in rows:
        if bound and r["avg_jct_s"] != "":
            r["bound_avg_jct_s"] = round(bound, 3)
            gap = 100 * (float(r["avg_jct_s"]) - bound) / float(r["avg_jct_s"])
            r["gap_pct"] = max(0.0, round(gap, 2))  # rounding may leave -0.0 at the bound
    return rows


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """One table (rows: fleet x limit x method) and ours against the peers."""
    lines = [
        f"{config.time_limit_s:g} s per solve of ours (two threads). Times in seconds under the "
        "instance's device model (download + training + upload of each device) and the "
        "convergence model (job j completes after its rounds_j rounds, back to back): "
        "`mean round` is the mean over running (round, job) pairs of the job's round time, "
        "`avg JCT` the mean job completion time. `bound` is a proved lower bound on the "
        "average JCT (ours' solve); `gap` is each method's distance to it. `Jain` is Jain's "
        "index of the devices' participation counts (1 = all equal). Generated fleets: the "
        "statistics are the generator's stated shapes, not a measured trace.",
        "",
    ]
    header = [
        "devices",
        "jobs",
        "limit",
        "method",
        "mean round s",
        "avg JCT s",
        "Jain",
        "bound s",
        "gap %",
        "proved",
        "time s",
        "note",
    ]
    keys = sorted(
        {(int(r["devices"]), int(r["jobs"]), str(r["limit"])) for r in rows},
        key=lambda k: (k[0], k[1], k[2] != "none", k[2]),
    )
    body = []
    wins = {"fedact": [0, 0], "random": [0, 0]}
    for key in keys:
        group = {
            r["method"]: r
            for r in rows
            if (int(r["devices"]), int(r["jobs"]), str(r["limit"])) == key
        }
        for method in METHODS:
            r = group.get(method)
            if r is None:
                continue
            body.append(
                [
                    key[0],
                    key[1],
                    key[2],
                    method,
                    r["mean_round_s"] if r["mean_round_s"] != "" else "-",
                    r["avg_jct_s"] if r["avg_jct_s"] != "" else "-",
                    r["jain"] if r["jain"] != "" else "-",
                    r["bound_avg_jct_s"],
                    r["gap_pct"],
                    r["proven"],
                    r["time_s"],
                    str(r["note"])[:60],
                ]
            )
        ours = group.get("ours")
        for peer in wins:
            theirs = group.get(peer)
            if ours and theirs and ours["avg_jct_s"] != "":
                wins[peer][1] += 1
                if theirs["avg_jct_s"] == "" or float(ours["avg_jct_s"]) <= float(
                    theirs["avg_jct_s"]
                ):
                    wins[peer][0] += 1
    lines += markdown_table(header, body)
    lines += [
        "",
        f"Ours no worse than FedACT's greedy on {wins['fedact'][0]} of {wins['fedact'][1]} "
        f"instances, than random selection on {wins['random'][0]} of {wins['random'][1]}.",
    ]
    return "\n".join(lines)
