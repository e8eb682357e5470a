"""The GPU greedies (topology-aware best fit and FGD): always feasible per the independent
checker, gangs all or nothing, shares never oversubscribed, required locality kept, priority
first, topology- and fragmentation-aware choices, deterministic."""

from __future__ import annotations

import ast
import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.models.gpu import (
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
    WorkloadClass,
    check,
)
from placement.models.gpu.check import span_level
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit, fgd, greedy_solutions
from placement.models.gpu.instance import MILLI
from placement.models.gpu.reading import instance_from_dict
from placement.solver.options import SolveOptions
from tests.gpu_cases import LEVELS, gpu_node

REPO = Path(__file__).resolve().parent.parent
POLICIES = [best_fit, fgd]


# These tests use 40 GB GPUs in NVLink pairs.
node = partial(gpu_node, domain=2, gpu_memory_mib=40_000)


def random_instance(seed: int) -> GpuInstance:
    """A small instance with the odd corners: GPU-less nodes, uneven NVLink domains, 2-4 levels,
    memory limits, type restrictions, every locality level required or preferred."""
    rng = np.random.default_rng(seed)
    n_levels = int(rng.integers(2, 5))
    names = ["nvlink", "node", "rack", "spine"][:n_levels]
    bandwidth = sorted(rng.uniform(1, 600, size=n_levels).round(1).tolist(), reverse=True)
    levels = [TopologyLevel(n, b) for n, b in zip(names, bandwidth, strict=True)]
    types = ["A", "B", "C"]
    nodes = []
    for i in range(int(rng.integers(1, 9))):
        count = int(rng.integers(0, 11))
        memory = int(rng.choice([1000, 4000, 8000]))
        used = [int(rng.choice([0, 0, 1000, 300, 700, 999])) for _ in range(count)]
        nodes.append(
            GpuNode(
                name=f"n{i}",
                gpu_type=str(rng.choice(types)),
                gpu_count=count,
                gpu_memory_mib=memory,
                nvlink_domain_size=int(rng.integers(0, 5)),
                cpu_milli=int(rng.integers(0, 20)) * 1000,
                memory_mib=int(rng.integers(0, 20)) * 1000,
                groups=tuple(f"g{lv}-{int(rng.integers(0, 3))}" for lv in range(n_levels - 2)),
                gpu_milli_used=tuple(used),
                gpu_memory_mib_used=tuple(
                    0 if u == 0 else int(rng.integers(0, memory + 1)) for u in used
                ),
            )
        )
    jobs = []
    for j in range(int(rng.integers(0, 12))):
        level = str(rng.choice([*names, "", ""]))
        common = dict(
            name=f"j{j}",
            workers=int(rng.integers(1, 5)),
            cpu_milli=int(rng.integers(0, 4)) * 1000,
            memory_mib=int(rng.integers(0, 4)) * 1000,
            priority=int(rng.integers(1, 4)),
            gpu_types=tuple(
                rng.choice(types, size=int(rng.integers(0, 3)), replace=False).tolist()
            ),
            locality_level=level,
            locality_required=bool(level) and bool(rng.random() < 0.5),
            traffic_gb=float(rng.choice([0, 5])),
        )
        kind = int(rng.integers(0, 3))
        if kind == 0:
            jobs.append(
                GpuJob(
                    gpus=int(rng.integers(1, 6)),
                    gpu_memory_mib=int(rng.choice([0, 2000, 6000])),
                    **common,
                )
            )
        elif kind == 1:
            jobs.append(
                GpuJob(
                    gpu_milli=int(rng.integers(1, 1000)),
                    gpu_memory_mib=int(rng.choice([0, 500, 3000])),
                    **common,
                )
            )
        else:
            jobs.append(GpuJob(**common))
    mix = []
    if rng.random() < 0.5:
        mix = [
            WorkloadClass(
                int(rng.integers(0, 4)), int(rng.integers(0, 1000)), int(rng.integers(1, 4))
            )
            for _ in range(3)
        ]
    return GpuInstance(
        levels, nodes, jobs, expected_mix=mix, locality_miss_penalty=float(rng.uniform(0, 3))
    )


