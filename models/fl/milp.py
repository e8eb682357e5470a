"""MILP encoding of FL device assignment (HiGHS or CBC through PuLP): the model of
:mod:`.encoding` through :class:`~placement.solver.linear_backends.MilpLinear`, without a MIP
start on HiGHS (the wrapper can return a solved objective with the start's values; see
there).

The model is CP-SAT's integer model; every solution is scored by the checker, whose integers
the proof must match (:class:`.encoding.FlEncoding` keeps a proof only then)."""

from __future__ import annotations

from placement.models.fl.encoding import FlEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear


class MilpEncoding(FlEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return MilpLinear(ctx.options, "fl", warm_start_on_highs=False)
