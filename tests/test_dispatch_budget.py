"""The dispatch family's budget mode (Nimrod/G parameter sweeps): input errors that say what
cannot be met and by how much, the checker's deadline and budget rules, the DBC heuristics,
and the exact front (column generation, the per-core model) against enumeration."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from placement.models.dispatch import FAMILY
from placement.models.dispatch.dbc import (
    cost_optimisation,
    cost_time_optimisation,
    time_optimisation,
)
from placement.models.dispatch.generate import generate_sweep
from placement.models.dispatch.instance import (
    BUDGET,
    DispatchInstance,
    DispatchJob,
    DispatchServer,
    DispatchSolution,
)
from placement.models.dispatch.patterns import best_pattern, sweep_of
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import instance_from_document
from tests.test_cli import assert_user_error, run


def _sweep(deadline: int = 0, budget: int = 0, objective: str = "cost") -> DispatchInstance:
    """Two servers: ``cheap`` (one core, speed 1, price 1) and ``fast`` (two cores, speed 2,
    price 4, overhead 1); jobs of sizes 4 and 6."""
    return DispatchInstance(
        [DispatchServer("cheap", 1, 1.0, 1.0), DispatchServer("fast", 2, 2.0, 4.0, 1)],
        [DispatchJob(f"t{i}", 0, size) for i, size in enumerate([4, 4, 6, 6, 4])],
        BUDGET,
        name="sweep",
        deadline=deadline,
        budget=budget,
        budget_objective=objective,
    )


def _document(instance: DispatchInstance) -> dict:
    return {"name": instance.name, "description": "", "dispatch": FAMILY.instance_to_dict(instance)}


def _enumerate(instance: DispatchInstance) -> dict[str, float] | None:
    """The lexicographic optimum of the instance's tiers over every assignment of jobs to
    cores (each core's jobs back to back from 0), or None when nothing is feasible."""
    cores = [(s, c) for s, server in enumerate(instance.servers) for c in range(server.cores)]
    best = None
    for choice in itertools.product(range(len(cores)), repeat=len(instance.jobs)):
        load = [0] * len(cores)
        start = [0] * len(instance.jobs)
        for j, k in enumerate(choice):
            start[j] = load[k]
            load[k] += instance.service[j][cores[k][0]]
        solution = DispatchSolution(tuple(cores[k][0] for k in choice), tuple(start))
        report = FAMILY.check(instance, solution)
        if report.feasible and (best is None or report.better_than(best)):
            best = report
    return None if best is None else best.terms


# --- the instance -------------------------------------------------------------------------


def test_a_sweep_goes_to_json_and_back_with_its_budget_section() -> None:
    instance = _sweep(20, 90, "cost_time")
    section = FAMILY.instance_to_dict(instance)
    assert section["mode"] == "DISPATCH_BUDGET"
    assert section["budget"] == {"deadline": 20, "budget": 90, "objective": "BUDGET_COST_TIME"}
    back = instance_from_document(json.loads(json.dumps(_document(instance))))
    assert (back.mode, back.deadline, back.budget, back.budget_objective) == (
        BUDGET,
        20,
        90,
        "cost_time",
    )


def test_a_deadline_no_server_can_meet_is_explained_with_the_shortfall() -> None:
    # The size-6 jobs take at least ceil(6 / 2) + 1 = 4 on the fast server.
    document = _document(_sweep(3))
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    (error,) = [e for e in info.value.errors if e.path == "dispatch.budget.deadline"]
    assert "at least 4" in error.expected and "short by 1" in error.expected
    assert "'fast'" in error.expected


def test_a_budget_below_the_cheapest_schedule_is_explained_with_the_shortfall() -> None:
    # Cheapest: every job on ``cheap``: 4 + 4 + 6 + 6 + 4 = 24 (fast costs 4 * 3 = 12 for 4).
    document = _document(_sweep(0, 20))
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    (error,) = [e for e in info.value.errors if e.path == "dispatch.budget.budget"]
    assert "at least 24" in error.expected and "4 more than the budget" in error.expected


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("jobs[1].arrival", 3, "0 in budget mode"),
        ("jobs[2].cores", 2, "1 in budget mode"),
        ("servers[0].price", 1.5, "an integer price"),
    ],
)
def test_what_a_sweep_cannot_hold_is_named(path: str, value: float, expected: str) -> None:
    document = _document(_sweep())
    container, _, field = path.rpartition(".")
    kind, _, index = container.partition("[")
    document["dispatch"][kind][int(index[:-1])][field] = value
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    errors = [e for e in info.value.errors if e.path == f"dispatch.{path}"]
    assert errors and expected in errors[0].expected, str(info.value)


