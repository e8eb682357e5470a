"""Defragmentation within a budget: unallocated GPUs against the share of pods migrated.

The replays are :func:`~placement.benchmarks.gpu.openb.replays.run_case` in ``defrag`` mode
(:mod:`placement.models.gpu.sim.openb.defrag`); :func:`defrag_tables` is their table.
"""

from __future__ import annotations

from placement.benchmarks.gpu.openb.shared import OURS, TARGETS, mean_of, values_of, verdict
from placement.benchmarks.tables import rule

DEFRAG_BUDGETS = (0.0, 0.005, 0.01, 0.02, 0.05, None)
"""The budget curve: fractions of the arrived pods that may ever be migrated (None:
unlimited)."""


def defrag_tables(rows: list[dict]) -> list[str]:
    """Unallocated GPUs at 100 % against the share of pods ever migrated, per budget,
    beside FGD, our online mode and the bound (mean over seeds)."""
    lines: list[str] = []
    for trace in dict.fromkeys(r["trace"] for r in rows if r["mode"] == "defrag"):
        mine = [r for r in rows if r["trace"] == trace]
        lines += [
            f"## Defragmentation: migrations within a budget (`{trace}`)",
            "",
            "Pods never removed; when an arriving pod fits nowhere, a CP-SAT cycle over a "
            "neighbourhood may migrate shared-GPU and CPU-only pods to make room "
            "(`models/gpu/sim/openb/defrag.py`); every cycle is checked before it is applied. "
            "Budget: the fraction of arrived pods that may ever be migrated. Means over the "
            "seeds; `migrated` is the share of the pods arrived at 100 % that were moved.",
            "",
            "| policy / mode | seeds | unallocated GPUs at 100 % | target | migrated pods "
            "(% of arrived) | cycles (applied) | cycle p50 / p99 | invalid |",
            rule(8),
        ]
        for policy in dict.fromkeys(r["policy"] for r in mine):
            group = [r for r in mine if r["policy"] == policy]
            mode = group[0]["mode"]
            if mode == "batch" or (mode == "online" and policy not in ("FGD", OURS)):
                continue
            target = ""
            if mode == "defrag" and trace == "default":
                t = TARGETS.get(("defrag", group[0]["batch"]))
                if t:
                    target = verdict(values_of(group, "unallocated_gpus_at_100"), t)
            migrated = (
                f"{mean_of(group, 'migrated_pods'):.1f} ({mean_of(group, 'migrated_share_pct'):.2f} %)"
                if mode == "defrag"
                else ""
            )
            cycles = (
                f"{mean_of(group, 'cycles'):.0f} ({mean_of(group, 'cycles_applied'):.1f})"
                if mode == "defrag"
                else ""
            )
            lat = (
                f"{mean_of(group, 'cycle_p50_ms'):.0f} / {mean_of(group, 'cycle_p99_ms'):.0f} ms"
                if mode == "defrag"
                else ""
            )
            lines.append(
                f"| {policy} | {len(group)} | {mean_of(group, 'unallocated_gpus_at_100'):.1f} "
                f"| {target} | {migrated} | {cycles} | {lat} "
                f"| {sum(int(r.get('invalid') or 0) for r in group)} |"
            )
        lines.append("")
    return lines
