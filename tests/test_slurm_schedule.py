"""``placement slurm schedule``: its readers on captured Slurm 22.05 text, its applying with
a scripted ``run``, and the command against the real cluster of the ``slurm_cluster``
fixture (4 nodes x 4 a100, n1-n2 under leaf1, n3-n4 under leaf2, spine above)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from placement.models.gpu.formats import slurm_live as live
from tests.conftest import REPO
from tests.service_harness import start_server

CLI = [sys.executable, "-m", "placement.api.cli"]

TOPOLOGY = """\
SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n1,n2
SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n3,n4
SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=leaf1,leaf2
"""
_NODE = (
    "NodeName={n} Arch=x86_64 CoresPerSocket=1 CPUAlloc={c} CPUEfctv=16 CPUTot=16 "
    "CPULoad=0.00 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:4 "
    "GresDrain=N/A GresUsed={u} NodeAddr=127.0.0.1 NodeHostName=localhost "
    "RealMemory=65536 AllocMem={m} FreeMem=1000 Sockets=16 Boards=1 State={s} "
    "Partitions=gpu"
)
NODES = "\n".join(
    [
        _NODE.format(n="n1", c=4, u="gpu:a100:2(IDX:0-1)", m=8192, s="MIXED"),
        _NODE.format(n="n2", c=0, u="gpu:a100:0(IDX:N/A)", m=0, s="IDLE"),
        _NODE.format(n="n3", c=0, u="gpu:a100:0(IDX:N/A)", m=0, s="IDLE"),
        _NODE.format(n="n4", c=0, u="gpu:a100:0(IDX:N/A)", m=0, s="IDLE"),
    ]
)
PARTITIONS = "PartitionName=gpu AllowGroups=ALL Default=YES Nodes=n[1-4] State=UP\n"
_JOB = (
    "JobId={id} JobName={name} UserId=root(0) Priority={prio} JobState={state} "
    "Reason=JobHeldUser Dependency=(null) SubmitTime=2026-12-06T04:40:42 Partition=gpu "
    "ReqNodeList={req} ExcNodeList=(null) NodeList= NumNodes={nn} NumCPUs={cpus} "
    "MinCPUsNode={mcn} MinMemoryCPU=1G Features=(null) OverSubscribe={os} Contiguous=0 "
    "Licenses=(null) {extra}Power= TresPerNode=gres:gpu:{g}"
)


def _job(id: int, name: str, **kw: Any) -> str:
    f = {"prio": 0, "state": "PENDING", "req": "(null)", "nn": 1, "cpus": 1, "mcn": 1}
    f |= {"os": "OK", "extra": "", "g": 4} | kw
    return _JOB.format(id=id, name=name, **f)


JOBS = "\n".join(
    [
        _job(1, "wrap", prio=4294901759, state="RUNNING", req="n1", cpus=4, mcn=4, g=2),
        _job(2, "gang", nn="2-2", cpus=2, extra="Switches=1@00:05:00 "),
        _job(3, "single", cpus=2, mcn=2),
        _job(4, "excl", nn="2-2", cpus=4, mcn=2, os="NO", g=1),
        _job(5, "imp", g=8, extra="Comment=placement: test "),
        _job(6, "arr", extra="ArrayJobId=6 ArrayTaskId=1 "),
    ]
)


def _runner(extra: dict[tuple[str, ...], str] | None = None) -> Any:
    outs = {
        ("scontrol", "show", "topology"): TOPOLOGY,
        ("scontrol", "-d", "show", "node", "-o"): NODES,
        ("scontrol", "show", "job", "-o"): JOBS,
        ("scontrol", "show", "partition", "-o"): PARTITIONS,
        **(extra or {}),
    }
    return lambda argv: outs[tuple(argv)]


def test_topology_of_scontrol_show_topology() -> None:
    levels, paths = live.parse_topology(TOPOLOGY)
    assert levels == ["switch1", "switch2"]
    assert paths == {n: [f"leaf{1 + (n > 'n2')}", "spine"] for n in ("n1", "n2", "n3", "n4")}
    assert live.parse_topology("") == ([], {})


def test_jobs_become_gpu_jobs_and_refusals() -> None:
    view = live.read_cluster(_runner(), now=0.0)
    jobs = {j.name: j for j in view.instance.jobs}
    assert sorted(jobs) == ["job2", "job3", "job4", "job5"]
    gang = jobs["job2"]
    assert (gang.workers, gang.gpus, gang.cpu_milli, gang.memory_mib) == (2, 4, 1000, 1024)
    assert gang.locality_level == "switch1" and gang.locality_required
    assert (jobs["job3"].workers, jobs["job3"].cpu_milli) == (1, 2000)
    assert jobs["job4"].cpu_milli == 16_000  # --exclusive: the whole node's CPUs
    assert jobs["job5"].gpus == 8
    assert list(view.refused) == [6] and "array job" in view.refused[6][1]
    n1 = view.instance.nodes[0]
    assert n1.gpu_milli_used == (1000, 1000, 0, 0) and n1.cpu_milli_used == 4000
    # past the --switches wait, the leaf is preferred, not required
    later = live.read_cluster(_runner(), now=live._epoch("2026-12-06T05:00:00") or 0.0)
    assert not {j.name: j for j in later.instance.jobs}["job2"].locality_required


def test_a_released_job_not_started_holds_its_nodes() -> None:
    jobs = _job(7, "late", prio=100, req="n2", extra="Comment=placement: placed on n2 ")
    view = live.read_cluster(_runner({("scontrol", "show", "job", "-o"): jobs}))
    n2 = view.instance.nodes[1]
    assert n2.gpu_milli_used == (1000,) * 4 and not view.managed
    assert view.notes == ["job 7: released, not started yet: holds n2"]


def test_held_jobs_are_ranked_first_come_first_served() -> None:
    """The oldest held job (SubmitTime, then id) weighs most in the first tier, as Slurm's
    priority/basic orders its queue; a held job's own Priority is 0."""

    def younger(job: str) -> str:  # submitted at 04:50, after job 10 (04:40:42)
        return job.replace("SubmitTime=2026-12-06T04:40:42", "SubmitTime=2026-12-06T04:50:00")

    jobs = "\n".join(
        [
            younger(_job(9, "later", g=2)),
            _job(10, "gang", nn="2-2", cpus=2),
            younger(_job(11, "b", g=2)),
            _job(12, "a", g=2),
        ]
    )
    view = live.read_cluster(_runner({("scontrol", "show", "job", "-o"): jobs}), now=0.0)
    prio = {j.name: j.priority for j in view.instance.jobs}
    assert prio == {"job10": 1000, "job12": 999, "job9": 998, "job11": 997}