def test_a_budget_section_outside_budget_mode_is_refused() -> None:
    document = _document(_sweep(20))
    document["dispatch"]["mode"] = "IMMEDIATE_DISPATCH"
    with pytest.raises(InputError, match=r"dispatch\.budget"):
        instance_from_document(document)


# --- the checker --------------------------------------------------------------------------


def test_the_checker_takes_any_order_and_counts_cost_and_makespan() -> None:
    instance = _sweep(objective="cost_time")
    # cheap runs t4 then t0 (out of arrival order: allowed), fast's two cores the rest.
    solution = DispatchSolution((0, 1, 1, 1, 0), (4, 0, 0, 4, 0))
    report = FAMILY.check(instance, solution)
    assert report.feasible, report.violations
    # cheap: 4 + 4 = 8; fast: t1 3 * 4 = 12, t2 and t3 4 * 4 = 16 each.
    assert report.terms == {"cost": 8 + 12 + 16 + 16, "makespan": 8}


@pytest.mark.parametrize(
    ("deadline", "budget", "violation"),
    [
        (7, 0, "makespan 8 is past the deadline 7 by 1"),
        (0, 51, "cost 52 is over the budget 51 by 1"),
    ],
)
def test_the_checker_rejects_a_missed_deadline_or_budget(deadline, budget, violation) -> None:
    instance = _sweep(deadline, budget)
    report = FAMILY.check(instance, DispatchSolution((0, 1, 1, 1, 0), (4, 0, 0, 4, 0)))
    assert not report.feasible
    assert report.violations == [violation]


def test_the_checker_rejects_too_many_jobs_on_a_core_at_once() -> None:
    report = FAMILY.check(_sweep(), DispatchSolution((0, 1, 1, 1, 0), (4, 0, 0, 0, 0)))
    assert not report.feasible and "3 cores in use" in report.violations[0]


# --- the heuristics -----------------------------------------------------------------------


def test_dbc_cost_fills_the_cheap_server_up_to_the_deadline() -> None:
    instance = _sweep(deadline=10)
    solution = cost_optimisation(instance)
    report = FAMILY.check(instance, solution)
    assert report.feasible, report.violations
    # cheap takes t0, t1 (4 + 4 = 8 <= 10), then nothing else fits it by 10.
    assert [instance.servers[s].name for s in solution.server_of] == [
        "cheap",
        "cheap",
        "fast",
        "fast",
        "fast",
    ]


def test_dbc_time_spreads_for_the_earliest_end_and_keeps_to_the_budget() -> None:
    free = _sweep(objective="time")
    fast = FAMILY.check(free, time_optimisation(free))
    cheap = FAMILY.check(free, cost_optimisation(free))
    assert fast.terms["makespan"] < cheap.terms["makespan"]
    # With a budget the time-optimisation spends at most it (every job placed within the
    # budget left per job).
    tight = _sweep(budget=40, objective="time")
    report = FAMILY.check(tight, time_optimisation(tight))
    assert report.feasible, report.violations


def test_dbc_cost_time_is_as_cheap_as_dbc_cost_and_no_slower() -> None:
    instance = _sweep(deadline=10, objective="cost_time")
    cost = FAMILY.check(instance, cost_optimisation(instance))
    both = FAMILY.check(instance, cost_time_optimisation(instance))
    assert both.feasible and cost.feasible
    assert both.terms["cost"] == cost.terms["cost"]
    assert both.terms["makespan"] <= cost.terms["makespan"]


# --- the exact front ----------------------------------------------------------------------


def test_the_knapsack_of_the_pricing_problem_is_exact() -> None:
    value, pattern = best_pattern([3, 5], [4.0, 7.0], [2, 1], 10)
    # Best within 10: two of the first (6, value 8) fail to add the second (11 > 10); one of
    # each: 8, value 11; the second alone: 7. So (1, 1).
    assert (value, pattern) == (11.0, (1, 1))


def test_core_classes_pool_servers_of_equal_speed_price_and_overhead() -> None:
    instance = _sweep()
    instance.servers.append(DispatchServer("cheap2", 3, 1.0, 1.0))
    sweep = sweep_of(instance)
    assert sorted(len(slots) for slots in sweep.slots) == [2, 4]


