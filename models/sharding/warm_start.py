"""A start solution (an earlier plan, by names) adapted to the instance being solved.

Each table's plan of the start is kept, in the start's order, when its table and every
shard's device still exist, its type is still allowed, its layout is still the type's (same
rows, columns and, for row-wise and data-parallel, the same devices) and it still fits the
devices' HBM with the plans kept before it. Every other table (new, or its plan dropped) is
placed by the fallback's rule (:func:`.greedy.list_schedule`: the option that leaves the
least bottleneck), on top of the plans kept.
"""

from __future__ import annotations

from typing import Any

from placement.models.sharding.check import check
from placement.models.sharding.cost_model import options, plan_from_option, shard_hbm, shard_perf
from placement.models.sharding.greedy import Loads
from placement.models.sharding.instance import (
    SHARDING_TYPES,
    Shard,
    ShardingInstance,
    ShardingSolution,
    TablePlan,
)
from placement.solver.family import StartAdaptation, known_pieces


def adapt_start(instance: ShardingInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.ShardingSolution`` the instance admits (see the module)."""
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    dropped: list[tuple[str, str]] = []
    kept = 0
    for p, name, t in known_pieces(
        msg.plans, lambda p: p.table, instance.table_index, "table", "given twice", dropped
    ):
        kind_value = int(p.sharding_type)
        devices = [instance.device_index.get(s.device) for s in p.shards]
        if not 1 <= kind_value <= len(SHARDING_TYPES) or None in devices:
            dropped.append((name, f"table {name!r}: its type or a device is gone"))
            continue
        plan = TablePlan(
            SHARDING_TYPES[kind_value - 1],
            tuple(
                Shard(int(d), int(s.row_offset), int(s.rows), int(s.col_offset), int(s.cols))  # type: ignore[arg-type]
                for d, s in zip(devices, p.shards, strict=True)
            ),
        )
        trial = list(plans)
        trial[t] = plan
        # The plans kept so far plus this one, every other table left out, must pass every
        # rule the checker applies to them: check the partial plan with the others removed.
        sub = ShardingInstance(
            [instance.tables[i] for i in range(len(trial)) if trial[i] is not None],
            instance.devices,
            instance.batch_size,
            instance.cost,
        )
        report = check(sub, ShardingSolution(tuple(q for q in trial if q is not None)))
        if report.feasible:
            plans = trial
            kept += 1
        else:
            dropped.append((name, f"table {name!r}: {report.violations[0]}"))
    loads = Loads(instance)
    for t, plan in enumerate(plans):
        if plan is not None:
            for s in plan.shards:
                loads.cost[s.device] += shard_perf(
                    instance, instance.tables[t], plan.sharding_type, s.cols, s.device
                ).cost_ns
                loads.free[s.device] -= shard_hbm(
                    instance, instance.tables[t], plan.sharding_type, s.rows, s.cols
                )
    placed = 0
    for t in range(len(instance.tables)):
        if plans[t] is not None:
            continue
        best = None
        for option in options(instance, t):
            trial_score = loads.trial(option)
            if trial_score is not None and (best is None or trial_score[0] < best[0]):
                best = (trial_score[0], option, trial_score[1])
        if best is None:
            continue
        _, option, devs = best
        loads.apply(option, devs)
        plans[t] = plan_from_option(instance, t, option, devs)
        placed += 1
    solution = ShardingSolution(tuple(plans))
    return StartAdaptation(
        solution,
        len(msg.plans),
        kept,
        dropped,
        note=f"{placed} table(s) placed anew" if placed else "",
    )