def assert_sound(instance: GpuInstance, solution: GpuSolution) -> None:
    """Feasible per the checker, plus the properties restated without it."""
    report = check(instance, solution)
    assert report.feasible, report.violations
    free = [[MILLI - u for u in nd.gpu_milli_used] for nd in instance.nodes]
    for j, workers in solution.placements.items():
        job = instance.jobs[j]
        assert len(workers) == job.workers  # all or nothing
        for w in workers:
            for g in w.gpus:
                free[w.node][g] -= MILLI if job.kind == "whole" else job.gpu_milli
        if job.locality_required:
            span = span_level(instance, job.kind, [(w.node, w.gpus) for w in workers])
            assert span <= instance.level_of_name(job.locality_level), job.name
    assert all(f >= 0 for gpus in free for f in gpus)  # no GPU oversubscribed


# --- feasibility, broadly --------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    gpus=st.integers(1, 300),
    jobs=st.integers(0, 60),
    seed=st.integers(0, 2**32 - 1),
    occupancy=st.floats(0, 1),
    fractional=st.floats(0, 0.5),
    gang=st.floats(0, 0.4),
    cpu=st.floats(0, 0.1),
)
def test_greedies_are_feasible_on_generated_instances(
    gpus: int, jobs: int, seed: int, occupancy: float, fractional: float, gang: float, cpu: float
) -> None:
    instance = generate(
        gpus,
        jobs,
        seed,
        occupancy=occupancy,
        fractional_share=fractional,
        gang_share=gang,
        cpu_share=cpu,
    )
    for _, solution in greedy_solutions(instance, SolveOptions()):
        assert_sound(instance, solution)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_greedies_are_feasible_on_odd_instances(seed: int) -> None:
    instance = random_instance(seed)
    for _, solution in greedy_solutions(instance, SolveOptions()):
        assert_sound(instance, solution)


@pytest.mark.parametrize("name", ["tiny", "medium", "large"])
def test_greedies_are_feasible_on_the_bundled_instances(name: str) -> None:
    data = json.loads((REPO / "instances" / "gpu" / f"{name}.json").read_text())
    instance = instance_from_dict(data["gpu"])
    solutions = greedy_solutions(instance, SolveOptions())
    assert [n for n, _ in solutions] == ["best_fit", "fgd"]
    for _, solution in solutions:
        assert_sound(instance, solution)
        assert solution.placements  # they place work on every bundled instance


