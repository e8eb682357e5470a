"""The large-neighbourhood search of the GPU family (models/gpu/lns.py) with real solvers.

A neighbourhood must keep the incumbent feasible (it is the hint), fix every job outside it
where the incumbent puts it, and free the unplaced job it was built for; solving it can only
keep or improve the first tier. Inside the restricted search it runs after the configuration
LP, and every solution it reports passes the checker.
"""

from __future__ import annotations

import numpy as np
import pytest

from placement.models.gpu import check
from placement.models.gpu.candidates import placement_weights
from placement.models.gpu.config_lp import ConfigurationLP
from placement.models.gpu.cpsat import CpSatEncoding, _CpSatTiers
from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit
from placement.models.gpu.lns import graft, neighbourhood
from placement.models.gpu.model import GpuModel
from placement.models.gpu.tiers import GRAFT_MIN_X, _Clock, _lns, _lns_start
from placement.solver import CancellationToken, SolveOptions
from placement.solver.testing import ExactContext


def _crowded(seed: int):
    # More demand than free capacity: best fit leaves jobs unplaced.
    return generate(128, 48, seed, occupancy=0.5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_neighbourhood_keeps_the_incumbent_and_frees_its_target(seed: int) -> None:
    instance = _crowded(seed)
    cluster = FreeCapacity(instance)
    weights = placement_weights(instance, cluster)
    incumbent = best_fit(instance)
    assert check(instance, incumbent).feasible
    rng = np.random.default_rng(seed)
    for _ in range(12):
        hood = neighbourhood(instance, cluster, incumbent, weights, rng, target_vars=300)
        assert hood is not None
        # The target is unplaced by the incumbent and free to move onto the freed nodes.
        assert not incumbent.placements.get(hood.target)
        assert hood.candidates[hood.target]
        assert set(hood.candidates[hood.target]) <= set(hood.nodes)
        assert all(weights[hood.target][n] > 0 for n in hood.candidates[hood.target])
        target = instance.jobs[hood.target]
        if target.locality_required and target.locality_level in ("rack", "spine"):
            # Its hosts lie in one group of that level (the model places it only there).
            ids = instance.group_ids[instance.level_of_name(target.locality_level) - 2]
            assert len({int(ids[n]) for n in hood.candidates[hood.target]}) == 1
        # Every job outside it stays exactly where the incumbent puts it.
        for j, placed in hood.fixed.placements.items():
            assert placed == incumbent.placements[j]
            assert not hood.candidates[j]
        # Every placed job with a worker on a freed node moves, and may stay where it is.
        freed = set(hood.nodes)
        for j, placed in incumbent.placements.items():
            if placed and any(w.node in freed for w in placed):
                assert j not in hood.fixed.placements
                assert {w.node for w in placed} <= set(hood.candidates[j])
        # The incumbent is a feasible point of the neighbourhood's model (the hint).
        model = GpuModel(instance, cluster.residual(hood.fixed), hood.candidates, hood.fixed)
        values = model.values_from_solution(incumbent)
        assert values is not None and model.feasible(values)


def test_a_neighbourhood_solve_never_loses_the_first_tier() -> None:
    instance = _crowded(2)
    cluster = FreeCapacity(instance)
    weights = placement_weights(instance, cluster)
    incumbent = best_fit(instance)
    start = check(instance, incumbent).objective
    rng = np.random.default_rng(0)
    ctx = ExactContext(instance, SolveOptions(time_limit_s=5, threads=1, deterministic=True))
    for _ in range(3):
        hood = neighbourhood(instance, cluster, incumbent, weights, rng, target_vars=300)
        assert hood is not None
        model = GpuModel(instance, cluster.residual(hood.fixed), hood.candidates, hood.fixed)
        backend = _CpSatTiers(ctx)
        backend.load(model.lm)
        hint = model.values_from_solution(incumbent)
        _, final = backend.run(
            "max", dict(model.tier1.terms), 0.0, hint, 1.0, CancellationToken(), lambda v, b: None
        )
        assert final is not None
        solution = model.decode(final)
        report = check(instance, solution)
        assert report.feasible, report.violations
        assert report.objective >= start - 1e-9
        incumbent, start = solution, report.objective


def test_no_neighbourhood_when_everything_is_placed() -> None:
    instance = generate(64, 6, 1, occupancy=0.1, gang_share=0.0)
    cluster = FreeCapacity(instance)
    incumbent = best_fit(instance)
    valuable = [j for j, job in enumerate(instance.jobs) if job.weighted_demand_milli > 0]
    assert valuable and all(incumbent.placements.get(j) for j in valuable)
    rng = np.random.default_rng(0)
    weights = placement_weights(instance, cluster)
    assert neighbourhood(instance, cluster, incumbent, weights, rng, 300) is None


def test_the_restricted_search_runs_neighbourhoods_and_reports_only_checked_solutions() -> None:
    instance = generate(256, 80, 1)
    start = best_fit(instance)
    options = SolveOptions(backend="cpsat", time_limit_s=6.0, deterministic=True, seed=1)
    ctx = ExactContext(instance, options, backend="cpsat")
    ctx.report(start, "greedy")
    # A small limit makes the model restricted, so the configuration LP, the
    # neighbourhoods and the polish of the later tiers run.
    encoding = CpSatEncoding(max_placement_vars=500)
    outcome = encoding.solve(instance, ctx)
    stats = encoding.last_stats
    assert stats["restricted"]
    assert stats["lns"]["neighbourhoods"] > 0
    windows = [p.get("window") for p in stats["passes"]]
    assert windows[0] == "configuration LP (later tiers)"
    assert stats["passes"][0]["tiers"]["placed_gpu_weighted"] == {
        "status": "fixed at the incumbent"
    }
    assert not ctx.rejected
    assert ctx.best_report is not None
    assert ctx.best_report.score() >= check(instance, start).score()
    assert not outcome.proven_optimal
    assert outcome.bound is not None and outcome.bound >= ctx.best_report.objective - 1e-9


def _lp_placements(instance):
    """The configuration LP of ``instance`` solved to the end, its rounding and its x."""
    clp = ConfigurationLP(instance, FreeCapacity(instance), best_fit(instance))
    found = clp.bound(30.0)
    assert found.converged
    return clp.lp_rounding(), found.placed


@pytest.mark.parametrize("seed", [2, 4, 8])
def test_a_graft_places_the_donors_jobs_as_the_donor_does(seed: int) -> None:
    instance = _crowded(seed)
    incumbent = best_fit(instance)
    donor, _ = _lp_placements(instance)
    assert donor is not None and check(instance, donor).feasible
    moved = [j for j, w in donor.placements.items() if w and not incumbent.placements.get(j)]
    assert moved, "the rounding should place a job that best fit leaves out"
    grafted = graft(instance, incumbent, donor, moved + [j for j in incumbent.placements])
    assert grafted is not None
    report = check(instance, grafted)
    assert report.feasible, report.violations
    nodes = {w.node for j in moved for w in donor.placements[j]}
    for j in moved:
        assert grafted.placements[j] == donor.placements[j]
    # A job of the incumbent off those nodes stays where it is; one on them moved or left.
    for j, placed in incumbent.placements.items():
        if placed and not any(w.node in nodes for w in placed):
            assert grafted.placements[j] == placed


def test_no_graft_when_the_start_already_places_the_jobs() -> None:
    instance = _crowded(1)
    incumbent = best_fit(instance)
    placed = [j for j, w in incumbent.placements.items() if w]
    assert graft(instance, incumbent, incumbent, placed) is None
    donor, _ = _lp_placements(instance)
    assert graft(instance, incumbent, donor, []) is None


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_the_search_starts_with_the_jobs_the_lp_places_grafted_in(seed: int) -> None:
    instance = _crowded(seed)
    incumbent = best_fit(instance)
    rounding, lp_x = _lp_placements(instance)
    stats = {"lp_placements": {"rounding": rounding}, "config_lp": {"lp_x": lp_x}}
    start = _lns_start(instance, incumbent, stats)
    wanted = [
        j
        for j, x in lp_x.items()
        if x >= GRAFT_MIN_X - 1e-6
        and rounding.placements.get(j)
        and not incumbent.placements.get(j)
    ]
    # Seed 1: best fit places every such job already (nothing to graft); 2 and 5: not.
    assert (start is None) == (not wanted) == (seed == 1)
    if start is None:
        return
    assert check(instance, start).feasible
    assert all(start.placements.get(j) for j in wanted)
    # Without the LP's placements there is no start to graft from.
    assert _lns_start(instance, incumbent, {}) is None


class _Recording(ExactContext):
    """A test context that also keeps every reported solution."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.solutions: list[tuple[str, object]] = []

    def report(self, solution, source, bound=None) -> bool:
        self.solutions.append((source, solution))
        return super().report(solution, source, bound)


@pytest.mark.parametrize(("jobs", "occupancy", "seed"), [(48, 0.5, 5), (64, 0.4, 1)])
def test_the_search_never_drops_a_gang_the_lp_places_wholly(
    jobs: int, occupancy: float, seed: int
) -> None:
    # On these two the search without the rule drops gangs (6 and 4 times in 2 s).
    instance = generate(128, jobs, seed, occupancy=occupancy)
    incumbent = best_fit(instance)
    gangs = [j for j, w in incumbent.placements.items() if w and instance.jobs[j].workers >= 2]
    assert gangs
    options = SolveOptions(backend="cpsat", time_limit_s=4.0, deterministic=True, seed=seed)
    ctx = _Recording(instance, options, backend="cpsat")
    ctx.report(incumbent, "greedy")
    # As if the configuration LP placed every gang of the incumbent wholly.
    stats = {"config_lp": {"wholly_placed": gangs}, "hint_fallbacks": 0}
    _lns(
        instance,
        ctx,
        _Clock(ctx),
        lambda: _CpSatTiers(ctx),
        FreeCapacity(instance),
        None,
        3.0,
        stats,
    )
    found = [solution for source, solution in ctx.solutions if source == "cpsat"]
    assert stats["lns"]["neighbourhoods"] > 0
    assert not ctx.rejected
    for solution in found:
        assert all(solution.placements.get(j) for j in gangs)
