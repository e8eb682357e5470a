"""L4's length-specialised stages (Yuan, Zhao, Zhao, Cao, He, Wu, "L4: Low-Latency and
Load-Balanced LLM Serving via Length-Aware Scheduling", arXiv 2512.19179v1, 2025; renamed
"CascadeInfer" in v2 and v3): identical instances serving one model are split into groups,
each serving the requests whose length lies in its range, so that requests flow down a
pipeline of stages as their context grows; a dynamic programme picks the stage partition
with the best QoE, and load is balanced across and within the groups at run time.

What we could read: the paper's abstract and introduction (arXiv 2512.19179v1 and v2, the
stored HTML of v2); no public code of L4 or CascadeInfer was found (searched by both names).
So this peer is written from that description, and what the description leaves open is ours
and said so:

* **The DP** (:func:`stage_partition`) is the partition DP the abstract describes, over the
  context lengths where the workload's classes change (every class's prompt length and last
  decode context) and the number of instances: ``best[j][m]`` is the least cost of covering
  contexts ``(0, g_j]`` with ``m`` instances, ``best[j][m] = min over i < j, 1 <= k <= m of
  best[i][m - k] + cost(g_i, g_j, k)``; every instance is used. It is exact for its cost
  (tests compare it with enumeration of every boundary choice and count).
* **The stage cost** (our QoE, a modelling choice): per second, the requests' expected
  waiting in the stage plus their migration copies. A prompt of ``I`` tokens starts in the
  stage holding context ``I + 1`` (its first decode step) and waits there for the prefills
  queued ahead of it: Pollaczek-Khinchine's mean M/G/1 wait, ``a E[S^2] / (2 (1 - rho_p))``
  per instance (``a`` prompts per second, ``S`` their prefill times, ``rho_p`` the prefill
  load), which is where length heterogeneity costs in this simulator (a short prompt waits
  behind long ones, and a mixed instance's decodes stall behind every prefill). A request
  whose context passes the stage's limit pays the copy of its KV cache
  (:data:`..replay.MIGRATION_BYTES_PER_S`). A stage whose prefill and decode work
  (decode per token: ``per_sequence + per_1k * context / 1000`` plus the step's base time
  shared by the sequences the TPOT target allows) reaches its instances' time is infeasible.
* **Routing** (:class:`L4Router`): a prompt to the least-loaded instance of its stage
  (fewest requests in flight: the paper's within-group balance); a request past its stage's
  limit to the least-loaded instance of the next stage; every request admitted. The paper's
  runtime range refinement is not built (the DP's boundaries stay fixed).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from placement.models.serving.instance import (
    Kind,
    Profile,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.replay import (
    MIGRATION_BYTES_PER_S,
    SimInstance,
    build_instances,
)
from placement.models.serving.router import least_outstanding


@dataclass(frozen=True)
class Demand:
    """Requests of one length: a rate (per second), prompt and output tokens."""

    rate_per_s: float
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Stages:
    """A stage partition: each stage's context limit (tokens; the last one is the longest
    context of the workload and has no limit in the simulator), its instances, and the
    partition's cost (request-milliseconds of waiting and copying per second)."""

    limits: tuple[int, ...]
    counts: tuple[int, ...]
    cost: float


@dataclass(frozen=True)
class StageModel:
    """What the stage cost reads of one instance kind."""

    profile: Profile
    tokens_per_step: int
    """Sequences a decode step shares its base time with (the TPOT target's batch)."""

    def prefill_ms(self, tokens: int) -> float:
        return self.profile.prefill_ms(tokens)

    def token_ms(self, context_sum: float, tokens: int) -> float:
        """Decode time of ``tokens`` tokens holding ``context_sum`` context in all."""
        p = self.profile
        per_token = p.decode_per_sequence_ms + p.decode_base_ms / self.tokens_per_step
        return tokens * per_token + p.decode_per_1k_context_ms * context_sum / 1000

    def copy_ms(self, context: int) -> float:
        return 1000 * context * self.profile.kv_bytes_per_token / MIGRATION_BYTES_PER_S


