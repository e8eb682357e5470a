"""The serving simulator: replays that the replay checker accepts, broken replays it rejects,
the KV-cache limit, the routers and the peers."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from placement.models.serving import generate
from placement.models.serving.instance import DECODE, MIXED, PREFILL, Deployment, ServingSolution
from placement.models.serving.instance import kinds as kinds_of
from placement.models.serving.peers.accellm import PairRouter, paired_instances
from placement.models.serving.peers.distserve import phase_goodput
from placement.models.serving.peers.distserve import placement as distserve_placement
from placement.models.serving.peers.splitwise import designs, pool_sizing
from placement.models.serving.peers.vllm import homogeneous_cluster
from placement.models.serving.replay import (
    SimRequest,
    build_instances,
    poisson_requests,
    replay,
    simulate,
)
from placement.models.serving.sim.check_replay import check_replay
from placement.models.serving.sim.routers import (
    Admitting,
    LeastOutstandingRouter,
    PoolRouter,
    RoundRobinRouter,
)
from placement.solver import SolveOptions, solve


@pytest.fixture(scope="module")
def setting():
    instance = generate(4, 3.0, 16, h100=8, budget=16, seed=7)
    result = solve(instance, SolveOptions(time_limit_s=10))
    requests = poisson_requests(instance, 600, seed=1)
    return instance, result.solution, requests


def _kind(instance, role: str, gpu: str = "a100") -> int:
    for i, k in enumerate(kinds_of(instance)):
        if k.role == role and instance.profiles[k.profile].gpu_type == gpu:
            return i
    raise AssertionError(role)


def test_a_replay_serves_every_request_once_within_the_kv_cache(setting) -> None:
    instance, solution, requests = setting
    r = simulate(instance, solution, requests)
    assert check_replay(r) == []
    assert len(r.served) + len(r.rejected) == len(requests)
    assert all(s.arrival_s <= s.first_token_s <= s.finish_s for s in r.served)
    assert 0 < r.goodput_per_s <= len(requests) / r.span_s


def test_the_replay_checker_rejects_broken_replays(setting) -> None:
    instance, solution, requests = setting
    r = simulate(instance, solution, requests)
    twice = copy.copy(r)
    twice.served = [*r.served, r.served[0]]
    assert any("not once" in v for v in check_replay(twice))
    lost = copy.copy(r)
    lost.served = r.served[1:]
    assert any("0 times" in v for v in check_replay(lost))
    early = copy.copy(r)
    first = dataclasses.replace(r.served[0], first_token_s=r.served[0].arrival_s - 1)
    early.served = [first, *r.served[1:]]
    assert any("out of order" in v for v in check_replay(early))
    crowded = copy.copy(r)
    crowded.instances = [dataclasses.replace(i, kv_capacity_bytes=1) for i in r.instances]
    assert any("over-committed" in v for v in check_replay(crowded))


def test_a_small_kv_cache_makes_requests_wait_and_is_never_overcommitted() -> None:
    instance = generate(1, 20.0, 8, budget=8, seed=2)
    mixed = _kind(instance, MIXED)
    machines = build_instances(instance, ServingSolution((Deployment(mixed, 1),), ()))
    c = instance.classes[0]
    need = (c.input_tokens + c.output_tokens) * machines[0].profile.kv_bytes_per_token
    machines[0].kv_capacity_bytes = 3 * need  # three requests at a time
    requests = [SimRequest(i, 0.001 * i, c.input_tokens, c.output_tokens, 0) for i in range(20)]
    r = replay(instance, machines, LeastOutstandingRouter(machines), requests)
    assert check_replay(r) == []
    assert len(r.served) == 20
    # With room for three, the fourth request starts only after the first finishes.
    firsts = sorted(s.first_token_s for s in r.served)
    finishes = sorted(s.finish_s for s in r.served)
    assert firsts[3] >= finishes[0]


def test_round_robin_and_least_outstanding_spread_the_requests(setting) -> None:
    instance, _, requests = setting
    cluster = homogeneous_cluster(instance)
    assert cluster.deployments and kinds_of(instance)[cluster.deployments[0].kind].role == MIXED
    for router in (RoundRobinRouter, LeastOutstandingRouter):
        machines = build_instances(instance, cluster)
        r = replay(instance, machines, router(machines), requests)
        assert check_replay(r) == []
        assert not r.rejected
        used = {s.prefill_instance for s in r.served}
        assert used == set(range(len(machines)))


def test_splitwise_pools_prefill_on_prompt_machines_and_decode_on_token_machines(setting) -> None:
    instance, _, requests = setting
    assert all(
        {kinds_of(instance)[d.kind].role for d in design.deployments} == {PREFILL, DECODE}
        for design in designs(instance)
    )
    best = pool_sizing(instance, requests)
    machines = build_instances(instance, best)
    r = replay(instance, machines, PoolRouter(machines), requests)
    assert check_replay(r) == []
    roles = [m.kind.role for m in machines]
    for s in r.served:
        assert roles[s.prefill_instance] == PREFILL
        if s.output_tokens > 1:
            assert roles[s.decode_instance] == DECODE


def test_our_router_turns_away_what_would_miss_the_ttft_target() -> None:
    instance = generate(1, 50.0, 8, budget=8, seed=3)
    solution = solve(instance, SolveOptions(time_limit_s=10)).solution
    c = instance.classes[0]
    burst = [SimRequest(i, 0.0, c.input_tokens, c.output_tokens, 0) for i in range(400)]
    r = simulate(instance, solution, burst)
    assert check_replay(r) == []
    assert r.rejected
    assert all(s.ttft_ms <= instance.slo.ttft_ms + 1e-6 for s in r.served)


def test_distserve_replicates_each_phase_within_the_budget(setting) -> None:
    instance, _, requests = setting
    solution = distserve_placement(instance, requests)
    roles = [kinds_of(instance)[d.kind].role for d in solution.deployments]
    assert roles == [PREFILL, DECODE]
    gpus = sum(
        d.instances * instance.profiles[kinds_of(instance)[d.kind].profile].tensor_parallel
        for d in solution.deployments
    )
    assert gpus <= instance.gpu_budget
    machines = build_instances(instance, solution)
    assert check_replay(replay(instance, machines, PoolRouter(machines), requests)) == []


def test_a_phase_goodput_is_what_one_instance_carries_within_its_target(setting) -> None:
    instance, _, requests = setting
    prefill = _kind(instance, PREFILL, "h100")
    rate = phase_goodput(instance, prefill, requests)
    assert rate > 0
    # The instance alone is much faster than the rate that breaks it: the search went up.
    assert rate > instance.arrival_rate_per_s


def test_admission_on_a_peer_turns_away_only_what_would_miss(setting) -> None:
    instance, _, requests = setting
    c = instance.classes[0]
    burst = [SimRequest(i, 0.0, c.input_tokens, c.output_tokens, 0) for i in range(300)]
    cluster = homogeneous_cluster(instance)
    machines = build_instances(instance, cluster)
    plain = replay(instance, machines, LeastOutstandingRouter(machines), burst)
    machines = build_instances(instance, cluster)
    slo = instance.slo
    gated = Admitting(LeastOutstandingRouter(machines), slo.ttft_ms, slo.tpot_ms, machines)
    admitted = replay(instance, machines, gated, burst)
    assert check_replay(admitted) == []
    assert not plain.rejected and admitted.rejected
    assert all(s.ttft_ms <= slo.ttft_ms + 1e-6 for s in admitted.served)
    del requests


def test_an_accellm_pair_hands_decodes_to_the_partner_that_holds_their_kv(setting) -> None:
    instance, _, requests = setting
    cluster = homogeneous_cluster(instance)
    machines = paired_instances(instance, cluster)
    assert machines[0].partner == 1 and machines[1].partner == 0
    r = replay(instance, machines, PairRouter(machines), requests)
    assert check_replay(r) == []
    moved = [s for s in r.served if s.decode_instance != s.prefill_instance]
    assert moved
    assert all(machines[s.prefill_instance].partner == s.decode_instance for s in moved)
    # The checker rejects a decode on the partner without a KV replica there.
    broken = copy.copy(r)
    broken.kv_reservations = [
        k
        for k in r.kv_reservations
        if not (k[4] == moved[0].id and k[0] == moved[0].decode_instance)
    ]
    assert any("KV" in v for v in check_replay(broken))
