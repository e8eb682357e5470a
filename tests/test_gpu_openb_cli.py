"""``placement bench gpu-openb --trace FILE --seeds A-B --modes LIST``: a run on a small pod
list (real processes, real solvers) and the options' errors (exit 2, naming the option)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def small_trace(root: Path, gpu_spec: bool = True) -> Path:
    """A data folder with a node list of 6 nodes, and a pod list (returned) outside it."""
    rng = np.random.default_rng(11)
    data = root / "data" / "gpu" / "openb"
    data.mkdir(parents=True)
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"] + [
        f"n{i},64000,262144,{int(rng.choice([2, 4]))},G2" for i in range(6)
    ]
    (data / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    cols = "name,cpu_milli,memory_mib,num_gpu,gpu_milli" + (",gpu_spec" if gpu_spec else "")
    pods = [cols + ",qos,creation_time,deletion_time"]
    for j in range(30):
        num, milli = ((1, 1000), (1, int(rng.choice([300, 450, 700]))), (0, 0))[j % 3]
        spec = "," if gpu_spec else ""
        pods.append(f"p{j:03d},2000,1024,{num},{milli}{spec},BE,{j * 10},{j * 10 + 500}")
    path = root / "my_pods.csv"
    path.write_text("\n".join(pods) + "\n")
    return path


def test_a_trace_of_my_own_runs_every_asked_mode_per_seed(tmp_path: Path) -> None:
    pods = small_trace(tmp_path, gpu_spec=False)  # gpu_spec is optional, as in the simulator
    out = tmp_path / "out"
    done = cli(
        "bench",
        "gpu-openb",
        "--data",
        tmp_path / "data",
        "--out",
        out,
        "--quiet",
        "--trace",
        pods,
        "--seeds",
        "1-2",
        "--modes",
        "online,batch:4,defrag:0.5,bound",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    got = sorted((r["trace"], r["mode"], r["seed"]) for r in rows)
    want = sorted(
        ("my_pods", m, s) for m in ("online", "batch", "defrag", "bound") for s in ("1", "2")
    )
    assert got == want
    for r in rows:
        assert r["invalid"] == "0"
        assert float(r["unallocated_gpus_at_100"]) >= 0 and int(r["pods_arrived"]) > 0
        assert int(r["migrated_pods"]) <= 0.5 * int(r["pods_arrived"])
    text = (out / "gpu-openb.md").read_text()
    assert "--trace" in text and "--modes online,batch:4,defrag:0.5,bound" in text
    assert "Defragmentation" in text


def test_configuration_bound_mode_sits_between_the_lp_bound_and_every_policy(
    tmp_path: Path,
) -> None:
    pods = small_trace(tmp_path)
    out = tmp_path / "out"
    done = cli(
        "bench", "gpu-openb", "--data", tmp_path / "data", "--out", out, "--quiet",
        "--trace", pods, "--seeds", "1", "--modes",
        "online,FGD,bound,bound:config,bound:never-refusing",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = {r["policy"]: r for r in csv.DictReader(fh)}
    config = rows["configuration bound"]
    assert config["mode"] == "config_bound" and config["invalid"] == "0"
    lower = float(config["unallocated_gpus_at_100"])
    # the class LP is weaker (fewer unallocated GPUs); the row carries it at the same point
    lp = float(config["lp_bound_unalloc_at_100"])
    assert lp <= lower + 1e-6
    gpus = int(config["total_gpus"])  # the LP row's figure is rounded to 0.01 % allocation
    assert abs(float(rows["offline LP bound"]["unallocated_gpus_at_100"]) - lp) <= gpus / 1e4 + 0.05
    # a checked packing (the witness) and every policy leave at least the bound unallocated
    assert float(config["witness_unalloc_at_100"]) >= lower
    for policy in ("FGD", "FGD+BF-tie"):
        assert float(rows[policy]["unallocated_gpus_at_100"]) >= lower - 1e-6
    assert "configuration bound" in (out / "gpu-openb.md").read_text()
    # the never-refusing bound: at least the configuration bound (more is imposed), its
    # witness checked (invalid counts a witness that fails or drops a forced pod)
    never = rows["never-refusing bound"]
    assert never["mode"] == "forced_bound" and never["invalid"] == "0"
    forced = float(never["unallocated_gpus_at_100"])
    assert lower - 0.01 <= forced <= float(never["witness_unalloc_at_100"])
    assert int(never["forced_pods"]) > 0
    assert "never refusing" in (out / "gpu-openb.md").read_text()


def test_departures_and_latency_modes_write_their_rows_tables_and_plot(tmp_path: Path) -> None:
    pods = small_trace(tmp_path)
    out = tmp_path / "out"
    done = cli(
        "bench", "gpu-openb", "--data", tmp_path / "data", "--out", out, "--quiet",
        "--trace", pods, "--seeds", "3", "--modes", "departures,latency", "--time-limit", "0.5",
        "--param", "repack_time=2", "--param", "repack_every=5",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    modes = sorted(r["mode"] for r in rows)
    assert modes.count("latency") == 3  # one row per time limit
    assert {m for m in modes if m != "latency"} == {
        "departures:none",
        "departures:migrate",
        "departures:preempt",
        "departures:repack",
    }
    for r in rows:
        assert r["invalid"] == "0"
        if r["mode"] == "latency":  # no cycle gains more than the whole cluster's bound
            assert float(r["gain_max"]) <= float(r["cluster_gain_bound"])
            assert float(r["cluster_gain_bound"]) <= float(r["cluster_counting_bound"])
        if r["mode"].startswith("departures"):
            assert int(r["pods_arrived"]) > 30 and 0 <= float(r["waited_pct"]) <= 100
            if r["mode"] != "departures:preempt":
                assert r["preemptions"] == "0"
            repack = r["mode"] == "departures:repack"
            assert r["rejected_moves"] == ("0" if repack else "")
            assert (r["repack_every"], r["repack_time_s"]) == (("5", "2.0") if repack else ("", ""))
    text = (out / "gpu-openb.md").read_text()
    assert "The trace with departures" in text and "Latency of one re-optimization" in text
    assert (out / "gpu-openb-departures.png").stat().st_size > 0


def test_bad_options_exit_2_naming_the_option(tmp_path: Path) -> None:
    pods = small_trace(tmp_path)
    base = ("bench", "gpu-openb", "--data", tmp_path / "data", "--out", tmp_path / "o")
    cases = [
        (("--modes", "online,warp"), "--modes"),
        (("--modes", "defrag:1.5"), "--modes"),
        (("--modes", "batch:0"), "--modes"),
        (("--seeds", "9-3"), "--seeds"),
        (("--modes", "departures", "--param", "repack_every=x"), "--param repack_every"),
        (("--modes", "departures", "--param", "repack_time=0"), "--param repack_time"),
        (("--seeds", "x"), "--seeds"),
        (("--trace", tmp_path / "missing.csv"), "--trace"),
        (
            ("--trace", tmp_path / "data" / "gpu" / "openb" / "openb_node_list_gpu_node.csv"),
            "--trace",
        ),
    ]
    for extra, option in cases:
        done = cli(*base, *extra, cwd=tmp_path)
        assert done.returncode == 2, (extra, done.stderr)
        assert option in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = cli("bench", "gpu-synthetic", "--quick", "--trace", pods, cwd=tmp_path)
    assert done.returncode == 2 and "--trace" in done.stderr and "gpu-openb" in done.stderr


def test_curve_mode_brackets_each_budget_between_the_bound_and_a_checked_witness(
    tmp_path: Path,
) -> None:
    pods = small_trace(tmp_path)
    out = tmp_path / "out"
    done = cli(
        "bench", "gpu-openb", "--data", tmp_path / "data", "--out", out, "--quiet",
        "--trace", pods, "--seeds", "1", "--modes", "curve:Random",
        "--param", "curve_time=20",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["budget"] for r in rows] == ["0 %", "0.5 %", "1 %", "2 %", "5 %", "10 %", "unlimited"]
    start = float(rows[0]["start_unalloc"])
    for r in rows:
        assert r["kind"] == "curve" and r["start"] == "Random" and r["invalid"] == "0"
        witness, bound = float(r["witness_unalloc"]), float(r["bound_unalloc"])
        assert bound <= witness + 1e-9 <= start + 1e-9
        assert int(r["moves"]) <= int(r["budget_pods"])
    assert float(rows[0]["witness_unalloc"]) == start  # K = 0: the end state, proved
    # more budget never hurts: a smaller budget's witness stands for a larger one
    budgeted = [float(r["witness_unalloc"]) for r in rows[:-1]]
    assert budgeted == sorted(budgeted, reverse=True)
    assert (out / "gpu-openb-curve.png").is_file()
    assert "end-state curve" in (out / "gpu-openb.md").read_text()


def test_repack_mode_writes_a_checked_row_per_budget_and_its_table(tmp_path: Path) -> None:
    pods = small_trace(tmp_path)
    out = tmp_path / "out"
    done = cli(
        "bench", "gpu-openb", "--data", tmp_path / "data", "--out", out, "--quiet",
        "--trace", pods, "--seeds", "1", "--modes", "FGD,repack:FGD",
        "--param", "repack_budget=0.1,0.5", "--param", "repack_time=5",
        "--param", "repack_every=3", "--param", "repack_pressure=0.5",
        "--param", "repack_per_gpu=4", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    repack = [r for r in rows if r["mode"] == "repack"]
    assert sorted(float(r["budget"]) for r in repack) == [0.1, 0.5]
    for r in repack:
        assert r["invalid"] == "0" and r["policy"].startswith("FGD repack")
        assert int(r["migrated_pods"]) <= float(r["budget"]) * int(r["pods_arrived"])
        assert r["every"] == "3" and float(r["cycle_time_s"]) == 5.0
        spent = [int(m) for m in r["cycle_migrated_pods"].split()]
        assert len(spent) == int(r["cycles"]) and sum(spent) >= int(r["migrated_pods"])
        # a cycle waits for the waiting demand to reach half the free GPUs: without
        # departures, for an arrived share of at least 100 % less half the free share (<= 100)
        when = [float(x) for x in r["cycle_arrived_pct"].split()]
        assert len(when) == int(r["cycles"]) >= 1 and when == sorted(when)
        assert float(r["pressure"]) == 0.5 and when[0] >= 50
        assert float(r["per_gpu"]) == 4.0
    text = (out / "gpu-openb.md").read_text()
    assert "Online re-packing within a migration budget" in text and "FGD online" in text
    assert "pressure 0.5" in text and "<= 4 moves per waiting GPU" in text


def test_repack_mode_bad_settings_exit_2_naming_the_option(tmp_path: Path) -> None:
    pods = small_trace(tmp_path)
    base = ("bench", "gpu-openb", "--data", tmp_path / "data", "--out", tmp_path / "o")
    base += ("--trace", pods, "--seeds", "1")
    for extra, option in (
        (("--modes", "repack:Nope"), "--modes"),
        (("--modes", "repack", "--param", "repack_budget=1.5"), "--param repack_budget"),
        (("--modes", "repack", "--param", "repack_every=0"), "repack_every"),
        (("--modes", "repack", "--param", "repack_every=x"), "--param repack_every"),
        (("--modes", "repack", "--param", "repack_time=abc"), "--param repack_time"),
        (("--modes", "repack", "--param", "repack_nodes=-1"), "--param repack_nodes"),
        (("--modes", "repack", "--param", "repack_pressure=-1"), "--param repack_pressure"),
        (("--modes", "repack", "--param", "repack_pressure=x"), "--param repack_pressure"),
        (("--modes", "repack", "--param", "repack_per_gpu=-1"), "--param repack_per_gpu"),
        (("--modes", "repack", "--param", "repack_per_gpu=x"), "--param repack_per_gpu"),
    ):
        done = cli(*base, *extra, cwd=tmp_path)
        assert done.returncode == 2, (extra, done.stderr)
        assert option in done.stderr and done.stderr.count("\n") == 1, done.stderr
