"""The opt-in ``topology_fit`` tier (issue 19): fewest racks per gang, then best fit per rack
and block, after the three usual tiers.

A tiny hand-built instance with a known optimum, solved and proved by every exact backend
(CP-SAT, MILP with HiGHS / CBC where installed); the checker recomputing the tier (and the
model's value agreeing with it); a worse placement scored worse; bad input; old files without
the field reading and solving exactly as before.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from placement.models.gpu import FAMILY
from placement.models.gpu.check import check, topology_fit_of
from placement.models.gpu.instance import GpuSolution, WorkerPlacement
from placement.models.gpu.model import GpuModel
from placement.models.gpu.reading import instance_from_dict
from placement.models.gpu.sim.topology_trace import topology_trace
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import backend_id, exact_backends

LEVELS = [
    {"name": "nvlink", "bandwidth_gbps": 600},
    {"name": "node", "bandwidth_gbps": 64},
    {"name": "rack", "bandwidth_gbps": 25},
    {"name": "block", "bandwidth_gbps": 10},
]


def node(name: str, rack: str, used: int) -> dict[str, Any]:
    """A 4-GPU node in block b0 with its first ``used`` GPUs busy."""
    return {
        "name": name,
        "gpu_type": "A100",
        "gpu_count": 4,
        "gpu_memory_mib": 80_000,
        "cpu_milli": 64_000,
        "memory_mib": 512_000,
        "groups": [rack, "b0"],
        "gpu_usage": [
            {"index": g, "milli_used": 1000, "memory_mib_used": 80_000} for g in range(used)
        ],
    }


# Rack r0 has 2 free GPUs (on a0), rack r1 has 8 (b0, b1); the block 10. A 2-GPU pod P and a
# gang G of 2 workers x 2 GPUs, without traffic: the first three tiers tie on every placement
# of both (4 + 4 GPUs placed, no communication cost, no fragmentation left for 2-GPU jobs).
# Per whole GPU the tier charges the free GPUs of its rack + block: 2 + 10 = 12 in r0,
# 8 + 10 = 18 in r1; an extra rack for a gang costs S = 8 GPUs per rack x (8 + 16), the
# most GPUs of a rack and of a block: 192.
#   P on a0, G on one node of r1:  2 x 12 + 4 x 18        = 96  (the optimum)
#   P in r1, G in r1:              2 x 18 + 4 x 18        = 108
#   P in r1, G over a0 and r1:     2 x 18 + 2 x 12 + 2 x 18 + 192 = 288
DOC: dict[str, Any] = {
    "cluster": {
        "levels": LEVELS,
        "nodes": [
            node("a0", "r0", 2),
            node("a1", "r0", 4),
            node("b0", "r1", 0),
            node("b1", "r1", 0),
        ],
    },
    "jobs": [
        {"name": "P", "gpus": 2},
        {"name": "G", "gpus": 2, "workers": 2},
    ],
    "topology_fit": True,
}
OPTIMUM = {"placed_gpu_weighted": 6.0, "comm_cost": 0.0, "topology_fit": 96.0}


def _instance(**edits: Any):
    document = copy.deepcopy(DOC)
    document.update(edits)
    return instance_from_dict(document)


def _placed(p_spots, g_spots) -> GpuSolution:
    """P at one (node, gpus) spot, G at two."""
    return GpuSolution(
        {
            0: (WorkerPlacement(p_spots[0], tuple(p_spots[1])),),
            1: tuple(WorkerPlacement(n, tuple(g)) for n, g in g_spots),
        }
    )


@pytest.mark.parametrize(
    "backend,milp_solver", exact_backends(), ids=[backend_id(*b) for b in exact_backends()]
)
def test_every_exact_backend_proves_the_known_optimum(backend: str, milp_solver: str) -> None:
    instance = _instance()
    result = solve(
        instance,
        SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=20, threads=1),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    assert list(report.terms) == [
        "placed_gpu_weighted",
        "comm_cost",
        "topology_fit",
        "fragmentation",
    ]
    for name, value in OPTIMUM.items():
        assert report.terms[name] == pytest.approx(value), name
    # P on the fuller rack's node a0; G whole inside rack r1.
    assert {w.node for w in result.solution.placements[0]} == {0}
    assert {w.node for w in result.solution.placements[1]} <= {2, 3}


def test_the_checker_recomputes_the_tier_and_the_model_agrees() -> None:
    instance = _instance()
    model = GpuModel(instance)
    model.ensure_layer("topology_fit")
    cases = [
        (_placed((0, [2, 3]), [(2, [0, 1]), (2, [2, 3])]), 96.0),
        (_placed((3, [0, 1]), [(2, [0, 1]), (2, [2, 3])]), 108.0),
        (_placed((3, [0, 1]), [(0, [2, 3]), (2, [0, 1])]), 288.0),
    ]
    for solution, expected in cases:
        report = check(instance, solution)
        assert report.feasible, report.violations
        assert report.terms["topology_fit"] == expected
        assert topology_fit_of(instance, solution) == expected
        values = model.values_from_solution(solution)
        assert values is not None and model.feasible(values)
        assert model.terms(values)["topology_fit"] == pytest.approx(expected)
    # A solution reported with the optimum's objective but placed worse is caught: the
    # checker's value is its own, and it ranks below the optimum.
    best, worse = check(instance, cases[0][0]), check(instance, cases[2][0])
    assert worse.terms["topology_fit"] != OPTIMUM["topology_fit"]
    assert best.score() > worse.score()
    # The checker's spread term really counts racks: G over two racks costs S = 192 more
    # than the same GPUs' best-fit terms alone.
    assert cases[2][1] - (2 * 18 + 2 * 12 + 2 * 18) == 192


def test_off_by_default_and_old_files_unchanged() -> None:
    document = copy.deepcopy(DOC)
    document.pop("topology_fit")
    instance = instance_from_dict(document)
    assert not instance.topology_fit
    assert "topology_fit" not in FAMILY.instance_to_dict(instance)
    report = check(instance, _placed((3, [0, 1]), [(2, [0, 1]), (2, [2, 3])]))
    assert list(report.terms) == ["placed_gpu_weighted", "comm_cost", "fragmentation"]
    result = solve(instance, SolveOptions(backend="cpsat", threads=1, time_limit_s=20))
    assert result.status == SolutionStatus.OPTIMAL
    assert "topology_fit" not in result.objective_terms
    assert "topology_fit" not in result.message
    # On, it round-trips.
    on = _instance()
    assert FAMILY.instance_to_dict(on)["topology_fit"] is True
    assert instance_from_dict(FAMILY.instance_to_dict(on)).topology_fit


def test_not_with_running_jobs() -> None:
    document = copy.deepcopy(DOC)
    document["jobs"][0]["current"] = [{"node": "a0", "gpus": [2, 3]}]
    with pytest.raises(InputError) as err:
        instance_from_dict(document)
    assert "gpu.topology_fit" in str(err.value)


def test_a_restricted_solve_with_the_tier_keeps_the_exact_backend() -> None:
    # 40 gangs x 128 nodes is past what one deterministic second holds in a full model: the
    # restricted search runs, and the configuration LP (which does not model the tier) must
    # step aside rather than fail the CP-SAT backend (it did: ConfigurationLP.last_x unset)
    trace = topology_trace(1024, 8.0, 0)
    instance = trace.instance([j.as_job() for j in trace.jobs[:40]], [(0,) * 8] * 128)
    instance.topology_fit = True
    result = solve(instance, SolveOptions(time_limit_s=1.0, deterministic=True))
    assert result.backend_errors == {}
    assert "restricted to candidate nodes" in result.message
    assert check(instance, result.solution).feasible
