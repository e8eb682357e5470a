"""MILP encoding of sharding (HiGHS or CBC through PuLP): the model of :mod:`.encoding`
through :class:`~placement.solver.linear_backends.MilpLinear`, without a MIP start on HiGHS
(the wrapper can return a solved objective with the start's values; see there).

The model is the same integer model as CP-SAT's; the MILP solver decides it within its
tolerances, and every solution is scored by the checker, whose integers the proof must match
(:class:`.encoding.ShardingEncoding` keeps a proof only then)."""

from __future__ import annotations

from placement.models.sharding.encoding import ShardingEncoding
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear


class MilpEncoding(ShardingEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return MilpLinear(ctx.options, "sharding", warm_start_on_highs=False)
