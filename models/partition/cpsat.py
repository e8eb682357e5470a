"""CP-SAT encoding of model partitioning: the stage-path model of :mod:`.encoding`.

The shared rows (:func:`.encoding.stage_linear`) go to CP-SAT through
:class:`~placement.solver.linear_backends.CpSatLinear`. Stage costs are integer nanoseconds,
so CP-SAT's integer objective is exact. The bottleneck rows are CP-SAT's own: ``T >= cost_k``
enforced by ``z_k``, one per stage (the MILP's per-position rows made CP-SAT slower: on the
Helix-like instance it no longer proved the optimum within 60 s).
"""

from __future__ import annotations

from placement.models.partition.encoding import StageEncoding, StageLinear
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear, LinearBackend


class CpSatEncoding(StageEncoding):
    """The exact CP-SAT encoding (``backend='cpsat'``)."""

    source = "cpsat"
    hint_bottleneck = False
    """CP-SAT is hinted the stages only, as it always was. Hinting ``T`` as well found better
    splits in the 1-s quick run of the Helix-like instance (883.7-888.8 tokens/s against
    858.3), but its effect on the 60-s proof is not measured."""

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return CpSatLinear(ctx.options)

    def _bottleneck_rows(self, linear: StageLinear, backend: LinearBackend) -> None:
        assert isinstance(backend, CpSatLinear) and linear.top is not None
        z, top = backend.vars, backend.vars[linear.top]
        for k, cost in enumerate(linear.cost):
            if cost > 0:
                backend.model.add(top >= cost).only_enforce_if(z[k])
