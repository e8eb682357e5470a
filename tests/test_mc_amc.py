"""AMC-rtb (fixed priorities, Baruah, Burns and Davis, RTSS 2011) as the mc family's per-core
test: hand-computed cores, Audsley's assignment, the independent checker, the no-good loop of
the exact backends, the heuristics, and the instance's fields."""

from __future__ import annotations

import copy
import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from placement.models.mc import FAMILY, McSolution, amcrtb
from placement.models.mc.check import amc_rtb_order, core_tests
from placement.models.mc.edfvd import CoreLoad
from placement.models.mc.generate import generate
from placement.models.mc.greedy import HEURISTICS
from placement.models.mc.instance import AMC_RTB, MIN_CORES, McCore, McInstance, McTask
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import ExactContext, exact_backends, instance_from_document
from tests.test_bench import placement

EXACT = exact_backends()
IDS = [b[0] + b[1] for b in EXACT]


def _doc(tasks: list[dict], cores: int = 1, **mc: object) -> dict:
    return {
        "name": "t",
        "description": "",
        "mc": {
            "tasks": tasks,
            "cores": [{"name": f"c{k}"} for k in range(cores)],
            "test": "AMC_RTB",
            **mc,
        },
    }


def _lo(name: str, period: int, budget: int, **kw: object) -> dict:
    return {"name": name, "period": period, "criticality": "LO", "budget_lo": budget, **kw}


def _hi(name: str, period: int, lo: int, hi: int, **kw: object) -> dict:
    return {
        "name": name,
        "period": period,
        "criticality": "HI",
        "budget_lo": lo,
        "budget_hi": hi,
        **kw,
    }


def _inst(tasks: list[dict], cores: int = 1, **mc: object) -> McInstance:
    return instance_from_document(_doc(copy.deepcopy(tasks), cores, **mc))


# a LO (C 1, T 4, D 3); b HI (C 2 | 3, T 10); c HI (C 1 | 2, T 20).
PASSING = [_lo("a", 4, 1, deadline=3), _hi("b", 10, 2, 3), _hi("c", 20, 1, 2)]
# a LO (C 2, T 3); b HI (C 2 | 5, T 8): U_LO = 2/3 + 1/4, U_HI^HI = 5/8, yet no order passes.
FAILING = [_lo("a", 3, 2), _hi("b", 8, 2, 5)]
# l LO (C 2, T 5); h HI (C 2 | 9, T 10): passes only with h above l (not deadline-monotonic).
NOT_DM = [_lo("l", 5, 2), _hi("h", 10, 2, 9)]


# --- AMC-rtb by hand ----------------------------------------------------------------------


def test_a_core_passes_amc_rtb_by_hand() -> None:
    """Lowest level: c below {a, b}: R_LO = 1 + ceil(4/4) 1 + ceil(4/10) 2 = 4 <= 20;
    R* = 2 + ceil(4/4) 1 (a, LO, up to R_LO) + ceil(6/10) 3 = 6 <= 20. Then b below a:
    R_LO = 2 + ceil(3/4) 1 = 3, R* = 3 + ceil(3/4) 1 = 4 <= 10. Then a alone: 1 <= 3."""
    inst = _inst(PASSING)
    on = amcrtb.jobs(inst, [0, 1, 2], Fraction(1))
    a, b, c = on
    assert amcrtb.response_lo(c, [a, b]) == 4
    assert amcrtb.response_star(c, [a, b], 4) == 6
    assert amcrtb.response_lo(b, [a]) == 3
    assert amcrtb.response_star(b, [a], 3) == 4
    assert amcrtb.priority_order(inst, [0, 1, 2], Fraction(1)) == [0, 1, 2]
    # The checker tries the lowest level in index order: b fits there too (R_LO = 4, R* = 3 +
    # ceil(4/4) 1 + ceil(6/20) 2 = 6 <= 10), then a below c: another valid assignment.
    assert amc_rtb_order(inst, [0, 1, 2], Fraction(1)) == [2, 0, 1]
    report = FAMILY.check(inst, McSolution((0, 0, 0)))
    assert report.feasible, report.violations
    assert report.terms == {"dropped_cost": 0.0, "cores_used": 1.0}
    message = FAMILY.solution_to_message(inst, McSolution((0, 0, 0)))
    assert list(message.cores[0].priority_order) == ["c", "a", "b"]


