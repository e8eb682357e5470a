"""The mc family beyond the contract test: EDF-VD computed by hand, the checker, exactness
of the encodings at the edge of the test, input errors, the generator."""

from __future__ import annotations

import copy
import random
from fractions import Fraction

import pytest

from placement.models.mc import FAMILY, McSolution
from placement.models.mc.check import edf_vd
from placement.models.mc.edfvd import passes, slack
from placement.models.mc.encoding import build_tables
from placement.models.mc.generate import generate
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import ExactContext, exact_backends, instance_from_document
from tests import optima

EXACT = exact_backends()


def _doc(tasks: list[dict], cores: int = 1) -> dict:
    return {
        "name": "t",
        "description": "",
        "mc": {"tasks": tasks, "cores": [{"name": f"c{k}"} for k in range(cores)]},
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


def _one_core(hi_lo_budget: int) -> object:
    """L = 1/2, U_HI^HI = 600/1000, U_HI^LO = hi_lo_budget/1000 on one core: the slack is
    (1/2)(1 - 0.6) - (1/2) U_HI^LO = (1/2)(0.4 - U_HI^LO)."""
    return instance_from_document(_doc([_lo("lo", 2, 1), _hi("hi", 1000, hi_lo_budget, 600)]))


# --- EDF-VD by hand -----------------------------------------------------------------------


def test_edf_vd_by_hand_passes_with_virtual_deadlines() -> None:
    # L = 0.5, U_HI^LO = 0.2, U_HI^HI = 0.6: L + U_HI^HI = 1.1 > 1 (plain EDF fails);
    # x = 0.2 / 0.5 = 0.4, x L + U_HI^HI = 0.8 <= 1; slack (0.5)(0.4) - (0.5)(0.2) = 0.1.
    inst = instance_from_document(_doc([_lo("lo", 10, 5), _hi("hi", 10, 2, 6)]))
    report = FAMILY.check(inst, McSolution((0, 0)))
    assert report.feasible, report.violations
    assert report.terms == {"dropped_cost": 0.0, "min_slack": pytest.approx(0.1, abs=1e-15)}
    assert edf_vd(Fraction(1, 2), Fraction(1, 5), Fraction(3, 5)) == (True, "edf-vd")


def test_edf_vd_passes_at_exactly_zero_slack_and_fails_by_a_hair() -> None:
    # 400/1000: x = 0.4 / 0.5 = 0.8, x L + U_HI^HI = 0.4 + 0.6 = 1 exactly: passes, slack 0.
    at_edge = _one_core(400)
    report = FAMILY.check(at_edge, McSolution((0, 0)))
    assert report.feasible and report.terms["min_slack"] == 0.0
    # 401/1000: x L + U_HI^HI = 1.001 > 1: fails by 1/2000 of slack.
    over = _one_core(401)
    report = FAMILY.check(over, McSolution((0, 0)))
    assert not report.feasible
    assert report.violations == [
        "core 'c0' fails EDF-VD: U_LO^LO = 0.5, U_HI^LO = 0.401, U_HI^HI = 0.6"
    ]
    assert slack(Fraction(1, 2), Fraction(401, 1000), Fraction(3, 5)) == Fraction(-1, 2000)


def test_the_polynomial_form_is_the_papers_two_cases() -> None:
    """edfvd.passes ((1-L)(1-HH) >= L HL, L <= 1, HH <= 1) decides as the checker's two cases
    of Baruah et al. on random and edge sums."""
    rnd = random.Random(7)
    grid = [Fraction(k, 20) for k in range(0, 25)]
    triples = [(a, b, c) for a in grid for b in grid for c in grid if b <= c]
    triples += [
        tuple(sorted(Fraction(rnd.randint(0, 1200), 1000) for _ in range(2))) for _ in range(3000)
    ]
    for t in triples:
        if len(t) == 2:
            lo = Fraction(rnd.randint(0, 1200), 1000)
            hi_lo, hi_hi = t
        else:
            lo, hi_lo, hi_hi = t
        assert passes(lo, hi_lo, hi_hi) == edf_vd(lo, hi_lo, hi_hi)[0], (lo, hi_lo, hi_hi)


def test_the_checker_rejects_a_core_that_fails_its_test() -> None:
    # Two HI tasks of U_HI^HI 0.6 each: fine apart, failing together (U_HI^HI = 1.2).
    inst = instance_from_document(_doc([_hi("a", 10, 3, 6), _hi("b", 10, 3, 6)], cores=2))
    assert FAMILY.check(inst, McSolution((0, 1))).feasible
    report = FAMILY.check(inst, McSolution((1, 1)))
    assert not report.feasible
    assert report.violations == [
        "core 'c1' fails EDF-VD: U_LO^LO = 0, U_HI^LO = 0.6, U_HI^HI = 1.2"
    ]
    # A dropped task that may not be dropped, and a pinned task elsewhere.
    assert "may not be" in FAMILY.check(inst, McSolution((-1, 1))).violations[0]


# --- exactness of the encodings -----------------------------------------------------------


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=[b[0] + b[1] for b in EXACT])
def test_a_set_failing_by_a_hair_is_proved_unschedulable(backend: str, milp_solver: str) -> None:
    inst = _one_core(401)
    result = solve(
        inst, SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
    )
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert result.stop_reason == StopReason.PROVEN
    assert "proved unschedulable" in result.message
    assert "fails EDF-VD alone" not in result.message
    # The same at the edge passes (slack exactly 0), proved optimal.
    result = solve(
        _one_core(400),
        SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.objective_terms["min_slack"] == 0.0


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=[b[0] + b[1] for b in EXACT])
def test_rounded_coefficients_never_accept_a_failing_core(backend: str, milp_solver: str) -> None:
    """Periods whose common denominator exceeds 10^6: the model rounds optimistically and
    lets the pair through (its rounded slack is 0); the exact check cuts it off and the
    encoding proves the set unschedulable."""
    inst = instance_from_document(
        _doc([_lo("lo", 2, 1), _hi("hi", 5, 2, 3), _hi("hair", 1_000_003, 1, 1)])
    )
    # lo 0.5, hi 0.4 | 0.6, hair 1e-6 | 1e-6: slack (0.5)(0.4 - 1e-6) - (0.5)(0.4 + 1e-6) < 0.
    assert not FAMILY.check(inst, McSolution((0, 0, 0))).feasible
    tables = build_tables(inst)
    assert not tables.exact
    options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
    ctx = ExactContext(inst, options)
    encoding = FAMILY.exact(ctx.backend)
    encoding.colgen = False  # the compact model's own exactness loop
    outcome = ctx.run(encoding)
    assert outcome.proven_infeasible, outcome.message
    assert ctx.best is None and not ctx.rejected
    assert encoding.last_stats["nogoods"] >= 1  # the exactness loop cut the pair off
    # Column generation prices with the exact test and proves it as well.
    ctx = ExactContext(inst, options)
    encoding = FAMILY.exact(ctx.backend)
    outcome = ctx.run(encoding)
    assert outcome.proven_infeasible and "configuration LP" in outcome.message, outcome.message
    assert ctx.best is None and not ctx.rejected


