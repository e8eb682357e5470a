"""MILP encoding of topology-aware GPU allocation (HiGHS or CBC through PuLP).

The model is :class:`placement.models.gpu.model.GpuModel` (shared with the CP-SAT
encoding); this module drives the lexicographic tiers through
:class:`placement.solver.linear_backends.MilpLinear` over the wrapper chosen by ``SolveOptions.milp_solver`` in
:data:`placement.solver.backends.milp.MILP_SOLVERS`. Communication costs stay exact
floating-point coefficients; the row fixing the communication tier (while fragmentation
is optimised) carries a 1e-6 tolerance.
"""

from __future__ import annotations

from placement.models.gpu.reopt import ReoptAware
from placement.models.gpu.tiers import TieredEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import MilpLinear

MILP_VARS_PER_SECOND = 1_000
"""HiGHS presolves faster than CP-SAT but its search slows down on the same sizes."""


class _MilpTiers(MilpLinear):
    """The :class:`~placement.models.gpu.tiers.TierBackend` over a PuLP MILP solver (the hint
    is a MIP start on HiGHS too)."""

    vars_per_second = MILP_VARS_PER_SECOND

    def __init__(self, ctx: ExactContext) -> None:
        super().__init__(ctx.options, "gpu", warm_start_on_highs=True)


class MilpEncoding(ReoptAware, TieredEncoding):
    """The exact MILP encoding of the GPU family (``backend='milp'``).

    The solver is ``ctx.options.milp_solver`` (``highs`` by default, or ``cbc``); solutions
    are reported with source ``milp-highs`` / ``milp-cbc``.
    """

    tier_backend = _MilpTiers
