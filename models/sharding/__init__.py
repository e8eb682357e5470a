"""Embedding-table sharding for recommendation training (issue 40).

Embedding tables (rows, dimension, pooling factor) are sharded over devices grouped in hosts:
each table gets one sharding type (table-wise, row-wise, column-wise, table-row-wise,
data-parallel) and a device for each shard, within every device's HBM; the objective is the
least maximum device cost (the step's bottleneck), then the least total communication, with
costs from TorchRec's default estimator.

Parts: :mod:`.instance` (typed instance and solution, the message), :mod:`.cost_model`
(TorchRec's perf and storage formulas, each type's layout, the options a table has),
:mod:`.check` (independent checker and the solution message), :mod:`.greedy` (LPT list
scheduling over the options: the fallback), :mod:`.encoding` with :mod:`.cpsat` and
:mod:`.milp` (the exact model, two tiers), :mod:`.explain` (a table that fits no device),
:mod:`.generate`, :mod:`.summary`, :mod:`.plot`, :mod:`.warm_start`; :mod:`.formats` (the
MLPerf DLRM tables) and :mod:`.peers` (TorchRec's planner, size- and lookup-balanced greedy).
"""

from __future__ import annotations

from typing import Any

from placement.models.sharding import check as _check
from placement.models.sharding import instance as _instance
from placement.models.sharding.encoding import quick_bound
from placement.models.sharding.explain import explain_infeasible
from placement.models.sharding.formats import IMPORTERS
from placement.models.sharding.generate import GENERATORS, generate
from placement.models.sharding.greedy import greedy_solutions
from placement.models.sharding.instance import (
    Device,
    Shard,
    ShardingInstance,
    ShardingSolution,
    Table,
    TablePlan,
)
from placement.models.sharding.plot import draw
from placement.models.sharding.summary import summarize
from placement.models.sharding.warm_start import adapt_start
from placement.solver.errors import InputError
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class ShardingFamily(Family):
    """The embedding-table sharding family object registered as ``sharding``."""

    name = "sharding"
    sense = "min"
    instance_type = ShardingInstance
    encodings = {
        "cpsat": "placement.models.sharding.cpsat:CpSatEncoding",
        "milp": "placement.models.sharding.milp:MilpEncoding",
    }
    typed_paths = {"cost": "cost_model"}

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    solution_to_message = staticmethod(_check.solution_to_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(_check.check)

    def validate_fields(self, instance: ShardingInstance) -> None:
        """Every table fits some device under some type it may use (else the reason)."""
        reasons = explain_infeasible(instance)
        kinds = [r for r in reasons if r["kind"] == "no_sharding_type"]
        if kinds:
            t = instance.table_index[kinds[0]["name"]]
            raise InputError.single(
                f"sharding.tables[{t}].allowed",
                list(instance.tables[t].allowed),
                "a sharding type that applies here (column-wise needs a dimension of two or "
                "more min_column_shard_dim blocks; table-row-wise two devices per host)",
            )

    def quick_bound(self, instance: ShardingInstance) -> float:
        """The least bottleneck any plan can have under the cost model (see
        :func:`.encoding.quick_bound`)."""
        return quick_bound(instance)

    def explain_unplaced(
        self, instance: ShardingInstance, solution: Any, stop: Any = None
    ) -> list[dict[str, Any]]:
        """A reason per table without a plan: the table that fits no device, by how much."""
        del stop
        missing = {
            instance.tables[t].name
            for t, plan in enumerate(getattr(solution, "plans", ()) or ())
            if plan is None
        }
        return [r for r in explain_infeasible(instance) if not missing or r["name"] in missing]

    def size(self, instance: ShardingInstance) -> dict[str, int]:
        """Tables and devices (the service's size limits)."""
        return {"tables": len(instance.tables), "devices": instance.world_size}

    def corrupt(self, instance: ShardingInstance, solution: ShardingSolution) -> ShardingSolution:
        """A solution made infeasible: the first shard of the first table on a device the
        instance lacks."""
        plan = solution.plans[0]
        assert plan is not None
        first = plan.shards[0]
        moved = Shard(
            instance.world_size, first.row_offset, first.rows, first.col_offset, first.cols
        )
        return ShardingSolution(
            (TablePlan(plan.sharding_type, (moved, *plan.shards[1:])), *solution.plans[1:])
        )

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated instance."""
        solve(generate(6, 2, seed=0), SolveOptions(time_limit_s=0.5, threads=1))

    generators = GENERATORS
    importers = IMPORTERS

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = ShardingFamily()

__all__ = ["FAMILY", "Device", "ShardingInstance", "ShardingSolution", "Table", "TablePlan"]
