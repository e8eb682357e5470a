"""The dispatch family's bundle mode (Byun et al.'s node bundling): the checker's bundle and
scheduler rules, the three heuristics on a hand-computed case, the generator and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.benchmarks.dispatch.bundle import short_makespan_bound
from placement.models.dispatch import FAMILY
from placement.models.dispatch.bound import lower_bound
from placement.models.dispatch.bundling import BUNDLING, bundle_opt, byun, per_task, split
from placement.models.dispatch.generate import generate_bundle
from placement.models.dispatch.instance import (
    BUNDLE,
    DispatchInstance,
    DispatchJob,
    DispatchServer,
    DispatchSolution,
)
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import instance_from_document
from tests.test_cli import run


def _burst(overhead: int = 3) -> DispatchInstance:
    """Two nodes of two cores; four short tasks of size 2 at time 0."""
    return DispatchInstance(
        [DispatchServer("n0", 2), DispatchServer("n1", 2)],
        [DispatchJob(f"t{i}", 0, 2) for i in range(4)],
        BUNDLE,
        name="burst",
        scheduler_overhead=overhead,
        short_size=5,
    )


def _document(instance: DispatchInstance) -> dict:
    return {"name": instance.name, "description": "", "dispatch": FAMILY.instance_to_dict(instance)}


def test_a_bundle_instance_and_solution_go_to_json_and_back() -> None:
    instance = _burst()
    section = FAMILY.instance_to_dict(instance)
    assert section["bundle"] == {"scheduler_overhead": 3, "short_size": 5}
    back = instance_from_document(json.loads(json.dumps(_document(instance))))
    assert (back.mode, back.scheduler_overhead, back.short_size) == (BUNDLE, 3, 5)
    solution = bundle_opt(instance)
    message = FAMILY.solution_to_message(instance, solution)
    assert {r.bundle for r in message.runs} == {"b0"}
    assert FAMILY.solution_from_message(instance, message) == solution


def test_a_bundle_section_outside_bundle_mode_is_refused() -> None:
    document = _document(_burst())
    document["dispatch"]["mode"] = "DISPATCH_BACKFILL"
    with pytest.raises(InputError, match=r"dispatch\.bundle"):
        instance_from_document(document)


def test_the_three_heuristics_on_a_hand_computed_burst() -> None:
    instance = _burst()
    # per-task: launches at 3, 6, 9, 12; ends 5, 8, 11, 14.
    # byun: a bundle per node: 3 -> ends 5, 5; the second launched at 6 -> ends 8, 8.
    # ours: one bundle on one node, two waves: ends 5, 5, 7, 7 (optimal here).
    expected = {"per-task": 38, "byun": 26, "bundle-opt": 24}
    for name, heuristic in BUNDLING.items():
        report = FAMILY.check(instance, heuristic(instance))
        assert report.feasible, (name, report.violations)
        assert report.objective == expected[name], name
    assert lower_bound(instance) <= 24
    assert len({b for b in byun(instance).bundle}) == 2
    assert per_task(instance).bundle == ("",) * 4


def test_split_keeps_order_and_near_equal_sizes() -> None:
    assert split(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split([1, 2], 5) == [[1], [2]]


@pytest.mark.parametrize(
    ("server_of", "start", "bundle", "violation"),
    [
        ((0, 1, 0, 0), (3, 3, 5, 5), ("b", "b", "b", "b"), "bundle 'b' spans 2 servers"),
        ((0, 0, 0, 0), (3, 3, 5, 5), ("b", "b", "b", ""), "inside bundle 'b'"),
        ((0, 0, 0, 0), (2, 2, 4, 4), ("b", "b", "b", "b"), "before the scheduler can launch"),
        ((0, 0, 1, 1), (3, 3, 5, 5), ("a", "a", "c", "c"), "before the scheduler can launch"),
    ],
)
def test_the_checker_rejects_each_broken_bundle_rule(server_of, start, bundle, violation) -> None:
    report = FAMILY.check(_burst(), DispatchSolution(server_of, start, bundle))
    assert not report.feasible
    assert any(violation in v for v in report.violations), report.violations


def test_the_checker_accepts_two_bundles_launched_one_overhead_apart() -> None:
    solution = DispatchSolution((0, 0, 1, 1), (3, 3, 6, 6), ("a", "a", "c", "c"))
    report = FAMILY.check(_burst(), solution)
    assert report.feasible, report.violations
    assert report.objective == 5 + 5 + 8 + 8


def test_bundling_beats_per_task_dispatch_on_a_generated_burst() -> None:
    instance = generate_bundle(400, 4, 0.5, seed=2, server_cores=8, scheduler_overhead=10)
    again = generate_bundle(400, 4, 0.5, seed=2, server_cores=8, scheduler_overhead=10)
    assert FAMILY.instance_to_dict(instance) == FAMILY.instance_to_dict(again)
    values = {}
    for name, heuristic in BUNDLING.items():
        report = FAMILY.check(instance, heuristic(instance))
        assert report.feasible, (name, report.violations[:2])
        values[name] = report.objective
    assert values["bundle-opt"] <= values["byun"] < values["per-task"]


def test_solve_keeps_the_best_heuristic_with_the_trace_bound() -> None:
    instance = _burst()
    result = solve(instance, SolveOptions(time_limit_s=5, threads=1))
    assert result.objective == 24
    assert result.bound == lower_bound(instance)
    assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.OPTIMAL)
    if result.status == SolutionStatus.FEASIBLE:
        assert result.stop_reason == StopReason.SEARCH_EXHAUSTED


def test_generate_and_solve_a_bundle_workload_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "bundle.json"
    words = ["--jobs", "100", "--servers", "2", "--load", "0.5", "--mode", "bundle"]
    done = run("generate", "dispatch", *words, "--server-cores", "4", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    assert document["dispatch"]["bundle"]["scheduler_overhead"] == 10
    done = run("solve", out, "--json", "--time-limit", "10", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["solution"]["dispatch"]["runs"]
    assert any(r.get("bundle") for r in runs)


def test_the_short_makespan_bound_holds_and_is_tight_on_the_hand_burst() -> None:
    # h = 3, four tasks of 2 on two nodes of 2 cores: by 6 the launches at 3 give at most
    # 2 * (6 - 3) = 6 < 8 core-time; by 7 two launches give 2 * (4 + 1) = 10. Ours ends at 7.
    instance = _burst()
    assert short_makespan_bound(instance, [0, 1, 2, 3]) == 7
    solution = bundle_opt(instance)
    assert max(s + 2 for s in solution.start) == 7
    burst = generate_bundle(400, 4, 0.5, seed=2, server_cores=8, scheduler_overhead=10)
    shorts = [j for j, job in enumerate(burst.jobs) if job.size <= burst.short_size]
    bound = short_makespan_bound(burst, shorts)
    for heuristic in BUNDLING.values():
        solution = heuristic(burst)
        ends = [solution.start[j] + burst.service[j][solution.server_of[j]] for j in shorts]
        assert max(ends) >= bound
