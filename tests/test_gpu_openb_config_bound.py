"""The configuration-LP bound on the openb trace (models/gpu/sim/openb/config_bound.py) is valid:
never above the exact optimum's allocation (checked against an independent CP-SAT model of
every pod on every GPU), tight where the class LP is loose, and its witness packing passes
the from-scratch check."""

from __future__ import annotations

import numpy as np
import pytest
from ortools.sat.python import cp_model

from placement.models.gpu.instance import MILLI, GpuJob, GpuNode
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.config_bound import ConfigBound, forced_prefix
from placement.models.gpu.sim.openb.offline_bound import OfflineBound
from placement.models.gpu.sim.openb.online import make_any
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState, replay


def _trace(nodes: list[GpuNode], jobs: list[GpuJob]) -> tuple[TraceCluster, PodSet]:
    cluster = TraceCluster.from_nodes(nodes)
    return cluster, PodSet.from_jobs(jobs, cluster)


def placement_model(cluster: TraceCluster, pods: PodSet, arrived: np.ndarray):
    """The simulator's rules written out directly: one 0/1 variable per (pod, node) and
    (pod, node, GPU), CPU, memory and milli-GPU per GPU; no pod placed twice is the caller's
    row. Returns (model, on_node, on_gpu, placed per arrival); the objective is the
    milli-GPU placed."""
    model = cp_model.CpModel()
    on_node: dict[tuple[int, int], cp_model.IntVar] = {}
    on_gpu: dict[tuple[int, int, int], cp_model.IntVar] = {}
    placed = []
    for i, p in enumerate(arrived):
        k = int(pods.num_gpu[p])
        for n in range(cluster.n):
            if k and (k > cluster.gpu_count[n] or not pods.type_ok[p, cluster.type_of[n]]):
                continue
            a = on_node[i, n] = model.new_bool_var(f"a{i}_{n}")
            gpus = (
                [
                    on_gpu.setdefault((i, n, g), model.new_bool_var(f"b{i}_{n}_{g}"))
                    for g in range(int(cluster.gpu_count[n]))
                ]
                if k
                else []
            )
            model.add(sum(gpus) == k * a)
        placed.append(sum(v for (j, _), v in on_node.items() if j == i))
    for n in range(cluster.n):
        here = [(i, v) for (i, nn), v in on_node.items() if nn == n]
        model.add(sum(int(pods.cpu_milli[arrived[i]]) * v for i, v in here) <= cluster.cpu_milli[n])
        model.add(
            sum(int(pods.memory_mib[arrived[i]]) * v for i, v in here) <= cluster.memory_mib[n]
        )
        for g in range(int(cluster.gpu_count[n])):
            load = [(i, v) for (i, nn, gg), v in on_gpu.items() if nn == n and gg == g]
            model.add(sum(int(pods.milli[arrived[i]]) * v for i, v in load) <= MILLI)
    model.maximize(sum(int(pods.demand[arrived[i]]) * v for (i, _), v in on_node.items()))
    return model, on_node, on_gpu, placed


