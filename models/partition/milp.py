"""MILP encoding of model partitioning (HiGHS or CBC through PuLP): the stage-path model of
:mod:`.encoding`.

The shared rows (:func:`.encoding.stage_linear`) go to the solver through
:class:`~placement.solver.linear_backends.MilpLinear`, without a MIP start on HiGHS (see
there). Costs are integer nanoseconds and the bottleneck ``T`` is an integer variable, so
HiGHS's dual bound is rounded up to the next integer before it is reported. The bottleneck
rows are the MILP's own: a path starts at most one stage at each position, so one row per
position, ``T >= sum of cost_k z_k over the stages starting there``, bounds ``T`` by the
cost of the stage chosen there (n rows, and a tighter LP than CP-SAT's one enforced row per
stage). With one link speed the bottleneck is proved by bisection over the stage costs
(``parametric``: path-feasibility models only, see :meth:`.encoding.StageEncoding._bisection`);
``T`` is minimised only over the slowest link.
"""

from __future__ import annotations

from placement.models.partition.encoding import StageEncoding, StageLinear, StageModel
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear


class MilpEncoding(StageEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"
    parametric = True
    layer_graph_ip = False
    """The layer-graph IP is a CP-SAT model: this encoding proves layer graphs by the DP over
    ideals only (and says so where the ideals are too many)."""

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return MilpLinear(ctx.options, "partition", warm_start_on_highs=False)

    def _bottleneck_rows(self, linear: StageLinear, backend: LinearBackend) -> None:
        assert linear.top is not None
        for starts in linear.starts_at:
            terms = {k: -float(linear.cost[k]) for k in starts if linear.cost[k] > 0}
            if terms:
                backend.add_row({linear.top: 1.0, **terms}, 0, None)

    def _time_limit(self, ctx: ExactContext, model: StageModel) -> float:
        """Less the wrapper's conversion of the problem to HiGHS (about 20 us per stage
        variable here), which its own limit does not count."""
        return max(0.0, ctx.time_left() - 2e-5 * model.size)
