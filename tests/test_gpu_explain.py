"""Why a GPU job is unplaced: the three kinds on hand-built cases, the exact UnplacedJob fields,
and, on generated instances, reasons that agree with re-placing the job alone."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.models.gpu import (
    GpuInstance,
    GpuJob,
    GpuSolution,
    WorkerPlacement,
)
from placement.models.gpu.check import solution_to_message
from placement.models.gpu.explain import KINDS, explain_unplaced
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit, fgd
from placement.models.gpu.instance import MILLI
from placement.solver.schema.v1 import gpu_pb2 as pb
from tests.gpu_cases import LEVELS, gpu_node

W = WorkerPlacement


# These tests use 40 GB GPUs in NVLink pairs.
node = partial(gpu_node, domain=2, gpu_memory_mib=40_000)


def reasons(instance: GpuInstance, solution: GpuSolution) -> dict[str, dict]:
    return {r["name"]: r for r in explain_unplaced(instance, solution)}


def residual(
    instance: GpuInstance, solution: GpuSolution | None, job: GpuJob, *, empty: bool = False
) -> GpuInstance:
    """The cluster as ``solution`` leaves it (from empty or from the running work), with
    ``job`` as the only job."""
    milli = [[0] * nd.gpu_count if empty else list(nd.gpu_milli_used) for nd in instance.nodes]
    mem = [[0] * nd.gpu_count if empty else list(nd.gpu_memory_mib_used) for nd in instance.nodes]
    cpu = [0 if empty else nd.cpu_milli_used for nd in instance.nodes]
    host = [0 if empty else nd.memory_mib_used for nd in instance.nodes]
    for j, workers in (solution.placements if solution else {}).items():
        placed = instance.jobs[j]
        for w in workers:
            cpu[w.node] += placed.cpu_milli
            host[w.node] += placed.memory_mib
            for g in w.gpus:
                if placed.kind == "whole":
                    milli[w.node][g] = MILLI
                    mem[w.node][g] = instance.nodes[w.node].gpu_memory_mib
                else:
                    milli[w.node][g] += placed.gpu_milli
                    mem[w.node][g] += placed.gpu_memory_mib
    nodes = [
        replace(
            nd,
            gpu_milli_used=tuple(milli[n]),
            gpu_memory_mib_used=tuple(mem[n]),
            cpu_milli_used=cpu[n],
            memory_mib_used=host[n],
        )
        for n, nd in enumerate(instance.nodes)
    ]
    return GpuInstance(instance.levels, nodes, [job], expected_mix=instance.expected_mix)


def fits(instance: GpuInstance) -> bool:
    return bool(best_fit(instance).placements)


# --- the fields ---------------------------------------------------------------------------------


def test_fields_are_exactly_those_of_the_proto_and_serialise() -> None:
    instance = GpuInstance(LEVELS, [node("n0")], [GpuJob("huge", gpus=8), GpuJob("ok", gpus=1)])
    solution = GpuSolution({1: (W(0, (0,)),)})
    out = explain_unplaced(instance, solution)
    assert [r["name"] for r in out] == ["huge"]
    assert set(out[0]) == {f.name for f in pb.UnplacedJob.DESCRIPTOR.fields}
    msg = solution_to_message(instance, solution, out)
    assert msg.unplaced[0].kind == "infeasible_alone"
    assert "\n" not in out[0]["message"]
    assert out[0]["needed"] == "1 worker x 8 x any GPU"
    everything = GpuInstance(LEVELS, [node("n0")], [GpuJob("ok", gpus=1)])
    assert explain_unplaced(everything, GpuSolution({0: (W(0, (0,)),)})) == []


# --- infeasible alone ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "words"),
    [
        (GpuJob("huge", workers=2, gpus=8, gpu_types=("A100",)), "8 GPUs"),
        (GpuJob("h100", gpus=1, gpu_types=("H100",)), "H100"),
        (GpuJob("bigmem", gpus=1, gpu_memory_mib=50_000), "GPU memory"),
        (GpuJob("sharemem", gpu_milli=100, gpu_memory_mib=50_000), "GPU memory"),
        (GpuJob("fatcpu", gpus=1, cpu_milli=100_000), "milli-CPU"),
        (
            GpuJob("cpunv", cpu_milli=1000, locality_level="nvlink", locality_required=True),
            "NVLink",
        ),
        (
            GpuJob("rackgang", workers=3, gpus=4, locality_level="rack", locality_required=True),
            "rack",
        ),
        (
            GpuJob("nvpair", workers=2, gpus=2, locality_level="nvlink", locality_required=True),
            "NVLink",
        ),
        (GpuJob("toomany", workers=5, gpus=4), "whole cluster"),
    ],
)
def test_infeasible_alone(job: GpuJob, words: str) -> None:
    # Two racks of two 4-GPU nodes (domains of 2), all free: 16 GPUs, at most 8 per rack.
    nodes = [
        node("a0", rack="ra"),
        node("a1", rack="ra"),
        node("b0", rack="rb"),
        node("b1", rack="rb"),
    ]
    instance = GpuInstance(LEVELS, nodes, [job])
    (reason,) = explain_unplaced(instance, GpuSolution())
    assert reason["kind"] == "infeasible_alone", reason
    assert words in reason["message"]
    assert reason["blocking_jobs"] == []
    assert not fits(residual(instance, None, job, empty=True))


# --- no room ------------------------------------------------------------------------------------


def test_no_room_when_running_work_holds_the_gpus() -> None:
    # 4 GPUs wanted; each node has 2 entirely free (running work on the others).
    instance = GpuInstance(
        LEVELS,
        [node("n0", used=(1000, 1000, 0, 0)), node("n1", used=(0, 300, 0, 1000))],
        [GpuJob("four", gpus=4), GpuJob("share", gpu_milli=800)],
    )
    out = reasons(instance, GpuSolution())
    four = out["four"]
    assert four["kind"] == "no_room"
    assert four["needed"] == "1 worker x 4 x any GPU"
    assert four["largest_free"] == 2 and four["largest_free_node"] == "n0"
    assert four["blocking_jobs"] == []
    # The share fits (GPUs 2 and 3 of n0 are free) and nothing is placed: it would still fit.
    assert out["share"]["kind"] == "crowded_out" and out["share"]["blocking_jobs"] == []
    assert "would still fit" in out["share"]["message"]
    assert fits(residual(instance, None, instance.jobs[0], empty=True))
    assert not fits(residual(instance, None, instance.jobs[0]))


def test_no_room_for_a_gang_inside_one_rack() -> None:
    nodes = [
        node("a0", rack="ra"),
        node("a1", rack="ra", used=(1000, 0, 0, 0)),
        node("b0", rack="rb", used=(0, 0, 0, 1000)),
        node("b1", rack="rb"),
    ]
    job = GpuJob("g", workers=2, gpus=4, locality_level="rack", locality_required=True)
    (reason,) = explain_unplaced(GpuInstance(LEVELS, nodes, [job]), GpuSolution())
    assert reason["kind"] == "no_room"
    assert "1 of its 2" in reason["message"] and "rack" in reason["message"]


# --- crowded out ---------------------------------------------------------------------------------


def test_crowded_out_names_the_placed_jobs_that_hold_the_room_lower_priority_first() -> None:
    instance = GpuInstance(
        LEVELS,
        [node("n0"), node("n1", used=(1000, 1000, 1000, 1000))],
        [
            GpuJob("want", gpus=4, priority=3),
            GpuJob("hi", gpus=2, priority=2),
            GpuJob("lo", gpus=1, priority=1),
            GpuJob("share", gpu_milli=500, priority=1),
        ],
    )
    # A (poor) solution that fills n0 with lower-priority work.
    solution = GpuSolution({1: (W(0, (0, 1)),), 2: (W(0, (2,)),), 3: (W(0, (3,)),)})
    reason = reasons(instance, solution)["want"]
    assert reason["kind"] == "crowded_out"
    assert reason["blocking_jobs"] == ["share", "lo", "hi"]
    assert "n0" in reason["message"]
    assert reason["largest_free"] == 0
    assert fits(residual(instance, GpuSolution({}), instance.jobs[0]))


def test_crowded_out_names_only_the_jobs_that_must_go() -> None:
    # 'want' needs 2 GPUs; 'a' and 'b' hold one each on n0, 'c' holds two on n1. Removing 'c'
    # (priority 1, the cheapest node to clear) alone makes room.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2), node("n1", 2)],
        [
            GpuJob("want", gpus=2, priority=3),
            GpuJob("a", gpus=1, priority=2),
            GpuJob("b", gpus=1, priority=2),
            GpuJob("c", gpus=2, priority=1),
        ],
    )
    solution = GpuSolution({1: (W(0, (0,)),), 2: (W(0, (1,)),), 3: (W(1, (0, 1)),)})
    assert reasons(instance, solution)["want"]["blocking_jobs"] == ["c"]


def test_crowded_out_gang_across_nodes() -> None:
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2), node("n1", 2), node("n2", 2)],
        [GpuJob("gang", workers=2, gpus=2, priority=3), GpuJob("x", gpus=2), GpuJob("y", gpus=2)],
    )
    solution = GpuSolution({1: (W(0, (0, 1)),), 2: (W(1, (0, 1)),)})
    reason = reasons(instance, solution)["gang"]
    assert reason["kind"] == "crowded_out"
    assert reason["needed"] == "2 workers x 2 x any GPU"
    assert reason["blocking_jobs"] in (["x"], ["y"])
    assert reason["largest_free"] == 2 and reason["largest_free_node"] == "n2"


def test_largest_free_for_a_share_is_the_best_gpus_free_milli() -> None:
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2, used=(700, 1000)), node("n1", 2, used=(1000, 400))],
        [GpuJob("big", gpu_milli=900), GpuJob("small", gpu_milli=500)],
    )
    solution = GpuSolution({1: (W(1, (1,)),)})  # n1 GPU 1: 600 free -> 100
    reason = reasons(instance, solution)["big"]
    assert reason["kind"] == "no_room"
    assert (reason["largest_free"], reason["largest_free_node"]) == (300, "n0")
    assert reason["needed"] == "1 worker x 900 milli-GPU of any GPU"


# --- agreement with re-placing the job alone, on generated instances -----------------------------


@settings(max_examples=25, deadline=None)
@given(
    gpus=st.integers(8, 200),
    jobs=st.integers(1, 50),
    seed=st.integers(0, 2**32 - 1),
    occupancy=st.floats(0, 0.9),
)
def test_reasons_agree_with_placing_the_job_alone(
    gpus: int, jobs: int, seed: int, occupancy: float
) -> None:
    instance = generate(gpus, jobs, seed, occupancy=occupancy)
    for solution in (best_fit(instance), fgd(instance)):
        out = explain_unplaced(instance, solution)
        unplaced = [j for j in range(len(instance.jobs)) if j not in solution.placements]
        assert [r["name"] for r in out] == [instance.jobs[j].name for j in unplaced]
        placed_names = {instance.jobs[j].name: j for j in solution.placements}
        for j, reason in zip(unplaced, out, strict=True):
            job = instance.jobs[j]
            assert reason["kind"] in KINDS
            assert reason["largest_free"] >= 0
            if reason["kind"] == "infeasible_alone":
                assert not fits(residual(instance, None, job, empty=True))
            elif reason["kind"] == "no_room":
                assert fits(residual(instance, None, job, empty=True))
                assert not fits(residual(instance, None, job))
            else:
                assert fits(residual(instance, None, job))
                # The greedies leave nothing that would still fit: someone holds the room...
                assert reason["blocking_jobs"], reason
                assert not fits(residual(instance, solution, job))
                # ... and without the blocking jobs it fits.
                keep = {
                    i: w
                    for i, w in solution.placements.items()
                    if instance.jobs[i].name not in reason["blocking_jobs"]
                }
                assert set(reason["blocking_jobs"]) <= set(placed_names)
                assert fits(residual(instance, GpuSolution(keep), job))
