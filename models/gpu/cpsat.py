"""CP-SAT encoding of topology-aware GPU allocation.

The model is :class:`placement.models.gpu.model.GpuModel` (shared with the MILP
encoding); this module drives the lexicographic tiers through the family-neutral translator
:class:`placement.solver.linear_backends.CpSatLinear`. Communication costs
are scaled by 10^6 and rounded, because CP-SAT takes integer objective coefficients only.
"""

from __future__ import annotations

from placement.models.gpu.reopt import ReoptAware
from placement.models.gpu.tiers import TieredEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear

CPSAT_VARS_PER_SECOND = 1_000
"""Measured with 2 search workers: CP-SAT's presolve takes 0.1-0.2 ms per variable of this
model (more on larger ones) and its search needs several times that; larger models stall in
presolve."""


class _CpSatTiers(CpSatLinear):
    """The :class:`~placement.models.gpu.tiers.TierBackend` over CP-SAT."""

    vars_per_second = CPSAT_VARS_PER_SECOND

    def __init__(self, ctx: ExactContext) -> None:
        super().__init__(ctx.options)


class CpSatEncoding(ReoptAware, TieredEncoding):
    """The exact CP-SAT encoding of the GPU family (``backend='cpsat'``)."""

    tier_backend = _CpSatTiers
