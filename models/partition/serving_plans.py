"""Serving plans with replicas on a Helix-style cluster: a set of disjoint pipelines.

A plan is a list of pipelines; a pipeline a sequence of stages; a stage one node holding a
contiguous layer range, the ranges of a pipeline's stages tiling ``[0, L)`` in order. No node
serves two pipelines (replicas hold their own copies of the weights). Memory is Helix's model
of the node: a node holding ``k`` layers keeps the weights of ``k`` layers (at most half its
VRAM: the type's layer limit) and the KV cache of the vLLM blocks left beside them, which is
what ``T(type, k)`` was computed from (see :mod:`.serving_cluster`); a stage over its type's limit
overflows the memory and is rejected. A pipeline serves ``min`` over its stages of ``T`` and
over its links (source -> first, stage -> next, last -> sink) of the link capacity; the
plan serves the sum over its pipelines. Every plan is a flow of the max-flow model, so its
value is at most the max-flow optimum of :mod:`.serving_milp`.

Tensor-parallel stages (a group of GPUs of one node running one range) need nodes with
several GPUs; the nodes of the Helix cluster have one each (the artifact profiles
``l4x2``/``t4x2``/``t4x4`` machines, but cluster24 has none), so stages here are single nodes.

Exact plans (:func:`best_plan`): nodes of one type are interchangeable, so a pipeline is, up
to renaming, a count of nodes per type; it can serve ``v`` tokens/s if ``L`` is a sum of
those counts' layer numbers ``k`` with ``T(type, k) >= v``. For every count vector ``c``
(at most ``prod (n_t + 1)``) the best ``v`` is found among the table values; a DP over the
nodes left (``f(n) = max(0, max_c v(c) + f(n - c))``) then gives the best plan. It is exact
when links never bind (:func:`.serving_milp.links_never_bind`), as on cluster24; otherwise the
plan is scored with its links and the DP value is an upper bound.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

from placement.models.partition.instance import SINK, SOURCE
from placement.models.partition.serving_cluster import HelixCluster

Stage = tuple[int, int, int]
"""(node, first layer, layer count)."""


@dataclass(frozen=True)
class PipelinePlan:
    """Disjoint pipelines of stages; see the module docstring."""

    pipelines: tuple[tuple[Stage, ...], ...]


def check_plan(cluster: HelixCluster, plan: PipelinePlan) -> list[str]:
    """Every way ``plan`` breaks the model, one line each (empty: feasible)."""
    errors: list[str] = []
    used: dict[int, int] = {}
    n = len(cluster.nodes)
    for p, stages in enumerate(plan.pipelines):
        if not stages:
            errors.append(f"pipeline {p}: no stages")
            continue
        at = 0
        for node, start, count in stages:
            if not 0 <= node < n:
                errors.append(f"pipeline {p}: node {node} is not a node of {cluster.name}")
                continue
            name = cluster.nodes[node].name
            if node in used:
                errors.append(f"pipeline {p}: {name} already serves pipeline {used[node]}")
            used[node] = p
            limit = cluster.limit(node)
            if not 1 <= count <= limit:
                errors.append(
                    f"pipeline {p}: {name} ({cluster.nodes[node].type}) holds {count} layers, "
                    f"expected 1..{limit} (weights over half the VRAM: memory overflow)"
                )
            if start != at:
                what = "gap" if start > at else "overlap"
                errors.append(
                    f"pipeline {p}: {name} starts at layer {start}, expected {at} ({what})"
                )
            at = start + count
        if at != cluster.num_layers:
            errors.append(f"pipeline {p}: ends at layer {at}, expected {cluster.num_layers}")
    return errors


def pipeline_throughput(cluster: HelixCluster, stages: tuple[Stage, ...]) -> float:
    """Tokens/s of one (checked) pipeline: its slowest stage or link."""
    caps = [cluster.node_throughput(node, count) for node, _, count in stages]
    hops = [SOURCE, *(node for node, _, _ in stages), SINK]
    caps += [cluster.links.get((u, v), 0.0) for u, v in itertools.pairwise(hops)]
    return min(caps)


def plan_throughput(cluster: HelixCluster, plan: PipelinePlan) -> tuple[float, list[str]]:
    """(tokens/s, errors): the sum over pipelines, 0 with the errors if the plan is broken."""
    errors = check_plan(cluster, plan)
    if errors:
        return 0.0, errors
    return sum(pipeline_throughput(cluster, s) for s in plan.pipelines), []


def _split(
    target: int, counts: dict[str, int], allowed: dict[str, list[int]]
) -> list[tuple[str, int]] | None:
    """Layer counts, one per node (``counts[t]`` nodes of type t, each a k in
    ``allowed[t]``), adding up to ``target``; None if there are none.

    A reachability table over (nodes placed, layers so far), one node at a time, then a walk
    back from ``target``.
    """
    nodes = [t for t in sorted(counts) for _ in range(counts[t])]
    reach: list[set[int]] = [{0}]
    for t in nodes:
        reach.append({r + k for r in reach[-1] for k in allowed[t] if r + k <= target})
    if target not in reach[-1]:
        return None
    out: list[tuple[str, int]] = []
    left = target
    for i in range(len(nodes), 0, -1):
        t = nodes[i - 1]
        k = next(k for k in allowed[t] if left - k in reach[i - 1])
        out.append((t, k))
        left -= k
    return out[::-1]


def pack_pipelines(
    sizes: tuple[int, ...], patterns: list[tuple[tuple[int, ...], float]]
) -> tuple[float, tuple[int, ...]]:
    """The best multiset of pipeline patterns over ``sizes`` nodes per type.

    ``patterns``: (nodes per type, tokens/s of the best pipeline on exactly those nodes).
    Returns (total tokens/s, indices of the chosen patterns); exact by the DP
    ``f(n) = max(0, max_{c <= n} v(c) + f(n - c))`` over the nodes left.
    """

    @cache
    def f(left: tuple[int, ...]) -> tuple[float, tuple[int, ...]]:
        best: tuple[float, tuple[int, ...]] = (0.0, ())
        for j, (c, v) in enumerate(patterns):
            if v > 0 and all(a <= b for a, b in zip(c, left, strict=True)):
                rest = f(tuple(b - a for a, b in zip(c, left, strict=True)))
                if v + rest[0] > best[0]:
                    best = (v + rest[0], (j, *rest[1]))
        return best

    return f(sizes)


def best_plan(cluster: HelixCluster, types: tuple[str, ...] | None = None) -> PipelinePlan:
    """The best plan of disjoint pipelines (exact when links never bind; module docstring).

    ``types``: only these node types (separate pipelines per GPU type call it per type).
    """
    members: dict[str, list[int]] = {}
    for i, node in enumerate(cluster.nodes):
        if types is None or node.type in types:
            members.setdefault(node.type, []).append(i)
    kinds = sorted(members)
    sizes = [len(members[t]) for t in kinds]
    values = sorted({v for t in kinds for v in cluster.throughput[t]}, reverse=True)
    L = cluster.num_layers

    # best pattern per count vector: the highest v for which L splits over those nodes
    patterns: list[tuple[tuple[int, ...], float, list[tuple[str, int]]]] = []
    for c in itertools.product(*(range(s + 1) for s in sizes)):
        if not any(c):
            continue
        counts = dict(zip(kinds, c, strict=True))
        most = sum(c_t * len(cluster.throughput[t]) for t, c_t in counts.items())
        if most < L or sum(c) > L:
            continue

        def split_at(v: float, counts: dict[str, int] = counts) -> list[tuple[str, int]] | None:
            allowed = {
                t: [
                    k
                    for k in range(len(cluster.throughput[t]), 0, -1)
                    if cluster.throughput[t][k - 1] >= v
                ]
                for t in counts
            }
            if any(n and not allowed[t] for t, n in counts.items()):
                return None
            return _split(L, {t: n for t, n in counts.items() if n}, allowed)

        # feasibility only grows as v falls: bisect over the values, highest first
        lo, hi = 0, len(values)  # values[:lo] fail, values[hi:] are not needed
        found = None
        while lo < hi:
            mid = (lo + hi) // 2
            split = split_at(values[mid])
            if split is None:
                lo = mid + 1
            else:
                found, hi = (values[mid], split), mid
        if found is not None:
            patterns.append((c, found[0], found[1]))

    _, chosen = pack_pipelines(tuple(sizes), [(c, v) for c, v, _ in patterns])
    free = {t: list(members[t]) for t in kinds}
    pipelines = []
    for j in chosen:
        at = 0
        stages = []
        for t, k in patterns[j][2]:
            stages.append((free[t].pop(0), at, k))
            at += k
        pipelines.append(tuple(stages))
    return PipelinePlan(tuple(pipelines))


def best_plan_value(cluster: HelixCluster, types: tuple[str, ...] | None = None) -> float:
    """The value of :func:`best_plan`, scored by :func:`plan_throughput`."""
    value, errors = plan_throughput(cluster, best_plan(cluster, types))
    if errors:
        raise RuntimeError("best_plan built a broken plan: " + errors[0])
    return value