# --- input errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "path", "expected"),
    [
        (_lo("x", 10, 11), "mc.tasks[0].budget_lo", "1..period"),
        (_hi("x", 10, 5, 4), "mc.tasks[0].budget_hi", "budget_lo..period"),
        (_lo("x", 10, 2, deadline=5), "mc.tasks[0].deadline", "implicit deadlines"),
        (_hi("x", 10, 2, 4, drop_cost=3), "mc.tasks[0].drop_cost", "0 for a HI task"),
        (_lo("x", 10, 2, pinned_core="nope"), "mc.tasks[0].pinned_core", "a core's name"),
        (_lo("x", 0, 2), "mc.tasks[0].period", "an integer in [1, 1e12] (time units)"),
        (_lo("x", 10**13, 2), "mc.tasks[0].period", "an integer in [1, 1e12] (time units)"),
        (_lo("x", 10, 2, drop_cost=-1), "mc.tasks[0].drop_cost", "an integer in [0, 1e12]"),
    ],
)
def test_a_bad_task_names_its_field(task: dict, path: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        instance_from_document(_doc([copy.deepcopy(task)]))
    assert any(e.path == path and expected in e.expected for e in info.value.errors), str(
        info.value
    )


# --- the generator ------------------------------------------------------------------------


def test_the_generator_is_seeded_and_meets_the_normalised_bound() -> None:
    a, b = generate(20, 4, 0.8, seed=3), generate(20, 4, 0.8, seed=3)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(generate(20, 4, 0.8, seed=4))
    lo_mode = sum(float(t.u_lo) for t in a.tasks)
    hi_mode = sum(float(t.u_hi) for t in a.tasks if t.hi)
    # Budgets are whole microseconds of periods >= 10 ms: within 20 x 1e-4 of the bound.
    assert max(lo_mode, hi_mode) / 4 == pytest.approx(0.8, abs=20 * 1e-4)
    assert any(t.hi for t in a.tasks) and not all(t.hi for t in a.tasks)
    with pytest.raises(InputError, match="utilisation"):
        generate(4, 8, 0.9)


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=[b[0] + b[1] for b in EXACT])
def test_a_task_too_big_for_every_core_is_explained(backend: str, milp_solver: str) -> None:
    # 'big' needs 0.9 | 1.2 of a unit core: HH > 1 alone; the fast core is excluded for it.
    doc = _doc([_hi("big", 10, 9, 12, excluded_cores=["fast"]), _lo("x", 10, 1)])
    doc["mc"]["cores"] = [{"name": "slow"}, {"name": "fast", "speed": 2.0}]
    doc["mc"]["tasks"][0]["budget_hi"] = 10  # C(HI) <= T: 0.9 | 1.0 passes alone on slow
    doc["mc"]["tasks"][0]["budget_lo"] = 9
    inst = instance_from_document(doc)
    assert FAMILY.check(inst, McSolution((0, 1))).feasible
    doc["mc"]["cores"][0]["speed"] = 0.5  # now 1.8 | 2.0 on slow: fails alone everywhere
    inst = instance_from_document(doc)
    options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
    result = solve(inst, options)
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert "task 'big'" in result.message and "alone on every core" in result.message


def test_a_dropped_task_is_explained_in_the_result_and_the_solution_file() -> None:
    inst = optima.instance("mc", "drop_the_cheapest")
    result = solve(inst, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert [(r["name"], r["kind"], r["drop_cost"]) for r in result.unplaced] == [
        ("small", "crowded_out", 3)
    ]
    assert "c0: 0.6, 0.3, 0.7" in result.unplaced[0]["message"]
    section = FAMILY.solution_to_dict(inst, result.solution, result.unplaced)
    assert section["dropped"] == ["small"]
    assert section["unplaced"][0]["kind"] == "crowded_out"
