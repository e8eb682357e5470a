"""CP-SAT on the time-indexed model of :mod:`.encoding` (``backend='cpsat'``), translated by
:class:`~placement.solver.linear_backends.CpSatLinear`; the model's coefficients are integers,
so CP-SAT's proof is exact."""

from __future__ import annotations

from placement.models.dispatch.encoding import DispatchEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear, LinearBackend


class CpSatEncoding(DispatchEncoding):
    """The exact CP-SAT encoding."""

    source = "cpsat"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return CpSatLinear(ctx.options)
