"""Shared test fixtures."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_BENCHMARKS = REPO.parent / "shared" / "benchmarks"


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    """../shared/benchmarks, or skip with a clear message where it is absent."""
    if not SHARED_BENCHMARKS.is_dir():
        pytest.skip(
            f"public benchmark data not found at {SHARED_BENCHMARKS} (see docs/benchmarks.md)"
        )
    return SHARED_BENCHMARKS


@pytest.fixture(scope="module")
def slurm_cluster() -> Iterator[object]:
    """A real Slurm cluster (benchmarks/gpu/slurm_cluster.py): 4 nodes x 4 GPUs, n1-n2 under
    switch leaf1, n3-n4 under leaf2, both under spine; torn down after the module. Skips,
    saying why, without slurm-wlm and munge (or without root)."""
    # imported here, not at the top: only the Slurm tests need it
    from placement.benchmarks.gpu import slurm_cluster as sh

    why = sh.missing()
    if why:
        pytest.skip(why)
    # a short path of our own: the munge socket lives under it (unix sockets: <= 107 bytes)
    folder = Path(tempfile.mkdtemp(prefix="placement-slurm-"))
    nodes = [sh.Node(f"n{k}") for k in range(1, 5)]
    switches = {"leaf1": ["n1", "n2"], "leaf2": ["n3", "n4"], "spine": ["leaf1", "leaf2"]}
    with sh.SlurmCluster(folder, nodes, switches) as cluster:
        yield cluster
    shutil.rmtree(folder, ignore_errors=True)
