"""A MILP solver (HiGHS by default, CBC selectable, through PuLP) on the time-indexed model of
:mod:`.encoding` (``backend='milp'``), translated by
:class:`~placement.solver.linear_backends.MilpLinear`. No MIP start on HiGHS (the wrapper can
report the solved model's objective with the start's values, as the mc family notes); the
optimum is accepted only when the checker's objective of the decoded schedule meets the
solver's bound rounded up (the objective is an integer)."""

from __future__ import annotations

from placement.models.dispatch.encoding import DispatchEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear


class MilpEncoding(DispatchEncoding):
    """The exact MILP encoding."""

    source = "milp"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        backend = MilpLinear(ctx.options, "dispatch", warm_start_on_highs=False)
        self.source = backend.source
        return backend