def stage_model(instance: ServingInstance, kind: Kind) -> StageModel:
    """The stage model of ``kind``: its profile and the batch its step target allows."""
    p = instance.profiles[kind.profile]
    target = instance.slo.tpot_ms * (1 - kind.prefill_share)
    batch = 1
    if p.decode_per_sequence_ms > 0:
        batch = max(1, int((target - p.decode_base_ms) / p.decode_per_sequence_ms))
    return StageModel(p, batch)


def demands(instance: ServingInstance) -> list[Demand]:
    """The instance's classes at their arrival rates."""
    return [
        Demand(rate / 1000, c.input_tokens, c.output_tokens)
        for c, rate in zip(instance.classes, instance.class_rates_milli, strict=True)
        if rate > 0
    ]


def grid(work: list[Demand]) -> list[int]:
    """The candidate stage limits: every prompt length and every last decode context."""
    points = {d.input_tokens for d in work} | {d.input_tokens + d.output_tokens - 1 for d in work}
    top = max(d.input_tokens + max(1, d.output_tokens - 1) for d in work)
    return sorted(p for p in points | {top} if 0 < p <= top)


@dataclass(frozen=True)
class _Range:
    """The workload seen by contexts ``(lo, hi]``."""

    work_ms_per_s: float
    prefill_ms_per_s: float
    prompts_per_s: float
    prefill_sq_ms2_per_s: float
    copy_ms_per_s: float


def _range(work: list[Demand], model: StageModel, lo: int, hi: int, last: bool) -> _Range:
    work_ms = prefill_ms = prompts = sq = copies = 0.0
    for d in work:
        first, final = d.input_tokens + 1, d.input_tokens + d.output_tokens - 1
        if lo < first <= hi:
            s = model.prefill_ms(d.input_tokens)
            prompts += d.rate_per_s
            prefill_ms += d.rate_per_s * s
            sq += d.rate_per_s * s * s
        a, b = max(first, lo + 1), min(final, hi)
        if b >= a:
            n = b - a + 1
            work_ms += d.rate_per_s * model.token_ms((a + b) * n / 2, n)
        if not last and first <= hi < final:
            copies += d.rate_per_s * model.copy_ms(hi + 1)
    return _Range(work_ms + prefill_ms, prefill_ms, prompts, sq, copies)


def _cost(r: _Range, instances: int) -> float:
    """Waiting plus copying, request-ms per second, of a range on ``instances`` instances
    (infinite when their time does not cover the work)."""
    if r.work_ms_per_s <= 0 and r.prompts_per_s <= 0:
        return r.copy_ms_per_s
    if r.work_ms_per_s >= 1000 * instances:
        return math.inf
    rho = r.prefill_ms_per_s / (1000 * instances)
    # Pollaczek-Khinchine per instance: a E[S^2] / (2 (1 - rho)), a E[S^2] = sq / instances,
    # times the stage's prompts per second; seconds -> ms through the 1/1000 of a.
    wait_ms = r.prefill_sq_ms2_per_s / instances / 1000 / (2 * (1 - rho))
    return r.prompts_per_s * wait_ms + r.copy_ms_per_s


def stage_cost(
    work: list[Demand], model: StageModel, lo: int, hi: int, k: int, last: bool
) -> float:
    """The cost of the stage of contexts ``(lo, hi]`` on ``k`` instances (module docstring)."""
    return _cost(_range(work, model, lo, hi, last), k)


