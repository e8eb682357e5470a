"""``placement bench gpu-slurm --quick`` against real daemons: a 4-node cluster, 8 jobs of the
Cirrus trace replayed under Slurm alone and under ``placement slurm schedule``. Skips, saying
why, without slurm-wlm and munge (or root) or without the trace. Behaviour only: both
policies ran every job, no invalid decision, the table has both rows and Kant's columns."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from placement.benchmarks.gpu.slurm_cluster import missing
from placement.benchmarks.gpu.slurm_stream import TRACE, cirrus_stream
from placement.models.gpu.formats import slurm_live as live
from tests.conftest import REPO
from tests.test_slurm_schedule import _runner


def test_stream_maps_the_trace_to_gpu_jobs(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / TRACE
    if not path.is_file():
        pytest.skip(f"the Cirrus trace is not at {path}")
    stream = cirrus_stream(path, 3, jobs=40, gpus_per_node=4, leaf_nodes=4, span_s=60)
    again = cirrus_stream(path, 3, jobs=40, gpus_per_node=4, leaf_nodes=4, span_s=60)
    assert stream == again
    assert len(stream) == 40
    assert sum(1 for j in stream if j.nodes > 1) >= 8  # gang_share 0.2
    assert all(1 <= j.gpus_per_node <= 4 and j.nodes <= 4 for j in stream)
    assert all(j.exclusive and j.gpus_per_node == 4 for j in stream if j.nodes > 1)
    assert min(j.submit_s for j in stream) == 0 and max(j.submit_s for j in stream) <= 60
    gang = next(j for j in stream if j.nodes > 1)
    assert "--switches=1@00:30" in gang.sbatch_args(30)


def test_quick_run_against_a_live_cluster(shared_benchmarks: Path, tmp_path: Path) -> None:
    why = missing()
    if why:
        pytest.skip(why)
    if not (shared_benchmarks / TRACE).is_file():
        pytest.skip(f"the Cirrus trace is not at {shared_benchmarks / TRACE}")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "placement.api.cli", "bench", "gpu-slurm", "--quick"]
    argv += ["--out", str(out), "--data", str(shared_benchmarks)]
    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = list(csv.DictReader((out / "gpu-slurm.csv").open()))
    assert [row["policy"] for row in rows] == ["slurm", "placement"]
    for row in rows:
        assert row["ran"] == row["jobs"] == row["completed"], row
        assert row["invalid"] == "0" and row["nodelist_mismatches"] == "0", row
        assert row["cancelled_at_deadline"] == "0"
    assert int(rows[1]["cycles"]) > 0
    md = (out / "gpu-slurm.md").read_text()
    for column in ("waiting GPU-min", "leaf sw / gang", "GAR", "SOR", "GFR", "p90"):
        assert column in md
    assert "| 1 | slurm |" in md and "| 1 | placement |" in md
    assert (out / "gpu-slurm-seed1.png").stat().st_size > 0


def test_a_gang_placed_across_leaves_past_its_wait_gets_its_switch_limit_cleared() -> None:
    """What gpu-slurm found: Slurm counts a held job's --switches wait from its release, so a
    gang placed on two leaves once its wait was over must not wait it again."""
    later = live._epoch("2026-12-06T05:00:00") or 0.0
    view = live.read_cluster(_runner(), now=later)  # job2: -N2, Switches=1@00:05:00
    calls: list[list[str]] = []

    def run(argv: list[str]) -> str:
        calls.append(argv)
        return ""

    live.apply(run, [live.Decision(2, "gang", nodes=("n2", "n3"))], view)  # leaf1 + leaf2
    assert "Switches=0" in calls[0] and "waited out" in calls[0][-1]
    calls.clear()
    live.apply(run, [live.Decision(2, "gang", nodes=("n3", "n4"))], view)  # one leaf
    assert not any(a.startswith("Switches") for a in calls[0])
