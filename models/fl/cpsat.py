"""CP-SAT encoding of FL device assignment: the model of :mod:`.encoding` through
:class:`~placement.solver.linear_backends.CpSatLinear` (every coefficient is an integer:
microseconds), with the incumbent as a complete hint."""

from __future__ import annotations

from placement.models.fl.encoding import FlEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear, LinearBackend


class CpSatEncoding(FlEncoding):
    """The exact CP-SAT encoding (``backend='cpsat'``, the ``auto`` choice)."""

    source = "cpsat"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return CpSatLinear(ctx.options)
