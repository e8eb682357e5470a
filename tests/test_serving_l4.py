"""L4's stages: the DP is exact for its cost (against enumeration of every boundary choice),
it separates long prompts from short ones, and a replay of an L4 configuration migrates
requests downstream within the rules the replay checker enforces (which rejects broken
migrations)."""

from __future__ import annotations

import copy
import dataclasses
import math
import random

import pytest

from placement.models.serving import generate
from placement.models.serving.instance import kinds
from placement.models.serving.peers.l4 import (
    Demand,
    L4Router,
    Stages,
    brute_force_partition,
    demands,
    grid,
    l4_stages,
    partition_cost,
    stage_model,
    stage_partition,
    staged_instances,
)
from placement.models.serving.peers.vllm import homogeneous_cluster
from placement.models.serving.replay import MIGRATION_BYTES_PER_S, poisson_requests, replay
from placement.models.serving.sim.check_replay import check_replay


@pytest.fixture(scope="module")
def setting():
    instance = generate(4, 3.0, 32, budget=32, seed=7)
    cluster = homogeneous_cluster(instance, "a100")
    model = stage_model(instance, kinds(instance)[cluster.deployments[0].kind])
    return instance, cluster, model


@pytest.mark.parametrize("seed", range(6))
def test_the_dp_is_exact_against_every_boundary_choice(setting, seed: int) -> None:
    _, _, model = setting
    rng = random.Random(seed)
    work = [
        Demand(rng.uniform(0.05, 1.5), rng.choice((60, 200, 900, 2000)), rng.choice((8, 90, 400)))
        for _ in range(rng.randint(2, 4))
    ]
    for n in range(1, 5):
        found = stage_partition(work, model, n)
        best = brute_force_partition(work, model, n)
        assert sum(found.counts) == n and found.limits[-1] == grid(work)[-1]
        assert list(found.limits) == sorted(set(found.limits))
        if math.isinf(best):
            assert math.isinf(found.cost)
            continue
        assert found.cost == pytest.approx(best, rel=1e-9)
        assert partition_cost(work, model, found.limits, found.counts) == pytest.approx(best)


def test_the_dp_gives_long_prompts_their_own_stage(setting) -> None:
    _, _, model = setting
    short, long = Demand(2.0, 100, 50), Demand(0.3, 4000, 50)
    two = stage_partition([short, long], model, 2)
    assert two.counts == (1, 1) and 149 <= two.limits[0] <= 4000
    one = stage_partition([short, long], model, 1)
    assert one.counts == (1,) and two.cost < one.cost
    # with the short requests alone there is nothing to separate: one stage
    assert len(stage_partition([short], model, 3).counts) == 1


def _migrating_replay(setting):
    instance, cluster, _ = setting
    stages = Stages((300, grid(demands(instance))[-1]), (2, 2), math.nan)
    machines = staged_instances(instance, cluster, stages)
    requests = poisson_requests(instance, 500, seed=3)
    return replay(instance, machines, L4Router(machines), requests)


def test_an_l4_replay_migrates_downstream_and_passes_the_checker(setting) -> None:
    instance, cluster, _ = setting
    dp = l4_stages(instance, cluster)
    machines = staged_instances(instance, cluster, dp)
    r = replay(instance, machines, L4Router(machines), poisson_requests(instance, 400, seed=2))
    assert check_replay(r) == [] and len(r.served) + len(r.rejected) == 400
    r = _migrating_replay(setting)
    assert check_replay(r) == []
    moved = [s for s in r.served if s.path]
    assert moved
    for s in moved:
        assert r.instances[s.prefill_instance].stage == 0 and r.instances[s.path[0]].stage == 1
        assert s.decode_instance == s.path[-1]
    # a request starts in the stage of its first decode context
    for s in r.served:
        first = r.requests[s.id].input_tokens + 1
        assert (r.instances[s.prefill_instance].stage == 0) == (first <= 300)


def test_the_checker_rejects_broken_migrations(setting) -> None:
    r = _migrating_replay(setting)
    s = next(s for s in r.served if s.path)
    # no reservation on the downstream instance
    lost = copy.copy(r)
    lost.kv_reservations = [k for k in r.kv_reservations if (k[0], k[4]) != (s.path[0], s.id)]
    assert any("no KV reservation" in v for v in check_replay(lost))
    # the source freed its copy (at its prefill) before the target held one
    gap = copy.copy(r)
    gap.kv_reservations = [
        (k[0], k[1], k[1], k[3], k[4]) if (k[0], k[4]) == (s.prefill_instance, s.id) else k
        for k in r.kv_reservations
    ]
    assert any("held nowhere" in v for v in check_replay(gap))
    # upstream: the stages swapped
    upstream = copy.copy(r)
    upstream.instances = [dataclasses.replace(i, stage=1 - i.stage) for i in r.instances]
    assert any("not strictly downstream" in v for v in check_replay(upstream))
    # a path that does not end where the request decoded
    served = copy.copy(r)
    served.served = [
        dataclasses.replace(x, decode_instance=x.prefill_instance) if x.id == s.id else x
        for x in r.served
    ]
    assert any("not its decode instance" in v for v in check_replay(served))


def test_without_a_partition_that_carries_the_load_the_dp_keeps_one_stage(setting) -> None:
    _, _, model = setting
    flood = [Demand(500.0, 100, 50), Demand(100.0, 4000, 50)]
    found = stage_partition(flood, model, 3)
    assert math.isinf(found.cost) and found.counts == (3,)
    assert math.isinf(brute_force_partition(flood, model, 3))


def test_a_migrated_kv_cache_is_held_on_both_instances_for_its_copy(setting) -> None:
    r = _migrating_replay(setting)
    kv = {(k[0], k[4]): k for k in r.kv_reservations}
    bytes_per_token = r.instances[0].profile.kv_bytes_per_token
    for s in (s for s in r.served if s.path):
        source, target = kv[(s.prefill_instance, s.id)], kv[(s.path[0], s.id)]
        copy_s = 301 * bytes_per_token / MIGRATION_BYTES_PER_S  # context 300 + 1 at the move
        assert source[2] >= target[1] + copy_s - 1e-9
