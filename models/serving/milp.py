"""MILP encoding of serving (HiGHS or CBC through PuLP): the model of :mod:`.encoding` through
:class:`~placement.solver.linear_backends.MilpLinear`, without a MIP start on HiGHS (the
wrapper can return a solved objective with the start's values; see there). The ``auto``
choice: the rows mix large and small integer coefficients, which an LP relaxation bounds
well.

Every solution is scored by the checker, whose integers the proof must match
(:class:`.encoding.ServingEncoding` keeps a proof only then)."""

from __future__ import annotations

from placement.models.serving.encoding import ServingEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear


class MilpEncoding(ServingEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return MilpLinear(ctx.options, "serving", warm_start_on_highs=False)
