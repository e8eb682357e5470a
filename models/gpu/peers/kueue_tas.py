"""Kueue's Topology Aware Scheduling (TAS), one gang at a time: the peer our batch decision is
measured against.

Written from kubernetes-sigs/kueue ``pkg/cache/tas_flavor_snapshot.go`` at commit 3c4afd5
(``findTopologyAssignment``, ``findLevelWithFitDomains``, ``findBestFitDomainBy``,
``updateSliceCountsToMinimum``, ``sortedDomains``, ``fillInCounts``; without leader pod sets
and with slices of one pod, the default) and KEP-2724 ("Computing the assignment",
``keps/2724-topology-aware-scheduling/README.md``):

1. every node (the lowest level, ``kubernetes.io/hostname``) gets the number of the gang's pods
   that fit in what it has free (``requests.CountIn``); every domain above sums its children;
2. at the requested level (required or preferred; the node level for a gang without one,
   Kueue's "implied"/unconstrained case) the domains are sorted by that count, most first
   (BestFit) or least first (LeastFreeCapacity), ties by their label values; BestFit takes, of
   the domains that hold the whole gang, the one holding the fewest ("optimize the
   potentially last domain"), LeastFreeCapacity the first in its order that holds it. If none
   holds it: a required gang waits; a preferred one tries the next level up; at the top (or
   unconstrained) it takes domains in sorted order until the gang is covered, BestFit
   optimising the last one the same way;
3. going down level by level, the children of all chosen domains together are sorted again
   and taken in order until the gang is covered (the same last-domain optimisation), which
   gives pods per node.

Profiles (the KEP's table, "Since v0.15"): ``mixed`` (the default: BestFit for required and
preferred gangs, LeastFreeCapacity for unconstrained ones), ``best-fit`` (BestFit always) and
``least-free-capacity`` (LeastFreeCapacity always). Kueue assigns pods to nodes, not GPUs: a
worker here takes the lowest free GPU indices of its node (what the device plugin would hand
out), and a fractional worker the fullest GPU with room. The solution goes through the
family's checker like every other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.models.gpu.instance import GpuInstance, GpuJob, GpuSolution, WorkerPlacement
from placement.models.gpu.remaining import Remaining

PROFILES = ("mixed", "best-fit", "least-free-capacity")


@dataclass
class _Domain:
    values: tuple[str, ...]
    children: list[_Domain] = field(default_factory=list)
    node: int = -1
    state: int = 0


def _tree(instance: GpuInstance) -> list[dict[tuple[str, ...], _Domain]]:
    """Domains per Kueue level, outermost first; the last level is the node (hostname)."""
    outer = len(instance.levels) - 2  # group levels above the node
    levels: list[dict[tuple[str, ...], _Domain]] = [{} for _ in range(outer + 1)]
    for n, node in enumerate(instance.nodes):
        path = tuple(reversed(node.groups))  # outermost first, as Kueue's levelValues
        parent = None
        for k in range(outer + 1):
            values = (*path[: k + 1],) if k < outer else (*path, node.name)
            domain = levels[k].get(values)
            if domain is None:
                domain = levels[k][values] = _Domain(values, node=n if k == outer else -1)
                if parent is not None:
                    parent.children.append(domain)
            parent = domain
    return levels


def _sorted(domains: list[_Domain], least_free: bool) -> list[_Domain]:
    if least_free:
        return sorted(domains, key=lambda d: (d.state, d.values))
    return sorted(domains, key=lambda d: (-d.state, d.values))


def _best_fit(domains: list[_Domain], needed: int) -> _Domain:
    """``findBestFitDomainBy``: the first domain with the fewest pods >= needed, starting from
    the first domain (returned when none fits better)."""
    best = domains[0]
    for d in domains:
        if d.state >= needed and d.state < best.state:
            best = d
    return best


def _fit_level(
    levels: list[dict[tuple[str, ...], _Domain]],
    level: int,
    required: bool,
    count: int,
    unconstrained: bool,
    best_fit: bool,
) -> tuple[int, list[_Domain]] | None:
    """``findLevelWithFitDomains`` (no leaders, slices of one pod)."""
    ordered = _sorted(list(levels[level].values()), not best_fit)
    top = ordered[0]
    if best_fit and top.state >= count:
        top = _best_fit(ordered, count)
    if not best_fit:
        for candidate in ordered:
            if candidate.state >= count:
                return level, [candidate]
        if required:
            return None
    if top.state < count:
        if required:
            return None
        if level > 0 and not unconstrained:
            return _fit_level(levels, level - 1, required, count, unconstrained, best_fit)
        chosen, remaining, idx = [], count, 0
        # as Kueue: the walk stops at the first domain with room for no pod (with
        # LeastFreeCapacity a full domain sorts first)
        while remaining > 0 and idx < len(ordered) and ordered[idx].state > 0:
            d = ordered[idx]
            if best_fit and d.state >= remaining:
                d = _best_fit(ordered[idx:], remaining)
            chosen.append(d)
            remaining -= d.state
            idx += 1
        return (level, chosen) if remaining <= 0 else None
    return level, [top]


def _to_minimum(domains: list[_Domain], count: int, best_fit: bool) -> list[_Domain]:
    """``updateSliceCountsToMinimum`` with slices of one pod and no leader."""
    out, remaining = [], count
    for i, d in enumerate(domains):
        if best_fit and d.state >= remaining:
            d = _best_fit(domains[i:], remaining)
        if d.state >= remaining:
            d.state = remaining
            out.append(d)
            return out
        remaining -= d.state
        out.append(d)
    return out


def kueue_assignment(
    instance: GpuInstance, free: Remaining, job: GpuJob, profile: str = "mixed"
) -> dict[int, int] | None:
    """Pods per node for one gang, or None when Kueue would leave it waiting."""
    levels = _tree(instance)
    lowest = len(levels) - 1
    for n_level in levels:
        for d in n_level.values():
            d.state = 0
    for d in levels[lowest].values():
        d.state = free.count_in(d.node, job)
    for k in range(lowest - 1, -1, -1):
        for d in levels[k].values():
            d.state = sum(c.state for c in d.children)
    unconstrained = not job.locality_level
    if unconstrained:
        level = lowest
    else:
        index = instance.level_index[job.locality_level]  # 0 nvlink, 1 node, 2.. groups
        level = lowest if index <= 1 else lowest - (index - 1)
    if profile == "least-free-capacity":
        best_fit = False
    elif profile == "best-fit":
        best_fit = True
    else:
        best_fit = not unconstrained
    fit = _fit_level(levels, level, job.locality_required, job.workers, unconstrained, best_fit)
    if fit is None:
        return None
    at, current = fit
    current = _to_minimum(current, job.workers, best_fit)
    for _ in range(at, lowest):
        lower = [c for d in current for c in d.children]
        current = _to_minimum(_sorted(lower, not best_fit), job.workers, best_fit)
    pods = {d.node: d.state for d in current if d.state > 0}
    return pods if sum(pods.values()) == job.workers else None


def kueue_one_at_a_time(instance: GpuInstance, profile: str = "mixed") -> GpuSolution:
    """Kueue TAS admitting the instance's jobs in their order, one gang at a time."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} not in {PROFILES}")
    free = Remaining(instance)
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    for j, job in enumerate(instance.jobs):
        pods = kueue_assignment(instance, free, job, profile)
        if pods is None:
            continue
        placements[j] = tuple(free.take(n, job) for n, k in sorted(pods.items()) for _ in range(k))
    return GpuSolution(placements)