def stage_partition(work: list[Demand], model: StageModel, instances: int) -> Stages:
    """L4's DP (module docstring): the stage limits and instance counts of least cost, every
    instance used, fewer stages on ties. ``instances`` must be at least 1."""
    if instances < 1:
        raise ValueError("instances: at least 1")
    g = [0, *grid(work)]
    top = len(g) - 1
    ranges = {
        (i, j): _range(work, model, g[i], g[j], j == top)
        for i in range(top)
        for j in range(i + 1, top + 1)
    }
    inf = math.inf
    best = [[inf] * (instances + 1) for _ in range(top + 1)]
    back: dict[tuple[int, int], tuple[int, int]] = {}
    best[0][0] = 0.0
    for j in range(1, top + 1):
        for m in range(1, instances + 1):
            for i in range(j):
                for k in range(1, m + 1):
                    before = best[i][m - k]
                    if before == inf:
                        continue
                    total = before + _cost(ranges[(i, j)], k)
                    if total < best[j][m] - 1e-9 * max(1.0, abs(total)):
                        best[j][m] = total
                        back[(j, m)] = (i, k)
    if best[top][instances] == inf:
        # no partition carries the load: one stage of every instance (the load is too much
        # for any grouping, and one pool wastes none of it)
        return Stages((g[top],), (instances,), inf)
    limits: list[int] = []
    counts: list[int] = []
    j, m = top, instances
    while j > 0:
        i, k = back[(j, m)]
        limits.append(g[j])
        counts.append(k)
        j, m = i, m - k
    return Stages(tuple(reversed(limits)), tuple(reversed(counts)), best[top][instances])


def partition_cost(
    work: list[Demand], model: StageModel, limits: tuple[int, ...], counts: tuple[int, ...]
) -> float:
    """The cost of a given partition (the DP's objective, for checking it)."""
    lo = 0
    total = 0.0
    for s, (hi, k) in enumerate(zip(limits, counts, strict=True)):
        total += stage_cost(work, model, lo, hi, k, s == len(limits) - 1)
        lo = hi
    return total


def brute_force_partition(work: list[Demand], model: StageModel, instances: int) -> float:
    """The least :func:`partition_cost` over every choice of limits from the grid and every
    split of the instances (exponential: for tests on small cases)."""
    g = grid(work)
    best = math.inf
    for r in range(0, min(len(g) - 1, instances - 1) + 1):
        for inner in itertools.combinations(g[:-1], r):
            limits = (*inner, g[-1])
            for cuts in itertools.combinations(range(1, instances), len(limits) - 1):
                bounds = (0, *cuts, instances)
                counts = tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False))
                best = min(best, partition_cost(work, model, limits, counts))
    return best


def l4_stages(instance: ServingInstance, cluster: ServingSolution) -> Stages:
    """The DP's partition of a cluster of identical instances for the instance's workload."""
    d = cluster.deployments[0]
    model = stage_model(instance, kinds(instance)[d.kind])
    return stage_partition(demands(instance), model, sum(x.instances for x in cluster.deployments))


def staged_instances(
    instance: ServingInstance, cluster: ServingSolution, stages: Stages
) -> list[SimInstance]:
    """The cluster's instances in stage order, each with its stage and limit (the last
    stage has none)."""
    machines = build_instances(instance, cluster)
    at = 0
    for s, (limit, count) in enumerate(zip(stages.limits, stages.counts, strict=True)):
        for m in machines[at : at + count]:
            m.stage = s
            m.stage_limit = limit if s < len(stages.limits) - 1 else 0
        at += count
    return machines


class L4Router:
    """A prompt to the least-loaded instance of the stage holding its first decode context,
    a migrating request to the least-loaded instance of the next stage (module docstring);
    every request admitted (one whose KV cache can never fit is turned away)."""

    def __init__(self, instances: list[SimInstance]) -> None:
        self.stages: list[list[SimInstance]] = []
        for m in sorted(instances, key=lambda m: (m.stage, m.index)):
            if not self.stages or self.stages[-1][0].stage != m.stage:
                self.stages.append([])
            self.stages[-1].append(m)

    def admit(self, req: Any, sim: Any) -> int | None:
        first = req.input_tokens + 1
        group = next(
            (g for g in self.stages if not g[0].stage_limit or first <= g[0].stage_limit),
            self.stages[-1],
        )
        inst = least_outstanding(group)
        tokens = req.input_tokens + req.output_tokens
        if tokens * inst.profile.kv_bytes_per_token > inst.kv_capacity_bytes:
            return None
        return inst.index

    def pick_downstream(self, req: Any, sim: Any, source: int) -> int:
        stage = sim.instances[source].stage
        return least_outstanding(self.stages[stage + 1]).index

    def pick_decode(self, req: Any, sim: Any) -> int:  # pragma: no cover (mixed only)
        raise AssertionError("L4 stages are mixed instances")
