"""What the family contract (tests/test_family_contract.py) cannot say for every family: a
family's own algorithms and published examples, on the same known-optimum data
(``tests/data/optima/<family>.json``).
"""

from __future__ import annotations

import pytest

from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.testing import ExactContext, exact_backends, round_trip
from tests import optima

# --- gpu ----------------------------------------------------------------------------------


def test_deterministic_mode_reproduces_a_gpu_solve() -> None:
    from placement.models.gpu.generate import generate

    instance = generate(128, 40, 5)
    options = SolveOptions(backend="cpsat", time_limit_s=2, deterministic=True, seed=3)
    a, b = solve(instance, options), solve(instance, options)
    assert a.objective_terms == b.objective_terms
    assert a.solution.placements == b.solution.placements


# --- dag ----------------------------------------------------------------------------------

DAG = optima.cases("dag")


@pytest.mark.parametrize("case", DAG, ids=[c.name for c in DAG])
def test_heft_is_the_dag_fallback(case: optima.Case) -> None:
    from placement.models.dag.greedy import greedy_solutions

    solutions = greedy_solutions(case.instance(), SolveOptions())
    assert solutions[0][0] == "heft"


def test_topcuoglu_example(shared_benchmarks) -> None:
    """The HEFT paper's example: HEFT 80, CPOP 86 (as published); the exact backends find and
    prove 73."""
    from placement.models.dag import check
    from placement.models.dag.formats.loaders import load_topcuoglu
    from placement.models.dag.greedy import greedy_solutions

    base = shared_benchmarks / "dag" / "topcuoglu-2002"
    instance = load_topcuoglu(base / "exec_time.csv", base / "edges_data.csv")
    by_name = dict(greedy_solutions(instance, SolveOptions()))
    assert check(instance, by_name["heft"]).objective == 80.0
    assert check(instance, by_name["cpop"]).objective == 86.0
    for backend, milp_solver in exact_backends():
        result = solve(
            instance,
            SolveOptions(time_limit_s=10, backend=backend, milp_solver=milp_solver, threads=1),
        )
        assert result.status == SolutionStatus.OPTIMAL, (backend, milp_solver, result.message)
        assert result.objective == 73.0
        assert result.bound == 73.0


def test_real_valued_times_are_proved_on_the_real_values() -> None:
    """Running times of 1/3 s are integral at no decimal scale. Two tasks of work 1,
    machines of speed 3 and 1: both on the fast one end at 2/3 (optimum). The counting
    bound sees it (before 2/3 the fast machine finishes one task and the slow one none), so
    the claim holds on the real values, within the checker's tolerance
    (docs/formulations/dag.md 5.1.1); a third task on the slow machine makes CP-SAT's
    rounded-down relaxation do the proof."""
    from placement.models.dag import DagEdge, DagInstance, DagMachine, DagTask, check

    instance = round_trip(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=3.0), DagMachine("slow", "s")],
            tasks=[DagTask("a", 1), DagTask("b", 1)],
        )
    )
    result = solve(instance, SolveOptions(time_limit_s=5, backend="cpsat", threads=1))
    assert check(instance, result.solution).feasible
    assert result.objective == pytest.approx(2 / 3)
    assert result.status == SolutionStatus.OPTIMAL
    assert 2 / 3 - 1e-6 <= result.bound <= 2 / 3 + 1e-12
    chain = round_trip(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=3.0), DagMachine("slow", "s", speed=0.7)],
            tasks=[DagTask("a", 1), DagTask("b", 1), DagTask("c", 0.5)],
            edges=[DagEdge("a", "c")],
        )
    )
    result = solve(chain, SolveOptions(time_limit_s=5, backend="cpsat", threads=1))
    assert check(chain, result.solution).feasible
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.objective - result.bound <= 1e-6


# --- partition ----------------------------------------------------------------------------

PARTITION = optima.cases("partition")


def _partition_encodings() -> list[type]:
    from placement.models.partition.cpsat import CpSatEncoding
    from placement.models.partition.milp import MilpEncoding

    return [CpSatEncoding, MilpEncoding]


