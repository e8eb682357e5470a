"""``placement import slurm`` on Slurm's own files (tests/data/slurm): topology.conf of the tree
and block plugins, topology.yaml, ``scontrol show node -o`` lines and slurm.conf NodeName lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from placement.api.cli.entry import main
from placement.models.gpu.formats.slurm import expand_hostlist, import_slurm
from placement.solver.errors import InputError
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "slurm"
CLI = [sys.executable, "-m", "placement.api.cli"]


def test_hostlists() -> None:
    assert expand_hostlist("node[01-03,10],gpu7") == [
        "node01",
        "node02",
        "node03",
        "node10",
        "gpu7",
    ]
    assert expand_hostlist("r[1-2]n[08-09]") == ["r1n08", "r1n09", "r2n08", "r2n09"]
    assert expand_hostlist("a[098-100]") == ["a098", "a099", "a100"]
    for bad in ("n[1-", "n]1[", "n[3-1]", "n[a-b]", "a,,b"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def test_tree_from_scontrol() -> None:
    inst = import_slurm(str(DATA / "topology.conf"), str(DATA / "scontrol-show-node.txt"))
    assert [lv.name for lv in inst.levels] == ["nvlink", "node", "switch1", "switch2", "switch3"]
    node = {n.name: n for n in inst.nodes}
    assert "gpu015" not in node  # State=DOWN+NOT_RESPONDING
    assert node["gpu016"].groups == ("leaf4", "spine2", "core")
    assert node["gpu001"].gpu_milli_used == (1000,) * 8 and node["gpu001"].cpu_milli_used == 112_000
    assert node["gpu009"].gpu_milli_used == (0, 0, 0, 1000, 0, 0, 0, 0)  # GresUsed IDX:3
    assert node["gpu005"].memory_mib_used == 400_000 and node["gpu005"].gpu_type == "h100"
    assert inst.jobs == []


@pytest.mark.parametrize("topology", ["topology-block.conf", "topology.yaml"])
def test_blocks_with_block_sizes(topology: str) -> None:
    inst = import_slurm(str(DATA / topology), str(DATA / "scontrol-show-node.txt"))
    assert [lv.name for lv in inst.levels] == ["nvlink", "node", "block", "block8"]
    node = {n.name: n for n in inst.nodes}
    assert node["gpu001"].groups[0] != node["gpu005"].groups[0]
    assert node["gpu001"].groups[1] == node["gpu005"].groups[1]  # one 8-node block
    assert node["gpu005"].groups[1] != node["gpu009"].groups[1]


def test_slurm_conf_node_lines_with_defaults() -> None:
    inst = import_slurm(str(DATA / "topology.conf"), str(DATA / "slurm.conf"))
    assert len(inst.nodes) == 15  # gpu015 is State=FUTURE
    n = inst.nodes[0]
    assert (n.cpu_milli, n.memory_mib, n.gpu_count, n.gpu_type) == (224_000, 2_000_000, 8, "h100")


def test_short_branch_of_a_tree(tmp_path: Path) -> None:
    topo = tmp_path / "topology.conf"
    topo.write_text(
        "SwitchName=s1 Nodes=gpu[001-002]\nSwitchName=s3 Nodes=gpu[003-004]\n"
        "SwitchName=s2 Switches=s3\nSwitchName=root Switches=s[1-2]\n"
    )
    nodes = tmp_path / "nodes"
    nodes.write_text("NodeName=gpu[001-004] CPUs=8 RealMemory=1000 Gres=gpu:4\n")
    inst = import_slurm(str(topo), str(nodes))
    groups = {n.name: n.groups for n in inst.nodes}
    assert groups["gpu001"] == ("s1", "s1", "root") and groups["gpu003"] == ("s3", "s2", "root")
    assert inst.nodes[0].gpu_type == "gpu"


@pytest.mark.parametrize(
    ("topology", "nodes", "said"),
    [
        ("SwitchName=s1 Nodes=n[1-\n", "NodeName=n1 CPUs=1 RealMemory=1\n", "line 1: got 'n[1-'"),
        (
            "SwitchName=s1 Switches=s9\n",
            "NodeName=n1 CPUs=1 RealMemory=1\n",
            "SwitchName=s1: got 's9'",
        ),
        ("Frobnicate=1\n", "NodeName=n1 CPUs=1 RealMemory=1\n", "line 1: got 'Frobnicate=1'"),
        ("BlockName=b1 Nodes=n1\n", "NodeName=n1 CPUs=x RealMemory=1\n", "line 1.cpus: got 'x'"),
        (
            "BlockName=b1 Nodes=n1\nBlockSizes=4,6\n",
            "NodeName=n1 CPUs=1\n",
            "BlockSizes: got [4, 6]",
        ),
        ("BlockName=b1 Nodes=n1\n", "NodeName=n1 Gres=gpu:2 GresUsed=gpu:3(IDX:2)\n", "GresUsed"),
        ("BlockName=b1 Nodes=n1\n", "NodeName=n1 Gres=gpu:2 GresUsed=gpu:1(IDX:9N/A)\n", "IDX:0-3"),
        ("BlockName=b1 Nodes=n1\n", "NodeName=n1 Gres=gpu:99999999\n", "at most 1024 GPUs"),
        (
            "BlockName=b1 Nodes=n1\n",
            "NodeName=n1 Gres=gpu:2 GresUsed=gpu:1(IDX:0-9999999)\n",
            "IDX",
        ),
    ],
)
def test_malformed_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], topology: str, nodes: str, said: str
) -> None:
    """The command line's entry point in this process (the real process is tested below)."""
    (tmp_path / "topology.conf").write_text(topology)
    (tmp_path / "nodes.txt").write_text(nodes)
    code = main(
        ["import", "slurm", "--topology", str(tmp_path / "topology.conf"), "--nodes",
         str(tmp_path / "nodes.txt")]
    )  # fmt: skip
    out = capsys.readouterr()
    assert code == 2 and said in out.err, out.err
    assert out.out == ""


def test_cli_writes_the_instance(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    r = subprocess.run(
        [*CLI, "import", "slurm", "--topology", str(DATA / "topology.yaml"), "--nodes",
         str(DATA / "scontrol-show-node.txt"), "--out", str(out)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "left out (state DOWN+NOT_RESPONDING): gpu015" in r.stderr
    assert "ignored node fields:" in r.stderr and '"gpu"' in out.read_text()
    with pytest.raises(InputError):
        import_slurm(str(DATA / "missing.conf"), str(DATA / "slurm.conf"))
