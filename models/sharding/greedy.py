"""Heuristics: list scheduling over every sharding option (no solver).

* :func:`list_schedule` (``lpt-cost``, the fallback, and ``lpt-hbm``): tables in decreasing
  order of a key (their least cost, or their least HBM); each takes the option, and the
  devices of its free shards, that leave the smallest bottleneck (the largest device cost),
  then the smallest communication, among those that fit every device's HBM. Free shards
  (table-wise, column-wise) go one by one to the device of least cost after the shard that
  still has room.
* :func:`least_total_first` (``lpt-total``): each table's cheapest option in total, longest
  first, as TorchRec's greedy partitioner places its cheapest proposal.
* :func:`target_fit` (``target-fit``): bisection on a bottleneck target; each table takes
  the option of least total cost that keeps every device under it.
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
) -> tuple[ShardingSolution, Loads]:
    """Tables in ``order``, each taking its best fitting option (see the module), and the
    loads left; a table that fits nowhere takes its option of least HBM on the devices of
    most room (the checker then names the device over its HBM)."""
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
    return ShardingSolution(tuple(plans)), loads


def _total(option: Option) -> int:
    """The option's cost summed over devices (the least for its free shards)."""
    if option.fixed is not None:
        return sum(c for c, _ in option.fixed.values())
    return option.free * min(option.free_cost)


def fit_under(
    instance: ShardingInstance, target: int, order: list[int], opts: list[list[Option]]
) -> ShardingSolution | None:
    """Tables in ``order``, each taking the option of least total cost (then least
    communication) that keeps every device at most ``target`` and within its HBM (free
    shards on the least loaded device that takes them); None when some table has none."""
    loads = Loads(instance)
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    big = np.iinfo(np.int64).max
    for t in order:
        best = None
        for option in sorted(opts[t], key=lambda o: (_total(o), o.comm_ns)):
            if best is not None and (_total(option), option.comm_ns) > best[0]:
                break
            if option.fixed is not None:
                if all(
                    hbm <= loads.free[d] and loads.cost[d] + cost <= target
                    for d, (cost, hbm) in option.fixed.items()
                ):
                    best = ((_total(option), option.comm_ns), option, ())
                continue
            cost, free = loads.cost.copy(), loads.free.copy()
            each = np.asarray(option.free_cost, dtype=np.int64)
            chosen = []
            for _ in range(option.free):
                after = cost + each
                ok = (free >= option.free_hbm) & (after <= target)
                if not ok.any():
                    break
                d = int(np.argmin(np.where(ok, after, big)))
                chosen.append(d)
                cost[d] += each[d]
                free[d] -= option.free_hbm
            if len(chosen) == option.free:
                total = int(sum(each[d] for d in chosen))
                key = (total, option.comm_ns)
                if best is None or key < best[0]:
                    best = (key, option, tuple(chosen))
        if best is None:
            return None
        _, option, devices = best
        loads.apply(option, devices)
        plans[t] = plan_from_option(instance, t, option, devices)
    return ShardingSolution(tuple(plans))


def target_fit(
    instance: ShardingInstance,
    opts: list[list[Option]],
    low: int,
    high: int,
    order: list[int],
) -> ShardingSolution | None:
    """The plan of :func:`fit_under` at the least target found by bisection on
    ``[low, high]`` (about 0.1 % apart at the end), or None when even ``high`` fails."""
    best = fit_under(instance, high, order, opts)
    if best is None:
        return None
    while high - low > max(1, high // 1000):
        mid = (low + high) // 2
        found = fit_under(instance, mid, order, opts)
        if found is None:
            low = mid + 1
        else:
            best, high = found, mid
    return best


def least_total_first(
    instance: ShardingInstance, opts: list[list[Option]]
) -> tuple[ShardingSolution, Loads]:
    """Each table's option of least total cost (then least communication), tables on fixed
    devices first, then by decreasing peak of that option, free shards on the least loaded
    device with room (longest processing time first, as TorchRec's greedy partitioner does
    with its proposals); a table whose option fits nowhere takes its next option by total
    cost."""
    loads = Loads(instance)
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    ranked = [sorted(table_opts, key=lambda o: (_total(o), o.comm_ns)) for table_opts in opts]
    # Options on fixed devices first (they need room on each of theirs), then the free
    # shards by decreasing cost.
    order = sorted(
        range(len(instance.tables)),
        key=lambda t: (ranked[t][0].fixed is None, -_least_cost(ranked[t][0]), t),
    )
    for t in order:
        chosen = None
        for option in ranked[t]:
            trial = loads.trial(option)
            if trial is not None:
                chosen = (option, trial[1])
                break
        if chosen is None:
            option = min(opts[t], key=_least_hbm)
            room = [int(d) for d in np.argsort(-loads.free)]
            chosen = (option, tuple(room[i % len(room)] for i in range(option.free)))
        option, devices = chosen
        loads.apply(option, devices)
        plans[t] = plan_from_option(instance, t, option, devices)
    return ShardingSolution(tuple(plans)), loads


def greedy_solutions(
    instance: ShardingInstance, options_: SolveOptions | None = None
) -> Iterator[tuple[str, ShardingSolution]]:
    """``lpt-cost`` (the fallback: tables by decreasing least cost, each the option of
    least bottleneck), ``lpt-hbm`` (the same by decreasing least HBM: packs the big ones
    first when memory binds), ``lpt-total`` (:func:`least_total_first`) and ``target-fit``
    (:func:`target_fit`)."""
    del options_
    opts = [options(instance, t) for t in range(len(instance.tables))]
    if any(not o for o in opts):
        return
    n = len(instance.tables)
    by_cost = sorted(range(n), key=lambda t: (-min(_least_cost(o) for o in opts[t]), t))
    first, loads = list_schedule(instance, by_cost, opts)
    yield "lpt-cost", first
    by_hbm = sorted(range(n), key=lambda t: (-min(_least_hbm(o) for o in opts[t]), t))
    second, loads2 = list_schedule(instance, by_hbm, opts)
    yield "lpt-hbm", second
    third, loads3 = least_total_first(instance, opts)
    yield "lpt-total", third
    # The best of these bounds the bisection from above (when it fits the HBM); the
    # largest of the average least total cost and the largest least peak, from below.
    fits = [lo for lo in (loads, loads2, loads3) if (lo.free >= 0).all()]
    high = min((int(lo.cost.max()) for lo in fits), default=int(2 * loads.cost.max()) + 1)
    low = max(
        max(min(_least_cost(o) for o in table_opts) for table_opts in opts),
        sum(min(_total(o) for o in table_opts) for table_opts in opts) // instance.world_size,
    )
    # Tables whose least-total option is on fixed devices first, then by decreasing peak.
    least = [min(table_opts, key=lambda o: (_total(o), o.comm_ns)) for table_opts in opts]
    by_peak = sorted(range(n), key=lambda t: (least[t].fixed is None, -_least_cost(least[t]), t))
    found = target_fit(instance, opts, low, max(low, high), by_peak)
    if found is not None:
        yield "target-fit", found