def test_a_core_fails_amc_rtb_by_hand_and_the_checker_rejects_it() -> None:
    """a lowest: R_LO = 2 + ceil(4/8) 2 = 4 > D = 3. b lowest: R_LO = 2 + ceil(6/3) 2 = 6,
    R* = 5 + ceil(6/3) 2 = 9 > 8. Both utilisation conditions hold (the master's rows)."""
    inst = _inst(FAILING, cores=2)
    a, b = amcrtb.jobs(inst, [0, 1], Fraction(1))
    assert amcrtb.response_lo(a, [b]) is None
    assert amcrtb.response_lo(b, [a]) == 6
    assert amcrtb.response_star(b, [a], 6) is None
    assert amcrtb.priority_order(inst, [0, 1], Fraction(1)) is None
    assert amc_rtb_order(inst, [0, 1], Fraction(1)) is None
    report = FAMILY.check(inst, McSolution((1, 1)))
    assert not report.feasible
    assert report.violations == [
        "core 'c1' fails AMC-rtb under every priority assignment (Audsley)"
    ]
    assert FAMILY.check(inst, McSolution((0, 1))).feasible


def test_audsley_finds_an_order_that_is_not_deadline_monotonic() -> None:
    """Deadline-monotonic puts l (D 5) above h (D 10): h's R_LO = 2 + ceil(4/5) 2 = 4 and
    R* = 9 + ceil(4/5) 2 = 11 > 10. The other order: h alone R* = 9 <= 10, and l below h,
    R_LO = 2 + ceil(4/10) 2 = 4 <= 5."""
    inst = _inst(NOT_DM)
    l_, h = amcrtb.jobs(inst, [0, 1], Fraction(1))
    assert amcrtb.response_star(h, [l_], amcrtb.response_lo(h, [l_])) is None
    assert amcrtb.response_lo(l_, [h]) == 4
    assert amcrtb.priority_order(inst, [0, 1], Fraction(1)) == [1, 0]
    assert amc_rtb_order(inst, [0, 1], Fraction(1)) == [1, 0]
    assert [t.priority_order for t in core_tests(inst, McSolution((0, 0)))] == [("h", "l")]
    assert FAMILY.check(inst, McSolution((0, 0))).feasible
    # EDF-VD rejects the same core (x = 0.2 / 0.6, x 0.4 + 0.9 > 1): the test is the instance's.
    edf = McInstance(inst.tasks, inst.cores, MIN_CORES, test="edf_vd")
    assert not FAMILY.check(edf, McSolution((0, 0))).feasible


def test_a_slower_core_scales_the_budgets_exactly() -> None:
    """On a core of speed 1/2 budgets double: a (C 2, T 4, D 3), b (C 4 | 6, T 10). a below
    b: R_LO = 2 + 4 = 6 > 3. b below a: R_LO = 4 + ceil(R/4) 2 -> 8 (4 + 2*2 = 8), R* = 6 +
    ceil(8/4) 2 = 10 <= 10: passes at exactly the deadline, with a on top. At speed 0.499 the
    same fails."""
    inst = _inst(PASSING)
    a, b = amcrtb.jobs(inst, [0, 1], Fraction(1, 2))
    assert (a.c_lo, b.c_hi, a.period, a.deadline) == (2, 6, 4, 3)  # budgets x 2 (speed 1/2)
    half = Fraction(1, 2)
    assert amcrtb.priority_order(inst, [0, 1], half) == [0, 1]
    assert amc_rtb_order(inst, [0, 1], half) == [0, 1]
    slower = Fraction(499, 1000)
    assert amcrtb.priority_order(inst, [0, 1], slower) is None
    assert amc_rtb_order(inst, [0, 1], slower) is None