# --- gangs, shares, locality, priority ----------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_is_all_or_nothing(policy) -> None:
    # 3 x 2 GPUs cannot fit 2 nodes of 2 free GPUs: nothing of it is placed, and the smaller
    # job after it still gets a GPU.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2), node("n1", 2)],
        [GpuJob("gang", workers=3, gpus=2, priority=3), GpuJob("one", gpus=1)],
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert sorted(solution.placements) == [1]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_that_fits_only_across_nodes_is_placed_whole(policy) -> None:
    instance = GpuInstance(
        LEVELS, [node("n0", 2), node("n1", 2)], [GpuJob("gang", workers=2, gpus=2)]
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert sorted(w.node for w in solution.placements[0]) == [0, 1]


@pytest.mark.parametrize("policy", POLICIES)
def test_fractional_shares_never_oversubscribe(policy) -> None:
    # 5 shares of 400 milli on 2 GPUs, 200 milli of GPU 0 in use: 800 free hold 2, 1000 hold 2.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2, domain=0, used=(200, 0))],
        [GpuJob(f"s{i}", gpu_milli=400) for i in range(5)],
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert len(solution.placements) == 4


@pytest.mark.parametrize("policy", POLICIES)
def test_fractional_gpu_memory_is_respected(policy) -> None:
    instance = GpuInstance(
        LEVELS,
        [node("n0", 1, domain=0)],  # 40,000 MiB per GPU
        [GpuJob(f"s{i}", gpu_milli=100, gpu_memory_mib=15_000) for i in range(3)],
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert len(solution.placements) == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_required_rack_locality_is_respected(policy) -> None:
    # Each rack has 2 free GPUs, together 4: a gang of 2 x 2 GPUs required inside one rack
    # must stay out; preferred, it spans racks.
    nodes = [
        node("a0", 2, rack="ra"),
        node("a1", 2, rack="ra", used=(1000, 1000)),
        node("b0", 2, rack="rb"),
        node("b1", 2, rack="rb", used=(1000, 1000)),
    ]
    required = GpuJob("g", workers=2, gpus=2, locality_level="rack", locality_required=True)
    solution = policy(GpuInstance(LEVELS, nodes, [required]))
    assert solution.placements == {}
    preferred = GpuJob("g", workers=2, gpus=2, locality_level="rack")
    instance = GpuInstance(LEVELS, nodes, [preferred])
    solution = policy(instance)
    assert_sound(instance, solution)
    assert sorted(w.node for w in solution.placements[0]) == [0, 2]


@pytest.mark.parametrize("policy", POLICIES)
def test_required_rack_locality_picks_the_rack_that_holds_the_gang(policy) -> None:
    nodes = [
        node("a0", 2, rack="ra"),
        node("a1", 2, rack="ra", used=(1000, 1000)),
        node("b0", 2, rack="rb"),
        node("b1", 2, rack="rb"),
    ]
    job = GpuJob(
        "g", workers=2, gpus=2, locality_level="rack", locality_required=True, traffic_gb=4
    )
    instance = GpuInstance(LEVELS, nodes, [job])
    solution = policy(instance)
    assert_sound(instance, solution)
    assert sorted(w.node for w in solution.placements[0]) == [2, 3]


@pytest.mark.parametrize("policy", POLICIES)
def test_required_nvlink_locality(policy) -> None:
    # 4 GPUs in one domain only fit the node with 4-GPU domains.
    nodes = [node("two", 4, domain=2), node("four", 4, domain=4)]
    jobs = [GpuJob("nv", gpus=4, locality_level="nvlink", locality_required=True)]
    instance = GpuInstance(LEVELS, nodes, jobs)
    solution = policy(instance)
    assert_sound(instance, solution)
    assert solution.placements[0][0].node == 1
    # A CPU-only job can never be inside one NVLink domain.
    cpu = GpuInstance(
        LEVELS,
        nodes,
        [GpuJob("c", cpu_milli=1000, locality_level="nvlink", locality_required=True)],
    )
    assert policy(cpu).placements == {}


@pytest.mark.parametrize("policy", POLICIES)
def test_higher_priority_goes_first(policy) -> None:
    # 'bulk' (4 GPUs, priority 1) is listed first and is larger, but 'vip' (2 GPUs, priority 3)
    # is placed first; then 'bulk' no longer fits.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 4)],
        [GpuJob("bulk", gpus=4), GpuJob("vip", gpus=2, priority=3), GpuJob("small", gpus=2)],
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert sorted(solution.placements) == [1, 2]


@pytest.mark.parametrize("policy", POLICIES)
def test_within_a_priority_the_larger_demand_goes_first(policy) -> None:
    instance = GpuInstance(LEVELS, [node("n0", 4)], [GpuJob("a", gpus=1), GpuJob("b", gpus=4)])
    assert sorted(policy(instance).placements) == [1]


# --- topology and fragmentation choices ------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_that_fits_one_node_stays_in_it(policy) -> None:
    # n0 has 2 free GPUs, n1 4: the gang of 2 x 2 takes n1 rather than spanning the rack.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 4, used=(1000, 1000, 0, 0)), node("n1", 4)],
        [GpuJob("g", workers=2, gpus=2, traffic_gb=10)],
    )
    solution = policy(instance)
    assert_sound(instance, solution)
    assert {w.node for w in solution.placements[0]} == {1}


@pytest.mark.parametrize("policy", POLICIES)
def test_two_gpus_come_from_one_nvlink_domain_and_keep_others_whole(policy) -> None:
    # Domains {0,1} {2,3} {4,5} {6,7}; GPU 2 is used. A 1-GPU job takes GPU 3 (the partly used
    # domain), a 2-GPU job then takes a whole free domain: no domain is split needlessly.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 8, used=(0, 0, 1000, 0, 0, 0, 0, 0))],
        [GpuJob("pair", gpus=2, traffic_gb=1), GpuJob("one", gpus=1)],
    )
    solution = best_fit(instance)
    assert_sound(instance, solution)
    pair = solution.placements[0][0].gpus
    assert pair[0] // 2 == pair[1] // 2
    assert solution.placements[1][0].gpus == (3,)
    assert check(instance, policy(instance)).terms["comm_cost"] == pytest.approx(1 / 600)