@pytest.mark.parametrize("encoding", _partition_encodings(), ids=["cpsat", "milp"])
@pytest.mark.parametrize("case", PARTITION, ids=[c.name for c in PARTITION])
def test_partition_encodings_prove_without_the_dp(case: optima.Case, encoding: type) -> None:
    """CP-SAT and MILP prove each optimum by themselves (no DP, no incumbent)."""
    from placement.models.partition import check

    instance = case.instance()
    ctx = ExactContext(instance, SolveOptions(time_limit_s=10, threads=1))
    outcome = ctx.run(encoding(use_dp=False))
    assert outcome.proven_optimal, outcome.message
    # The case's own tolerance where it gives one (a serving plan's bound is proved to a
    # relative 1e-11 by bisection), else exact to 1e-9.
    tolerance = case.expect.get("tolerance", {"abs": 1e-9})
    assert check(instance, outcome.proven_solution).objective == pytest.approx(
        case.primary, **tolerance
    )
    assert outcome.bound == pytest.approx(case.primary, **tolerance)


STAGE_CASES = [
    c
    for c in PARTITION
    if c.document["partition"]["workload"]["mode"]
    not in ("LLM_SERVING_FLOW", "EDGE_SPLIT_QUANTIZED")
    and "serving_plan" not in c.document["partition"]["workload"]
]
"""The cases with one pipeline of stages (LLM_SERVING_FLOW places overlapping layer ranges,
a serving plan several pipelines, and QPART's request a split with bit-widths: no DP
split)."""


@pytest.mark.parametrize("case", STAGE_CASES, ids=[c.name for c in STAGE_CASES])
def test_partition_dp_is_exact(case: optima.Case) -> None:
    from placement.models.partition.dp import solve_dp

    result = solve_dp(case.instance())
    assert result.exact
    assert result.objective_ns / 1e6 == pytest.approx(case.primary, abs=1e-9)


# --- entanglement -------------------------------------------------------------------------

ENTANGLEMENT = optima.cases("entanglement")


@pytest.mark.parametrize("case", ENTANGLEMENT, ids=[c.name for c in ENTANGLEMENT])
def test_reps_rounding_is_feasible_and_no_better(case: optima.Case) -> None:
    """The REPS-style heuristic (not among the family's greedies: see its ``greedy``)."""
    from placement.models.entanglement import check
    from placement.models.entanglement.peers.reps import reps_rounding

    instance = case.instance()
    report = check(instance, reps_rounding(instance))
    assert report.feasible, report.violations
    assert report.score() <= tuple(round(v, 6) for v in case.optimum.values())


def test_qcast_greedy_misses_the_hub_optimum() -> None:
    # The instance is built so that the greedy's first choice blocks the second request.
    from placement.models.entanglement import check
    from placement.models.entanglement.greedy import qcast_greedy

    instance = optima.instance("entanglement", "hub")
    assert check(instance, qcast_greedy(instance)).objective == pytest.approx(0.81)


def test_unreachable_fidelity_is_explained() -> None:
    instance = optima.instance("entanglement", "fidelity_unreachable")
    result = solve(instance, SolveOptions(time_limit_s=5, backend="milp", threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    (reason,) = result.unplaced
    assert reason["kind"] == "fidelity_unreachable"
    assert reason["best_fidelity"] == pytest.approx((1 + 3 * ((4 * 0.99 - 1) / 3) ** 2) / 4)
    assert reason["min_fidelity"] == 0.99


def test_bundled_fidelity_instance_is_proved_optimal(repo) -> None:
    # Every usable path of every request (threshold 0.93) is a candidate: a whole-instance
    # proof, and both heuristics are feasible and no better.
    from placement.api.files import read_instance
    from placement.models.entanglement import check
    from placement.models.entanglement.greedy import qcast_greedy
    from placement.models.entanglement.peers.reps import reps_rounding

    loaded = read_instance(repo / "instances" / "entanglement" / "fidelity.json")
    instance = loaded.instance
    result = solve(instance, SolveOptions(time_limit_s=20, backend="milp", threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.gap == 0.0
    for solution in (qcast_greedy(instance), reps_rounding(instance)):
        report = check(instance, solution)
        assert report.feasible
        assert report.objective <= result.objective + 1e-9
