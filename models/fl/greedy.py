"""Heuristics: round by round, each running job takes the fastest devices that cover its
classes (no solver).

* :func:`threshold_cover` (one job): the least time threshold (by bisection over the job's
  free devices in order of speed) under which a greedy set cover of its needed classes takes
  at most ``devices_per_round`` devices; the cover, then the fastest others under it.
* :func:`fastest_cover` (``fastest-cover``, the fallback): per round, jobs in decreasing
  order of their lower bound (the most demanding job picks first) and in increasing order;
  the round keeps the order of least total round time. A device's rounds are counted
  against the participation limit as the rounds go.
* :func:`repair_coverage`: swap covering devices into a chosen set (the peers use it).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import eligible, holders, job_lower_bound, times
from placement.solver.options import SolveOptions

Round = tuple[tuple[int, ...], ...]


def _holder_matrix(instance: FlInstance, j: int) -> np.ndarray:
    """``[d, i]``: device ``d`` holds the ``i``-th class job ``j`` needs."""
    needed = instance.jobs[j].classes_needed
    if not needed:
        return np.zeros((len(instance.devices), 0), dtype=bool)
    return np.stack([holders(instance, c) for c in needed], axis=1)


def _greedy_cover(hold: np.ndarray, order: np.ndarray, limit: int) -> list[int] | None:
    """A greedy set cover of every column of ``hold`` by the devices ``order`` (fastest
    first: ties go to the faster), or None when it needs more than ``limit`` devices or
    cannot cover."""
    if hold.shape[1] == 0:
        return []
    sub = hold[order]
    uncovered = np.ones(hold.shape[1], dtype=bool)
    chosen: list[int] = []
    while uncovered.any():
        gain = sub[:, uncovered].sum(axis=1)
        best = int(np.argmax(gain))
        if gain[best] == 0 or len(chosen) == limit:
            return None
        chosen.append(int(order[best]))
        uncovered &= ~sub[best]
    return chosen


def threshold_cover(
    instance: FlInstance, j: int, free: np.ndarray, hold: np.ndarray | None = None
) -> tuple[int, ...] | None:
    """Job ``j``'s devices among ``free`` (a mask): the least threshold found by bisection
    under which the greedy cover fits, the cover and then the fastest other devices under it;
    None when even every free device does not give a cover of at most ``k`` devices."""
    k = instance.jobs[j].devices_per_round
    t = times(instance)[j]
    cand = np.flatnonzero(free)
    if len(cand) < k:
        return None
    order = cand[np.argsort(t[cand], kind="stable")]
    hold = _holder_matrix(instance, j) if hold is None else hold

    def attempt(i: int) -> tuple[int, ...] | None:
        prefix = order[: i + 1]
        cover = _greedy_cover(hold, prefix, k)
        if cover is None:
            return None
        rest = [int(d) for d in prefix if int(d) not in set(cover)][: k - len(cover)]
        return tuple(sorted(cover + rest, key=lambda d: (t[d], d)))

    lo, hi = k - 1, len(order) - 1
    best = attempt(hi)
    if best is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        found = attempt(mid)
        if found is None:
            lo = mid + 1
        else:
            best, hi = found, mid
    return best


def repair_coverage(
    instance: FlInstance, j: int, chosen: list[int], free: np.ndarray, rank: np.ndarray
) -> list[int]:
    """``chosen`` with each class job ``j`` misses brought in: the best-ranked free holder
    (``rank``: lower is better) replaces the worst-ranked chosen device whose classes the
    others still cover. Returns the set as far as it could be repaired."""
    out = list(chosen)
    for c in instance.jobs[j].classes_needed:
        have = {x for d in out for x in instance.devices[d].classes}
        if c in have:
            continue
        pool = np.flatnonzero(free & holders(instance, c))
        pool = np.array([d for d in pool if d not in out], dtype=np.int64)
        if len(pool) == 0:
            continue
        newcomer = int(pool[np.argmin(rank[pool])])
        needed = set(instance.jobs[j].classes_needed)
        for victim in sorted(out, key=lambda d: -rank[d]):
            others = {x for d in out if d != victim for x in instance.devices[d].classes}
            if (needed & set(instance.devices[victim].classes)) - others - {c}:
                continue
            out[out.index(victim)] = newcomer
            break
    return out


def _assign_in_order(
    instance: FlInstance, r: int, budget: np.ndarray, order: list[int]
) -> tuple[Round, int] | None:
    """Jobs of round ``r`` in ``order``, each :func:`threshold_cover` over the devices left
    (online, memory, participation left); the round and its total time, or None."""
    ok = eligible(instance, r)
    free = budget > 0
    row: list[tuple[int, ...]] = [() for _ in instance.jobs]
    total = 0
    for j in order:
        picked = threshold_cover(instance, j, free & ok[j])
        if picked is None:
            return None
        row[j] = picked
        free[list(picked)] = False
        total += int(times(instance)[j][list(picked)].max())
    return tuple(row), total


def fastest_cover_round(
    instance: FlInstance, r: int, budget: np.ndarray
) -> tuple[Round, int] | None:
    """The better of the two job orders of :func:`fastest_cover` for round ``r`` (None when
    neither serves every running job)."""
    ok = eligible(instance, r) & (budget > 0)[None, :]
    running = [j for j in range(len(instance.jobs)) if instance.active(r, j)]
    bound = {j: job_lower_bound(instance, j, ok[j]) or 0 for j in running}
    best = None
    for order in (
        sorted(running, key=lambda j: (-bound[j], j)),
        sorted(running, key=lambda j: (bound[j], j)),
    ):
        found = _assign_in_order(instance, r, budget, order)
        if found is not None and (best is None or found[1] < best[1]):
            best = found
    return best


def spend(instance: FlInstance, budget: np.ndarray, row: Round) -> None:
    """Count one round against the participation limit for every device of ``row``."""
    for devs in row:
        for d in devs:
            budget[d] -= 1


def fastest_cover(instance: FlInstance) -> FlSolution:
    """The fallback: :func:`fastest_cover_round` round after round. A round it cannot serve
    whole takes each job's fastest free devices (the checker then names what is missing)."""
    budget = np.full(len(instance.devices), instance.participation_limit, dtype=np.int64)
    rows: list[Round] = []
    t = times(instance)
    for r in range(instance.rounds):
        found = fastest_cover_round(instance, r, budget)
        if found is None:
            free = (budget > 0) & eligible(instance, r).any(axis=0)
            row: list[tuple[int, ...]] = [() for _ in instance.jobs]
            for j in range(len(instance.jobs)):
                if not instance.active(r, j):
                    continue
                cand = np.flatnonzero(free)
                take = cand[np.argsort(t[j][cand], kind="stable")][
                    : instance.jobs[j].devices_per_round
                ]
                row[j] = tuple(int(d) for d in take)
                free[take] = False
            found = (tuple(row), 0)
        spend(instance, budget, found[0])
        rows.append(found[0])
    return FlSolution(tuple(rows))


def greedy_solutions(
    instance: FlInstance, options_: SolveOptions | None = None
) -> Iterator[tuple[str, FlSolution]]:
    """``fastest-cover`` (the fallback, :func:`fastest_cover`)."""
    del options_
    yield "fastest-cover", fastest_cover(instance)
