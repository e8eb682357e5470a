"""The FGD paper's trace variants built from the default trace: the shares they set, valid
pods, determinism, unknown names refused; ``--trace variant:NAME`` in the bench (exit 2 on a
bad name) and a checked replay of a variant."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from placement.models.gpu.formats.openb import read_openb_nodes, read_openb_pods
from placement.models.gpu.instance import GpuJob
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.online import make_any
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState, replay
from placement.models.gpu.sim.openb.variants import (
    KNOWN,
    PAPER_VARIANTS,
    SPEC_WEIGHTS,
    build_variant,
    describe,
    gpu_milli_of,
    parse_variant,
)
from placement.solver import InputError
from tests.test_gpu_openb_cli import cli

TYPES = ("G2", "T4", "P100")


def default_pods(n: int = 400) -> list[GpuJob]:
    """A small default trace: CPU-only, shared (500 milli), whole (1 GPU) and 4-GPU pods (the
    4-GPU pods hold 19 % of the GPU demand)."""
    jobs = []
    for i in range(n):
        kind = i % 8
        if kind in (0, 1):
            job = GpuJob(name="", cpu_milli=4000, memory_mib=8192)
        elif kind in (2, 3, 4):
            job = GpuJob(name="", gpu_milli=500, cpu_milli=2000, memory_mib=4096)
        elif kind in (5, 6) or i % 32 != 7:
            job = GpuJob(name="", gpus=1, cpu_milli=8000, memory_mib=16384)
        else:
            job = GpuJob(name="", gpus=4, cpu_milli=32000, memory_mib=65536)
        jobs.append(replace(job, name=f"openb-pod-{i:04d}"))
    return jobs


def shape(job: GpuJob) -> tuple:
    return (job.gpus, job.gpu_milli, job.cpu_milli, job.memory_mib)


def test_gpushare_sets_the_shared_share_of_gpu_demand_and_keeps_the_rest() -> None:
    default = default_pods()
    cpu = [shape(j) for j in default if not gpu_milli_of(j)]
    gpu_pods = sum(1 for j in default if gpu_milli_of(j))
    shapes = {shape(j) for j in default}
    for name in ("gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100"):
        jobs = build_variant(name, default)
        d = describe(jobs)
        assert d["gpu_pods"] == gpu_pods and d["pods"] == len(default)
        assert [shape(j) for j in jobs if not gpu_milli_of(j)] == cpu  # CPU-only pods kept
        assert {shape(j) for j in jobs} <= shapes  # every pod is one of the default's
        percent = parse_variant(name)[1]
        assert abs(d["shared_demand_pct"] - percent) <= 3, (name, d)
    assert describe(build_variant("gpushare100", default))["multi_demand_pct"] == 0


def test_multigpu_appends_multi_gpu_pods_until_they_hold_the_share() -> None:
    default = default_pods()
    for name in ("multigpu20", "multigpu30", "multigpu40", "multigpu50"):
        jobs = build_variant(name, default)
        assert jobs[: len(default)] == sorted(default, key=lambda j: j.name)
        extra = jobs[len(default) :]
        assert extra and all(j.gpus >= 2 for j in extra)
        share = describe(jobs)["multi_demand_pct"]
        before = describe(jobs[:-1])["multi_demand_pct"]
        percent = parse_variant(name)[1]
        assert before < percent <= share, (name, before, share)
    # the default already holds more than 20 %: nothing to append
    heavy = [j for j in default if j.gpus != 1]
    assert build_variant("multigpu20", heavy) == sorted(heavy, key=lambda j: j.name)


def test_gpuspec_constrains_that_share_of_gpu_pods_only() -> None:
    default = default_pods()
    gpu_pods = [j.name for j in default if gpu_milli_of(j)]
    for name in ("gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"):
        jobs = build_variant(name, default)
        assert [replace(j, gpu_types=()) for j in jobs] == default
        constrained = [j for j in jobs if j.gpu_types]
        assert len(constrained) == round(parse_variant(name)[1] / 100 * len(gpu_pods))
        assert all(gpu_milli_of(j) for j in constrained)
        assert {"|".join(j.gpu_types) for j in constrained} <= set(SPEC_WEIGHTS)


def test_variants_are_deterministic_and_named_uniquely() -> None:
    default = default_pods()
    for name in KNOWN:
        jobs = build_variant(name, default)
        assert jobs == build_variant(name, list(reversed(default)))
        assert len({j.name for j in jobs}) == len(jobs)
    assert build_variant("gpushare60", default, seed=1) != build_variant("gpushare60", default)


def test_an_unknown_variant_is_refused_naming_the_known_ones() -> None:
    for bad in ("gpushare50", "multigpu", "cpu050", ""):
        with pytest.raises(InputError) as info:
            build_variant(bad, default_pods())
        error = info.value.errors[0]
        assert error.path == "variant" and error.value == bad
        assert "gpushare40" in error.expected and "multigpu50" in error.expected


def test_describe_counts_the_traits() -> None:
    jobs = [
        GpuJob(name="a", gpu_milli=500, cpu_milli=1000, memory_mib=10),
        GpuJob(name="b", gpus=2, cpu_milli=3000, memory_mib=30, gpu_types=("T4",)),
        GpuJob(name="c", gpus=1, cpu_milli=2000, memory_mib=20),
        GpuJob(name="d", cpu_milli=9000, memory_mib=90),
    ]
    d = describe(jobs)
    assert d["pods"] == 4 and d["gpu_pods"] == 3 and d["shared_pods"] == 1
    assert d["shared_demand_pct"] == pytest.approx(500 / 3500 * 100, abs=0.01)
    assert d["multi_demand_pct"] == pytest.approx(2000 / 3500 * 100, abs=0.01)
    assert d["constrained_pct"] == pytest.approx(100 / 3, abs=0.01)
    assert d["gpu_pod_cpu_mean"] == 2000 and d["gpu_demand"] == 3.5


def _cluster() -> TraceCluster:
    from placement.models.gpu.instance import GpuNode

    nodes = [
        GpuNode(
            name=f"n{i}",
            gpu_type=TYPES[i % 3],
            gpu_count=8 if i % 2 else 4,
            gpu_memory_mib=0,
            nvlink_domain_size=0,
            cpu_milli=96000,
            memory_mib=393216,
        )
        for i in range(12)
    ]
    return TraceCluster.from_nodes(nodes)


def test_a_replay_on_each_kind_of_variant_passes_the_independent_check() -> None:
    cluster = _cluster()
    for name in ("gpushare80", "multigpu50", "gpuspec33"):
        pods = PodSet.from_jobs(build_variant(name, default_pods(120)), cluster)
        for policy in ("FGD", "FGD+BF-tie"):
            curve = replay(cluster, pods, make_any(policy), seed=3)
            placed = [(i, int(n), curve.gpus[i]) for i, n in enumerate(curve.node) if n >= 0]
            assert placed and curve.unplaced > 0  # the workload overfills the cluster (130 %)
            errors = check_placement(TraceState(cluster), pods, list(curve.order), placed)
            assert errors == []
            for i, n, _ in placed:  # a constrained pod sits on a GPU type it accepts
                p = int(curve.order[i])
                assert pods.type_ok[p, cluster.type_of[n]] or pods.num_gpu[p] == 0


def test_the_real_default_trace_gives_the_stated_shares(shared_benchmarks: Path) -> None:
    folder = shared_benchmarks / "gpu" / "openb"
    default = read_openb_pods(folder / "openb_pod_list_default.csv")
    types = {n.gpu_type for n in read_openb_nodes(folder / "openb_node_list_gpu_node.csv")}
    shapes = {shape(j) for j in default}
    for name in PAPER_VARIANTS:
        kind, percent = parse_variant(name)
        jobs = build_variant(name, default)
        d = describe(jobs)
        assert {shape(j) for j in jobs} <= shapes
        assert all(set(j.gpu_types) <= types for j in jobs)
        trait = {"gpushare": "shared_demand_pct", "multigpu": "multi_demand_pct"}
        key = trait.get(kind, "constrained_pct")
        assert abs(d[key] - percent) <= 1, (name, d)
    published = describe(read_openb_pods(folder / "openb_pod_list_gpushare100.csv"))
    built = describe(build_variant("gpushare100", default))
    for key in ("pods", "gpu_pods", "shared_pods", "shared_demand_pct"):
        assert built[key] == published[key]
    for key in ("gpu_demand", "shared_milli_mean", "gpu_pod_cpu_mean", "gpu_pod_memory_mean"):
        assert built[key] == pytest.approx(published[key], rel=0.03), key


# --- the bench: --trace variant:NAME ------------------------------------------------------


def data_folder(root: Path) -> Path:
    """A data folder with a 12-node list and a small default pod list."""
    rng = np.random.default_rng(5)
    data = root / "data" / "gpu" / "openb"
    data.mkdir(parents=True)
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"] + [
        f"n{i},96000,393216,{int(rng.choice([4, 8]))},{TYPES[i % 3]}" for i in range(12)
    ]
    (data / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for j, job in enumerate(default_pods(80)):
        num = job.gpus or int(job.gpu_milli > 0)
        milli = job.gpu_milli or (1000 if job.gpus else 0)
        pods.append(f"p{j:03d},{job.cpu_milli},{job.memory_mib},{num},{milli},")
    (data / "openb_pod_list_default.csv").write_text("\n".join(pods) + "\n")
    return root / "data"


def test_a_variant_runs_in_the_bench_checked_and_paired_with_fgd(tmp_path: Path) -> None:
    data = data_folder(tmp_path)
    out = tmp_path / "out"
    done = cli(
        "bench", "gpu-openb", "--data", data, "--out", out, "--quiet",
        "--trace", "variant:multigpu50", "--trace", "variant:gpuspec33",
        "--seeds", "1-2", "--modes", "FGD,online",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "gpu-openb.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8
    assert {r["trace"] for r in rows} == {"variant:multigpu50", "variant:gpuspec33"}
    assert all(r["invalid"] == "0" and int(r["placements_checked"]) > 0 for r in rows)
    text = (out / "gpu-openb.md").read_text()
    assert "## The paper's trace variants" in text
    head = "| `variant:multigpu50` | FGD+BF-tie | 2 |"
    table = [line for line in text.splitlines() if line.startswith(head)]
    assert len(table) == 1 and "1: " in table[0] and "2: " in table[0]


def test_bad_variant_options_exit_2_naming_the_option(tmp_path: Path) -> None:
    data = data_folder(tmp_path)
    base = ("bench", "gpu-openb", "--data", data, "--out", tmp_path / "o", "--seeds", "1")
    done = cli(*base, "--trace", "variant:multigpu60", cwd=tmp_path)
    assert done.returncode == 2 and "--trace" in done.stderr and "multigpu50" in done.stderr
    done = cli(*base, "--trace", "variant:gpuspec33", "--modes", "departures", cwd=tmp_path)
    assert done.returncode == 2 and "--modes" in done.stderr, done.stderr
    (data / "gpu" / "openb" / "openb_pod_list_default.csv").unlink()
    done = cli(*base, "--trace", "variant:gpushare40", cwd=tmp_path)
    assert done.returncode == 2 and "openb_pod_list_default.csv" in done.stderr, done.stderr


def test_the_full_protocol_on_a_variant_leaves_out_only_the_departures(tmp_path: Path) -> None:
    from placement.benchmarks.gpu.openb.suite import FULL_MODES, cases_openb
    from placement.benchmarks.runner import BenchConfig

    data = data_folder(tmp_path)
    config = BenchConfig(
        suite="gpu-openb",
        time_limit_s=1.0,
        quick=False,
        out=tmp_path / "o",
        data=data,
        params={"trace": ["variant:gpushare40"], "seeds": [1]},
    )
    cases = cases_openb(config)
    assert {c["trace"] for c in cases} == {"variant:gpushare40"}
    assert not any(c.get("kind") == "departures" for c in cases)
    assert "departures" in FULL_MODES and any(c.get("kind") == "latency" for c in cases)
