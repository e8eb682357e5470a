"""Seeded synthetic sharding instances following the published table statistics.

The statistics (docs/formulations/sharding.md, "Data"): the 26 tables of the MLPerf
DLRM-DCNv2 benchmark on Criteo 1TB (mlcommons/training, ``recommendation_v2/torchrec_dlrm``)
have row counts spread over seven decades (3 to 40M rows: log10 rows roughly uniform on
[0.5, 7.6]) and multi-hot sizes from 1 to 100 (median 2.5, mean 8.2: a heavy tail). A
generated table draws ``log10 rows`` uniformly on ``[--min-log-rows, --max-log-rows]``
(default [2, 7]; tables under 100 rows only add noise), its pooling factor from a log-normal
of median 3 and shape 1.1 (mean about 5.5), capped at 100, and its dimension from
``--dims`` (default 64, 128, 256). The access skew is left 0 (Meta's locality histograms,
the only published skew, are aggregated over all tables, not per table).

Devices: ``--devices`` spread over ``--hosts`` hosts; HBM per device ``--hbm-gib``, or, at
0, sized so that the tables' weights fill ``--memory-load`` of the total HBM (and the
largest table fits row-wise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.sharding.instance import (
    BATCH_SIZE,
    MAX_BATCH,
    CostConstants,
    Device,
    ShardingInstance,
    Table,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import size_limit

GIB = 1024**3


def device_list(devices: int, hosts: int, hbm_bytes: int) -> list[Device]:
    """``devices`` devices named ``h<host>d<k>`` spread evenly over ``hosts`` hosts."""
    if hosts < 1 or devices % hosts:
        raise InputError.single("hosts", hosts, f"a divisor of --devices ({devices})")
    per = devices // hosts
    return [Device(f"h{k // per}d{k % per}", f"h{k // per}", hbm_bytes) for k in range(devices)]


def generate(
    tables: int,
    devices: int,
    hosts: int = 1,
    seed: int = 0,
    hbm_gib: float = 0.0,
    memory_load: float = 0.5,
    min_log_rows: float = 2.0,
    max_log_rows: float = 7.0,
    dims: tuple[int, ...] = (64, 128, 256),
    batch_size: int = BATCH_SIZE,
    out: str | None = None,
) -> ShardingInstance:
    """A seeded instance (the module docstring says how it is drawn)."""
    if not 0 < memory_load <= 1:
        raise InputError.single("memory_load", memory_load, "a number in (0, 1]")
    if not 0 <= min_log_rows <= max_log_rows <= 12:
        raise InputError.single("max_log_rows", max_log_rows, "a number in [--min-log-rows, 12]")
    rng = np.random.default_rng(seed)
    log_rows = rng.uniform(min_log_rows, max_log_rows, tables)
    pooling = np.minimum(100.0, rng.lognormal(math.log(3.0), 1.1, tables))
    dim_of = rng.choice(np.asarray(dims, dtype=np.int64), tables)
    out_tables = [
        Table(
            f"t{i:04d}",
            max(1, round(10 ** log_rows[i])),
            int(dim_of[i]),
            round(max(1.0, float(pooling[i])), 2),
        )
        for i in range(tables)
    ]
    weights = sum(t.bytes for t in out_tables)
    if hbm_gib > 0:
        hbm = int(hbm_gib * GIB)
    else:
        largest = max(t.bytes for t in out_tables)
        hbm = int(max(weights / (devices * memory_load), 2 * largest / devices, GIB))
    command = GENERATORS[0].command(
        {
            "tables": tables,
            "devices": devices,
            "hosts": hosts,
            "seed": seed,
            "hbm_gib": hbm_gib,
            "memory_load": memory_load,
            "min_log_rows": min_log_rows,
            "max_log_rows": max_log_rows,
            "batch_size": batch_size,
            "out": out,
        }
    )
    return ShardingInstance(
        out_tables,
        device_list(devices, hosts, hbm),
        batch_size,
        CostConstants(),
        name=f"sharding-{tables}t-{devices}d{hosts}h-s{seed}",
        description=(
            f"Synthetic embedding tables ({tables}; rows log-uniform 10^{min_log_rows:g}.."
            f"10^{max_log_rows:g}, pooling log-normal median 3 capped at 100, as the MLPerf "
            f"DLRM-DCNv2 Criteo tables) on {devices} devices in {hosts} host(s) of "
            f"{hbm / GIB:.1f} GiB; weights {weights / GIB:.1f} GiB. Made by: {command}"
        ),
    )


def _build(p: dict[str, Any]) -> ShardingInstance:
    return generate(
        p["tables"],
        p["devices"],
        p["hosts"],
        p["seed"],
        p["hbm_gib"],
        p["memory_load"],
        p["min_log_rows"],
        p["max_log_rows"],
        batch_size=p["batch_size"],
        out=p.get("out"),
    )


GENERATORS = (
    Generator(
        family="sharding",
        help="embedding tables (MLPerf DLRM-like statistics) and the devices to shard them on",
        description=(
            "Generate seeded embedding tables: log10 rows uniform on [--min-log-rows, "
            "--max-log-rows], pooling factors log-normal (median 3, capped at 100) as the "
            "MLPerf DLRM-DCNv2 Criteo tables, dimensions 64/128/256; devices in hosts with "
            "TorchRec's default bandwidths."
        ),
        parameters=(
            Parameter(
                "tables",
                "positive_int",
                required=True,
                metavar="N",
                maximum=size_limit("tables"),
                help="tables",
            ),
            Parameter(
                "devices",
                "positive_int",
                required=True,
                metavar="D",
                maximum=size_limit("devices"),
                help="devices",
            ),
            Parameter(
                "hosts",
                "positive_int",
                1,
                metavar="H",
                shown=True,
                maximum=size_limit("devices"),
                help="hosts (default 1)",
            ),
            SEED,
            Parameter(
                "hbm_gib",
                "non_negative_float",
                0.0,
                metavar="GIB",
                help="HBM per device (0: sized by --memory-load)",
            ),
            Parameter(
                "memory_load",
                "fraction",
                0.5,
                metavar="F",
                help="share of the total HBM the weights fill when --hbm-gib is 0 (default 0.5)",
            ),
            Parameter("min_log_rows", "non_negative_float", 2.0, metavar="X", help="default 2"),
            Parameter("max_log_rows", "non_negative_float", 7.0, metavar="X", help="default 7"),
            Parameter(
                "batch_size",
                "positive_int",
                BATCH_SIZE,
                metavar="B",
                maximum=MAX_BATCH,
                help="samples per device per step (default 512)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate sharding``."""