def test_refused_per_job_with_a_reason() -> None:
    jobs = "\n".join(
        [
            _job(8, "usr", os="USER"),
            _job(9, "range", nn="2-4"),
            _job(10, "nic", g="2,gres:nic:1"),
            _job(11, "wide", nn="3-3", extra="Switches=2 "),
            _job(12, "pinned", req="n1"),
            _job(13, "ok"),
            _job(14, "retry", req="n2", extra="Comment=placement: failed: scontrol release "),
        ]
    )
    view = live.read_cluster(_runner({("scontrol", "show", "job", "-o"): jobs}), now=0.0)
    why = {j: w for j, (_, w) in view.refused.items()}
    assert why == {
        8: "--exclusive=user is not supported yet",
        9: "a node-count range (-N 2-4) is not supported yet",
        10: "GRES other than GPUs (gres:gpu:2,gres:nic:1) are not supported yet",
        11: "--switches=2 above 1 is not supported yet",
        12: "--nodelist is not supported yet (the node list is placement's to set)",
    }
    # a ReqNodeList placement set before a release that failed: the job is placed again
    assert list(view.managed) == ["job13", "job14"]
    decisions = live.plan(view, None, [], "x")
    kinds = [d.reason.split(":")[0] for d in decisions]
    assert kinds == ["unsupported"] * 5 + ["no_solution"] * 2


