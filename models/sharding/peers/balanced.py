"""The two textbook baselines of the sharding papers (DreamShard, AutoShard, RecShard
compare against them): table-wise placement balancing a size or a lookup count.

``size_balanced``: tables by decreasing HBM, each on the device of least HBM used that still
has room; ``lookup_balanced``: tables by decreasing lookups per step (``batch x pooling x
dim``, the usual proxy), each on the device of fewest lookups that still has room. A table
that fits no device table-wise is row-wise sharded (column-wise, then table-row-wise, if
row-wise is not allowed). Neither looks at the cost model: that is the point of them.
"""

from __future__ import annotations

from collections.abc import Callable

from placement.models.sharding.cost_model import column_shards, offered, plan_of, shard_hbm
from placement.models.sharding.instance import (
    COLUMN_WISE,
    ROW_WISE,
    TABLE_ROW_WISE,
    TABLE_WISE,
    ShardingInstance,
    ShardingSolution,
    Table,
    TablePlan,
)


def _balanced(instance: ShardingInstance, weight: Callable[[Table], float]) -> ShardingSolution:
    n = instance.world_size
    used = [0] * n
    load = [0.0] * n
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    order = sorted(range(len(instance.tables)), key=lambda t: (-weight(instance.tables[t]), t))
    for t in order:
        table = instance.tables[t]
        kinds = offered(instance, table)
        plan = None
        if TABLE_WISE in kinds:
            need = shard_hbm(instance, table, TABLE_WISE, table.rows, table.dim)
            room = [d for d in range(n) if used[d] + need <= instance.devices[d].hbm_bytes]
            if room:
                d = min(room, key=lambda k: (load[k], used[k], k))
                plan = plan_of(instance, table, TABLE_WISE, (d,))
        if plan is None:
            for kind in (ROW_WISE, COLUMN_WISE, TABLE_ROW_WISE):
                if kind in kinds:
                    if kind == COLUMN_WISE:
                        k = column_shards(instance, table)
                        devices = tuple(
                            sorted(range(n), key=lambda j: (load[j], used[j], j))[i % n]
                            for i in range(k)
                        )
                        plan = plan_of(instance, table, kind, devices)
                    elif kind == TABLE_ROW_WISE:
                        host = min(
                            range(len(instance.hosts)),
                            key=lambda h: sum(load[j] for j in instance.hosts[h]),
                        )
                        plan = plan_of(instance, table, kind, host=host)
                    else:
                        plan = plan_of(instance, table, kind)
                    break
        if plan is None:
            plan = plan_of(instance, table, kinds[0], (0,) * 8)
        share = weight(table) / len(plan.shards)
        for s in plan.shards:
            used[s.device] += shard_hbm(instance, table, plan.sharding_type, s.rows, s.cols)
            load[s.device] += share
        plans[t] = plan
    return ShardingSolution(tuple(plans))


def size_balanced(instance: ShardingInstance) -> ShardingSolution:
    """Tables by decreasing size, each table-wise on the device of least HBM used."""
    return _balanced(instance, lambda t: float(t.bytes))


def lookup_balanced(instance: ShardingInstance) -> ShardingSolution:
    """Tables by decreasing lookups (batch x pooling x dim), each table-wise on the device of
    fewest lookups."""
    return _balanced(instance, lambda t: instance.batch_size * t.pooling_factor * t.dim)


PEERS = {"size-balanced": size_balanced, "lookup-balanced": lookup_balanced}
