"""Against a real Slurm cluster on loopback (benchmarks/gpu/slurm_cluster.py, the
``slurm_cluster`` fixture of conftest.py): 4 nodes x 4 GPUs (GRES), n1-n2 under switch
leaf1, n3-n4 under leaf2, both under spine. Skips, saying why, where slurm-wlm and munge are not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placement.benchmarks.gpu.slurm_cluster import Node, SlurmCluster, alive, missing
from tests.conftest import REPO

CLI = [sys.executable, "-m", "placement.api.cli"]


@pytest.fixture
def cluster(slurm_cluster: Any) -> Iterator[Any]:
    """The module's cluster, every job cancelled after each test."""
    yield slurm_cluster
    slurm_cluster.cancel_all()


def test_cluster_comes_up_with_gpus_and_switches(cluster: Any) -> None:
    rows = cluster.run(["sinfo", "-h", "-N", "-o", "%N %T %G %c %m"]).stdout.split("\n")
    assert sorted(r.split() for r in rows if r) == [
        [f"n{k}", "idle", "gpu:a100:4", "16", "65536"] for k in range(1, 5)
    ]
    topology = {
        line.split()[0]: dict(w.split("=", 1) for w in line.split()[1:])
        for line in cluster.run(["scontrol", "show", "topology"]).stdout.splitlines()
        if line.startswith("SwitchName=")
    }
    assert topology["SwitchName=leaf1"]["Nodes"] in ("n1,n2", "n[1-2]")
    assert topology["SwitchName=leaf2"]["Nodes"] in ("n3,n4", "n[3-4]")
    assert topology["SwitchName=leaf1"]["Level"] == "0"
    assert topology["SwitchName=spine"]["Level"] == "1"
    assert topology["SwitchName=spine"]["Switches"] == "leaf1,leaf2"


def test_held_job_runs_on_the_nodes_it_is_given(cluster: Any) -> None:
    """Held, given ReqNodeList across the two leaves (not what topology/tree would pick),
    released: it runs on exactly those nodes with all their GPUs."""
    job = cluster.submit("-H", "-N", "2", "--gres=gpu:4", "-J", "pinned", "--wrap", "sleep 5")
    assert cluster.job(job)["JobState"] == "PENDING"
    cluster.run(["scontrol", "update", f"JobId={job}", "ReqNodeList=n2,n3"])
    cluster.run(["scontrol", "release", str(job)])
    info = cluster.wait_job(job, ("RUNNING",))
    assert info["NodeList"] == "n[2-3]", info
    (entry,) = [j for j in cluster.jobs() if j["job_id"] == job]
    assert entry["nodes"] == "n[2-3]" and entry["job_state"] == "RUNNING", entry
    used = {
        line.split()[0]: line
        for line in cluster.run(["scontrol", "-d", "show", "node", "-o"]).stdout.splitlines()
    }
    for name in ("NodeName=n2", "NodeName=n3"):
        assert "GresUsed=gpu:a100:4(IDX:0-3)" in used[name], used[name]
    for name in ("NodeName=n1", "NodeName=n4"):
        assert "GresUsed=gpu:a100:0(IDX:N/A)" in used[name], used[name]


def test_import_of_the_live_cluster_solves(cluster: Any, tmp_path: Path) -> None:
    """``placement import slurm`` reads the fixture's topology.conf and the live
    ``scontrol -d show node -o`` (n1 busy with a 4-GPU job) into a GPU instance; with jobs
    added, ``placement solve`` gives a solution ``placement check`` accepts."""
    busy = cluster.submit("-w", "n1", "--gres=gpu:4", "-c", "4", "--mem=8192", "--wrap", "sleep 30")
    cluster.wait_job(busy, ("RUNNING",))
    nodes_txt = tmp_path / "nodes.txt"
    nodes_txt.write_text(cluster.run(["scontrol", "-d", "show", "node", "-o"]).stdout)
    inst_path = tmp_path / "cluster.json"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
        )

    r = cli("import", "slurm", "--topology", str(cluster.topology_conf), "--nodes",
            str(nodes_txt), "--name", "live", "--out", str(inst_path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(inst_path.read_text())
    levels = [lv["name"] for lv in doc["gpu"]["cluster"]["levels"]]
    assert levels == ["nvlink", "node", "switch1", "switch2"]
    nodes = {n["name"]: n for n in doc["gpu"]["cluster"]["nodes"]}
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    for name, node in nodes.items():
        assert node["gpu_count"] == 4 and node["gpu_type"] == "a100", node
        assert node["cpu_milli"] == 16_000 and node["memory_mib"] == 65536, node
        leaf = "leaf1" if name in ("n1", "n2") else "leaf2"
        assert node["groups"] == [leaf, "spine"], node
    n1_used = {u["index"]: u["milli_used"] for u in nodes["n1"]["gpu_usage"]}
    assert n1_used == {0: 1000, 1: 1000, 2: 1000, 3: 1000}
    assert nodes["n1"]["cpu_milli_used"] == 4000 and nodes["n1"]["memory_mib_used"] == 8192
    assert not any(u.get("milli_used") for n in ("n2", "n3", "n4") for u in nodes[n]["gpu_usage"])

    # A gang of 2 x 4 GPUs that must stay under one leaf switch: only leaf2 has two free
    # nodes (n1 is busy); a 4-GPU job then fits only on n2; a third 4-GPU job nowhere.
    def job(name: str, workers: int, **extra: Any) -> dict[str, Any]:
        return {"name": name, "workers": workers, "gpus": 4, "cpu_milli": 4000,
                "memory_mib": 8192, "priority": 1, **extra}  # fmt: skip

    doc["gpu"]["jobs"] = [
        job("gang", 2, locality_level="switch1", locality_required=True, traffic_gb=10.0),
        job("single", 1),
        job("extra", 1),
    ]
    inst_path.write_text(json.dumps(doc))
    sol_path = tmp_path / "solution.json"
    r = cli("solve", str(inst_path), "--quiet", "--time-limit", "30", "--out", str(sol_path))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli("check", "--json", str(inst_path), str(sol_path))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["feasible"] and report["violations"] == [], report
    assert report["objective_terms"]["placed_gpu_weighted"] == 12.0, report
    placed = _placements(json.loads(sol_path.read_text()))
    assert sorted(placed["gang"]) == ["n3", "n4"], placed
    assert placed["single"] == ["n2"], placed
    assert not placed.get("extra"), placed


def _placements(solution: dict[str, Any]) -> dict[str, list[str]]:
    """Job name -> its workers' nodes, from a gpu solution file."""
    out: dict[str, list[str]] = {}
    for p in solution["gpu"]["placements"]:
        out[p["job"]] = [w["node"] for w in p.get("workers", [])]
    return out


def test_teardown_leaves_no_process(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A cluster of its own with a job running: leaving the ``with`` ends every daemon and
    the job's processes."""
    why = missing()
    if why:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("slurm")
    with SlurmCluster(folder, [Node("m1", gpus=2)], {"leaf": ["m1"]}) as c:
        job = c.submit("--gres=gpu:2", "--wrap", "sleep 300")
        c.wait_job(job, ("RUNNING",))
        daemons = [p.pid for p in c.procs.values()]
        steps = c._strays()
        assert len(daemons) == 3 and steps, (daemons, steps)
    for pid in daemons + steps:
        assert not alive(pid), f"pid {pid} still running"
