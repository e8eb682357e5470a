"""Serving plans with replicas and tensor-parallel stages (models/partition/serving_tp.py):
the evaluator's refusals, and the exact plan equal to brute force over every plan on small
clusters (every grouping of GPUs into stages, every order and tiling, every set of disjoint
pipelines), each candidate scored by the evaluator alone."""

from __future__ import annotations

import itertools
from dataclasses import replace
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.models.partition.formats.hf import DeviceSpec, build_llm, model_shape
from placement.models.partition.instance import Mode, PartitionInstance
from placement.models.partition.serving_tp import (
    TpModel,
    TpPlan,
    TpStage,
    best_tp_plan,
    check_tp_plan,
    stage_memory_bytes,
    tp_plan_throughput,
)

TINY = {
    "name": "tiny",
    "model_type": "llama",
    "hidden_dim": 512,
    "num_layers": 3,
    "n_head": 8,
    "num_key_value_heads": 8,
    "ffn_embed_dim": 1024,
    "vocab_size": 1000,
    "mlp_gated_linear_units": True,
}


def _instance(
    specs: list[tuple[DeviceSpec, int]], per_node: int, blocks: int = 3, batch: int = 2
) -> PartitionInstance:
    shape = model_shape({**TINY, "num_layers": blocks})
    flat = build_llm(
        shape,
        specs,
        mode=Mode.SERVING,
        batch_size=batch,
        context_length=64,
        inter_node_bandwidth_bytes_per_s=1e9,
    )
    seen: dict[str, int] = {}
    devices = []
    for dev in flat.devices:
        k = seen.get(dev.type, 0)
        seen[dev.type] = k + 1
        devices.append(replace(dev, node=f"{dev.type}-{k // per_node}"))
    return replace(flat, devices=devices)


def _spec(name: str, blocks_in_memory: float, bw: float, flops: float) -> DeviceSpec:
    block = model_shape(TINY).block_params() * 2
    return DeviceSpec(name, int(block * blocks_in_memory), bw, flops)


def _brute_force(inst: PartitionInstance, model: TpModel) -> float:
    """The best plan by exhaustion, each pipeline scored by the evaluator."""
    n_layers = len(inst.layers)
    nodes: dict[str, list[int]] = {}
    for d, dev in enumerate(inst.devices):
        nodes.setdefault(dev.node, []).append(d)
    groups = [
        frozenset(c)
        for devs in nodes.values()
        for size in range(1, len(devs) + 1)
        for c in itertools.combinations(devs, size)
    ]

    def tilings(p: int) -> list[list[tuple[int, int]]]:
        out = []
        for cuts in itertools.combinations(range(1, n_layers), p - 1):
            edges = [0, *cuts, n_layers]
            out.append([(a, b - a) for a, b in itertools.pairwise(edges)])
        return out

    @cache
    def best(remaining: frozenset[int]) -> float:
        if not remaining:
            return 0.0
        g = min(remaining)
        out = best(remaining - {g})
        usable = [s for s in groups if s <= remaining]
        for p in range(1, min(len(remaining), n_layers) + 1):
            for seq in itertools.permutations(usable, p):
                union = frozenset().union(*seq)
                if g not in union or len(union) != sum(len(s) for s in seq):
                    continue
                for tiling in tilings(p):
                    stages = tuple(
                        TpStage(tuple(sorted(s)), a, k)
                        for s, (a, k) in zip(seq, tiling, strict=True)
                    )
                    value, errors = tp_plan_throughput(inst, model, TpPlan((stages,)))
                    if not errors:
                        out = max(out, value + best(remaining - union))
        return out

    return best(frozenset(range(len(inst.devices))))


@settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    mem_a=st.sampled_from([0.8, 1.3, 2.2, 4.5]),
    mem_b=st.sampled_from([0.8, 1.3, 2.2]),
    two_types=st.booleans(),
    degrees=st.sampled_from([(1,), (1, 2)]),
    latency=st.sampled_from([0.0, 2e-5, 1e-3]),
    bw=st.sampled_from([5e8, 5e10]),
    blocks=st.sampled_from([1, 3]),
)
def test_the_exact_plan_equals_brute_force(
    mem_a: float,
    mem_b: float,
    two_types: bool,
    degrees: tuple[int, ...],
    latency: float,
    bw: float,
    blocks: int,
) -> None:
    a = _spec("fast", mem_a, 2e12, 3e14)
    b = _spec("slow", mem_b, 3e11, 6e13)
    specs = [(a, 2), (b, 2)] if two_types else [(a, 4)]
    # One block: more GPUs than layers (a plan cannot use them all in one pipeline).
    inst = _instance(specs, per_node=2, blocks=blocks)
    model = TpModel(degrees, {"fast": bw, "slow": bw / 2}, latency)
    plan = best_tp_plan(inst, model)
    value, errors = tp_plan_throughput(inst, model, plan)
    assert not errors
    truth = _brute_force(inst, model)
    assert value == pytest.approx(truth, rel=1e-6, abs=1e-9)
    one = best_tp_plan(inst, model, single_pipeline=True)
    assert len(one.pipelines) <= 1
    one_value, one_errors = tp_plan_throughput(inst, model, one)
    assert not one_errors and one_value <= value * (1 + 1e-9)


def test_tensor_parallel_stages_fit_what_single_gpus_cannot() -> None:
    # Each GPU holds 0.8 blocks: no single-GPU stage holds a block, two GPUs hold one.
    a = _spec("fast", 0.8, 2e12, 3e14)
    inst = _instance([(a, 4)], per_node=2, blocks=1)
    none = best_tp_plan(inst, TpModel((1,)))
    assert none.pipelines == ()
    model = TpModel((1, 2), {"fast": 5e10}, 2e-5)
    plan = best_tp_plan(inst, model)
    value, errors = tp_plan_throughput(inst, model, plan)
    assert not errors and value > 0
    assert any(len(s.devices) == 2 for p in plan.pipelines for s in p)


def test_the_evaluator_refuses_broken_plans() -> None:
    a = _spec("fast", 4.5, 2e12, 3e14)
    inst = _instance([(a, 4)], per_node=2)
    model = TpModel((1, 2), {"fast": 5e10}, 2e-5)
    n = len(inst.layers)
    good = TpPlan(((TpStage((0, 1), 0, 2), TpStage((2,), 2, n - 2)),))
    assert check_tp_plan(inst, model, good) == []
    cases = {
        "span nodes": TpPlan(((TpStage((1, 2), 0, n),),)),
        "already serves": TpPlan(((TpStage((0,), 0, n),), (TpStage((0,), 0, n),))),
        "expected to start": TpPlan(((TpStage((0,), 0, 2), TpStage((1,), 3, n - 3)),)),
        "ends at layer": TpPlan(((TpStage((0,), 0, n - 1),),)),
        "degree 2 not allowed": TpPlan(((TpStage((0, 1), 0, n),),)),
    }
    for why, plan in cases.items():
        m = TpModel((1,)) if why.startswith("degree") else model
        errors = check_tp_plan(inst, m, plan)
        assert any(why in e for e in errors), (why, errors)
        assert tp_plan_throughput(inst, m, plan)[0] == 0.0
    small = _instance([(_spec("fast", 1.3, 2e12, 3e14), 4)], per_node=2)
    whole = TpPlan(((TpStage((0,), 0, n),),))
    assert stage_memory_bytes(small, whole.pipelines[0][0], 1) > small.devices[0].memory_bytes
    assert any("GiB per GPU" in e for e in check_tp_plan(small, model, whole))
