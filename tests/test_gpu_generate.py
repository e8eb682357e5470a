"""The seeded GPU generator and the bundled GPU instances (tiny's optimum proved by brute force)."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.models.gpu import FAMILY, GpuSolution, WorkerPlacement, check
from placement.models.gpu.generate import generate
from placement.models.gpu.instance import MILLI, GpuInstance
from placement.models.gpu.reading import instance_from_dict
from placement.solver.errors import InputError

REPO = Path(__file__).resolve().parent.parent
INSTANCES = REPO / "instances" / "gpu"
COMMAND = re.compile(r"placement generate gpu --gpus (\d+) --jobs (\d+) --seed (\d+) --out (\S+)")


def as_dict(instance: GpuInstance) -> dict:
    return {
        "name": instance.name,
        "description": instance.description,
        "gpu": FAMILY.instance_to_dict(instance),
    }


# --- the generator -------------------------------------------------------------------------------


def test_same_seed_same_instance_and_no_global_random_state() -> None:
    first = as_dict(generate(200, 40, 3))
    random.seed(99)
    np.random.seed(99)
    state = np.random.get_state()[1].copy()
    assert as_dict(generate(200, 40, 3)) == first
    assert (np.random.get_state()[1] == state).all()  # the global numpy state is untouched


def test_different_seeds_differ() -> None:
    assert as_dict(generate(200, 40, 1))["gpu"] != as_dict(generate(200, 40, 2))["gpu"]


@pytest.mark.parametrize(
    ("gpus", "jobs"), [(1, 0), (64, 10), (100, 30), (512, 100), (10_240, 2_000)]
)
def test_sizes(gpus: int, jobs: int) -> None:
    instance = generate(gpus, jobs, 0)
    nodes = math.ceil(gpus / 8)
    assert len(instance.nodes) == nodes
    assert instance.total_gpus == 8 * nodes
    assert len(instance.jobs) == jobs
    assert (
        f"placement generate gpu --gpus {gpus} --jobs {jobs} --seed 0 --out FILE"
        in instance.description
    )
    assert ("rounded up" in instance.description) == (gpus % 8 != 0)
    assert instance.name == f"gpu-{gpus}g-{jobs}j-s0"


@settings(max_examples=30, deadline=None)
@given(
    gpus=st.integers(1, 400),
    jobs=st.integers(0, 80),
    seed=st.integers(0, 2**32 - 1),
    occupancy=st.floats(0, 1),
)
def test_generated_instances_are_valid_and_round_trip(
    gpus: int, jobs: int, seed: int, occupancy: float
) -> None:
    instance = generate(gpus, jobs, seed, occupancy=occupancy)
    data = FAMILY.instance_to_dict(instance)
    back = instance_from_dict(json.loads(json.dumps(data)))  # validated on the way in
    assert FAMILY.instance_to_dict(back) == data
    bandwidths = [lv.bandwidth_gbps for lv in instance.levels]
    assert bandwidths == sorted(bandwidths, reverse=True)
    assert [lv.name for lv in instance.levels] == ["nvlink", "node", "rack", "spine"]
    # Occupancy is reached to within one node's worth of GPUs.
    used = sum(sum(nd.gpu_milli_used) for nd in instance.nodes)
    total = instance.total_gpus * MILLI
    assert used >= occupancy * total - 1e-6
    assert used <= occupancy * total + 8 * MILLI
    for nd in instance.nodes:
        assert nd.gpu_count == 8 and nd.nvlink_domain_size in (4, 8)
    for job in instance.jobs:
        assert 1 <= job.priority <= 3
        if job.kind == "fractional":
            assert 100 <= job.gpu_milli <= 900


def test_racks_hold_4_to_16_nodes_except_a_short_last_one() -> None:
    instance = generate(2048, 0, 4)
    racks: dict[str, int] = {}
    for nd in instance.nodes:
        racks[nd.groups[0]] = racks.get(nd.groups[0], 0) + 1
    sizes = list(racks.values())
    assert all(4 <= s <= 16 for s in sizes[:-1]) and 1 <= sizes[-1] <= 16
    # One GPU type per rack.
    for rack in racks:
        assert len({nd.gpu_type for nd in instance.nodes if nd.groups[0] == rack}) == 1


def test_job_mix() -> None:
    instance = generate(4096, 2000, 9)
    kinds = {
        prefix: [j for j in instance.jobs if j.name.startswith(prefix)]
        for prefix in ("infer", "train", "gang", "etl")
    }
    assert all(kinds.values())
    assert all(j.kind == "fractional" and j.gpu_milli % 50 == 0 for j in kinds["infer"])
    assert all(
        j.kind == "whole" and j.workers == 1 and j.gpus in (1, 2, 4, 8) for j in kinds["train"]
    )
    assert all(2 <= j.workers <= 8 and j.gpus in (4, 8) and j.traffic_gb > 0 for j in kinds["gang"])
    assert any(j.locality_level == "rack" and j.locality_required for j in kinds["gang"])
    assert any(j.locality_level == "rack" and not j.locality_required for j in kinds["gang"])
    assert all(j.kind == "cpu" for j in kinds["etl"])
    assert any(j.gpu_types for j in instance.jobs) and any(j.gpu_memory_mib for j in kinds["infer"])
    assert {j.priority for j in instance.jobs} == {1, 2, 3}
    # The mix follows the shares roughly.
    assert 0.25 < len(kinds["infer"]) / 2000 < 0.35 and 0.15 < len(kinds["gang"]) / 2000 < 0.25


def test_options_are_recorded_in_the_command() -> None:
    instance = generate(64, 5, 1, occupancy=0.5, gpu_types=("T4",), out="x.json")
    assert "--out x.json --occupancy 0.5 --gpu-types T4" in instance.description
    assert {nd.gpu_type for nd in instance.nodes} == {"T4"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gpus": 0},
        {"jobs": -1},
        {"occupancy": 1.5},
        {"fractional_share": 0.6, "gang_share": 0.5},
        {"gpu_types": ()},
    ],
)
def test_bad_arguments(kwargs: dict) -> None:
    args = {"gpus": 64, "jobs": 5, "seed": 0} | kwargs
    with pytest.raises(InputError):
        generate(args.pop("gpus"), args.pop("jobs"), args.pop("seed"), **args)


# --- the bundled instances ----------------------------------------------------------------------


def load(name: str) -> tuple[dict, GpuInstance]:
    data = json.loads((INSTANCES / f"{name}.json").read_text(encoding="utf-8"))
    return data, instance_from_dict(data["gpu"])


@pytest.mark.parametrize("name", ["tiny", "medium", "large"])
def test_bundled_instances_load(name: str) -> None:
    data, instance = load(name)
    assert set(data) == {"name", "description", "gpu"} and data["name"] and data["description"]
    assert instance.jobs and instance.nodes
    assert (INSTANCES / f"{name}.json").stat().st_size < 3_000_000


@pytest.mark.parametrize(("name", "least_gpus"), [("medium", 500), ("large", 4096)])
def test_generated_bundles_are_remade_by_the_command_in_their_description(
    name: str, least_gpus: int
) -> None:
    data, instance = load(name)
    match = COMMAND.search(data["description"])
    assert match, data["description"]
    gpus, jobs, seed = (int(x) for x in match.groups()[:3])
    assert match.group(4) == f"instances/gpu/{name}.json"
    assert instance.total_gpus >= least_gpus
    again = generate(gpus, jobs, seed, out=match.group(4))
    assert as_dict(again) == data
    assert shlex.split(match.group(0))[:3] == ["placement", "generate", "gpu"]


TINY_OPTIMUM = re.compile(
    r"OPTIMUM placed_gpu_weighted = (\d+(?:\.\d+)?), comm_cost = (\d+(?:\.\d+)?), "
    r"fragmentation = (\d+(?:\.\d+)?)"
)
W = WorkerPlacement
# The optimal solution the description gives: gang -> n1 [0,1], n1 [2,3]; train -> n0 [0,1];
# infer -> n0 [2]; big unplaced.
TINY_SOLUTION = GpuSolution({0: (W(1, (0, 1)), W(1, (2, 3))), 1: (W(0, (0, 1)),), 2: (W(0, (2,)),)})


def test_tiny_stated_optimum_matches_the_checker_on_the_stated_solution() -> None:
    data, instance = load("tiny")
    stated = tuple(float(x) for x in TINY_OPTIMUM.search(data["description"]).groups())
    assert [j.name for j in instance.jobs] == ["gang", "train", "infer", "big"]
    report = check(instance, TINY_SOLUTION)
    assert report.feasible, report.violations
    terms = report.terms
    assert (
        terms["placed_gpu_weighted"],
        terms["comm_cost"],
        terms["fragmentation"],
    ) == pytest.approx(stated)


def test_tiny_stated_optimum_is_optimal_by_brute_force() -> None:
    _, instance = load("tiny")
    nodes = instance.nodes

    def worker_options(job) -> list:
        if job.kind == "whole":
            return [
                W(n, gs)
                for n, nd in enumerate(nodes)
                for gs in itertools.combinations(range(nd.gpu_count), job.gpus)
            ]
        return [W(n, (g,)) for n, nd in enumerate(nodes) for g in range(nd.gpu_count)]

    per_job = []
    for job in instance.jobs:
        options = worker_options(job)
        # Workers of a gang are interchangeable: unordered choices suffice.
        per_job.append([None, *itertools.combinations_with_replacement(options, job.workers)])
    best = None
    for choice in itertools.product(*per_job):
        solution = GpuSolution({j: tuple(c) for j, c in enumerate(choice) if c is not None})
        report = check(instance, solution)
        if report.feasible and (best is None or report.score() > best):
            best = report.score()
    assert best == check(instance, TINY_SOLUTION).score() == (10.3, -0.16625, -0.96)
