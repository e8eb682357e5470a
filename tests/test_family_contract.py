"""The family contract: every registered family x its known-optimum cases x every exact
backend this machine has x every greedy (in the spirit of scikit-learn's
``parametrize_with_checks`` and CVXPY's ``solver_test_helpers``).

The cases are data (``tests/data/optima/<family>.json``, see :mod:`tests.optima`); families
come from the registry (:func:`family_names`) and backends from the backend registry
(:func:`placement.solver.testing.exact_backends`), so a new family or backend is tested
without editing this file. The rules:

- through :func:`solve`, every exact backend (and ``auto``) reaches the known optimum of
  every known tier and proves it (status optimal, stop proven, gap 0, bound = optimum),
  unless the case says that backend cannot prove (then: within its gap);
- driven directly (:class:`placement.solver.testing.ExactContext`, no incumbent, no bound),
  the family's encoding finds and proves the optimum by itself, and reports only feasible
  solutions;
- every greedy solution is feasible and no better than the optimum;
- the checker agrees with all of them (the result's objective is the checker's);
- the quick bound is a valid bound;
- an instance goes to its JSON form and back unchanged;
- the checker rejects a corrupted solution;
- a bad input raises an InputError naming the field.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.family import CheckReport, family_names, get_family
from placement.solver.options import Backend
from placement.solver.testing import (
    ExactContext,
    backend_id,
    exact_backends,
    instance_document,
    instance_from_document,
)
from tests import optima
from tests.optima import Case

FAMILIES = family_names()
CASES = [c for f in FAMILIES for c in optima.cases(f)]
EXACT = exact_backends()
SOLVED = [(Backend.AUTO.value, SolveOptions().milp_solver.value), *EXACT]
"""``auto`` (the family's choice) and every installed exact backend."""


def _options(case: Case, backend: str, milp_solver: str) -> SolveOptions:
    return SolveOptions(backend=backend, milp_solver=milp_solver, **case.expect.get("options", {}))


def _approx(value: Any, case: Case) -> Any:
    return pytest.approx(value, **case.expect.get("tolerance", {}))


def _expected_backend(case: Case, backend: str, milp_solver: str) -> dict[str, Any]:
    return case.expect.get("backends", {}).get(backend_id(backend, milp_solver), {})


def _known(case: Case) -> list[tuple[str, float]]:
    """The leading tiers whose optimum is known (a tier written as null ends them)."""
    out = []
    for key, value in case.optimum.items():
        if value is None:
            break
        out.append((key, value))
    return out


def _assert_reaches_the_optimum(case: Case, report: CheckReport) -> None:
    """The checker's tiers are the case's (same names, same order) and every known one is
    at its optimum."""
    assert report.feasible, report.violations
    assert list(report.terms) == list(case.optimum)
    known = _known(case)
    reached = [report.terms[k] for k, _ in known]
    assert reached == _approx([v for _, v in known], case), report.terms


def _assert_no_better(case: Case, report: CheckReport, label: str) -> None:
    """Lexicographically no better than the optimum over the known tiers, and the primary no
    better by more than 1e-9."""
    assert list(report.terms) == list(case.optimum)
    known = _known(case)
    best = tuple(
        round(v, 6) if sense == "max" else -round(v, 6)
        for (_, v), sense in zip(known, report.senses, strict=False)
    )
    assert report.score()[: len(known)] <= best, (label, report.terms)
    if report.senses[0] == "max":
        assert report.objective <= case.primary + 1e-9, label
    else:
        assert report.objective >= case.primary - 1e-9, label


# --- every case through the portfolio, every exact backend --------------------------------


@pytest.mark.parametrize(("backend", "milp_solver"), SOLVED, ids=[backend_id(*b) for b in SOLVED])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exact_backends_reach_and_prove_the_optimum(
    case: Case, backend: str, milp_solver: str
) -> None:
    family = get_family(case.family)
    instance = case.instance()
    result = solve(instance, _options(case, backend, milp_solver))
    assert result.solution is not None, result.message
    report = family.check(instance, result.solution)
    _assert_reaches_the_optimum(case, report)
    # The result's objective is the checker's.
    assert result.objective_terms == report.terms
    assert result.objective == report.objective
    expected = _expected_backend(case, backend, milp_solver)
    if expected.get("proves", True):
        assert result.status == SolutionStatus.OPTIMAL, result.message
        assert result.stop_reason == StopReason.PROVEN
        assert result.gap == 0
        assert result.bound == pytest.approx(case.primary)
        assert result.bound == _approx(case.primary, case)
    elif result.status == SolutionStatus.OPTIMAL:
        # The backend cannot prove it, but the portfolio skipped it: a heuristic met the bound.
        assert result.gap == 0 and result.bound == _approx(case.primary, case), result.message
    else:
        assert result.status == SolutionStatus.FEASIBLE, result.message
        assert result.gap is not None and result.gap <= expected["gap_at_most"]


# --- every case, the family's encoding driven directly ------------------------------------


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=[backend_id(*b) for b in EXACT])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_encodings_search_and_prove_without_a_hint(
    case: Case, backend: str, milp_solver: str
) -> None:
    """Without a heuristic incumbent or a bound (the portfolio skips the search when a
    heuristic meets the bound), the encoding itself must find and prove the optimum."""
    instance = case.instance()
    ctx = ExactContext(instance, _options(case, backend, milp_solver))
    raises = case.expect.get("direct", {}).get(backend)
    if raises is not None:
        # The case says the encoding refuses this instance, and how.
        with pytest.raises(Exception, match=raises["match"]) as info:
            ctx.run()
        assert type(info.value).__name__ == raises["raises"]
        return
    outcome = ctx.run()
    assert not ctx.rejected, ctx.rejected
    assert all(report.feasible for _, report in ctx.reports)
    expected = _expected_backend(case, backend, milp_solver)
    if not expected.get("proves", True):
        assert not outcome.proven_optimal or outcome.proven_solution is not None
        if ctx.best_report is not None:
            _assert_no_better(case, ctx.best_report, "best report")
        return
    assert outcome.proven_optimal, outcome.message
    assert outcome.stop_reason == StopReason.PROVEN
    family = get_family(case.family)
    _assert_reaches_the_optimum(case, family.check(instance, outcome.proven_solution))
    assert outcome.bound == _approx(case.primary, case)
    # The best solution reported on the context is the optimum.
    assert ctx.best_report is not None
    assert ctx.best_report.objective == _approx(case.primary, case)


