"""Column generation for the mc family (models/mc/colgen.py): the bounds and proofs of the
configuration LP against enumeration of every assignment, the pricing against enumeration of
every task set, and a set that the configuration LP proves unschedulable while the compact
model's linear relaxation admits it."""

from __future__ import annotations

import itertools
import math
import random
import time
from fractions import Fraction

import pytest

from placement.models.mc import FAMILY, McCore, McInstance, McSolution, McTask, colgen
from placement.models.mc.check import amc_rtb_order, edf_vd
from placement.models.mc.encoding import build_tables
from placement.models.mc.generate import generate
from placement.models.mc.instance import AMC_RTB, EDF_VD, MIN_CORES
from placement.models.mc.milp import build_milp
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.cancel import CancellationToken
from placement.solver.testing import ExactContext, exact_backends

EXACT = exact_backends()


def _verdict(inst: McInstance, tasks: frozenset[int], speed: Fraction) -> bool:
    """The independent checker's verdict on one core (models/mc/check.py)."""
    if inst.test == AMC_RTB:
        return amc_rtb_order(inst, sorted(tasks), speed) is not None
    lo = sum((inst.tasks[i].u_lo for i in tasks if not inst.tasks[i].hi), Fraction(0)) / speed
    hl = sum((inst.tasks[i].u_lo for i in tasks if inst.tasks[i].hi), Fraction(0)) / speed
    hh = sum((inst.tasks[i].u_hi for i in tasks if inst.tasks[i].hi), Fraction(0)) / speed
    return edf_vd(lo, hl, hh)[0]


def _enumerate(inst: McInstance) -> tuple[int | None, int | None]:
    """(fewest cores used, least dropped cost) over every schedule, (None, None) if none."""
    n, m = len(inst.tasks), len(inst.cores)
    choices = [
        [k for k in range(m) if inst.allowed(i, k)] + ([-1] if t.droppable else [])
        for i, t in enumerate(inst.tasks)
    ]
    cache: dict[tuple[int, frozenset[int]], bool] = {}
    cores_best = drop_best = None
    for combo in itertools.product(*choices):
        ok = True
        for k in range(m):
            tasks = frozenset(i for i in range(n) if combo[i] == k)
            key = (k, tasks)
            if key not in cache:
                cache[key] = _verdict(inst, tasks, inst.cores[k].speed_exact)
            if not cache[key]:
                ok = False
                break
        if not ok:
            continue
        used = len({k for k in combo if k >= 0})
        dropped = sum(inst.tasks[i].drop_cost for i in range(n) if combo[i] == -1)
        cores_best = used if cores_best is None else min(cores_best, used)
        drop_best = dropped if drop_best is None else min(drop_best, dropped)
    return cores_best, drop_best


