"""The independent checker: exact objective on a hand-computed case, and every corruption of a
feasible solution rejected (property-based)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.models.gpu import (
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    WorkerPlacement,
    check,
)
from tests.gpu_cases import LEVELS


def _node(name: str, gpu_type: str, rack: str, used: dict[int, int] | None = None) -> GpuNode:
    used = used or {}
    return GpuNode(
        name=name,
        gpu_type=gpu_type,
        gpu_count=4,
        gpu_memory_mib=40_000,
        nvlink_domain_size=2,
        cpu_milli=16_000,
        memory_mib=64_000,
        groups=(rack,),
        gpu_milli_used=tuple(used.get(g, 0) for g in range(4)),
        gpu_memory_mib_used=tuple(10_000 if used.get(g) else 0 for g in range(4)),
    )


INSTANCE = GpuInstance(
    levels=LEVELS,
    nodes=[
        _node("n0", "A100", "r0"),
        _node("n1", "A100", "r0"),
        _node("n2", "V100", "r1", {1: 500}),
        _node("n3", "A100", "r1"),
    ],
    jobs=[
        GpuJob(
            "train",
            workers=2,
            gpus=2,
            gpu_types=("A100",),
            locality_level="rack",
            locality_required=True,
            traffic_gb=10,
            cpu_milli=4000,
        ),
        GpuJob("infer", workers=2, gpu_milli=300, gpu_memory_mib=5_000, cpu_milli=1000),
        GpuJob("cpu", workers=1, cpu_milli=8000, memory_mib=1000),
        GpuJob("single", workers=1, gpus=1, cpu_milli=1000),
    ],
)
W = WorkerPlacement
GOOD = {
    0: (W(0, (0, 1)), W(1, (0, 1))),
    1: (W(2, (2,)), W(2, (2,))),
    2: (W(2, ()),),
    3: (W(0, (2,)),),
}


def test_hand_computed_objective() -> None:
    report = check(INSTANCE, GpuSolution(dict(GOOD)))
    assert report.feasible, report.violations
    # placed: 2x2 GPUs + 2x0.3 + 1 GPU (priority 1); the CPU job adds no GPU demand.
    assert report.terms["placed_gpu_weighted"] == pytest.approx(5.6)
    # the gang spans two nodes of rack r0: 10 GB / 25 GB/s.
    assert report.terms["comm_cost"] == pytest.approx(0.4)
    # mix {2 GPUs: 2, 300 milli: 2, 1 GPU: 1}; unusable milli n0 2000, n2 2700 -> 4700/5/1000.
    assert report.terms["fragmentation"] == pytest.approx(0.94)


def test_empty_solution_is_feasible_and_worth_nothing() -> None:
    report = check(INSTANCE, GpuSolution({}))
    assert report.feasible
    assert report.terms["placed_gpu_weighted"] == 0


def _corrupt(kind: str, which: int) -> dict[int, tuple[WorkerPlacement, ...]]:
    sol = dict(GOOD)
    if kind == "drop_gang_worker":
        sol[0] = sol[0][:1]
    elif kind == "reuse_whole_gpu":
        sol[3] = (W(0, (which % 2,)),)  # GPU 0 or 1 of n0 already holds a gang worker
    elif kind == "gpu_out_of_range":
        sol[3] = (W(0, (4 + which,)),)
    elif kind == "negative_gpu":
        sol[3] = (W(0, (-1 - which,)),)
    elif kind == "fractional_on_whole":
        sol[1] = (W(0, (which % 2,)), W(2, (2,)))
    elif kind == "wrong_gpu_type":
        sol[0] = (W(2, (0, 3)), W(1, (0, 1)))
    elif kind == "repeated_index":
        sol[0] = (W(0, (0, 0)), W(1, (0, 1)))
    elif kind == "wrong_gpu_count":
        sol[0] = (W(0, (0, 1, 2)), W(1, (0, 1)))
    elif kind == "fractional_oversubscribed":
        sol[1] = (W(2, (1,)), W(2, (1,)))  # 2 x 300 on a GPU with 500 free
    elif kind == "required_locality":
        sol[0] = (W(0, (0, 1)), W(3, (0, 1)))  # racks r0 and r1
    elif kind == "cpu_overcommit":
        sol[2] = (W(0, ()),)  # n0 already gives 4000 + 1000 to the gang and single; 8000 more fits
        sol[1] = (W(0, (3,)), W(0, (3,)))  # + 2 x 1000: 15000 fits 16000 ...
        sol[0] = (W(0, (0, 1)), W(0, (0, 1)))  # ... but the gang's second worker on n0 reuses GPUs
    elif kind == "unknown_node":
        sol[3] = (W(99, (0,)),)
    elif kind == "unknown_job":
        sol[42] = (W(0, (3,)),)
    elif kind == "gpu_for_cpu_job":
        sol[2] = (W(2, (0,)),)
    elif kind == "too_many_workers":
        sol[3] = (W(0, (2,)), W(0, (3,)))
    else:  # pragma: no cover - the strategy only draws the kinds above
        raise AssertionError(kind)
    return sol


KINDS = [
    "drop_gang_worker",
    "reuse_whole_gpu",
    "gpu_out_of_range",
    "negative_gpu",
    "fractional_on_whole",
    "wrong_gpu_type",
    "repeated_index",
    "wrong_gpu_count",
    "fractional_oversubscribed",
    "required_locality",
    "cpu_overcommit",
    "unknown_node",
    "unknown_job",
    "gpu_for_cpu_job",
    "too_many_workers",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 3)), min_size=1, max_size=3))
def test_every_corruption_is_rejected(corruptions: list[tuple[str, int]]) -> None:
    sol: dict[int, tuple[WorkerPlacement, ...]] = dict(GOOD)
    for kind, which in corruptions:
        changed = _corrupt(kind, which)
        sol.update({k: v for k, v in changed.items() if v != GOOD.get(k)})
    report = check(INSTANCE, GpuSolution(sol))
    assert not report.feasible
    assert report.violations


def test_cpu_and_memory_capacity() -> None:
    inst = GpuInstance(
        levels=LEVELS,
        nodes=[_node("n0", "A100", "r0")],
        jobs=[
            GpuJob("a", cpu_milli=10_000),
            GpuJob("b", cpu_milli=10_000),
            GpuJob("m", memory_mib=70_000),
        ],
    )
    assert check(inst, GpuSolution({0: (W(0, ()),)})).feasible
    over_cpu = check(inst, GpuSolution({0: (W(0, ()),), 1: (W(0, ()),)}))
    assert not over_cpu.feasible and "CPU" in over_cpu.violations[0]
    over_mem = check(inst, GpuSolution({2: (W(0, ()),)}))
    assert not over_mem.feasible and "memory" in over_mem.violations[0]


def test_gpu_memory_of_fractional_workers() -> None:
    inst = GpuInstance(
        levels=LEVELS,
        nodes=[_node("n0", "A100", "r0")],
        jobs=[GpuJob("f", workers=3, gpu_milli=100, gpu_memory_mib=15_000)],
    )
    # 3 x 15 GB on one 40 GB GPU: the shares fit (300 milli), the memory does not.
    report = check(inst, GpuSolution({0: (W(0, (0,)), W(0, (0,)), W(0, (0,)))}))
    assert not report.feasible and "GPU memory" in report.violations[0]


def test_preferred_locality_costs_the_penalty_not_feasibility() -> None:
    job = GpuJob("g", workers=2, gpus=1, locality_level="node", traffic_gb=0)
    inst = GpuInstance(
        levels=LEVELS,
        nodes=[_node("n0", "A100", "r0"), _node("n1", "A100", "r0")],
        jobs=[job],
        locality_miss_penalty=3.0,
    )
    split = check(inst, GpuSolution({0: (W(0, (0,)), W(1, (0,)))}))
    together = check(inst, GpuSolution({0: (W(0, (0,)), W(0, (2,)))}))
    assert split.feasible and together.feasible
    assert split.terms["comm_cost"] == 3.0 and together.terms["comm_cost"] == 0.0
    assert together.better_than(split)


def test_capacity_bound_is_valid_and_tighter_than_total_demand() -> None:
    from placement.models.gpu.bound import capacity_bound
    from placement.models.gpu.generate import generate
    from placement.models.gpu.greedy import greedy_solutions
    from placement.solver import SolveOptions

    for seed in range(5):
        inst = generate(128, 40, seed)
        bound = capacity_bound(inst)
        assert bound <= sum(j.weighted_demand_milli for j in inst.jobs) / 1000
        for _, sol in greedy_solutions(inst, SolveOptions()):
            assert check(inst, sol).objective <= bound + 1e-9
    # The hand-computed instance: 15,500 free milli-GPU; jobs 4 + 0.6 + 1 GPUs all fit alone.
    assert capacity_bound(INSTANCE) == pytest.approx(5.6)
