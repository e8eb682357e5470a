"""The span structure of the GPU model: where a job's workers can sit, and what it costs.

A placed job's span is the innermost level one of whose groups holds all its workers
(:func:`placement.models.gpu.check.span_level`); its communication cost and preferred-locality
penalty depend only on that level (:func:`span_cost`). The model carries an indicator per
level whose cost changes (or that a required locality names): :class:`SpanLevel`, built from
the groups that can hold the whole job (:func:`span_levels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from placement.models.gpu.instance import SPAN_SAME_GPU, GpuInstance, GpuJob


@dataclass
class SpanLevel:
    """One level at which a job's span indicator is modelled."""

    level: int
    mode: str  # "var": c is a variable; "always": c == x; "never": c == 0
    c: int = -1
    groups: list[Any] = field(default_factory=list)
    u: dict[Any, int] = field(default_factory=dict)


def possible_spans(instance: GpuInstance, job: GpuJob) -> list[int]:
    """Span levels a placement of ``job`` can have (check.span_level's rules; ``last + 1``
    is "beyond": several groups of the outermost level)."""
    w, beyond = job.workers, len(instance.levels)
    if job.kind == "whole":
        if job.gpus * w == 1:
            return [SPAN_SAME_GPU]
        return [0, 1] if w == 1 else list(range(0, beyond + 1))
    if job.kind == "fractional":
        return [SPAN_SAME_GPU] if w == 1 else list(range(SPAN_SAME_GPU, beyond + 1))
    return [1] if w == 1 else list(range(1, beyond + 1))


def span_cost(instance: GpuInstance, job: GpuJob, span: int) -> float:
    """Communication cost plus preferred-locality penalty at span level ``span``."""
    cost = 0.0
    if span != SPAN_SAME_GPU and job.traffic_gb:
        # Beyond the outermost level its bandwidth still applies (check.comm_cost_of).
        level = min(span, len(instance.levels) - 1)
        cost = job.traffic_gb / instance.levels[level].bandwidth_gbps
    preferred = job.locality_level and not job.locality_required
    if preferred and span > instance.level_of_name(job.locality_level):
        cost += instance.locality_miss_penalty
    return cost


def span_levels(
    instance: GpuInstance,
    job: GpuJob,
    plan: dict[str, Any],
    doms: list[list[int]],
    ff: list[dict[int, list[int]]],
) -> list[SpanLevel] | None:
    """The levels whose indicator changes the cost or carries a required locality."""
    spans = possible_spans(instance, job)
    required = None
    if job.locality_level and job.locality_required:
        limit = instance.level_of_name(job.locality_level)
        inside = [s for s in spans if s <= limit]
        if not inside:
            return None  # e.g. a CPU-only job required inside one NVLink domain
        if inside[-1] != spans[-1]:
            required = inside[-1]
    out: list[SpanLevel] = []
    for i, s in enumerate(spans[:-1]):
        gain = span_cost(instance, job, spans[i + 1]) - span_cost(instance, job, s)
        if gain <= 0 and s != required:
            continue
        groups_any, groups_all = _groups(instance, job, plan, s, doms, ff)
        if len(groups_any) == 1 and groups_all:
            mode = "always"
        elif groups_all:
            mode = "var"
        else:
            mode = "never"
        if s == required and mode == "never":
            return None
        out.append(SpanLevel(s, mode, groups=groups_all))
    plan["required"] = required
    return out


def _groups(
    instance: GpuInstance,
    job: GpuJob,
    plan: dict[str, Any],
    level: int,
    doms: list[list[int]],
    ff: list[dict[int, list[int]]],
) -> tuple[set[Any], list[Any]]:
    """Groups at ``level`` where the job has variables, and those that can hold all of it."""
    W = job.workers
    caps, nodes = plan["caps"], plan["nodes"]
    any_groups: set[Any] = set()
    all_groups: list[Any] = []
    if level == SPAN_SAME_GPU:
        for n in nodes:
            for g in plan["gpus"][n]:
                any_groups.add((n, g))
                if plan["gcaps"][n][g] >= W and caps[n] >= W:
                    all_groups.append((n, g))
    elif level == 0:
        for n in nodes:
            if job.kind == "whole":
                for d in doms[n]:
                    any_groups.add((n, d))
                    if len(ff[n][d]) >= job.gpus * W and caps[n] >= W:
                        all_groups.append((n, d))
            else:
                per_dom: dict[int, int] = {}
                for g in plan["gpus"][n]:
                    d = instance.nodes[n].nvlink_domain(g)
                    per_dom[d] = per_dom.get(d, 0) + plan["gcaps"][n][g]
                for d, room in sorted(per_dom.items()):
                    any_groups.add((n, d))
                    if room >= W and caps[n] >= W:
                        all_groups.append((n, d))
    elif level == 1:
        any_groups.update(nodes)
        all_groups = [n for n in nodes if caps[n] >= W]
    else:
        ids = instance.group_ids[level - 2]
        room: dict[int, int] = {}
        for n in nodes:
            room[int(ids[n])] = room.get(int(ids[n]), 0) + int(caps[n])
        any_groups.update(room)
        all_groups = [k for k, r in sorted(room.items()) if r >= W]
    return any_groups, all_groups


def group_key(
    instance: GpuInstance, job: GpuJob, level: int, spots: list[tuple[int, tuple[int, ...]]]
) -> Any:
    """The group at ``level`` holding every worker of a placed job (its span is <= level)."""
    n = spots[0][0]
    if level == SPAN_SAME_GPU:
        return (n, spots[0][1][0])
    if level == 0:
        return (n, instance.nodes[n].nvlink_domain(spots[0][1][0]))
    if level == 1:
        return n
    return int(instance.group_ids[level - 2][n])
