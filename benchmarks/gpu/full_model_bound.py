"""A reference bound on the first tier: HiGHS's MIP dual bound on the full exact model.

The exact search of a large instance runs on restricted models (:mod:`.candidates`), whose
own bounds are not bounds of the instance, so the bound it reports is a relaxation's
(:func:`.bound.relaxation_bound`, :func:`.config_lp.configuration_bound`). This module gives
a slower reference for measuring how loose those relaxations are: tier 1 alone on the
*full* :class:`~placement.models.gpu.model.GpuModel` (every eligible job x node pair, exact
for tier 1: the model the exact search proves optimality on when it fits) solved by HiGHS
as a MIP, whose dual bound after root cuts and branching is a bound of the instance. It is
meant for benchmarks (``placement bench gpu-synthetic --param reference=S``), not for the
5-second solve: on the 1,024-GPU instances the root cuts alone take minutes
(docs/benchmarks.md, gpu-synthetic).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.instance import GpuInstance, GpuSolution
from placement.models.gpu.model import GpuModel
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken


@dataclass
class FullModelBound:
    """What :func:`full_model_bound` found (weighted milli-GPU, as the model's tier 1)."""

    bound: int | None
    """Proven upper bound on tier 1 (HiGHS's MIP dual bound, rounded down after a slack),
    or None when HiGHS gave none in time."""
    placed: int | None
    """Tier 1 of HiGHS's best solution (None without one)."""
    solution: GpuSolution | None
    """That solution, decoded (the caller checks it)."""
    seconds: float
    variables: int
    rows: int


def full_model_bound(
    instance: GpuInstance,
    time_limit_s: float,
    start: GpuSolution | None = None,
    cancel: CancellationToken | None = None,
    seed: int = 0,
) -> FullModelBound:
    """Tier 1 of the full exact model by HiGHS (one thread) for ``time_limit_s``: its dual
    bound and its best solution. ``start`` (a feasible placement, e.g. a greedy's) is the
    MIP start when the model admits it."""
    started = time.monotonic()
    model = GpuModel(instance, FreeCapacity(instance), None)
    lm = model.lm
    n = lm.num_vars
    if not model.tier1.terms:
        # No job with a positive weight can be placed: tier 1 is its constant, proved.
        const = int(round(model.tier1.constant))
        empty = GpuSolution()
        return FullModelBound(const, const, empty, time.monotonic() - started, n, len(lm.rows))
    cost = np.zeros(n)
    for i, c in model.tier1.terms.items():
        cost[i] = float(c)
    starts, index, value, lower, upper = lm.csr()
    mip = HighsModel(mip_rel_gap=0.0, random_seed=seed)
    mip.load(
        cost,
        np.array(lm.lb, dtype=float),
        np.array(lm.ub, dtype=float),
        lower,
        upper,
        starts,
        index,
        value,
        rowwise=True,
        integer=np.ones(n, dtype=bool),
        maximize=True,
    )
    hint = model.values_from_solution(start) if start is not None else None
    if hint is not None and model.feasible(hint):
        mip.set_start(np.array(hint, dtype=float))
    left = max(0.1, time_limit_s - (time.monotonic() - started))
    run = mip.run(left, cancel=cancel)
    const = model.tier1.constant
    bound = None
    if run.bound is not None and math.isfinite(run.bound):
        # The objective is an integer (weighted milli-GPU): round down after a slack far
        # above HiGHS's feasibility tolerances on these magnitudes.
        b = run.bound + const
        bound = int(math.floor(b + 1e-4 + 1e-9 * abs(b)))
    placed = solution = None
    if run.x is not None:
        values = [int(round(v)) for v in run.x]
        if model.feasible(values):
            solution = model.decode(values)
            placed = int(round(model.tier1.value(values)))
            if bound is not None:
                bound = max(bound, placed)
    return FullModelBound(bound, placed, solution, time.monotonic() - started, n, len(lm.rows))
