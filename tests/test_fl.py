"""The fl family: the known optima by enumeration, the checker's rules, errors that name the
field, the explanation of a job no device can serve, the exact model against the greedy and
the peers, the generator."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from placement.models.fl import FAMILY, generate
from placement.models.fl.check import check, jain_index, participation
from placement.models.fl.encoding import fl_linear, lp_bound
from placement.models.fl.greedy import fastest_cover
from placement.models.fl.instance import Device, FlInstance, FlSolution, Job
from placement.models.fl.peers.fedact import fedact
from placement.models.fl.peers.random_selection import random_selection
from placement.models.fl.timing import device_time_us
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.cancel import CancellationToken
from placement.solver.errors import InputError
from placement.solver.testing import instance_document, instance_from_document
from tests import optima

GIB = 1024**3


def _enumerate(instance: FlInstance) -> float:
    """The least objective over every assignment of every round."""
    n = len(instance.devices)
    per_round = []
    for r in range(instance.rounds):
        running = [j for j in range(len(instance.jobs)) if instance.active(r, j)]
        choices = [
            list(itertools.combinations(range(n), instance.jobs[j].devices_per_round))
            for j in running
        ]
        rows = []
        for combo in itertools.product(*choices):
            flat = [d for c in combo for d in c]
            if len(set(flat)) != len(flat):
                continue
            row: list[tuple[int, ...]] = [() for _ in instance.jobs]
            for j, c in zip(running, combo, strict=True):
                row[j] = tuple(c)
            rows.append(tuple(row))
        per_round.append(rows)
    best = None
    for rows in itertools.product(*per_round):
        report = check(instance, FlSolution(tuple(rows)))
        if report.feasible and (best is None or report.objective < best):
            best = report.objective
    assert best is not None
    return best


@pytest.mark.parametrize("case", optima.cases("fl"), ids=lambda c: c.name)
def test_the_known_optima_are_the_enumerated_ones(case: optima.Case) -> None:
    assert _enumerate(case.instance()) == case.primary


def _dev(name: str, speed: float, classes: tuple[int, ...] = (), off: tuple[int, ...] = ()):
    return Device(name, speed, 1e6, 1e6, 4 * GIB, classes, off)


def _small() -> FlInstance:
    """Two jobs over two rounds; job b needs class 2; d3 is offline in round 1."""
    return FlInstance(
        [
            Job("a", 1_000_000, 1e9, 1, 2, (0, 1)),
            Job("b", 1_000_000, 2e9, 1, 1, (2,), 2 * GIB),
        ],
        [
            _dev("d0", 4e9, (0,)),
            _dev("d1", 2e9, (1, 2)),
            _dev("d2", 1e9, (0, 1, 2)),
            _dev("d3", 5e8, (2,), off=(1,)),
            Device("d4", 3e9, 1e6, 1e6, 1 * GIB, (0, 1), ()),
        ],
        rounds=2,
        max_rounds_per_device=1,
    )


def _feasible() -> FlSolution:
    return FlSolution((((0, 4), (1,)), ((2, 4), (3,))))


def test_a_feasible_assignment_is_scored_by_its_slowest_devices() -> None:
    inst = _small()
    # d4 serves two rounds: over the limit of one.
    report = check(inst, _feasible())
    assert not report.feasible
    assert any(v.startswith("fairness: device 'd4' serves 2 rounds") for v in report.violations)
    inst = dataclasses.replace(inst, max_rounds_per_device=2)
    inst.validated = False
    report = check(inst, FlSolution((((0, 4), (1,)), ((2, 0), (1,)))))
    assert report.feasible, report.violations
    t = [[device_time_us(inst, j, d) for d in range(5)] for j in range(2)]
    expected = max(t[0][0], t[0][4]) + t[1][1] + max(t[0][2], t[0][0]) + t[1][1]
    assert report.objective == expected


def test_the_checker_rejects_a_device_in_two_jobs() -> None:
    report = check(_small(), FlSolution((((0, 1), (1,)), ((2, 4), (3,)))))
    assert any("device 'd1' serves jobs 'a' and 'b'" in v for v in report.violations)


def test_the_checker_rejects_an_offline_device_and_missing_memory() -> None:
    inst = dataclasses.replace(_small(), max_rounds_per_device=0)
    report = check(inst, FlSolution((((0, 2), (1,)), ((2, 0), (3,)))))
    assert not report.feasible
    assert "round 1: device 'd3' is offline" in report.violations
    report = check(inst, FlSolution((((0, 1), (2,)), ((0, 1), (4,)))))
    assert any("'d4' has 1073741824 bytes of memory, job 'b' needs" in v for v in report.violations)


def test_the_checker_rejects_a_missed_class_and_a_wrong_count() -> None:
    inst = dataclasses.replace(_small(), max_rounds_per_device=0)
    report = check(inst, FlSolution((((0, 4), (1,)), ((0, 4), (1,)))))
    assert report.feasible, report.violations
    # d0 and d2... job a needs classes 0 and 1: d0 holds only 0, d3 only 2.
    report = check(inst, FlSolution((((0, 3), (1,)), ((0, 4), (1,)))))
    assert "round 0: coverage: job 'a' misses data class(es) 1" in report.violations
    report = check(inst, FlSolution((((0,), (1,)), ((0, 4), (1,)))))
    assert "round 0: job 'a' gets 1 device(s), needs 2" in report.violations
    report = check(inst, FlSolution((((0, 4), (1,)), ((0, 4), (1,)), ((0, 4), (1,)))))
    assert not report.feasible


def test_the_checker_rejects_devices_for_a_converged_job() -> None:
    inst = dataclasses.replace(_small(), max_rounds_per_device=0)
    inst.jobs[1] = dataclasses.replace(inst.jobs[1], rounds=1)
    report = check(inst, FlSolution((((0, 4), (1,)), ((0, 4), (1,)))))
    assert any("job 'b' has converged (1 rounds) but gets devices" in v for v in report.violations)


def _document(instance: FlInstance) -> dict:
    return instance_document(instance)


def test_bad_inputs_name_the_field() -> None:
    doc = _document(_small())
    doc["fl"]["jobs"][0]["rounds"] = 5
    doc["fl"]["jobs"][1]["devices_per_round"] = 9
    doc["fl"]["devices"][3]["unavailable_rounds"] = [2]
    doc["fl"]["devices"][0]["flops_per_s"] = 0
    with pytest.raises(InputError) as info:
        instance_from_document(doc)
    paths = {e.path for e in info.value.errors}
    assert {
        "fl.jobs[0].rounds",
        "fl.jobs[1].devices_per_round",
        "fl.devices[3].unavailable_rounds[0]",
        "fl.devices[0].flops_per_s",
    } <= paths, str(info.value)


def test_a_solution_naming_an_unknown_device_is_refused_by_name() -> None:
    inst = _small()
    msg = FAMILY.solution_to_message(inst, _feasible())
    msg.assignments[0].devices[0] = "nope"
    with pytest.raises(InputError) as info:
        FAMILY.solution_from_message(inst, msg)
    assert info.value.errors[0].path == "fl.assignments[0].devices[0]"


def test_a_job_no_device_can_serve_is_explained() -> None:
    """Job b needs 2 GiB; only d0..d3 have it, and in round 1 d3 is offline: b wants 4
    devices, 3 can serve it then (short by 1); class 7 is held by nobody."""
    inst = _small()
    inst.jobs[1] = dataclasses.replace(inst.jobs[1], devices_per_round=4, classes_needed=(2, 7))
    inst.max_rounds_per_device = 0
    result = solve(inst, SolveOptions(time_limit_s=5, threads=1))
    assert result.solution is None
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    reasons = FAMILY.explain_unplaced(inst, None)
    kinds = {(r["name"], r["kind"]): r for r in reasons}
    few = kinds[("b", "too_few_devices")]
    assert (few["round"], few["needed"], few["available"], few["short"]) == (1, 4, 3, 1)
    assert "short by 1" in few["message"] and "less than its 2147483648 bytes" in few["message"]
    assert kinds[("b", "class_not_held")]["class"] == 7
    assert "job 'b' needs data class 7" in result.message


def test_a_participation_limit_too_tight_is_explained() -> None:
    inst = dataclasses.replace(_small(), rounds=2, max_rounds_per_device=1)
    inst.devices = inst.devices[:3]
    reasons = FAMILY.explain_unplaced(inst, None)
    assert [r["kind"] for r in reasons] == ["participation_limit"]
    assert reasons[0]["needed"] == 6 and reasons[0]["available"] == 3


@pytest.mark.parametrize("slack", [0.0, 1.0])
def test_the_exact_model_beats_or_meets_every_greedy_and_peer(slack: float) -> None:
    """Without a limit the rounds are solved one by one and their proofs add up; with a
    binding limit the horizon's model is solved whole."""
    inst = generate(24, 2, rounds=3, seed=4, classes=4, min_k=3, max_k=5, participation_slack=slack)
    assert inst.fairness_binds == (slack > 0)
    result = solve(inst, SolveOptions(time_limit_s=60, threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.stop_reason == StopReason.PROVEN
    report = check(inst, result.solution)
    assert result.bound == report.objective
    for name, solution in FAMILY.greedy(inst, SolveOptions()):
        assert check(inst, solution).objective >= report.objective, name
    for peer in (fedact, random_selection):
        peer_report = check(inst, peer(inst))
        assert peer_report.feasible, (peer.__name__, peer_report.violations)
        assert peer_report.objective >= report.objective, peer.__name__


def test_a_large_fleet_with_a_binding_limit_is_rolled_round_by_round() -> None:
    inst = generate(2000, 3, rounds=8, seed=2, min_k=20, max_k=40, participation_slack=1.5)
    assert inst.fairness_binds
    result = solve(inst, SolveOptions(time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.FEASIBLE
    assert "rounds proved optimal given the rounds before" in result.message
    # The horizon's bound is the quick bound, below the solution.
    assert result.bound == FAMILY.quick_bound(inst) <= result.objective


def test_generation_is_seeded_and_jain_index_is_in_range() -> None:
    a, b = generate(50, 3, rounds=4, seed=7, max_k=10), generate(50, 3, rounds=4, seed=7, max_k=10)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    c = generate(50, 3, rounds=4, seed=8, max_k=10)
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(c)
    _, sol = next(iter(FAMILY.greedy(a, SolveOptions())))
    index = jain_index(participation(a, sol))
    assert 1 / 50 <= index <= 1
    with pytest.raises(InputError) as info:
        generate(10, 3, max_k=5)
    assert info.value.errors[0].path == "max_k"


@pytest.mark.parametrize("case", optima.cases("fl"), ids=lambda c: c.name)
def test_the_lp_and_quick_bounds_are_below_the_enumerated_optimum(case: optima.Case) -> None:
    """The LP relaxation of the whole horizon's model (capped by the fallback's objective)
    and the quick bound never exceed the optimum; the LP is at least the blocks' own
    lower bounds."""
    inst = case.instance()
    upper = check(inst, fastest_cover(inst)).objective
    budget = np.full(len(inst.devices), inst.participation_limit, dtype=np.int64)
    lin = fl_linear(inst, list(range(inst.rounds)), budget, int(upper))
    assert lin is not None
    bound = lp_bound(lin, 10.0, CancellationToken())
    assert bound is not None
    assert lin.constant <= bound <= case.primary
    assert FAMILY.quick_bound(inst) <= case.primary