def _random_core(rng: random.Random) -> tuple[McInstance, Fraction]:
    tasks = []
    for i in range(rng.randint(1, 4)):
        period = rng.randint(2, 30)
        lo = rng.randint(1, max(1, period // 3))
        deadline = rng.randint(lo, period)
        if rng.random() < 0.5:
            hi = rng.randint(lo, min(period, 3 * lo))
            tasks.append(McTask(f"t{i}", period, lo, hi, True, deadline=deadline))
        else:
            tasks.append(McTask(f"t{i}", period, lo, lo, False, deadline=deadline))
    speed = rng.choice([Fraction(1), Fraction(1, 2), Fraction(3, 4), Fraction(5, 4)])
    inst = McInstance(tasks, [McCore("c0", float(speed))], MIN_CORES, test=AMC_RTB)
    return inst, speed


def _brute_force(inst: McInstance, speed: Fraction) -> bool:
    """Some priority order passes: every task meets AMC-rtb below the tasks before it."""
    jobs = amcrtb.jobs(inst, list(range(len(inst.tasks))), speed)
    return any(
        all(amcrtb.passes_at_lowest(order[p], list(order[:p])) for p in range(len(order)))
        for order in itertools.permutations(jobs)
    )


def test_audsley_is_optimal_and_the_two_implementations_agree() -> None:
    """On 1,500 random cores (constrained deadlines, four speeds): OPA passes iff some of
    the n! priority orders does, and the checker's rational implementation agrees."""
    rng = random.Random(22)
    verdicts = []
    for _ in range(1500):
        inst, speed = _random_core(rng)
        tasks = list(range(len(inst.tasks)))
        mine = amcrtb.priority_order(inst, tasks, speed)
        theirs = amc_rtb_order(inst, tasks, speed)
        assert (mine is None) == (theirs is None) == (not _brute_force(inst, speed)), inst
        verdicts.append(mine is not None)
    assert 0.2 < sum(verdicts) / len(verdicts) < 0.9  # both verdicts well represented


# --- the exact backends: master + no-good loop --------------------------------------------


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=IDS)
def test_a_set_the_utilisation_rows_admit_is_proved_unschedulable(
    backend: str, milp_solver: str
) -> None:
    """FAILING plus a small third task on one core: the master's utilisation rows accept it,
    OPA does not; the cut (the minimal failing subset {a, b}) makes the master infeasible."""
    inst = _inst([*FAILING, _lo("z", 100, 1)])
    options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
    ctx = ExactContext(inst, options)
    encoding = FAMILY.exact(ctx.backend)
    encoding.colgen = False  # the compact model's own loop
    outcome = ctx.run(encoding)
    assert outcome.proven_infeasible, outcome.message
    assert "alone" not in outcome.message, outcome.message  # no task fails alone
    assert "no priority assignment passes AMC-rtb" in outcome.message, outcome.message
    assert encoding.last_stats["nogoods"] == 1
    result = solve(inst, options)
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert result.stop_reason == StopReason.PROVEN


def test_the_cut_is_a_minimal_failing_subset() -> None:
    inst = _inst([*FAILING, _lo("z", 100, 1)])
    assert amcrtb.minimal_failing(inst, [0, 1, 2], Fraction(1)) == [0, 1]


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=IDS)
def test_the_exact_backends_match_enumeration_on_random_amc_sets(
    backend: str, milp_solver: str
) -> None:
    """Generated 7-task sets on 3 cores at several loads: the proved minimum of cores_used
    (or the proof of unschedulability) equals the enumeration of all 3^7 assignments with the
    checker."""
    # Enumerated optima: 2, 3 cores and unschedulable (one each).
    for seed, u in [(1, 0.55), (0, 0.65), (2, 0.75)]:
        inst = generate(7, 3, u, seed, criticality_factor_max=4.0, test=AMC_RTB)
        inst = instance_from_document({"name": "g", "description": "", "mc": _message_dict(inst)})
        best = None
        for combo in itertools.product(range(3), repeat=7):
            report = FAMILY.check(inst, McSolution(combo))
            if report.feasible:
                used = report.terms["cores_used"]
                best = used if best is None else min(best, used)
        options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
        result = solve(inst, options)
        if best is None:
            assert result.status == SolutionStatus.INFEASIBLE, (seed, result.message)
        else:
            assert result.status == SolutionStatus.OPTIMAL, (seed, result.message)
            assert result.objective_terms["cores_used"] == best, seed