def test_best_fit_puts_a_share_on_the_fullest_gpu_that_fits() -> None:
    instance = GpuInstance(
        LEVELS,
        [node("n0", 4, domain=0, used=(0, 500, 800, 600))],
        [GpuJob("s", gpu_milli=300)],
    )
    # Free: 1000, 500, 200, 400 -> the tightest that holds 300 is GPU 3 (400 free).
    assert best_fit(instance).placements[0][0].gpus == (3,)


def test_fgd_minimises_the_growth_of_fragmentation() -> None:
    # Mix {1 whole GPU: 1, 300 milli: 1}. Free 400 and 1000: on GPU 0 it leaves 100 (unusable
    # by both classes); on GPU 1 it leaves 700 partly free (unusable by the whole-GPU class)
    # and 400: FGD takes GPU 0, as does best fit.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2, domain=0, used=(600, 0))],
        [GpuJob("f", gpu_milli=300)],
        expected_mix=[WorkloadClass(1, 0, 1), WorkloadClass(0, 300, 1)],
    )
    assert fgd(instance).placements[0][0].gpus == (0,)
    # Mix {250 milli: 1}: on GPU 0 the 100 left is unusable (+100 - 0); on GPU 1 the 700 left is
    # usable (+0): FGD takes GPU 1 where best fit takes GPU 0.
    instance.expected_mix = [WorkloadClass(0, 250, 1)]
    instance.__dict__.pop("mix", None)
    assert fgd(instance).placements[0][0].gpus == (1,)
    assert best_fit(instance).placements[0][0].gpus == (0,)


def test_fgd_reaches_the_tiny_instances_optimum() -> None:
    data = json.loads((REPO / "instances" / "gpu" / "tiny.json").read_text())
    instance = instance_from_dict(data["gpu"])
    terms = check(instance, fgd(instance)).terms
    assert (
        terms["placed_gpu_weighted"],
        terms["comm_cost"],
        terms["fragmentation"],
    ) == pytest.approx((10.3, 0.16625, 0.96))


# --- determinism and independence ------------------------------------------------------------


def test_greedies_are_deterministic() -> None:
    instance = generate(300, 80, 5)
    runs = [
        list(greedy_solutions(instance, SolveOptions(deterministic=det, seed=seed)))
        for det, seed in ((True, 0), (False, 0), (False, 123), (True, 7))
    ]
    for run in runs[1:]:
        assert [(n, s.placements) for n, s in run] == [(n, s.placements) for n, s in runs[0]]
    # A fresh copy of the instance gives the same too (no state kept between calls).
    again = generate(300, 80, 5)
    assert best_fit(again).placements == runs[0][0][1].placements


def test_greedy_imports_no_solver_and_not_the_checker() -> None:
    tree = ast.parse((REPO / "models" / "gpu" / "greedy.py").read_text())
    imported = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            imported.update(a.name for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            imported.add(stmt.module or "")
    assert imported <= {
        "__future__",
        "collections.abc",
        "dataclasses",
        "numpy",
        "placement.models.gpu.instance",
        "placement.solver.cancel",  # the token a deadline fires: no solver in it
        "placement.solver.options",
    }, imported