# --- every greedy -------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_greedy_is_feasible_and_no_better_than_the_optimum(case: Case) -> None:
    family = get_family(case.family)
    instance = case.instance()
    may_violate = case.expect.get("greedy_may_violate")
    solutions = list(family.greedy(instance, SolveOptions()))
    assert solutions
    for name, solution in solutions:
        report = family.check(instance, solution)
        if may_violate is not None and not report.feasible:
            # The case says this kind of constraint is beyond the heuristics; the checker
            # must name it.
            assert any(v.startswith(may_violate["prefix"]) for v in report.violations), name
            continue
        assert report.feasible, (name, report.violations)
        _assert_no_better(case, report, name)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_quick_bound_is_a_valid_bound(case: Case) -> None:
    family = get_family(case.family)
    instance = case.instance()
    bound = family.quick_bound(instance)
    if bound is None:
        return
    if family.objective_sense(instance) == "max":
        assert bound >= case.primary - 1e-9
    else:
        assert bound <= case.primary + 1e-9


# --- the JSON form ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_instance_goes_to_json_and_back_unchanged(case: Case) -> None:
    family = get_family(case.family)
    instance = case.instance()
    document = instance_document(instance)
    # The data file holds the family's own JSON form: writing it gives the same section.
    assert document[case.family] == case.document[case.family]
    back = instance_from_document(json.loads(json.dumps(document)))
    assert type(back) is type(instance)
    assert family.instance_to_dict(back) == family.instance_to_dict(instance)
    assert (back.name, getattr(back, "description", "")) == (
        instance.name,
        getattr(instance, "description", ""),
    )
    # The same instance to the checker: the same objective for the same solution.
    _, solution = next(iter(family.greedy(instance, SolveOptions())))
    assert family.check(back, solution).terms == family.check(instance, solution).terms


def _first_number(section: Any, path: str) -> tuple[str, list[Any]] | None:
    """The JSON path and (container, key) of the first number in a family section."""
    items = section.items() if isinstance(section, dict) else enumerate(section)
    for key, value in items:
        here = f"{path}.{key}" if isinstance(section, dict) else f"{path}[{key}]"
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            return here, [section, key]
        if isinstance(value, dict | list):
            found = _first_number(value, here)
            if found is not None:
                return found
    return None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_names_the_field(case: Case) -> None:
    # An unknown field inside the family section.
    document = copy.deepcopy(case.document)
    document[case.family]["no_such_field"] = 1
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    assert any(e.path == f"{case.family}.no_such_field" for e in info.value.errors), str(info.value)
    # A number written as a word.
    document = copy.deepcopy(case.document)
    found = _first_number(document[case.family], case.family)
    assert found is not None
    path, (container, key) = found
    container[key] = "many"
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    assert any(e.path == path for e in info.value.errors), (path, str(info.value))


# --- the checker rejects corrupted solutions ------------------------------------------------


def test_every_family_has_cases_and_a_corruption() -> None:
    """A registered family without known-optimum data or a corruption (``Family.corrupt``)
    is not tested."""
    for name in FAMILIES:
        assert optima.cases(name), f"no tests/data/optima/{name}.json"
        case = optima.cases(name)[0]
        family, instance = get_family(name), case.instance()
        _, solution = next(iter(family.greedy(instance, SolveOptions())))
        assert family.corrupt(instance, solution) is not None, f"{name}: no Family.corrupt"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_checker_rejects_a_corrupted_solution(case: Case) -> None:
    family = get_family(case.family)
    instance = case.instance()
    for name, solution in family.greedy(instance, SolveOptions()):
        before = family.check(instance, solution)
        after = family.check(instance, family.corrupt(instance, solution))
        assert not after.feasible, (name, before.feasible)
        assert after.violations


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_solution_given_back_as_a_warm_start_is_kept_whole(case: Case) -> None:
    """``Family.adapt_start`` of a feasible solution's own message, for the same instance,
    keeps every piece, drops nothing, and the checker accepts it at least as well."""
    family = get_family(case.family)
    instance = case.instance()
    for name, solution in family.greedy(instance, SolveOptions()):
        report = family.check(instance, solution)
        if not report.feasible:
            continue
        adapted = family.adapt_start(instance, family.solution_to_message(instance, solution))
        assert adapted.solution is not None and not adapted.dropped, (name, adapted.dropped)
        assert adapted.kept == adapted.pieces, name
        again = family.check(instance, adapted.solution)
        assert again.feasible, (name, again.violations)
        assert again.score() >= report.score(), name
        break