def solve_optimal(model: cp_model.CpModel) -> int:
    """CP-SAT's proved optimum of ``model``."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(round(solver.objective_value))


def exact_allocation(
    cluster: TraceCluster, pods: PodSet, arrived: np.ndarray, forced: frozenset[int] = frozenset()
) -> int:
    """The most milli-GPU any placement of a subset of ``arrived`` holds
    (:func:`placement_model`). The GPU pods at the positions ``forced`` of ``arrived`` must be
    placed."""
    model, _, _, placed = placement_model(cluster, pods, arrived)
    for i, (p, count) in enumerate(zip(arrived, placed, strict=True)):
        model.add(count == 1 if i in forced and pods.num_gpu[p] else count <= 1)
    return solve_optimal(model)


def _random_case(rng: np.random.Generator) -> tuple[TraceCluster, PodSet, np.ndarray]:
    nodes = [
        GpuNode(
            f"n{i}",
            str(rng.choice(["A", "B"])),
            int(rng.choice([1, 2, 4])),
            0,
            0,
            int(rng.choice([8_000, 16_000, 32_000])),
            int(rng.choice([16_384, 65_536])),
        )
        for i in range(int(rng.integers(2, 4)))
    ]
    jobs = []
    for j in range(int(rng.integers(5, 10))):
        kind = rng.choice(["shared", "shared", "whole", "cpu"])
        cpu = int(rng.choice([0, 2_000, 4_000, 8_000]))
        mem = int(rng.choice([1_024, 8_192, 16_384]))
        types = ("A",) if rng.random() < 0.2 else ()
        if kind == "shared":
            milli = int(rng.choice([110, 230, 470, 650, 810]))
            jobs.append(
                GpuJob(f"p{j}", gpu_milli=milli, cpu_milli=cpu, memory_mib=mem, gpu_types=types)
            )
        elif kind == "whole":
            jobs.append(
                GpuJob(
                    f"p{j}",
                    gpus=int(rng.choice([1, 2])),
                    cpu_milli=cpu,
                    memory_mib=mem,
                    gpu_types=types,
                )
            )
        else:
            jobs.append(GpuJob(f"p{j}", cpu_milli=cpu, memory_mib=mem))
    cluster, pods = _trace(nodes, jobs)
    # a multiset: some pods arrive twice, as the workload's resampling does
    arrived = rng.choice(pods.n, size=pods.n + int(rng.integers(0, 3)), replace=True)
    return cluster, pods, np.sort(arrived)


@pytest.mark.parametrize("seed", range(12))
def test_never_above_the_exact_optimum_and_witness_checks(seed: int) -> None:
    cluster, pods, arrived = _random_case(np.random.default_rng(seed))
    best = exact_allocation(cluster, pods, arrived)
    result = ConfigBound(cluster, pods).at(arrived, time_limit_s=60)
    assert result.converged
    assert result.bound_milli >= best  # an upper bound on the allocation ...
    assert result.witness_milli is not None and result.witness_milli <= best  # ... a packing
    assert result.witness_errors == []
    items = [p for p, _, _ in result.witness]
    placement = [(i, node, gpus) for i, (_, node, gpus) in enumerate(result.witness)]
    assert check_placement(TraceState(cluster), pods, items, placement) == []
    # the witness uses each arrived pod at most as often as it arrived
    used = np.bincount(items, minlength=pods.n) if items else np.zeros(pods.n, int)
    assert np.all(used <= np.bincount(arrived, minlength=pods.n))
    # never weaker than the class LP (in allocation: at most it, up to its float tolerance)
    assert result.bound_milli <= OfflineBound(cluster, pods).at(arrived) + 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_valid_when_stopped_after_one_iteration(seed: int) -> None:
    """The Lagrangian bound holds at every iteration, not only at convergence."""
    cluster, pods, arrived = _random_case(np.random.default_rng(100 + seed))
    best = exact_allocation(cluster, pods, arrived)
    result = ConfigBound(cluster, pods).at(arrived, max_iterations=1, witness=False)
    assert result.iterations == 1 and result.bound_milli >= best


def test_tight_where_the_class_lp_is_loose_810_milli() -> None:
    """One GPU, an 810-milli pod and two 100-milli pods: the class LP fills the GPU with
    810 + 1.9 x 100 = 1000 milli; at most 910 fit (810 + 100)."""
    cluster, pods = _trace(
        [GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)],
        [
            GpuJob("a", gpu_milli=810, cpu_milli=1_000, memory_mib=1),
            GpuJob("b", gpu_milli=100, cpu_milli=1_000, memory_mib=1),
            GpuJob("c", gpu_milli=100, cpu_milli=1_000, memory_mib=1),
        ],
    )
    arrived = np.arange(3)
    assert OfflineBound(cluster, pods).at(arrived) == pytest.approx(1000)
    result = ConfigBound(cluster, pods).at(arrived)
    assert (
        result.bound_milli
        == 910
        == result.witness_milli
        == exact_allocation(cluster, pods, arrived)
    )


def test_tight_where_cpu_splits_across_nodes() -> None:
    """Four nodes of one GPU, each with CPU for one 810-milli pod; 6 such pods and 4 of
    190 milli that need the same CPU: the class LP spreads the CPU fractionally."""
    nodes = [GpuNode(f"n{i}", "G", 1, 0, 0, 10_000, 65_536) for i in range(4)]
    jobs = [GpuJob(f"a{i}", gpu_milli=810, cpu_milli=6_000, memory_mib=1) for i in range(6)]
    jobs += [GpuJob(f"b{i}", gpu_milli=190, cpu_milli=6_000, memory_mib=1) for i in range(4)]
    cluster, pods = _trace(nodes, jobs)
    arrived = np.arange(pods.n)
    exact = exact_allocation(cluster, pods, arrived)
    assert exact == 4 * 810  # one pod per node (CPU), the 810s are worth more
    assert OfflineBound(cluster, pods).at(arrived) > exact + 100
    result = ConfigBound(cluster, pods).at(arrived)
    assert result.bound_milli == exact == result.witness_milli


def test_class_lp_lets_shared_pods_share_a_one_gpu_node() -> None:
    """Regression: the class LP's "one gang of more than half the GPUs per node" row once
    counted shared pods too, so a 1-GPU node held one shared pod and the bound fell below
    a real packing (found by the random cases above)."""
    cluster, pods = _trace(
        [GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)],
        [GpuJob(f"s{i}", gpu_milli=400, cpu_milli=1_000, memory_mib=1) for i in range(2)],
    )
    arrived = np.arange(2)
    assert exact_allocation(cluster, pods, arrived) == 800
    assert OfflineBound(cluster, pods).at(arrived) == pytest.approx(800)
    assert ConfigBound(cluster, pods).at(arrived).bound_milli == 800


def test_with_forced_pods_never_above_the_exact_forced_optimum() -> None:
    """Forcing in every pod a greedy replay (BestFit, random arrival order) holds: the bound
    is never below the exact optimum among the packings that hold them, never above the
    unforced bound, strictly below it on some cases, and its witness holds every forced
    GPU pod."""
    lower = 0
    for seed in range(12):
        rng = np.random.default_rng(200 + seed)
        cluster, pods, arrived = _random_case(rng)
        order = rng.permutation(arrived)
        curve = replay(cluster, pods, make_any("BestFit"), seed, order=order)
        held = [(int(order[i]), int(n), curve.gpus[i]) for i, n in enumerate(curve.node) if n >= 0]
        forced_pods = [p for p, _, _ in held]
        positions: set[int] = set()
        for p in forced_pods:  # a distinct position of ``arrived`` per forced pod
            positions.add(next(i for i in np.flatnonzero(arrived == p) if i not in positions))
        best = exact_allocation(cluster, pods, arrived, frozenset(positions))
        free = ConfigBound(cluster, pods).at(arrived, time_limit_s=60, witness=False)
        result = ConfigBound(cluster, pods).at(
            arrived, time_limit_s=60, forced=forced_pods, start=[held]
        )
        assert result.converged
        assert best <= result.bound_milli <= free.bound_milli
        lower += result.bound_milli < free.bound_milli
        assert result.witness_errors == []
        assert result.witness_milli is not None and result.witness_milli <= best
        got = np.bincount([p for p, _, _ in result.witness], minlength=pods.n)
        need = np.bincount(forced_pods, minlength=pods.n)
        gpu = pods.num_gpu > 0
        assert np.all(got[gpu] >= need[gpu])
    assert lower >= 2  # forcing pods in does cost something on these cases: not vacuous


def test_forcing_an_810_milli_pod_costs_the_gpu_a_whole_pod_would_fill() -> None:
    """One GPU, an 810-milli pod and a whole-GPU pod: the best packing holds the whole pod
    (1000 milli); with the 810-milli pod forced in, at most 810."""
    cluster, pods = _trace(
        [GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)],
        [
            GpuJob("small", gpu_milli=810, cpu_milli=1_000, memory_mib=1),
            GpuJob("whole", gpus=1, cpu_milli=1_000, memory_mib=1),
        ],
    )
    arrived = np.arange(2)
    assert ConfigBound(cluster, pods).at(arrived).bound_milli == 1000
    forced = ConfigBound(cluster, pods).at(arrived, forced=[0], start=[[(0, 0, (0,))]])
    assert forced.bound_milli == 810 == forced.witness_milli
    assert [p for p, _, _ in forced.witness] == [0]
    with pytest.raises(ValueError, match="arrived"):
        ConfigBound(cluster, pods).at(np.array([1]), forced=[0])


def test_forced_pods_that_must_share_a_node_need_a_start_that_holds_them() -> None:
    """Two forced 470-milli pods of different classes and one node: the first columns hold
    one class each, so only a start placement holding both makes the master feasible."""
    cluster, pods = _trace(
        [GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)],
        [
            GpuJob("a", gpu_milli=470, cpu_milli=1_000, memory_mib=1),
            GpuJob("b", gpu_milli=470, cpu_milli=2_000, memory_mib=1),
        ],
    )
    arrived = np.arange(2)
    with pytest.raises(ValueError, match="start"):
        ConfigBound(cluster, pods).at(arrived, forced=[0, 1])
    result = ConfigBound(cluster, pods).at(
        arrived, forced=[0, 1], start=[[(0, 0, (0,)), (1, 0, (0,))]]
    )
    assert result.bound_milli == 940 == result.witness_milli


def test_forced_prefix_is_the_longest_prefix_one_replay_holds_wholly() -> None:
    arrived = np.array([5, 6, 7, 8, 9])
    assert forced_prefix(arrived, [np.array([0, 1, -1, 2, 3])]).tolist() == [5, 6]
    assert forced_prefix(
        arrived, [np.array([0, 1, -1, 2, 3]), np.array([0, 0, 0, -1, 1])]
    ).tolist() == [5, 6, 7]
    assert forced_prefix(arrived, [np.array([0, 0, 0, 0, 0])]).tolist() == arrived.tolist()
