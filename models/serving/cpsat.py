"""CP-SAT encoding of serving: the model of :mod:`.encoding` through
:class:`~placement.solver.linear_backends.CpSatLinear` (every coefficient is an integer: rates
in milli-requests per second, costs in thousandths), with the incumbent as a complete hint."""

from __future__ import annotations

from placement.models.serving.encoding import ServingEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear, LinearBackend


class CpSatEncoding(ServingEncoding):
    """The exact CP-SAT encoding (``backend='cpsat'``)."""

    source = "cpsat"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return CpSatLinear(ctx.options)
