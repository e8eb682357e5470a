"""Loader for the Alibaba GPU cluster trace v2023 ("openb", Weng et al., USENIX ATC 2023).

Reads the trace's own CSV files (``openb_node_list_gpu_node.csv`` and an
``openb_pod_list_*.csv``) into a :class:`GpuInstance`; nothing is copied into this
repository. The trace has no topology and no gangs: every node is one NVLink domain, the
cluster has the two levels ``nvlink`` and ``node``, and every pod is a one-worker job:

* ``num_gpu = 0``: a CPU-only job;
* ``num_gpu = 1`` and ``gpu_milli < 1000``: a fractional (shared-GPU) job;
* otherwise ``num_gpu`` whole GPUs (``gpu_milli = 1000``).

``gpu_spec`` (``|``-separated GPU types, often empty; the column may be absent) becomes the
allowed GPU types.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from placement.models.gpu.instance import (
    MILLI,
    GpuInstance,
    GpuJob,
    GpuNode,
    TopologyLevel,
)
from placement.solver.errors import InputError
from placement.solver.family import validate
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import read_input_text

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
"""The pod list's required columns; ``gpu_spec`` is optional (absent: any GPU type), as in
the simulator's own reader."""
LEVELS = [TopologyLevel("nvlink", 300.0), TopologyLevel("node", 32.0)]
"""The trace has no topology: NVLink inside a node, nothing above it."""


def _rows(path: str | Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    file = str(path)
    try:
        with io.StringIO(read_input_text(path, "UTF-8 CSV text"), newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError.single(
                    "header", reader.fieldnames, "columns " + ", ".join(columns), file=file
                )
            return [(i + 2, row) for i, row in enumerate(reader)]
    except csv.Error as exc:
        raise InputError.single("", str(exc), "well-formed CSV", file=file) from None


def _int(row: dict[str, str], column: str, line: int, file: str, low: int, high: int) -> int:
    raw = (row.get(column) or "").strip()
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise InputError.single(
            f"line {line}.{column}", raw, f"an integer in [{low}, {high}]", file=file
        )
    return value


def read_openb_nodes(path: str | Path) -> list[GpuNode]:
    """The nodes of ``openb_node_list_gpu_node.csv`` (all free)."""
    file = str(path)
    nodes = []
    for line, row in _rows(path, NODE_COLUMNS):
        gpus = _int(row, "gpu", line, file, 0, 1024)
        nodes.append(
            GpuNode(
                name=(row.get("sn") or "").strip() or f"node-{line}",
                gpu_type=(row.get("model") or "").strip(),
                gpu_count=gpus,
                gpu_memory_mib=0,  # not in the trace; no pod asks for GPU memory either
                nvlink_domain_size=0,
                cpu_milli=_int(row, "cpu_milli", line, file, 0, 2**40),
                memory_mib=_int(row, "memory_mib", line, file, 0, 2**40),
            )
        )
    return nodes


def read_openb_pods(path: str | Path) -> list[GpuJob]:
    """The pods of an ``openb_pod_list_*.csv`` as one-worker jobs (priority 1)."""
    file = str(path)
    jobs = []
    for line, row in _rows(path, POD_COLUMNS):
        num_gpu = _int(row, "num_gpu", line, file, 0, 1024)
        gpu_milli = _int(row, "gpu_milli", line, file, 0, MILLI)
        fractional = num_gpu == 1 and gpu_milli < MILLI
        spec = (row.get("gpu_spec") or "").strip()
        jobs.append(
            GpuJob(
                name=(row.get("name") or "").strip() or f"pod-{line}",
                workers=1,
                gpus=0 if fractional else num_gpu,
                gpu_milli=gpu_milli if fractional and num_gpu else 0,
                cpu_milli=_int(row, "cpu_milli", line, file, 0, 2**40),
                memory_mib=_int(row, "memory_mib", line, file, 0, 2**40),
                gpu_types=tuple(t for t in spec.split("|") if t),
            )
        )
    return jobs


def load_openb(node_csv: str | Path, pod_csv: str | Path, name: str = "openb") -> GpuInstance:
    """An instance with every node of ``node_csv`` (free) and every pod of ``pod_csv``.

    Raises :class:`InputError` naming the file, line and column of a bad value, or a rule
    of the instance schema the data breaks (validated like any instance file).
    """
    instance = GpuInstance(
        levels=list(LEVELS),
        nodes=read_openb_nodes(node_csv),
        jobs=read_openb_pods(pod_csv),
        name=name,
        description=f"Alibaba openb trace: nodes from {Path(node_csv).name}, pods from {Path(pod_csv).name}",
    )
    try:
        validate(instance)
    except InputError as exc:
        raise exc.with_file(f"{node_csv} + {pod_csv}") from None
    return instance


IMPORTERS = (
    Importer(
        format="openb",
        family="gpu",
        help="the Alibaba GPU cluster trace (openb node and pod CSVs)",
        description=(
            "Read the Alibaba openb trace's own CSV files: every node of the node list (all "
            "free, two topology levels: nvlink and node) and every pod of the pod list as a "
            "one-worker job of priority 1. Fractional pods (one GPU, less than 1000 milli) "
            "become shared-GPU jobs."
        ),
        parameters=(
            Parameter(
                "nodes",
                "path",
                positional=True,
                metavar="NODES.csv",
                help="the trace's node list (openb_node_list_gpu_node.csv)",
            ),
            Parameter(
                "pods",
                "path",
                positional=True,
                metavar="PODS.csv",
                help="a pod list of the trace (openb_pod_list_*.csv)",
            ),
            Parameter("name", "str", "openb", help="instance name (default: openb)"),
        ),
        build=lambda p: load_openb(p["nodes"], p["pods"], name=p["name"]),
    ),
)
"""``placement import openb``."""