def _random_instance(rng: random.Random, test: str, capacity: bool) -> McInstance:
    """A small random set (exact utilisations with small denominators); ``capacity``: core
    speeds, a pinned or excluded task, and droppable LO tasks (several core types)."""
    n, m = rng.randint(4, 6), rng.choice([2, 3])
    tasks = []
    for i in range(n):
        period = rng.randint(4, 16)
        hi = rng.random() < 0.5
        lo = rng.randint(1, max(1, period // 2))
        high = rng.randint(lo, period) if hi else lo
        drop = rng.randint(1, 9) if capacity and not hi and rng.random() < 0.5 else 0
        tasks.append(McTask(f"t{i}", period, lo, high, hi, drop_cost=drop))
    cores = [McCore(f"c{k}") for k in range(m)]
    if capacity:
        cores[0] = McCore("c0", rng.choice([0.5, 1.5, 2.0]))
        t = tasks[0]
        tasks[0] = McTask(t.name, t.period, t.budget_lo, t.budget_hi, t.hi, pinned=m - 1)
        t = tasks[1]
        tasks[1] = McTask(
            t.name,
            t.period,
            t.budget_lo,
            t.budget_hi,
            t.hi,
            excluded=frozenset({0}),
            drop_cost=t.drop_cost,
        )
    return McInstance(tasks, cores, objective=MIN_CORES, test=test)


@pytest.mark.parametrize("test", [EDF_VD, AMC_RTB])
def test_the_bounds_never_exceed_enumeration_and_every_proof_is_true(test: str) -> None:
    """On random small sets, identical cores (cores mode) and mixed ones (capacity mode):
    whatever column generation proves holds for the enumeration of every assignment with the
    independent checker's per-core verdicts; every column passes; the integer master's
    schedules pass the checker. The loop must also prove and bound something (not vacuous)."""
    rng = random.Random(22 if test == EDF_VD else 23)
    proofs = tight = unschedulable = 0
    for trial in range(15):
        capacity = trial % 3 == 2
        inst = _random_instance(rng, test, capacity)
        cores_best, drop_best = _enumerate(inst)
        conf = colgen.configuration_bound(
            inst, time.monotonic() + 20, CancellationToken(), SolveOptions(), until_converged=True
        )
        assert conf.mode == (colgen.CAPACITY if capacity else colgen.CORES)
        for t, tasks in conf.columns:
            speed = conf.types[t].speed
            assert _verdict(inst, tasks, speed), (trial, tasks)
        unschedulable += cores_best is None
        if conf.proven_infeasible:
            proofs += 1
            assert cores_best is None, (trial, inst)
        if cores_best is not None and conf.cores_bound is not None:
            assert conf.cores_bound <= cores_best, (trial, conf.cores_bound, cores_best)
            tight += conf.cores_bound == cores_best
        if drop_best is not None and conf.drop_bound is not None:
            assert conf.drop_bound <= drop_best, (trial, conf.drop_bound, drop_best)
        if not conf.proven_infeasible:
            core_of = colgen.integer_master(
                inst, conf, time.monotonic() + 10, CancellationToken(), SolveOptions()
            )
            if core_of is not None:
                assert FAMILY.check(inst, McSolution(core_of)).feasible, trial
    assert unschedulable > 0 and proofs > 0 and tight > 0, (unschedulable, proofs, tight)


@pytest.mark.parametrize(
    ("test", "limit"), [(EDF_VD, colgen.ENUMERATION_LIMIT), (EDF_VD, 0), (AMC_RTB, 0)]
)
def test_the_pricing_bound_is_at_least_the_heaviest_passing_set(
    test: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random weights on random sets: the pricing's upper bound is at least the heaviest
    task set that passes (enumerated with the checker's verdicts), equal to it when it
    exceeds the threshold, and the first column is such a set. ``limit`` 0 sends EDF-VD to
    the CP-SAT pricing (the enumeration's fallback); AMC-rtb prices by branch and bound."""
    monkeypatch.setattr(colgen, "ENUMERATION_LIMIT", limit)
    rng = random.Random(7)
    checked = 0
    for _ in range(8):
        inst = _random_instance(rng, test, capacity=False)
        ctype = colgen.core_types(inst)[0]
        pricer = colgen.Pricer(inst, ctype)
        weights = {i: rng.randint(0, 1000) for i in ctype.tasks}
        heaviest = max(
            sum(weights[i] for i in subset)
            for r in range(len(ctype.tasks) + 1)
            for subset in itertools.combinations(ctype.tasks, r)
            if _verdict(inst, frozenset(subset), ctype.speed)
        )
        for above in (heaviest - 1, heaviest, heaviest // 2):
            priced = pricer.price(
                weights, above, time.monotonic() + 10, SolveOptions(), CancellationToken()
            )
            assert priced.upper is not None and priced.upper >= heaviest
            if heaviest > above:
                assert priced.upper == heaviest
                assert sum(weights[i] for i in priced.columns[0]) == heaviest
            for column in priced.columns:
                assert _verdict(inst, column, ctype.speed)
                assert sum(weights[i] for i in column) > above
            checked += 1
    assert checked == 24


# --- a set the configuration LP proves and the compact relaxation admits -------------------


def _three_that_pair_with_nobody() -> McInstance:
    """Two cores; a LO task (C 6, T 10) and two HI tasks (C 3 | 6, T 10). Any two fail EDF-VD
    together (two HI: U_HI^HI = 1.2; LO with HI: (1 - 0.6)(1 - 0.6) - 0.6 * 0.3 < 0), so
    three cores are needed; yet the utilisation totals fit two cores."""
    tasks = [
        McTask("lo", 10, 6, 6),
        McTask("hi_a", 10, 3, 6, hi=True),
        McTask("hi_b", 10, 3, 6, hi=True),
    ]
    return McInstance(tasks, [McCore("c0"), McCore("c1")], validated=True)


def test_the_compact_relaxation_admits_the_set() -> None:
    """A fractional point of the compact MILP (docs/formulations/mc.md, "Exact encodings")
    satisfies every row: each HI task on its own core, the LO task half on each. This is the
    relaxation the compact backends start from, so its LP cannot prove the set."""
    inst = _three_that_pair_with_nobody()
    tables = build_tables(inst)
    prob, x, _ = build_milp(tables, None, None)
    for var in prob.variables():
        var.varValue = 0.0
    # The symmetry restriction (ties in C/T by index: lo, hi_a, hi_b) puts lo on core 0:
    # lo on core 0, hi_a on core 1, hi_b half on each.
    assert set(x) == {(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)}
    x[(0, 0)].varValue = 1.0
    x[(1, 1)].varValue = 1.0
    x[(2, 0)].varValue = x[(2, 1)].varValue = 0.5
    assert all(c.valid(1e-9) for c in prob.constraints.values())
    assert not FAMILY.check(inst, McSolution((0, 0, 1))).feasible
    assert not FAMILY.check(inst, McSolution((0, 1, 1))).feasible


def test_the_configuration_lp_proves_it() -> None:
    inst = _three_that_pair_with_nobody()
    conf = colgen.configuration_bound(
        inst, time.monotonic() + 10, CancellationToken(), SolveOptions()
    )
    assert conf.proven_infeasible
    assert conf.lagrangian is not None and conf.lagrangian > 2
    assert conf.cores_bound == 3
    assert "more than the 2 there are" in conf.describe(inst)


@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=[b[0] + b[1] for b in EXACT])
def test_the_portfolio_reports_it_infeasible_and_proven(backend: str, milp_solver: str) -> None:
    inst = _three_that_pair_with_nobody()
    options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=10, threads=1)
    result = solve(inst, options)
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert result.stop_reason == StopReason.PROVEN
    assert "configuration LP" in result.message and "more than the 2" in result.message
    assert "colgen" in result.phase_times_s


def test_the_cores_bound_proves_a_heuristic_schedule_optimal() -> None:
    """Three cores for the set above: the heuristics use three, and the configuration LP's
    bound (3) proves it optimal without the compact model."""
    inst = _three_that_pair_with_nobody()
    inst = McInstance(inst.tasks, [*inst.cores, McCore("c2")], objective=MIN_CORES, validated=True)
    ctx = ExactContext(inst, SolveOptions(time_limit_s=10, threads=1))
    ctx.report(FAMILY.greedy(inst, ctx.options).__next__()[1], "greedy")
    encoding = FAMILY.exact("cpsat")
    outcome = ctx.run(encoding)
    assert outcome.proven_optimal and outcome.tier_bounds == {MIN_CORES: 3.0}, outcome
    assert "pairs" not in encoding.last_stats  # the compact model was not built
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.objective_terms[MIN_CORES] == 3


def test_a_dropped_cost_bound_reaches_the_portfolio() -> None:
    """Two cores for three tasks that pair with nobody, the LO task droppable at cost 5:
    one task must go, and only the LO task may; the configuration LP bounds the dropped cost
    by 5 (capacity mode), the schedule dropping it meets the bound."""
    base = _three_that_pair_with_nobody()
    lo = base.tasks[0]
    tasks = [McTask(lo.name, lo.period, lo.budget_lo, lo.budget_hi, drop_cost=5), *base.tasks[1:]]
    inst = McInstance(tasks, base.cores, objective=MIN_CORES, validated=True)
    conf = colgen.configuration_bound(
        inst, time.monotonic() + 10, CancellationToken(), SolveOptions()
    )
    assert conf.mode == colgen.CAPACITY and conf.drop_bound == 5
    assert not conf.proven_infeasible
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.objective == 5 and math.isclose(result.bound or 0, 5)


def test_deterministic_mode_gives_the_same_answer_twice() -> None:
    """In deterministic mode column generation stops on a work budget (master iterations,
    branch-and-bound nodes), not the clock: two runs of a generated 8-core set the heuristics
    reject agree on every figure of the run."""
    inst = generate(24, 8, 0.9, 3, criticality_factor=1.0, criticality_factor_max=4.0)
    runs = []
    for _ in range(2):
        ctx = ExactContext(inst, SolveOptions(time_limit_s=4, threads=1, deterministic=True))
        encoding = FAMILY.exact("cpsat")
        outcome = ctx.run(encoding)
        stats = encoding.last_stats["colgen"]
        runs.append((outcome.proven_infeasible, ctx.best, stats["iterations"], stats["lp"]))
    assert runs[0] == runs[1]