def test_parsers_of_sizes_and_gres() -> None:
    assert live.memory_mib("4G") == 4096 and live.memory_mib("512") == 512
    assert live.gres_gpus("gres:gpu:a100:2") == (2, "a100")
    assert live.gres_gpus("gres:gpu:2,gres:nic:1") is None
    assert live.duration_s("1-00:00:10") == 86410


def test_apply_a_failed_release_leaves_the_job_held_with_why() -> None:
    view = live.read_cluster(_runner(), now=0.0)
    calls: list[list[str]] = []

    def run(argv: list[str]) -> str:
        calls.append(argv)
        if argv[:2] == ["scontrol", "release"]:
            raise live.SlurmCommandError("scontrol release 3: Access/permission denied")
        return ""

    decisions = [live.Decision(3, "single", nodes=("n2",)), live.Decision(5, "imp", reason="x")]
    log = live.apply(run, decisions, view)
    assert calls[0] == [
        "scontrol", "update", "JobId=3", "ReqNodeList=n2", "Comment=placement: placed on n2"
    ]  # fmt: skip
    assert calls[2][-1].startswith("Comment=placement: failed: scontrol release 3")
    assert log[0].startswith("job 3 (single): held: placement: failed")
    assert calls[3] == ["scontrol", "update", "JobId=5", "Comment=placement: x"]
    assert live.comment('a="b"\nc') == "placement: a b c"


# --- against the real cluster ------------------------------------------------------------


@pytest.fixture
def cluster(slurm_cluster: Any) -> Iterator[Any]:
    """The module's cluster, every job cancelled after each test."""
    yield slurm_cluster
    slurm_cluster.cancel_all()