def _message_dict(inst: McInstance) -> dict:
    from google.protobuf.json_format import MessageToDict  # test helper only

    return MessageToDict(FAMILY.instance_to_message(inst), preserving_proto_field_name=True)


# --- heuristics ---------------------------------------------------------------------------


def test_every_heuristic_places_only_on_cores_that_pass_amc_rtb() -> None:
    placed = 0
    for seed in range(12):
        inst = generate(16, 4, 0.75, seed, criticality_factor_max=4.0, test=AMC_RTB)
        for name, heuristic in HEURISTICS.items():
            solution = heuristic(inst)
            if solution is None:
                continue
            placed += 1
            report = FAMILY.check(inst, solution)
            assert report.feasible, (name, seed, report.violations)
    assert placed > 20


def test_a_heuristic_uses_opa_not_deadline_monotonic_order() -> None:
    """NOT_DM on one core: every heuristic must find the one-core placement."""
    inst = _inst(NOT_DM)
    for name, heuristic in HEURISTICS.items():
        assert heuristic(inst) == McSolution((0, 0)), name
    assert CoreLoad(Fraction(1)).fits(inst, 1)


# --- the instance's fields ----------------------------------------------------------------


def test_constrained_deadlines_are_accepted_under_amc_rtb_only() -> None:
    inst = _inst([_lo("a", 10, 2, deadline=5)])
    assert inst.test == AMC_RTB and inst.objective == MIN_CORES
    assert inst.tasks[0].relative_deadline == 5
    edf = _doc([_lo("a", 10, 2, deadline=5)])
    del edf["mc"]["test"]
    with pytest.raises(InputError) as info:
        instance_from_document(edf)
    assert "AMC_RTB allows constrained deadlines" in str(info.value)


@pytest.mark.parametrize(
    ("tasks", "mc", "path", "expected"),
    [
        ([_lo("a", 10, 2, deadline=11)], {}, "mc.tasks[0].deadline", "1..period"),
        ([_lo("a", 10, 2, deadline=-1)], {}, "mc.tasks[0].deadline", "an integer in [0, 1e12]"),
        (
            [_lo("a", 10, 2)],
            {"objective": "MAX_MIN_SLACK"},
            "mc.objective",
            "MIN_CORES (or unset) under test AMC_RTB",
        ),
    ],
)
def test_a_bad_amc_field_names_itself(tasks: list, mc: dict, path: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        _inst(tasks, **mc)
    assert any(e.path == path and expected in e.expected for e in info.value.errors), str(
        info.value
    )


def test_the_test_and_deadlines_survive_the_message() -> None:
    inst = _inst(PASSING)
    back = FAMILY.instance_from_message(FAMILY.instance_to_message(inst))
    assert back.test == AMC_RTB
    assert [t.relative_deadline for t in back.tasks] == [3, 10, 20]


def test_the_generator_writes_an_amc_rtb_instance(tmp_path: Path) -> None:
    out = tmp_path / "amc.json"
    proc = placement(
        "generate", "mc", "--tasks", "8", "--cores", "2", "--utilisation", "0.6",
        "--test", "amc_rtb", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["mc"]["test"] == "AMC_RTB" and doc["mc"]["objective"] == "MIN_CORES"
    assert "--test amc_rtb" in doc["description"]
    proc = placement("solve", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result["objective_terms"]) == {"dropped_cost", "cores_used"}
    orders = [c.get("priority_order", []) for c in result["solution"]["mc"]["cores"]]
    assert sorted(name for order in orders for name in order) == [f"t{i:03d}" for i in range(8)]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"test": "amc"}, "mc.test: got 'amc', expected edf_vd or amc_rtb"),
        ({"test": AMC_RTB}, "mc.objective: got 'MAX_MIN_SLACK', expected MIN_CORES (or unset)"),
    ],
)
def test_an_instance_built_in_code_names_a_bad_test(kw: dict, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        solve(McInstance([McTask("a", 10, 2, 2)], [McCore("c")], **kw))