CASES = [
    (0, 0, "cost"),
    (10, 0, "cost"),
    (9, 60, "cost"),
    (0, 40, "time"),
    (0, 0, "time"),
    (12, 0, "cost_time"),
    (9, 0, "cost_time"),
]


@pytest.mark.parametrize("backend", ["auto", "cpsat", "milp"])
@pytest.mark.parametrize(("deadline", "budget", "objective"), CASES)
def test_every_exact_backend_proves_the_enumerated_optimum(
    deadline: int, budget: int, objective: str, backend: str
) -> None:
    instance = _sweep(deadline, budget, objective)
    expected = _enumerate(instance)
    assert expected is not None
    result = solve(instance, SolveOptions(backend=backend, time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.objective_terms == expected
    assert FAMILY.check(instance, result.solution).terms == expected


@pytest.mark.parametrize("backend", ["auto", "cpsat", "milp"])
def test_a_deadline_and_budget_no_schedule_meets_together_is_proved(backend: str) -> None:
    # By 9 the cheap server runs jobs of sizes 4 + 4 (cost 8) at best; the rest on fast
    # cost 16 + 16 + 12: 52 > 45, though 45 is above the cheapest schedule (24).
    instance = _sweep(9, 45)
    assert _enumerate(instance) is None
    result = solve(instance, SolveOptions(backend=backend, time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert result.stop_reason == StopReason.PROVEN


def test_a_generated_sweep_is_seeded_and_solved_within_a_proven_gap() -> None:
    a = generate_sweep(300, 12, 0.8, seed=3, kinds=3)
    b = generate_sweep(300, 12, 0.8, seed=3, kinds=3)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    assert a.deadline >= max(min(row) for row in a.service)
    result = solve(a, SolveOptions(time_limit_s=20, threads=1))
    assert result.solution is not None and FAMILY.check(a, result.solution).feasible
    # The bound is the configuration LP's: within 1 % on a sweep of this size.
    assert result.bound is not None and result.bound <= result.objective
    assert result.gap is not None and result.gap <= 0.01


def test_generate_budget_sweeps_and_a_short_deadline_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    words = ["--jobs", "40", "--servers", "4", "--load", "0.7", "--mode", "budget"]
    done = run("generate", "dispatch", *words, "--kinds", "2", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    assert document["dispatch"]["mode"] == "DISPATCH_BUDGET"
    assert "--mode budget" in document["description"]
    done = run("solve", out, "--json", "--time-limit", "20", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] in ("optimal", "feasible")
    document["dispatch"]["budget"]["deadline"] = 1
    out.write_text(json.dumps(document))
    assert_user_error(run("solve", out, cwd=tmp_path), "dispatch.budget.deadline", "short by")


def test_a_start_naming_every_job_is_kept_as_given_and_a_partial_one_is_not() -> None:
    instance = _sweep(10, 0, "cost")
    first = solve(instance, SolveOptions(time_limit_s=10, threads=1))
    message = FAMILY.solution_to_message(instance, first.solution)
    again = solve(instance, SolveOptions(time_limit_s=10, threads=1), start=message)
    assert again.warm_start is not None and again.warm_start.feasible
    assert again.warm_start.kept == len(instance.jobs)
    assert again.warm_start.objective == first.objective
    del message.runs[0]
    partial = solve(instance, SolveOptions(time_limit_s=10, threads=1), start=message)
    assert partial.warm_start is not None and partial.warm_start.kept == 0
    assert partial.objective == first.objective


def test_a_sweep_and_a_bundle_workload_solve_through_the_grpc_service(tmp_path: Path) -> None:
    from placement.api.client import Client
    from placement.models.dispatch.generate import generate_bundle
    from tests.service_harness import start_server

    sweep = _sweep(10, 0, "cost_time")
    burst = generate_bundle(60, 2, 0.5, seed=1, server_cores=4, scheduler_overhead=5)
    server = start_server(tmp_path, workers=1)
    try:
        with Client(server.target) as client:
            for instance in (sweep, burst):
                local = solve(instance, SolveOptions(time_limit_s=10, threads=1))
                remote = client.solve(instance, time_limit_s=10)
                assert remote.objective_terms == local.objective_terms
                assert FAMILY.check(instance, remote.solution).feasible
                assert remote.solution.bundle == local.solution.bundle
    finally:
        server.stop()