def _schedule(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [*CLI, "slurm", "schedule", "--time-limit", "20", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env=cluster.env,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _snapshot(cluster: Any, ids: list[int]) -> dict[int, tuple[str, str, str, str]]:
    out = {}
    for j in ids:
        info = cluster.job(j)
        out[j] = (info["JobState"], info["Priority"] == "0", info["ReqNodeList"], info["NodeList"])
    return out


def test_schedule_once_places_gangs_in_one_leaf(cluster: Any) -> None:
    """n1 busy with 2 GPUs: the held 2 x 4-GPU gang with --switches=1 fits only under leaf2
    (n3, n4), the 4-GPU job only on n2; an 8-GPU job never: it stays held with its reason,
    and an array job is refused. A second --once changes nothing; a dry run neither."""
    busy = cluster.submit("-w", "n1", "--gres=gpu:2", "-c", "4", "--mem=8192", "--wrap", "sleep 60")
    cluster.wait_job(busy, ("RUNNING",))
    gang = cluster.submit("-H", "-N", "2", "--gres=gpu:4", "--switches=1@5:00", "-J", "gang",
                          "--wrap", "sleep 60")  # fmt: skip
    single = cluster.submit("-H", "--gres=gpu:4", "-c", "2", "--mem=4096", "-J", "single",
                            "--wrap", "sleep 60")  # fmt: skip
    imp = cluster.submit("-H", "--gres=gpu:8", "-J", "imp", "--wrap", "sleep 60")
    arr = cluster.submit("-H", "--array=1-2", "--gres=gpu:1", "-J", "arr", "--wrap", "sleep 60")
    ids = [gang, single, imp]
    before = _snapshot(cluster, ids)

    dry = _schedule(cluster, "--dry-run")
    assert f"dry run: job {gang} (gang): place on n3,n4" in dry.stdout, dry.stdout
    assert f"dry run: job {single} (single): place on n2" in dry.stdout, dry.stdout
    assert "dry run: nothing changed" in dry.stdout
    assert _snapshot(cluster, ids) == before

    r = _schedule(cluster, "--once")
    assert f"job {gang} (gang): placed on n3,n4, released" in r.stdout, r.stdout
    g = cluster.wait_job(gang, ("RUNNING",))
    assert g["NodeList"] == "n[3-4]", g
    s = cluster.wait_job(single, ("RUNNING",))
    assert s["NodeList"] == "n2", s
    running = {j["job_id"]: j for j in cluster.jobs()}
    assert running[gang]["job_state"] == "RUNNING" and running[gang]["nodes"] == "n[3-4]"
    i = cluster.job(imp)
    assert i["JobState"] == "PENDING" and i["Priority"] == "0", i
    text = cluster.run(["scontrol", "show", "job", "-o", str(imp)]).stdout
    assert "Comment=placement: infeasible_alone: job" in text, text
    a = cluster.run(["scontrol", "show", "job", "-o", str(arr)]).stdout
    assert "Comment=placement: unsupported: an array job" in a, a

    after = _snapshot(cluster, ids)
    again = _schedule(cluster, "--once")
    assert "placed on" not in again.stdout, again.stdout
    assert f"job {imp} (imp): held (unchanged)" in again.stdout, again.stdout
    assert _snapshot(cluster, ids) == after


def test_schedule_solves_on_a_server(
    cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """--server: the solve runs in a ``placement serve``; the decision is checked and applied
    here as in-process (a 2 x 4-GPU gang under one leaf)."""
    server = start_server(tmp_path_factory.mktemp("slurm-server"), workers=1)
    try:
        gang = cluster.submit("-H", "-N", "2", "--gres=gpu:4", "--switches=1", "-J", "gang",
                              "--wrap", "sleep 30")  # fmt: skip
        r = _schedule(cluster, "--once", "--server", server.target)
        assert f"job {gang} (gang): placed on" in r.stdout, r.stdout
        info = cluster.wait_job(gang, ("RUNNING",))
        assert info["NodeList"] in ("n[1-2]", "n[3-4]"), info
    finally:
        server.stop()


def test_schedule_loop_places_a_job_held_later(cluster: Any) -> None:
    """Without --once: a cycle every --interval; a job held after the loop started is
    placed by a later cycle. The loop is stopped by its PID."""
    proc = subprocess.Popen(
        [*CLI, "slurm", "schedule", "--interval", "1", "--time-limit", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=cluster.env,
    )
    try:
        job = cluster.submit("-H", "--gres=gpu:2", "-J", "late", "--wrap", "sleep 30")
        cluster.wait_job(job, ("RUNNING",), timeout=90)
        text = cluster.run(["scontrol", "show", "job", "-o", str(job)]).stdout
        assert "Comment=placement: placed on" in text, text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"job {job} (late): placed on" in out, out
    # SIGTERM stops the loop between cycles, as systemd stops a service
    assert proc.returncode == 143 and "stopped by SIGTERM between cycles" in out, out


def test_schedule_loop_stops_on_sigterm_between_cycles_without_a_cluster(tmp_path) -> None:
    """Every cycle fails to read the cluster (no Slurm commands on the PATH, as on a machine
    without Slurm; a missing slurm.conf would make scontrol retry for up to 60 s) and says
    so; the loop goes on, and SIGTERM ends it cleanly (exit 143)."""
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.Popen(
        [*CLI, "slurm", "schedule", "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        assert "reading the cluster failed" in proc.stdout.readline()
        assert "reading the cluster failed" in proc.stdout.readline()  # a second cycle
    finally:
        proc.send_signal(signal.SIGTERM)
        out, errs = proc.communicate(timeout=30)
    assert proc.returncode == 143, errs
    assert out.splitlines()[-1].endswith("stopped by SIGTERM between cycles"), out
