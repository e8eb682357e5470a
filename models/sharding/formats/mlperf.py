"""The MLPerf DLRM-DCNv2 embedding tables (Criteo 1TB) as published, read into an instance.

The file is the CSV the shared benchmark folder holds (``tables.csv``: ``table, feature,
num_embeddings_mlperf, num_embeddings_torchrec_full, multi_hot_size, embedding_dim``),
transcribed from mlcommons/training ``recommendation_v2/torchrec_dlrm/README.MD``
(``--num_embeddings_per_feature`` and ``--multi_hot_sizes``). The rows are MLPerf's (capped
at 40M) or TorchRec's uncapped counts (``--rows torchrec``); the pooling factor is the
multi-hot size; fp32 weights. Nothing of the file is copied into the repository.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from placement.models.sharding.generate import GIB, device_list
from placement.models.sharding.instance import (
    BATCH_SIZE,
    MAX_BATCH,
    CostConstants,
    ShardingInstance,
    Table,
)
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter

COLUMNS = {
    "mlperf": "num_embeddings_mlperf",
    "torchrec": "num_embeddings_torchrec_full",
}
REQUIRED = ("feature", "multi_hot_size", "embedding_dim")


def load_mlperf(
    path: str,
    devices: int = 8,
    hosts: int = 1,
    hbm_gib: float = 40.0,
    rows: str = "mlperf",
    batch_size: int = BATCH_SIZE,
    name: str | None = None,
) -> ShardingInstance:
    """The tables of ``path`` on ``devices`` devices of ``hbm_gib`` GiB in ``hosts`` hosts.

    Raises InputError naming the file, the line and the column of a malformed value.
    """
    if rows not in COLUMNS:
        raise InputError.single("rows", rows, " or ".join(COLUMNS))
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError.single(
            "tables", str(file), f"a readable CSV file ({exc.strerror})"
        ) from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    for column in (*REQUIRED, COLUMNS[rows]):
        if column not in header:
            raise InputError.single(
                "header",
                ",".join(header),
                f"a CSV header with the column {column!r}",
                file=str(file),
            )
    tables = []
    for line, record in enumerate(reader, start=2):
        values = {}
        for column in (COLUMNS[rows], "multi_hot_size", "embedding_dim"):
            raw = record.get(column, "")
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = -1.0
            if not value > 0 or (column != "multi_hot_size" and not value.is_integer()):
                raise InputError.single(
                    f"line {line}.{column}",
                    raw,
                    "a positive number (an integer for rows and dims)",
                    file=str(file),
                )
            values[column] = value
        tables.append(
            Table(
                record["feature"] or f"table{line - 2}",
                int(values[COLUMNS[rows]]),
                int(values["embedding_dim"]),
                values["multi_hot_size"],
            )
        )
    if not tables:
        raise InputError.single(
            "tables", str(file), "a CSV file with at least one table", file=str(file)
        )
    weights = sum(t.bytes for t in tables)
    return ShardingInstance(
        tables,
        device_list(devices, hosts, int(hbm_gib * GIB)),
        batch_size,
        CostConstants(),
        name=name or f"mlperf-dlrm-{rows}-{devices}d{hosts}h",
        description=(
            f"The {len(tables)} MLPerf DLRM-DCNv2 Criteo 1TB embedding tables ({rows} row counts,"
            f" {weights / GIB:.2f} GiB fp32) from {file.name}, on {devices} devices of "
            f"{hbm_gib:g} GiB in {hosts} host(s), batch {batch_size} per device."
        ),
    )


def _build(p: dict[str, Any]) -> ShardingInstance:
    return load_mlperf(
        p["tables"], p["devices"], p["hosts"], p["hbm_gib"], p["rows"], p["batch_size"], p["name"]
    )


IMPORTERS = (
    Importer(
        format="mlperf-dlrm",
        family="sharding",
        help="the MLPerf DLRM-DCNv2 Criteo 1TB embedding tables (tables.csv)",
        description=(
            "Read the 26 MLPerf DLRM-DCNv2 tables (rows, multi-hot size, dim) as published and "
            "shard them on --devices devices of --hbm-gib GiB in --hosts hosts, TorchRec's "
            "default cost model."
        ),
        parameters=(
            Parameter("tables", "path", positional=True, metavar="TABLES.csv", help="tables.csv"),
            Parameter("devices", "positive_int", 8, metavar="D", shown=True, help="default 8"),
            Parameter("hosts", "positive_int", 1, metavar="H", shown=True, help="default 1"),
            Parameter(
                "hbm_gib", "positive_float", 40.0, metavar="GIB", shown=True, help="default 40"
            ),
            Parameter(
                "rows",
                "str",
                "mlperf",
                choices=tuple(COLUMNS),
                help="mlperf (default: capped at 40M) or torchrec (uncapped) row counts",
            ),
            Parameter(
                "batch_size",
                "positive_int",
                BATCH_SIZE,
                metavar="B",
                maximum=MAX_BATCH,
                help="default 512",
            ),
            Parameter("name", "str", None, help="instance name"),
        ),
        build=_build,
    ),
)
"""``placement import mlperf-dlrm``."""
