"""What every experiment of ``gpu-openb`` shares: the traces, their loading, the targets.

The two traces of the data and their files, the cluster's node list, our online policy's
name, the unallocated GPUs the issue asks for; the cluster and pods of a trace and the class
LP bound on them (each loaded once per process); the small statistics of the tables.
"""

from __future__ import annotations

import math
import statistics
from functools import cache
from pathlib import Path

import numpy as np

TRACES = {"default": "openb_pod_list_default.csv", "gpushare100": "openb_pod_list_gpushare100.csv"}
OURS = "FGD+BF-tie"
"""Our online policy (:mod:`placement.models.gpu.sim.openb.online`), also the hint of the batch mode."""
NODE_LIST = "openb_node_list_gpu_node.csv"
TARGETS = {
    ("online", None): 296,
    ("batch", 64): 200,
    ("defrag", 0.05): 200,
    ("repack", 0.05): 250,
}
"""Unallocated GPUs at 100 % arrived demand on the default trace that the issue asks for, on
every seed (:func:`verdict`)."""
TOTAL_GPUS = 6212
"""The openb cluster's GPUs (rows carry their own cluster's count in ``total_gpus``)."""
OPENB_DATA = "gpu/openb"
"""The suite's folder under the benchmark data."""
VARIANT = "variant:"
"""``--trace variant:NAME``: the paper's variant NAME built from the default trace
(:mod:`placement.models.gpu.sim.openb.variants`); the case's trace and pods_file are both
``variant:NAME``."""


def variant_of(pods_file: str | None) -> str | None:
    """The variant's name of a case's pods_file (``variant:NAME``), else None."""
    return pods_file[len(VARIANT) :] if pods_file and pods_file.startswith(VARIANT) else None


def pods_file_of(data: Path, trace: str, pods_file: str | None = None) -> Path:
    """The pod list of a case: ``--trace FILE``, else the trace's file under the data (a
    variant has no file: ValueError)."""
    if variant_of(pods_file):
        raise ValueError(f"{pods_file} is built from the default trace, it has no file")
    return Path(pods_file) if pods_file else data / TRACES[trace]


@cache
def variant_jobs(data: Path, name: str):
    """The pods (``GpuJob``) of variant ``name``, built from the default trace under the
    data, once per process."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.formats.openb import read_openb_pods
    from placement.models.gpu.sim.openb.variants import build_variant

    return build_variant(name, read_openb_pods(data / TRACES["default"]))


@cache
def trace_of(data: Path, trace: str, pods_file: str | None = None):
    """The cluster and the pods of a trace (``load_trace``), once per process."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.formats.openb import read_openb_nodes
    from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, load_trace

    name = variant_of(pods_file)
    if name is None:
        return load_trace(data / NODE_LIST, pods_file_of(data, trace, pods_file))
    cluster = TraceCluster.from_nodes(read_openb_nodes(data / NODE_LIST))
    return cluster, PodSet.from_jobs(variant_jobs(data, name), cluster)


@cache
def lp_bound(data: Path, trace: str, pods_file: str | None = None):
    """The class LP bound (``OfflineBound``) on a trace, once per process."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.offline_bound import OfflineBound

    return OfflineBound(*trace_of(data, trace, pods_file))


def percentile(values, q: float) -> float:
    """The ``q``-th percentile of ``values``; NaN when there are none."""
    return float(np.percentile(values, q)) if len(values) else math.nan


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def values_of(rows: list[dict], key: str) -> list[float]:
    """Column ``key`` of the rows that have a value, as numbers."""
    return [float(r[key]) for r in rows if r.get(key) not in ("", None)]


def mean_of(rows: list[dict], key: str) -> float:
    """The mean of column ``key`` over the rows that have a value; NaN when none has."""
    values = values_of(rows, key)
    return statistics.fmean(values) if values else math.nan


def verdict(values: list[float], target: float) -> str:
    """The `target` column: ``<= T`` and met only when every seed's value is at or under the
    target (the issues ask for every seed; a mean under the target while a seed is over is
    missed), else how many seeds are over."""
    if not values:
        return f"<= {target}: no seed measured"
    over = sum(1 for v in values if v > target)
    if not over:
        return f"<= {target}: met" + (f" on all {len(values)} seeds" if len(values) > 1 else "")
    seeds = f" on {over} of {len(values)} seeds" if len(values) > 1 else ""
    return f"<= {target}: **missed**{seeds}"
