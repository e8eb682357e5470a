"""Online re-packing within a migration budget (issue 42, item 3): its settings and its table.

The replays are :func:`~placement.benchmarks.gpu.openb.replays.run_case` in ``repack`` mode
(:mod:`placement.models.gpu.sim.openb.repack`); :func:`repack_table` puts each budget's row
beside FGD and ours online, the end-state curve at the same budget (when the run has its
rows) and the bounds (when it has them).
"""

from __future__ import annotations

import math
import statistics

from placement.benchmarks.gpu.openb.shared import TARGETS, mean_of, values_of, verdict
from placement.benchmarks.tables import rule
from placement.solver import InputError

REPACK_BUDGETS = (0.005, 0.01, 0.02, 0.05)
"""Budgets of ``--modes repack`` (fractions of the arrived pods), unless
``--param repack_budget`` says otherwise."""


def repack_settings(params: dict) -> dict:
    """The repack mode's settings from the suite's ``--param`` values: ``budgets``,
    ``every``, and the cycle's ``cycle_time_s``, ``nodes``, ``cycle_moves``, ``pressure``,
    ``per_gpu`` (InputError naming the bad parameter)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.sim.openb.repack import (
        CYCLE_MOVES,
        CYCLE_SECONDS,
        EVERY,
        NODES,
        PER_GPU,
        PRESSURE,
    )

    budgets = []
    for word in params.get("repack_budget") or [str(b) for b in REPACK_BUDGETS]:
        try:
            value = float(word)
        except ValueError:
            value = -1.0
        if not 0 < value <= 1:
            raise InputError.single(
                "--param repack_budget", word, "fractions in (0, 1], e.g. 0.005,0.05"
            )
        budgets.append(value)
    cycle_time = _number(params, "repack_time", CYCLE_SECONDS, float, "seconds > 0")
    if not cycle_time > 0 or math.isinf(cycle_time):
        raise InputError.single("--param repack_time", str(cycle_time), "seconds > 0")
    every = _number(params, "repack_every", EVERY, int, "a whole number of arrivals >= 1")
    if every < 1:
        raise InputError.single("--param repack_every", str(every), "a whole number >= 1")
    nodes = _number(params, "repack_nodes", NODES, int, "a whole number of nodes >= 0")
    if nodes < 0:
        raise InputError.single("--param repack_nodes", str(nodes), "a whole number >= 0")
    pressure = _number(params, "repack_pressure", PRESSURE, float, "a share >= 0, e.g. 0.8")
    if not 0 <= pressure < math.inf:
        raise InputError.single("--param repack_pressure", str(pressure), "a share >= 0, e.g. 0.8")
    per_gpu = _number(params, "repack_per_gpu", PER_GPU, float, "migrations >= 0, e.g. 10")
    if not 0 <= per_gpu < math.inf:
        raise InputError.single("--param repack_per_gpu", str(per_gpu), "migrations >= 0, e.g. 10")
    return {
        "budgets": budgets,
        "every": every,
        "cycle_time_s": cycle_time,
        "nodes": nodes,
        "cycle_moves": params.get("repack_moves") or CYCLE_MOVES,
        "pressure": pressure,
        "per_gpu": per_gpu,
    }


def _number(params: dict, name: str, default, kind, expected: str):
    """``--param name`` read as ``kind`` (``default`` when absent); InputError naming it."""
    word = params.get(name)
    if word in (None, ""):
        return default
    try:
        return kind(word)
    except (TypeError, ValueError):
        raise InputError.single(f"--param {name}", str(word), expected) from None


def repack_table(rows: list[dict], curve_rows: list[dict]) -> list[str]:
    """Per trace: FGD and the start policy online, then per budget the re-packing replay
    (mean over seeds) beside the end-state curve's witness at that budget and the bounds."""
    lines: list[str] = []
    for trace in dict.fromkeys(r["trace"] for r in rows if r["mode"] == "repack"):
        mine = [r for r in rows if r["trace"] == trace]
        repack = [r for r in mine if r["mode"] == "repack"]
        seeds = sorted({r["seed"] for r in repack})
        lines += [
            f"## Online re-packing within a migration budget (`{trace}`)",
            "",
            "The FGD protocol with re-packing cycles (`models/gpu/sim/openb/repack.py`): a pod "
            "that fits nowhere waits; once one waits (and, with a pressure P, once the waiting "
            "pods' GPU demand is at least P x the free GPUs), a cycle runs, then every N "
            "arrivals while pods wait. A cycle solves the end-state curve's problem (the most milli-GPU "
            "reachable with at most K migrations, waiting pods placed where they fit) on the "
            "cluster as it stands (or on the neighbourhood of the M nodes with the most free "
            "milli-GPU), by the curve's keep-or-reset column generation within the cycle's "
            "wall time; K is what the budget allows so far (at most the per-cycle cap). "
            "`cycle p50 / p99`: wall time of a cycle (plan, checks, apply). Each planned move is checked against the cluster as "
            "it is when applied and applied only then (`rejected`: moves that failed that "
            "check). `unallocated at 100 %` as the other tables (the mean over the 100 % "
            "window); `end of window`: the cluster after the window's last arrival, the state "
            "the end-state curve starts from. `curve (same K)`: the end-state curve's witness "
            "from the online end state, when this run has its rows. Means over seeds "
            f"{', '.join(str(s) for s in seeds)}; `invalid` counts end states a from-scratch "
            "check rejected.",
            "",
            "| policy / mode | seeds | unallocated GPUs at 100 % | end of window | target "
            "| curve (same K) | migrated pods (% of arrived) | waiting pods placed "
            "| moves planned (rejected) | cycles (applied) | cycle p50 / p99 | settings "
            "| invalid |",
            rule(13),
        ]
        starts = {r["policy"].split(" repack ")[0] for r in repack}
        for policy in ("FGD", *sorted(starts - {"FGD"})):
            online = [r for r in mine if r["mode"] == "online" and r["policy"] == policy]
            if online:
                lines.append(
                    f"| {policy} online | {len(online)} "
                    f"| {mean_of(online, 'unallocated_gpus_at_100'):.1f} | | | | | | | | | "
                    f"| {sum(int(r.get('invalid') or 0) for r in online)} |"
                )
        for policy in dict.fromkeys(r["policy"] for r in repack):
            group = [r for r in repack if r["policy"] == policy]
            budget = group[0]["budget"]
            start = policy.split(" repack ")[0]
            unalloc = mean_of(group, "unallocated_gpus_at_100")
            target = TARGETS.get(("repack", budget)) if trace == "default" else None
            target_txt = (
                verdict(values_of(group, "unallocated_gpus_at_100"), target) if target else ""
            )
            label = "unlimited" if budget == "unlimited" else f"{float(budget) * 100:g} %"
            curve = [
                float(c["witness_unalloc"])
                for c in curve_rows
                if c["trace"] == trace
                and c["start"] == start
                and c["budget"] == label
                and c["seed"] in seeds
                and c["witness_unalloc"] != ""
            ]
            curve_txt = f"{statistics.fmean(curve):.1f}" if curve else "-"
            r0 = group[0]
            hood = f"{r0['nodes']} nodes" if r0["nodes"] else "whole cluster"
            cap = f", <= {r0['cycle_moves']} moves" if r0["cycle_moves"] else ""
            pressure = float(r0.get("pressure") or 0)
            press = f", pressure {pressure:g}" if pressure else ""
            per_gpu = float(r0.get("per_gpu") or 0)
            rate = f", <= {per_gpu:g} moves per waiting GPU" if per_gpu else ""
            settings = f"N {r0['every']}, {r0['cycle_time_s']:g} s, {hood}{cap}{press}{rate}"
            lines.append(
                f"| {policy} | {len(group)} | {unalloc:.1f} "
                f"| {mean_of(group, 'end_unalloc_gpus'):.1f} | {target_txt} | {curve_txt} "
                f"| {mean_of(group, 'migrated_pods'):.1f} "
                f"({mean_of(group, 'migrated_share_pct'):.2f} %) "
                f"| {mean_of(group, 'waiting_placed'):.1f} "
                f"| {mean_of(group, 'planned_moves'):.0f} ({mean_of(group, 'rejected_moves'):.0f}) "
                f"| {mean_of(group, 'cycles'):.0f} ({mean_of(group, 'cycles_applied'):.1f}) "
                f"| {mean_of(group, 'cycle_p50_ms') / 1e3:.1f} / "
                f"{mean_of(group, 'cycle_p99_ms') / 1e3:.1f} s | {settings} "
                f"| {sum(int(r.get('invalid') or 0) for r in group)} |"
            )
        for mode in ("bound", "config_bound", "forced_bound"):
            bound = [r for r in mine if r["mode"] == mode]
            if bound:
                lines.append(
                    f"| {bound[0]['policy']} | {len(bound)} "
                    f"| {mean_of(bound, 'unallocated_gpus_at_100'):.1f} | | | | | | | | | | |"
                )
        lines.append("")
    return lines
