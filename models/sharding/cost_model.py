"""What a shard costs: TorchRec's default estimator, written from its source.

Written from torchrec 1.9.2 (PyPI), ``torchrec/distributed/planner/estimator/estimator.py``
(``EmbeddingShardingPerfEvaluator`` and its ``TableWiseEvaluator``, ``RowWiseEvaluator``,
``TableRowWiseEvaluator`` and data-parallel evaluator, the default ``HardwarePerfConfig``:
every coefficient 1, no backward coefficients), ``torchrec/distributed/planner/types.py``
(``Perf.total``, ``BasicCommsBandwidths.get_bw``), ``torchrec/distributed/planner/
shard_estimators.py`` (``calculate_shard_storages`` and the ``_calculate_*_shard_io_sizes``
helpers, pipeline ``NONE``) and ``constants.py``. Per shard, with ``b`` the batch per device,
``p`` the pooling factor, ``o = b min(1, p)`` the pooled outputs, ``W`` devices, ``L`` per
host, ``c`` the shard's columns and ``B`` its device's HBM bandwidth (bytes/ms):

* table-wise and column-wise: ``fwd = (ceil(b p W in) + b p W max(c, 32) e + o W c a)
  * penalty(c) / B``; comms ``o W c a / bw(W, L)`` forward and backward;
* row-wise: lookups ``b p / W`` per shard; ``fwd = (ceil(b p in) + b p c e + o W c a) / B``;
  forward comms (reduce-scatter) ``o W c a / bw``; backward comms (all-gather) the same plus
  the batched copy ``o W c a * 2.455 / B``;
* table-row-wise over the ``L`` devices of a host: lookups ``b p / L``; intra-host
  reduce-scatter / all-gather of ``o W c a`` plus, with ``H = W / L > 1`` hosts, a cross-host
  all-to-all of ``o H c a``; the batched copy as row-wise;
* data-parallel (a replica per device, the dense kernel at ``B / 2``): ``fwd = (ceil(b p in) + b p c e + o c e) / B``, no
  forward comms; backward comms the all-reduce ``S (2n - 1) / n / (cross L)`` (``n = min(H,
  2)``; doubled when ``W > 2L``) plus the optimizer kernels ``S * 9.22 / B`` (``S`` the
  table's bytes), as TorchRec books them;
* backward compute ``= fwd * 2``; a shard's cost is ``Perf.total`` = fwd + bwd compute + fwd
  + bwd comms (prefetch is 0 without caching kernels). ``bw(W, L)`` is the intra-host
  bandwidth when ``W <= L``, else the cross-host one.

``in`` is bytes per id (8), ``e`` the table's bytes per element, ``a`` the comm bytes (the
table's element size by default), ``penalty`` 1 from 128 columns, 1.15 from 64, else 1.75.

HBM per shard: the shard's weights ``ceil(rows cols e)`` (a data-parallel replica: the whole
table), optimizer state ``ceil(weights * optimizer_multiplier)``, and the input and output
buffers TorchRec adds for training without a pipeline (``input + output``: table-wise
``ceil(b p W in)`` and ``ceil(o W c a)``; row-wise ``ceil(b p in)`` and ``ceil(o W c a)``;
table-row-wise ``ceil(b p W / L in)`` and ``ceil(o W c a)``; data-parallel ``ceil(b p in)``
and ``ceil(o c a)``).

**Units.** A shard's cost and communication are integer nanoseconds, ``round(ms * 1e6)``;
a device's cost is the sum of its shards' costs. The checker and the exact encodings both
use these integers, so a proved optimum is exactly the checker's figure. TorchRec's own planner
sums the unrounded floats: the two differ by at most half a nanosecond per shard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from placement.models.sharding.instance import (
    COLUMN_WISE,
    DATA_PARALLEL,
    ROW_WISE,
    TABLE_ROW_WISE,
    TABLE_WISE,
    Shard,
    ShardingInstance,
    Table,
    TablePlan,
)

NS_PER_MS = 1_000_000
FULL_BLOCK_EMB_DIM = 128
HALF_BLOCK_PENALTY = 1.15
QUARTER_BLOCK_PENALTY = 1.75
DENSE_KERNEL_BW_FACTOR = 0.5
"""``kernel_bw_lookup``: the dense kernel (data-parallel) gets half the HBM bandwidth."""


@dataclass(frozen=True)
class Perf:
    """TorchRec's four parts of a shard's time, ms."""

    fwd_compute: float
    fwd_comms: float
    bwd_compute: float
    bwd_comms: float

    @property
    def total_ms(self) -> float:
        """``Perf.total`` (prefetch is 0 here)."""
        return self.fwd_compute + self.bwd_compute + self.fwd_comms + self.bwd_comms

    @property
    def cost_ns(self) -> int:
        """The shard's cost, integer ns (the unit of the checker and the encodings)."""
        return round(self.total_ms * NS_PER_MS)

    @property
    def comm_ns(self) -> int:
        """The shard's communication (forward + backward comms), integer ns."""
        return round((self.fwd_comms + self.bwd_comms) * NS_PER_MS)


