"""Node CPU capacity that falls with density (issue 37 item 4; models/gpu/density.py).

Hand-made instances whose answer is known: four 2-core pods on 8-core nodes that lose 500
milli-cores per pod hold at most 3 pods a node (2000 k <= 8000 - 500 k), so a density-blind
packing (all four on one node, nominal CPU 8000) overloads it, and the checker says so, while
every density-aware solver (both greedies, CP-SAT, the MILP with each installed solver) places
all four without overloading anything. The curve form, validation of the fields, the
explanation of an unplaced job, running work, and the Kubernetes and Slurm importers too.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from placement.api.cli.entry import main
from placement.models.gpu import FAMILY
from placement.models.gpu.check import check
from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.formats.k8s import import_k8s
from placement.models.gpu.formats.slurm import import_slurm
from placement.models.gpu.model import GpuModel
from placement.models.gpu.reading import instance_from_dict
from placement.models.gpu.reopt_greedy import family_greedies
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.errors import InputError
from placement.solver.testing import backend_id, exact_backends
from tests.conftest import REPO

LEVELS = [{"name": "nvlink", "bandwidth_gbps": 600}, {"name": "node", "bandwidth_gbps": 64}]
BACKENDS = exact_backends()
IDS = [backend_id(*b) for b in BACKENDS]
OVERHEAD = {"overhead_milli_per_pod": 500}
# The same capacity as a curve: 8000 at 0 pods, then -500 a pod (8000 - 500 k).
CURVE = {"curve": [{"pods": 0, "cpu_milli": 8000}, {"pods": 4, "cpu_milli": 6000}]}


def node(name: str, density: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    out = {
        "name": name,
        "gpu_type": "A100",
        "gpu_count": 0,
        "cpu_milli": 8000,
        "memory_mib": 64_000,
        **fields,
    }
    if density is not None:
        out["cpu_density"] = density
    return out


def document(density: dict[str, Any] | None, pods: int = 4) -> dict[str, Any]:
    return {
        "cluster": {"levels": LEVELS, "nodes": [node("n0", density), node("n1", density)]},
        "jobs": [{"name": f"p{i}", "cpu_milli": 2000} for i in range(pods)],
    }


def pods_per_node(solution) -> list[int]:
    counts = [0, 0]
    for workers in solution.placements.values():
        for w in workers:
            counts[w.node] += 1
    return counts


def test_a_density_blind_packing_overloads_a_node_the_checker_names() -> None:
    blind = instance_from_dict(document(None))
    aware = instance_from_dict(document(OVERHEAD))
    for name, solution in family_greedies(blind):
        assert check(blind, solution).feasible, name
        assert pods_per_node(solution) == [4, 0], name  # best fit packs one node
        report = check(aware, solution)
        assert not report.feasible
        assert report.violations == [
            "node 'n0' overloaded by density: 4 pods, CPU 8000 milli > effective capacity "
            "6000 milli (6.0 cores at that density)"
        ]


@pytest.mark.parametrize("density", [OVERHEAD, CURVE], ids=["overhead", "curve"])
def test_the_greedies_honour_the_density_model(density: dict[str, Any]) -> None:
    instance = instance_from_dict(document(density))
    for name, solution in family_greedies(instance):
        assert check(instance, solution).feasible, name
        assert len(solution.placements) == 4, name
        assert max(pods_per_node(solution)) == 3, name


@pytest.mark.parametrize("backend,milp_solver", BACKENDS, ids=IDS)
@pytest.mark.parametrize("density", [OVERHEAD, CURVE], ids=["overhead", "curve"])
def test_every_exact_backend_honours_the_density_model(
    density: dict[str, Any], backend: str, milp_solver: str
) -> None:
    instance = instance_from_dict(document(density))
    options = SolveOptions(
        backend=backend, milp_solver=milp_solver, time_limit_s=20, threads=1, deterministic=True
    )
    result = solve(instance, options)
    assert result.status == SolutionStatus.OPTIMAL
    assert check(instance, result.solution).feasible
    assert len(result.solution.placements) == 4
    assert sorted(pods_per_node(result.solution)) == [1, 3]
    # Five pods: 3 + 3 would be 6 pods, so all five fit (3 + 2); seven cannot (3 + 3 = 6).
    seven = instance_from_dict(document(density, pods=7))
    result = solve(seven, options)
    assert result.status == SolutionStatus.OPTIMAL
    assert len(result.solution.placements) == 6 and check(seven, result.solution).feasible


def test_without_a_density_model_the_model_is_unchanged() -> None:
    plain = instance_from_dict(document(None))
    zero = instance_from_dict(document({"overhead_milli_per_pod": 0}))
    assert not plain.nodes[0].density_pieces and not zero.nodes[0].density_pieces
    a, b = GpuModel(plain), GpuModel(zero)
    assert (a.lm.lb, a.lm.ub, a.lm.rows) == (b.lm.lb, b.lm.ub, b.lm.rows)
    # An instance without the fields writes the JSON it always did (no new keys).
    nodes = FAMILY.instance_to_dict(plain)["cluster"]["nodes"]
    assert all("cpu_density" not in n and "pods_used" not in n for n in nodes)
    aware = FAMILY.instance_to_dict(instance_from_dict(document(CURVE)))
    assert aware["cluster"]["nodes"][0]["cpu_density"]["curve"][1] == {
        "pods": 4,
        "cpu_milli": 6000,
    }


def test_pods_used_and_running_jobs_count() -> None:
    doc = document(OVERHEAD)
    # n0 holds three pods the instance does not describe (2,000 milli-cores): one more 2-core
    # pod makes 4 pods at 4,000 <= 6,000; two would make 5 at 6,000 > 5,500.
    doc["cluster"]["nodes"][0].update(pods_used=3, cpu_milli_used=2000)
    # A running job of two 1-core workers on n1: 2 pods and 2,000 milli-cores there already,
    # so two more 2-core pods fit (4 pods at 6,000 <= 6,000), not three.
    doc["jobs"].append(
        {"name": "run", "cpu_milli": 1000, "workers": 2, "current": [{"node": "n1"}] * 2}
    )
    instance = instance_from_dict(doc)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert check(instance, result.solution).feasible
    new = {j: w for j, w in result.solution.placements.items() if instance.jobs[j].name != "run"}
    assert sorted(w[0].node for w in new.values()) == [0, 1, 1]
    # Without pods_used, n0 would take two.
    doc["cluster"]["nodes"][0]["pods_used"] = 0
    result = solve(
        instance_from_dict(doc), SolveOptions(backend="cpsat", time_limit_s=20, threads=1)
    )
    assert len(result.solution.placements) == 5


def test_an_unplaced_job_says_density() -> None:
    instance = instance_from_dict(document(OVERHEAD, pods=7))
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    (reason,) = explain_unplaced(instance, result.solution)
    assert reason["kind"] == "crowded_out"
    assert (
        "; density: node 'n0' would hold 4 pods, effective CPU 6.0 cores < 8.0 cores used"
        in (reason["message"])
    )


@pytest.mark.parametrize(
    ("density", "fields", "said"),
    [
        (
            {
                "curve": [
                    {"pods": 0, "cpu_milli": 8000},
                    {"pods": 10, "cpu_milli": 7000},
                    {"pods": 20, "cpu_milli": 6800},
                ]
            },
            {},
            "gpu.cluster.nodes[0].cpu_density.curve[2].cpu_milli: got 6800, expected a concave "
            "curve: slope from point 1 at most -100 milli-cores per pod",
        ),
        (
            {"curve": [{"pods": 0, "cpu_milli": 8000}, {"pods": 10, "cpu_milli": 8100}]},
            {},
            "gpu.cluster.nodes[0].cpu_density.curve[1].cpu_milli: got 8100, expected at most the "
            "previous point's 8000 milli-cores (capacity does not grow with pods)",
        ),
        (
            {"curve": [{"pods": 5, "cpu_milli": 8000}, {"pods": 5, "cpu_milli": 7000}]},
            {},
            "gpu.cluster.nodes[0].cpu_density.curve[1].pods: got 5, expected more than the "
            "previous point's 5 pods",
        ),
        (
            OVERHEAD,
            {"pods_used": 10, "cpu_milli_used": 4000},
            "gpu.cluster.nodes[0].cpu_milli_used: got 4000, expected at most the effective CPU "
            "capacity at pods_used=10: 3000 milli",
        ),
        (
            {"overhead_milli_per_pod": -1},
            {},
            "gpu.cluster.nodes[0].cpu_density.overhead_milli_per_pod: got -1",
        ),
        (
            {"curve": [{"pods": 10_001, "cpu_milli": 8000}]},
            {},
            "gpu.cluster.nodes[0].cpu_density.curve[0].pods: got 10001",
        ),
    ],
    ids=["concave", "increasing", "pods", "used", "negative", "range"],
)
def test_bad_density_fields_name_the_field(
    density: dict[str, Any], fields: dict[str, Any], said: str
) -> None:
    doc = document(density)
    doc["cluster"]["nodes"][0].update(fields)
    with pytest.raises(InputError) as info:
        instance_from_dict(doc)
    assert said in str(info.value)


def test_a_non_concave_curve_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = document(
        {
            "curve": [
                {"pods": 0, "cpu_milli": 8000},
                {"pods": 10, "cpu_milli": 7000},
                {"pods": 20, "cpu_milli": 6800},
            ]
        }
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"gpu": doc}))
    assert main(["solve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "gpu.cluster.nodes[0].cpu_density.curve[2].cpu_milli: got 6800" in err
    assert "concave" in err and "Traceback" not in err


# --- importers --------------------------------------------------------------------------------

K8S = REPO / "tests" / "data" / "k8s"
SLURM = REPO / "tests" / "data" / "slurm"


def _k8s_nodes(tmp_path: Path, annotations: dict[str, str]) -> Path:
    doc = json.loads((K8S / "nodes.json").read_text())
    doc["items"][0]["metadata"]["annotations"].update(annotations)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


def test_k8s_annotations_give_the_density_model(tmp_path: Path) -> None:
    nodes = _k8s_nodes(
        tmp_path,
        {
            "placement.io/cpu-overhead-per-pod": "150m",
            "placement.io/cpu-capacity-curve": "0:191450m,40:180,110:150",
        },
    )
    instance, _ = import_k8s(str(nodes), str(K8S / "pods.json"), str(K8S / "topology.yaml"))
    by_name = {n.name: n for n in instance.nodes}
    n0 = by_name["gpu-b1-r1-0"]
    assert n0.cpu_overhead_milli_per_pod == 150
    assert [(p.pods, p.cpu_milli) for p in n0.cpu_capacity_curve] == [
        (0, 191_450),
        (40, 180_000),
        (110, 150_000),
    ]
    # Its running pods are pods_used; a node without annotations has no density model.
    plain, _ = import_k8s(
        str(K8S / "nodes.json"), str(K8S / "pods.json"), str(K8S / "topology.yaml")
    )
    assert {n.name: n.pods_used for n in plain.nodes} == {
        n.name: n.pods_used for n in instance.nodes
    }
    assert any(n.pods_used for n in instance.nodes)
    assert not any(n.density_pieces for n in plain.nodes)


@pytest.mark.parametrize(
    ("annotations", "said"),
    [
        (
            {"placement.io/cpu-overhead-per-pod": "lots"},
            "items[0].metadata.annotations.placement.io/cpu-overhead-per-pod (Node gpu-b1-r1-0): "
            "got 'lots', expected a CPU quantity, e.g. 150m",
        ),
        (
            {"placement.io/cpu-capacity-curve": "0:64;40:60"},
            "items[0].metadata.annotations.placement.io/cpu-capacity-curve (Node gpu-b1-r1-0): "
            "got '0:64;40:60', expected PODS:CPU points separated by commas",
        ),
        (
            {"placement.io/cpu-capacity-curve": "0:64,10:63,20:60,30:59"},
            "(Node gpu-b1-r1-0): got '0:64,10:63,20:60,30:59', expected points in increasing "
            "pods, a non-increasing and concave curve (a concave curve",
        ),
    ],
    ids=["overhead", "syntax", "concave"],
)
def test_a_bad_k8s_annotation_names_the_node(
    tmp_path: Path, annotations: dict[str, str], said: str
) -> None:
    nodes = _k8s_nodes(tmp_path, annotations)
    with pytest.raises(InputError) as info:
        import_k8s(str(nodes), str(K8S / "pods.json"))
    assert said in str(info.value)


def _slurm_nodes(tmp_path: Path, features: str) -> Path:
    text = (SLURM / "scontrol-show-node.txt").read_text()
    line = next(x for x in text.splitlines() if x.startswith("NodeName=gpu003 "))
    new = line.replace("AvailableFeatures=h100,ib", f"AvailableFeatures=h100,ib,{features}")
    path = tmp_path / "nodes.txt"
    path.write_text(text.replace(line, new))
    return path


def test_slurm_features_give_the_density_model(tmp_path: Path) -> None:
    nodes = _slurm_nodes(tmp_path, "cpuoverhead_150m,cpucurve_0_224_40_220_110_200")
    instance = import_slurm(str(SLURM / "topology.conf"), str(nodes))
    node = {n.name: n for n in instance.nodes}
    assert node["gpu003"].cpu_overhead_milli_per_pod == 150
    assert [(p.pods, p.cpu_milli) for p in node["gpu003"].cpu_capacity_curve] == [
        (0, 224_000),
        (40, 220_000),
        (110, 200_000),
    ]
    assert not node["gpu004"].density_pieces
    one_core = import_slurm(
        str(SLURM / "topology.conf"), str(_slurm_nodes(tmp_path, "cpuoverhead_1"))
    )
    assert {n.name: n for n in one_core.nodes}["gpu003"].cpu_overhead_milli_per_pod == 1000


@pytest.mark.parametrize(
    ("features", "said"),
    [
        ("cpuoverhead_lots", "line 3.AvailableFeatures (node gpu003): got 'cpuoverhead_lots'"),
        ("cpucurve_0_224_40", "line 3.AvailableFeatures (node gpu003): got 'cpucurve_0_224_40'"),
        (
            "cpucurve_0_224_10_223_20_200_30_199",
            "expected points in increasing pods, a non-increasing and concave curve",
        ),
    ],
    ids=["overhead", "pairs", "concave"],
)
def test_a_bad_slurm_feature_names_the_node(tmp_path: Path, features: str, said: str) -> None:
    with pytest.raises(InputError) as info:
        import_slurm(str(SLURM / "topology.conf"), str(_slurm_nodes(tmp_path, features)))
    assert said in str(info.value)


# --- the benchmark ----------------------------------------------------------------------------


def test_the_bench_suite_runs_quick_and_the_blind_packing_overloads(tmp_path: Path) -> None:
    """``placement bench gpu-density --quick`` in this process (tests/test_bench.py runs every
    suite in a real process too): every packer's density-blind packing overloads a node
    under the curve, and no density-aware packing does (the checker judged both)."""
    assert main(["bench", "gpu-density", "--quick", "--out", str(tmp_path)]) == 0
    with (tmp_path / "gpu-density.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["packer"] for r in rows} == {"first_fit", "best_fit", "cpsat"}
    for r in rows:
        assert r["invalid"] == "0"
        assert int(r["blind_overloaded"]) >= 1 and float(r["blind_worst_load"]) > 1
        assert float(r["aware_worst_load"]) <= 1
        assert int(r["aware_nodes"]) >= int(r["blind_nodes"])
    text = (tmp_path / "gpu-density.md").read_text()
    assert "| packer | blind nodes | overloaded (of blind) |" in text
