"""Heuristics: longest-processing-time list scheduling over every sharding option.

Tables are taken in decreasing order of a key (their least cost, or their least HBM); each
table takes the option, and the devices of its free shards, that leave the smallest
bottleneck (the largest device cost), then the smallest communication, among those that fit
every device's HBM. Free shards (table-wise, column-wise) go one by one to the device of
least cost after the shard that still has room. The first heuristic is the fallback.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from placement.models.sharding.cost_model import Option, options, plan_from_option
from placement.models.sharding.instance import ShardingInstance, ShardingSolution, TablePlan
from placement.solver.options import SolveOptions


class Loads:
    """Device costs (ns) and free HBM (bytes) as a plan grows."""

    def __init__(self, instance: ShardingInstance) -> None:
        self.cost = np.zeros(instance.world_size, dtype=np.int64)
        self.free = np.array([d.hbm_bytes for d in instance.devices], dtype=np.int64)

    def trial(self, option: Option) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
        """The score (bottleneck after, largest touched device after, communication) and the
        devices of the free shards of ``option``, or None when it does not fit."""
        if option.fixed is not None:
            worst = 0
            for d, (cost, hbm) in option.fixed.items():
                if hbm > self.free[d]:
                    return None
                worst = max(worst, int(self.cost[d]) + cost)
            return (max(int(self.cost.max()), worst), worst, option.comm_ns), ()
        cost = self.cost.copy()
        free = self.free.copy()
        each = np.asarray(option.free_cost, dtype=np.int64)
        chosen = []
        worst = 0
        for _ in range(option.free):
            after = np.where(free >= option.free_hbm, cost + each, np.iinfo(np.int64).max)
            d = int(np.argmin(after))
            if after[d] == np.iinfo(np.int64).max:
                return None
            chosen.append(d)
            cost[d] += each[d]
            free[d] -= option.free_hbm
            worst = max(worst, int(cost[d]))
        return (max(int(self.cost.max()), worst), worst, option.comm_ns), tuple(chosen)

    def apply(self, option: Option, devices: tuple[int, ...]) -> None:
        """Add ``option`` with its free shards on ``devices``."""
        if option.fixed is not None:
            for d, (cost, hbm) in option.fixed.items():
                self.cost[d] += cost
                self.free[d] -= hbm
            return
        for d in devices:
            self.cost[d] += option.free_cost[d]
            self.free[d] -= option.free_hbm


def _least_hbm(option: Option) -> int:
    """The most HBM the option needs on one device."""
    if option.fixed is not None:
        return max(h for _, h in option.fixed.values())
    return option.free_hbm


def _least_cost(option: Option) -> int:
    if option.fixed is not None:
        return max(c for c, _ in option.fixed.values())
    return min(option.free_cost)


def list_schedule(
    instance: ShardingInstance, order: list[int], opts: list[list[Option]]
) -> ShardingSolution:
    """Tables in ``order``, each taking its best fitting option (see the module); a table
    that fits nowhere takes its option of least HBM on the devices of most room (the
    checker then names the device over its HBM)."""
    loads = Loads(instance)
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    for t in order:
        best = None
        for option in opts[t]:
            trial = loads.trial(option)
            if trial is not None and (best is None or trial[0] < best[0]):
                best = (trial[0], option, trial[1])
        if best is None:
            option = min(opts[t], key=_least_hbm)
            room = [int(d) for d in np.argsort(-loads.free)]
            devices = tuple(room[i % len(room)] for i in range(option.free))
            best = ((0, 0, 0), option, devices)
        _, option, devices = best
        loads.apply(option, devices)
        plans[t] = plan_from_option(instance, t, option, devices)
    return ShardingSolution(tuple(plans))


def greedy_solutions(
    instance: ShardingInstance, options_: SolveOptions | None = None
) -> Iterator[tuple[str, ShardingSolution]]:
    """``lpt-cost`` (the fallback: tables by decreasing least cost), then ``lpt-hbm``
    (tables by decreasing least HBM: packs the big ones first when memory binds)."""
    del options_
    opts = [options(instance, t) for t in range(len(instance.tables))]
    if any(not o for o in opts):
        return
    n = len(instance.tables)
    by_cost = sorted(range(n), key=lambda t: (-min(_least_cost(o) for o in opts[t]), t))
    yield "lpt-cost", list_schedule(instance, by_cost, opts)
    by_hbm = sorted(range(n), key=lambda t: (-min(_least_hbm(o) for o in opts[t]), t))
    yield "lpt-hbm", list_schedule(instance, by_hbm, opts)