def block_penalty(cols: int) -> float:
    """FBGEMM's kernel penalty for narrow shards (``compute_block_usage_penalty``)."""
    if cols >= FULL_BLOCK_EMB_DIM:
        return 1.0
    return HALF_BLOCK_PENALTY if cols >= 64 else QUARTER_BLOCK_PENALTY


def _bw(instance: ShardingInstance, world: int, local: int) -> float:
    """``BasicCommsBandwidths.get_bw`` for all-to-all, reduce-scatter and all-gather."""
    c = instance.cost
    if world <= local:
        return c.intra_host_bandwidth_bytes_per_ms
    return c.cross_host_bandwidth_bytes_per_ms


def comm_bytes(instance: ShardingInstance, table: Table) -> float:
    """Bytes per element of outputs and collectives."""
    return instance.cost.comm_bytes or float(table.bytes_per_element)


def shard_perf(instance: ShardingInstance, table: Table, kind: str, cols: int, device: int) -> Perf:
    """TorchRec's estimate for one shard of ``table`` with ``cols`` columns on ``device``."""
    c = instance.cost
    W, L = instance.world_size, instance.local_world_size
    b, p = float(instance.batch_size), table.pooling_factor
    e, a, ib = float(table.bytes_per_element), comm_bytes(instance, table), c.input_bytes
    B = instance.devices[device].hbm_bandwidth_bytes_per_ms
    o = b * min(1.0, p)
    mult = c.bwd_compute_multiplier
    if kind in (TABLE_WISE, COLUMN_WISE):
        out = o * W * cols * a
        fwd = math.ceil(b * p * W * ib) + b * p * W * max(cols, 32) * e + out
        fwd = fwd * block_penalty(cols) / B
        bw = _bw(instance, W, L)
        return Perf(fwd, out / bw, fwd * mult, out / bw)
    if kind == ROW_WISE:
        out = o * W * cols * a
        fwd = (math.ceil(b * p * ib) + b * p * cols * e + out) / B
        bw = _bw(instance, W, L)
        copy = out * c.batched_copy_factor / B
        return Perf(fwd, out / bw, fwd * mult, out / bw + copy)
    if kind == TABLE_ROW_WISE:
        out = o * W * cols * a
        fwd = (math.ceil(b * p / L * W * ib) + b * p / L * W * cols * e + out) / B
        intra = out / _bw(instance, L, L)
        hosts = W // L
        inter = 0.0
        if hosts > 1:
            inter = o * hosts * cols * a / _bw(instance, hosts, 1)
        copy = out * c.batched_copy_factor / B
        return Perf(fwd, intra + inter, fwd * mult, inter + intra + copy)
    if kind == DATA_PARALLEL:
        # A replica runs the dense kernel: half the HBM bandwidth (kernel_bw_lookup).
        B = B * DENSE_KERNEL_BW_FACTOR
        fwd = (math.ceil(b * p * ib) + b * p * table.dim * e + o * table.dim * e) / B
        size = float(table.rows * table.dim) * e
        nodes = min(W / L, 2)
        all_reduce = size * (2 * nodes - 1) / nodes / (c.cross_host_bandwidth_bytes_per_ms * L)
        if W > 2 * L:
            all_reduce *= 2
        optimizer = size * c.dp_elementwise_factor / B
        return Perf(fwd, 0.0, fwd * mult, all_reduce + optimizer)
    raise ValueError(f"unknown sharding type {kind!r}")


