"""TorchRec's own sharding planner, as it ships (the optional extra ``sharding-peers``:
torchrec 1.9.2 with fbgemm-gpu-cpu 1.8.0 on the CPU torch 2.13.0), run on an instance and
its plan turned into a :class:`ShardingSolution` that our checker scores.

The planner is ``torchrec.distributed.planner.EmbeddingShardingPlanner`` with its default
enumerator, estimators, proposers and partitioner, given a ``Topology`` built from the
instance (world and local world size, the smallest device's HBM, the HBM bandwidth, the
intra- and cross-host bandwidths, the backward multiplier), the batch size, and per table a
``ParameterConstraints`` with the pooling factor, the sharding types the table may use and
the ``fused`` kernel (HBM). Storage reservation: ``FixedPercentageStorageReservation(0)``,
so the planner sees the HBM our instance gives (TorchRec's default keeps 15 % back for the
dense part, which the instance's ``hbm_bytes`` already excludes). TorchRec plans for
identical devices: with devices of different HBM the smallest is given.

:func:`estimate` returns TorchRec's own per-shard figures for every sharding option, to
check that :mod:`..cost_model` means the same thing (``tests/test_sharding_torchrec.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from placement.models.sharding.instance import (
    COLUMN_WISE,
    DATA_PARALLEL,
    ROW_WISE,
    TABLE_ROW_WISE,
    TABLE_WISE,
    Shard,
    ShardingInstance,
    ShardingSolution,
    TablePlan,
)

TORCHREC_TYPES = {
    TABLE_WISE: "table_wise",
    ROW_WISE: "row_wise",
    COLUMN_WISE: "column_wise",
    TABLE_ROW_WISE: "table_row_wise",
    DATA_PARALLEL: "data_parallel",
}
OURS = {v: k for k, v in TORCHREC_TYPES.items()}


def available() -> bool:
    """Whether torchrec's planner imports here (the optional extra is installed)."""
    try:
        import torchrec.distributed.planner  # noqa: F401  - optional dependency
    except Exception:  # noqa: BLE001 - any failure to load native code means "not here"
        return False
    return True


def _setup(instance: ShardingInstance) -> tuple[Any, Any, Any, Any]:
    # torch and torchrec load in seconds and are an optional extra: only here
    import torch
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import ParameterConstraints, Topology
    from torchrec.modules.embedding_configs import DataType, EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    dtypes = {4: DataType.FP32, 2: DataType.FP16, 1: DataType.INT8, 8: DataType.FP32}
    configs = [
        EmbeddingBagConfig(
            name=t.name,
            embedding_dim=t.dim,
            num_embeddings=t.rows,
            feature_names=[f"f_{t.name}"],
            data_type=dtypes[t.bytes_per_element],
        )
        for t in instance.tables
    ]
    module = EmbeddingBagCollection(tables=configs, device=torch.device("meta"))
    c = instance.cost
    topology = Topology(
        world_size=instance.world_size,
        local_world_size=instance.local_world_size,
        compute_device="cuda",
        hbm_cap=min(d.hbm_bytes for d in instance.devices),
        hbm_mem_bw=min(d.hbm_bandwidth_bytes_per_ms for d in instance.devices),
        intra_host_bw=c.intra_host_bandwidth_bytes_per_ms,
        inter_host_bw=c.cross_host_bandwidth_bytes_per_ms,
        bwd_compute_multiplier=c.bwd_compute_multiplier,
    )
    constraints = {
        t.name: ParameterConstraints(
            sharding_types=[TORCHREC_TYPES[k] for k in t.allowed],
            compute_kernels=["fused", "dense"],
            pooling_factors=[t.pooling_factor],
            min_partition=c.min_column_shard_dim,
        )
        for t in instance.tables
    }
    return module, topology, constraints, EmbeddingBagCollectionSharder()


@dataclass(frozen=True)
class TorchRecPlan:
    """TorchRec's plan scored by our checker, or why there is none."""

    solution: ShardingSolution | None
    error: str = ""


def plan(instance: ShardingInstance, timeout_s: float | None = None) -> TorchRecPlan:
    """TorchRec's ``EmbeddingShardingPlanner`` plan for ``instance`` (see the module);
    ``timeout_s``: the planner's own ``timeout_seconds`` (it stops proposing then and keeps
    its best plan; the enumeration before it is not bounded)."""
    # torchrec is an optional extra and loads in seconds: only here
    from torchrec.distributed.planner import EmbeddingShardingPlanner
    from torchrec.distributed.planner.storage_reservations import (
        FixedPercentageStorageReservation,
    )

    logging.getLogger("torchrec").setLevel(logging.ERROR)
    module, topology, constraints, sharder = _setup(instance)
    planner = EmbeddingShardingPlanner(
        topology=topology,
        batch_size=instance.batch_size,
        constraints=constraints,
        storage_reservation=FixedPercentageStorageReservation(0.0),
        debug=False,
        timeout_seconds=None if timeout_s is None else max(1, round(timeout_s)),
    )
    try:
        result = planner.plan(module, [sharder])
    except Exception as exc:  # noqa: BLE001 - the planner's own failure is a result here
        return TorchRecPlan(None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    per_table = next(iter(result.plan.values()))
    for name, ps in per_table.items():
        t = instance.table_index[name]
        kind = OURS[ps.sharding_type]
        shards = []
        for md in ps.sharding_spec.shards if ps.sharding_spec is not None else []:
            rank = md.placement.rank()
            shards.append(
                Shard(
                    rank,
                    md.shard_offsets[0],
                    md.shard_sizes[0],
                    md.shard_offsets[1],
                    md.shard_sizes[1],
                )
            )
        if kind == DATA_PARALLEL:
            table = instance.tables[t]
            shards = [Shard(k, 0, table.rows, 0, table.dim) for k in range(instance.world_size)]
        plans[t] = TablePlan(kind, tuple(shards))
    return TorchRecPlan(ShardingSolution(tuple(plans)))


def estimate(instance: ShardingInstance) -> list[dict[str, Any]]:
    """TorchRec's estimates of every sharding option it enumerates: per shard, the table,
    the type, the rank, rows, cols, ``perf_ms`` (``Perf.total``), ``comms_ms`` (forward +
    backward comms) and ``hbm_bytes``."""
    # torchrec is an optional extra and loads in seconds: only here
    from torchrec.distributed.planner.enumerators import EmbeddingEnumerator
    from torchrec.distributed.planner.shard_estimators import (
        EmbeddingPerfEstimator,
        EmbeddingStorageEstimator,
    )

    module, topology, constraints, sharder = _setup(instance)
    enumerator = EmbeddingEnumerator(
        topology=topology,
        batch_size=instance.batch_size,
        constraints=constraints,
        estimator=[
            EmbeddingPerfEstimator(topology=topology, constraints=constraints),
            EmbeddingStorageEstimator(topology=topology, constraints=constraints),
        ],
    )
    out = []
    for option in enumerator.enumerate(module, [sharder]):
        for shard in option.shards:
            perf = shard.perf
            out.append(
                {
                    "table": option.name,
                    "type": OURS.get(option.sharding_type, option.sharding_type),
                    "kernel": option.compute_kernel,
                    "rank": shard.rank,
                    "rows": shard.size[0],
                    "cols": shard.size[1],
                    "perf_ms": perf.total,
                    "comms_ms": perf.fwd_comms + perf.bwd_comms,
                    "hbm_bytes": shard.storage.hbm,
                }
            )
    return out
