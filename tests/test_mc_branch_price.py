"""Branch and price for the mc family (models/mc/branch_price.py) against enumeration of
every assignment: it never proves unschedulable a set that has a schedule (in particular one
a heuristic schedules), every schedule it returns passes the checker, and on small sets it
always decides; the Ryan-Foster search alone (no dive, no rounding: it must branch to an
integral LP solution) agrees too."""

from __future__ import annotations

import random
import time

from placement.models.mc import McCore, McInstance, McSolution, McTask
from placement.models.mc.branch_price import BranchAndPrice, Groups, Rules
from placement.models.mc.check import check
from placement.models.mc.colgen import core_types
from placement.models.mc.generate import generate
from placement.models.mc.greedy import greedy_solutions
from placement.solver import SolveOptions
from placement.solver.cancel import CancellationToken
from tests.test_mc_colgen import _enumerate


def _run(inst: McInstance, heuristics: bool) -> tuple[tuple[int, ...] | None, bool, int]:
    (ctype,) = core_types(inst)
    search = BranchAndPrice(
        inst,
        ctype,
        [],
        time.monotonic() + 60,
        CancellationToken(),
        SolveOptions(),
        heuristics=heuristics,
    )
    result = search.run()
    return result.core_of, result.proven_infeasible, result.nodes


def _small(rng: random.Random) -> McInstance:
    n, m = rng.randint(5, 7), rng.choice([2, 3])
    tasks = []
    for i in range(n):
        period = rng.randint(6, 20)
        hi = rng.random() < 0.5
        lo = rng.randint(1, max(1, period // 2))
        tasks.append(McTask(f"t{i}", period, lo, rng.randint(lo, period) if hi else lo, hi))
    return McInstance(tasks, [McCore(f"c{k}") for k in range(m)])


def test_agrees_with_enumeration_on_small_random_sets() -> None:
    rng = random.Random(22)
    branched = decided_both = 0
    for _ in range(40):
        inst = _small(rng)
        if any(not ct.tasks for ct in core_types(inst)) or len(core_types(inst)) != 1:
            continue
        if len(core_types(inst)[0].tasks) != len(inst.tasks):
            continue  # a task fails alone: colgen proves it before branch and price runs
        cores, _ = _enumerate(inst)
        heuristic = any(check(inst, s).feasible for _, s in greedy_solutions(inst))
        for heuristics in (True, False):
            core_of, proved, nodes = _run(inst, heuristics)
            # Always decided on sets this small, and right.
            assert (core_of is not None) != proved, (inst, heuristics)
            if core_of is not None:
                assert check(inst, McSolution(core_of)).feasible
            assert proved == (cores is None), (inst, heuristics, cores)
            if heuristic:
                assert not proved
            if not heuristics and nodes > 1:
                branched += 1
        decided_both += 1
    assert decided_both >= 25
    assert branched >= 3  # the Ryan-Foster branching itself was exercised


def test_generated_sets_at_high_utilisation_agree_with_the_heuristics() -> None:
    # 8 tasks on 3 cores near full load: whatever a heuristic schedules, branch and price
    # schedules too (and never proves unschedulable).
    for seed in range(12):
        inst = generate(8, 3, 0.9, seed, criticality_factor=1.0, criticality_factor_max=4.0)
        if len(core_types(inst)) != 1 or len(core_types(inst)[0].tasks) != 8:
            continue
        heuristic = any(check(inst, s).feasible for _, s in greedy_solutions(inst))
        core_of, proved, _ = _run(inst, True)
        if heuristic:
            assert core_of is not None and not proved
        cores, _ = _enumerate(inst)
        assert proved == (cores is None)
        assert (core_of is not None) == (cores is not None)


def test_groups_follow_the_rules() -> None:
    groups = Groups(5, Rules(together=((0, 1), (1, 2)), apart=((3, 4),)))
    assert groups.allows(frozenset({0, 1, 2}))
    assert groups.allows(frozenset({0, 1, 2, 3}))
    assert not groups.allows(frozenset({0, 1}))  # the group {0, 1, 2} split
    assert not groups.allows(frozenset({3, 4}))  # an apart pair
    assert not groups.contradictory
    assert Groups(3, Rules(together=((0, 1),), apart=((1, 0),))).contradictory


def test_an_odd_cycle_of_pairs_needs_branching() -> None:
    # Five LO tasks of utilisation 2/5: two share a core, three do not. The configuration
    # LP's optimum is 5/2 (a core holds at most two of the five; the pairs of a 5-cycle at
    # 1/2 each reach it), so on 3 cores the search (no dive, no rounding) must branch to an
    # integral solution; on 2 cores the root's bound (5/2 > 2) proves it unschedulable.
    tasks = [McTask(f"t{i}", 5, 2, 2) for i in range(5)]
    three = McInstance(tasks, [McCore(f"c{k}") for k in range(3)])
    core_of, proved, nodes = _run(three, False)
    assert core_of is not None and not proved and nodes > 1
    assert check(three, McSolution(core_of)).feasible
    two = McInstance(tasks, [McCore(f"c{k}") for k in range(2)])
    core_of, proved, nodes = _run(two, False)
    assert core_of is None and proved and nodes == 1