def shard_hbm(instance: ShardingInstance, table: Table, kind: str, rows: int, cols: int) -> int:
    """HBM bytes of one shard (weights, optimizer state, input and output buffers)."""
    W, L = instance.world_size, instance.local_world_size
    b, p = float(instance.batch_size), table.pooling_factor
    e, a, ib = table.bytes_per_element, comm_bytes(instance, table), instance.cost.input_bytes
    o = b * min(1.0, p)
    if kind == DATA_PARALLEL:
        weights = table.bytes
        io = math.ceil(b * p * ib) + math.ceil(o * table.dim * a)
    else:
        weights = rows * cols * e
        if rows == 0 or cols == 0:
            io = 0
        elif kind in (TABLE_WISE, COLUMN_WISE):
            io = math.ceil(b * p * W * ib) + math.ceil(o * W * cols * a)
        elif kind == ROW_WISE:
            io = math.ceil(b * p * ib) + math.ceil(o * W * cols * a)
        else:
            io = math.ceil(b * p * W / L * ib) + math.ceil(o * W * cols * a)
    return weights + math.ceil(weights * instance.cost.optimizer_multiplier) + io


# -------------------------------------------------------------------------------------------
# Layouts: how each type splits a table (TorchRec's enumerator and sharders)


def row_blocks(rows: int, parts: int) -> list[tuple[int, int]]:
    """TorchRec's row-wise split: blocks of ``ceil(rows / parts)`` rows, the last ones
    shorter (possibly empty), as ``(offset, count)``."""
    block = -(-rows // parts)
    out = []
    for i in range(parts):
        start = min(rows, i * block)
        out.append((start, min(rows, start + block) - start))
    return out


def column_shards(instance: ShardingInstance, table: Table) -> int:
    """Column-wise shards of ``table``: ``dim / min_column_shard_dim`` when that divides,
    one shard of the whole table when the dimension is at most the shard width (TorchRec
    then plans one column-wise shard, costed as table-wise), else 0: the type is not offered
    (TorchRec would make a narrower last shard; not modelled here)."""
    width = instance.cost.min_column_shard_dim
    if table.dim <= width:
        return 1
    if table.dim % width:
        return 0
    return table.dim // width


def offered(instance: ShardingInstance, table: Table) -> tuple[str, ...]:
    """The types ``table`` may use on this instance (column-wise needs :func:`column_shards`;
    table-row-wise needs more than one device per host)."""
    out = []
    for kind in table.allowed:
        if kind == COLUMN_WISE and not column_shards(instance, table):
            continue
        if kind == TABLE_ROW_WISE and instance.local_world_size < 2:
            continue
        if kind == ROW_WISE and instance.world_size < 2:
            continue
        out.append(kind)
    return tuple(out)


def plan_of(
    instance: ShardingInstance,
    table: Table,
    kind: str,
    devices: tuple[int, ...] = (),
    host: int = 0,
) -> TablePlan:
    """The plan of ``table`` under ``kind``: ``devices`` are the device of the one shard
    (table-wise) or of each column shard (column-wise); ``host`` the host (table-row-wise)."""
    if kind == TABLE_WISE:
        return TablePlan(kind, (Shard(devices[0], 0, table.rows, 0, table.dim),))
    if kind == COLUMN_WISE:
        width = min(table.dim, instance.cost.min_column_shard_dim)
        return TablePlan(
            kind, tuple(Shard(d, 0, table.rows, i * width, width) for i, d in enumerate(devices))
        )
    if kind == ROW_WISE:
        blocks = row_blocks(table.rows, instance.world_size)
        return TablePlan(
            kind, tuple(Shard(k, off, n, 0, table.dim) for k, (off, n) in enumerate(blocks))
        )
    if kind == TABLE_ROW_WISE:
        members = instance.hosts[host]
        blocks = row_blocks(table.rows, len(members))
        return TablePlan(
            kind,
            tuple(
                Shard(k, off, n, 0, table.dim) for k, (off, n) in zip(members, blocks, strict=True)
            ),
        )
    if kind == DATA_PARALLEL:
        return TablePlan(
            kind, tuple(Shard(k, 0, table.rows, 0, table.dim) for k in range(instance.world_size))
        )
    raise ValueError(f"unknown sharding type {kind!r}")


@dataclass(frozen=True)
class Option:
    """One way to shard a table, for the heuristics and the encodings.

    ``free`` shards (table-wise: 1, column-wise: k) each go to a device of the solver's
    choice, each costing ``free_cost[d]`` and ``free_hbm`` on device ``d``; a ``fixed``
    option (row-wise, table-row-wise on one host, data-parallel) puts ``fixed[d] = (cost_ns,
    hbm)`` on each device it uses."""

    kind: str
    host: int = 0
    free: int = 0
    free_cost: tuple[int, ...] = ()
    free_hbm: int = 0
    fixed: dict[int, tuple[int, int]] | None = None
    comm_ns: int = 0
    """The option's total communication (every shard), ns."""


def options(instance: ShardingInstance, t: int) -> list[Option]:
    """Every way to shard table ``t`` that :func:`offered` allows (cached per table and
    topology: the heuristics, the bounds, the explanation and the encodings all ask)."""
    key = (tuple(instance.devices), instance.batch_size, instance.cost)
    return list(_options(key, instance.tables[t]))


@lru_cache(maxsize=16384)
def _options(key: tuple, table: Table) -> tuple[Option, ...]:
    devices, batch_size, cost = key
    instance = ShardingInstance([table], list(devices), batch_size, cost)
    out: list[Option] = []
    n_dev = instance.world_size
    perf_memo: dict[tuple[str, int, float], Perf] = {}
    hbm_memo: dict[tuple[str, int, int], int] = {}

    def perf(kind: str, cols: int, d: int) -> Perf:
        k = (kind, cols, devices[d].hbm_bandwidth_bytes_per_ms)
        if k not in perf_memo:
            perf_memo[k] = shard_perf(instance, table, kind, cols, d)
        return perf_memo[k]

    def hbm(kind: str, rows: int, cols: int) -> int:
        k = (kind, rows, cols)
        if k not in hbm_memo:
            hbm_memo[k] = shard_hbm(instance, table, kind, rows, cols)
        return hbm_memo[k]

    for kind in offered(instance, table):
        if kind in (TABLE_WISE, COLUMN_WISE):
            k = 1 if kind == TABLE_WISE else column_shards(instance, table)
            cols = table.dim // k
            perfs = [perf(kind, cols, d) for d in range(n_dev)]
            out.append(
                Option(
                    kind,
                    free=k,
                    free_cost=tuple(pf.cost_ns for pf in perfs),
                    free_hbm=hbm(kind, table.rows, cols),
                    comm_ns=k * perfs[0].comm_ns,
                )
            )
            continue
        hosts = range(len(instance.hosts)) if kind == TABLE_ROW_WISE else [0]
        for h in hosts:
            plan = plan_of(instance, table, kind, host=h)
            fixed: dict[int, tuple[int, int]] = {}
            comm = 0
            for s in plan.shards:
                pf = perf(kind, s.cols, s.device)
                c, mem = fixed.get(s.device, (0, 0))
                fixed[s.device] = (c + pf.cost_ns, mem + hbm(kind, s.rows, s.cols))
                comm += pf.comm_ns
            out.append(Option(kind, host=h, fixed=fixed, comm_ns=comm))
    return tuple(out)


def plan_from_option(
    instance: ShardingInstance, t: int, option: Option, devices: tuple[int, ...] = ()
) -> TablePlan:
    """The plan of table ``t`` for ``option`` (``devices``: one per free shard)."""
    return plan_of(instance, instance.tables[t], option.kind, devices, option.host)
