"""``placement import k8s`` and ``placement export k8s`` on realistic manifests, end to end.

The manifests under tests/data/k8s were written from the Kubernetes core/v1 API reference
(``kubectl get nodes|pods -o json``), a Kueue ``Topology`` (kueue.x-k8s.io/v1beta1, three
levels: block, rack, hostname), a KAI PodGroup (scheduling.run.ai/v2alpha2) and a Volcano
PodGroup (scheduling.volcano.sh/v1beta1): running pods, a Kueue plain pod group with a
required rack, a KAI gang with a preferred block, a Volcano gang with a hard tier, KAI
fractional pods, a MIG pod, a gated pod, node selectors, taints and an unschedulable node.

Real ``placement`` processes import, solve (CP-SAT) and export; the test then re-counts every
node's allocatable from the manifests with its own small parser, independent of the importer.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from placement.api.cli.entry import main
from placement.models.gpu.formats.k8s import import_k8s, parse_quantity
from placement.solver.errors import InputError
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "k8s"
CLI = [sys.executable, "-m", "placement.api.cli"]
IMPORT = [
    *CLI,
    "import",
    "k8s",
    "--nodes",
    str(DATA / "nodes.json"),
    "--pods",
    str(DATA / "pods.json"),
    "--topology",
    str(DATA / "topology.yaml"),
    "--pod-groups",
    str(DATA / "podgroups.json"),
    "--priority-classes",
    str(DATA / "priorityclasses.json"),
]


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=REPO)


# -- quantities -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("64Gi", 64 * 2**30),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2E", 2 * 10**18),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("128974848", 128974848),
        ("129e6", 129_000_000),
        ("123Mi", 123 * 2**20),
        ("2Ki", 2048),
        ("1k", 1000),
        ("0.1m", Fraction(1, 10_000)),
        ("-1", -1),
        ("+3", 3),
        (8, 8),
    ],
)
def test_quantity_grammar(text: Any, value: Any) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["12x", "Mi", "1.2.3", "1e", "1 Gi", "", "1KI", "e3", True, None])
def test_quantity_rejects(text: Any) -> None:
    assert parse_quantity(text) is None


# -- an independent re-count ----------------------------------------------------------------


def q(text: Any) -> Fraction:
    """The test's own quantity reader, for the suffixes the manifests use."""
    s = str(text)
    for suffix, mult in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("m", Fraction(1, 1000))):
        if s.endswith(suffix):
            return Fraction(s[: -len(suffix)]) * mult
    return Fraction(s)


def pod_request(pod: dict[str, Any]) -> dict[str, Fraction]:
    """Effective request: max(containers + sidecars, each init + earlier sidecars)."""

    def req(c: dict[str, Any]) -> dict[str, Fraction]:
        r = dict(c["resources"].get("limits", {}))
        r.update(c["resources"].get("requests", {}))
        return {k: q(v) for k, v in r.items()}

    total: dict[str, Fraction] = {}
    for c in pod["spec"]["containers"]:
        for k, v in req(c).items():
            total[k] = total.get(k, 0) + v
    sidecar: dict[str, Fraction] = {}
    for c in pod["spec"].get("initContainers", []):
        r = req(c)
        if c.get("restartPolicy") == "Always":
            for k, v in r.items():
                sidecar[k] = sidecar.get(k, 0) + v
                total[k] = total.get(k, 0) + v
        else:
            for k in set(r) | set(sidecar):
                total[k] = max(total.get(k, 0), r.get(k, 0) + sidecar.get(k, 0))
    gpus = total.get("nvidia.com/gpu", Fraction(0))
    if "gpu-fraction" in pod["metadata"].get("annotations", {}):
        gpus = Fraction(pod["metadata"]["annotations"]["gpu-fraction"])
    return {"cpu": total.get("cpu", 0), "memory": total.get("memory", 0), "gpu": gpus}


def tolerated(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    for taint in node["spec"].get("taints", []):
        if taint["effect"] not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            (t.get("operator") == "Exists" and t.get("key") in (None, taint["key"]))
            or (t.get("key") == taint["key"] and t.get("value") == taint.get("value"))
            for t in pod["spec"].get("tolerations", [])
        ):
            return False
    return True


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Import, solve with CP-SAT, export: the files and what each command said."""
    tmp = tmp_path_factory.mktemp("k8s")
    instance, solution, out = tmp / "instance.json", tmp / "solution.json", tmp / "plan.json"
    report = tmp / "report.json"
    imp = run([*IMPORT, "--report", str(report), "--out", str(instance)])
    assert imp.returncode == 0, imp.stderr
    solve = run([*CLI, "solve", str(instance), "--out", str(solution), "--time-limit", "20", "-q"])
    assert solve.returncode == 0, solve.stderr
    exp = run(
        [*CLI, "export", "k8s", str(solution), "--instance", str(instance), "--report",
         str(report), "--out", str(out)]
    )  # fmt: skip
    assert exp.returncode == 0, exp.stderr
    return {
        "import_stderr": imp.stderr,
        "instance": json.loads(instance.read_text()),
        "report": json.loads(report.read_text()),
        "plan": json.loads(out.read_text()),
        "solve": solve.stdout,
        "paths": (instance, solution),
    }


def test_bindings_respect_every_nodes_allocatable(plan: dict[str, Any]) -> None:
    nodes = {
        n["metadata"]["name"]: n for n in json.loads((DATA / "nodes.json").read_text())["items"]
    }
    pods = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
        for p in json.loads((DATA / "pods.json").read_text())["items"]
    }
    items = plan["plan"]["items"]
    assert plan["plan"]["apiVersion"] == "v1" and plan["plan"]["kind"] == "List"
    bound = {
        f"{b['metadata']['namespace']}/{b['metadata']['name']}": b["target"]["name"]
        for b in items
        if b["kind"] == "Binding"
    }
    assert bound, plan["solve"]
    for b in items:
        if b["kind"] == "Binding":
            assert b["apiVersion"] == "v1" and b["target"]["kind"] == "Node"
    used: dict[str, dict[str, Fraction]] = {n: {"cpu": 0, "memory": 0, "gpu": 0} for n in nodes}
    for key, pod in pods.items():
        node = pod["spec"].get("nodeName") or bound.get(key)
        if node is None or pod["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        assert key not in bound or not pod["spec"].get("nodeName"), f"{key} bound twice"
        for k, v in pod_request(pod).items():
            used[node][k] += v
        if key in bound:
            assert not nodes[node]["spec"].get("unschedulable"), f"{key} on a cordoned node"
            assert tolerated(pod, nodes[node]), f"{key} on {node} whose taints it does not tolerate"
            for label, value in pod["spec"].get("nodeSelector", {}).items():
                assert nodes[node]["metadata"]["labels"].get(label) == value, key
    for name, node in nodes.items():
        if node["spec"].get("unschedulable"):
            continue
        alloc = node["status"]["allocatable"]
        assert used[name]["cpu"] <= q(alloc["cpu"]), name
        assert used[name]["memory"] <= q(alloc["memory"]), name
        assert used[name]["gpu"] <= q(alloc.get("nvidia.com/gpu", "0")), name


def test_gangs_and_their_topology(plan: dict[str, Any]) -> None:
    nodes = {
        n["metadata"]["name"]: n for n in json.loads((DATA / "nodes.json").read_text())["items"]
    }
    jobs = {j["name"]: j for j in plan["instance"]["gpu"]["jobs"]}
    rack = "cloud.provider.com/topology-rack"
    ft = jobs["research/llm-ft"]  # Kueue pod group, required rack
    assert (ft["workers"], ft["gpus"], ft["locality_level"], ft["locality_required"]) == (
        2, 8, rack, True
    )  # fmt: skip
    vit = jobs["vision/pg-vit-train"]  # KAI PodGroup: preferred block; sidecar + init counted
    assert vit["workers"] == 4 and vit["locality_level"] == "cloud.provider.com/topology-block"
    assert not vit.get("locality_required") and vit["cpu_milli"] == 24_500
    asr = jobs["speech/asr-job-pg"]  # Volcano hard tier 1 = the first level above the node
    assert asr["locality_level"] == rack and asr["locality_required"]
    assert jobs["serving/embedder-0"]["gpu_milli"] == 250
    assert jobs["serving/embedder-2"]["gpu_memory_mib"] == 16000
    assert jobs["research/a100-notebook"]["gpu_types"] == ["NVIDIA-A100-SXM4-80GB"]
    # priorities: urgent (100000) > training (1000) > batch-low (100) > default (10)
    weights = {n: jobs[n].get("priority", 1) for n in jobs}
    assert weights["research/urgent-debug"] > weights["research/llm-ft"] > weights[
        "speech/asr-job-pg"] > weights["serving/embedder-0"]  # fmt: skip
    bound = {
        b["metadata"]["name"]: b["target"]["name"]
        for b in plan["plan"]["items"]
        if b["kind"] == "Binding"
    }
    placed_ft = [bound[p] for p in ("llm-ft-0", "llm-ft-1") if p in bound]
    assert len(placed_ft) in (0, 2), "a gang is all or nothing"
    racks = {
        (nodes[n]["metadata"]["labels"]["cloud.provider.com/topology-block"],
         nodes[n]["metadata"]["labels"][rack])
        for n in placed_ft
    }  # fmt: skip
    assert len(racks) <= 1, "required rack"
    assert "research/llm-ft" not in plan["report"]["not_imported"]


def test_every_pending_pod_is_bound_or_told_why(plan: dict[str, Any]) -> None:
    items = plan["plan"]["items"]
    said = {
        f"{i['metadata']['namespace']}/{i['metadata']['name']}": i
        for i in items
        if i["kind"] == "Pod"
    }
    bound = {
        f"{i['metadata']['namespace']}/{i['metadata']['name']}"
        for i in items
        if i["kind"] == "Binding"
    }
    for p in json.loads((DATA / "pods.json").read_text())["items"]:
        key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        if p["spec"].get("nodeName") or p["status"]["phase"] != "Pending":
            assert key not in said and key not in bound
            continue
        if p["spec"].get("schedulingGates"):
            assert key not in said and key not in bound  # gated: not ours to judge
            continue
        assert (key in bound) != (key in said), key
        if key in said:
            (cond,) = said[key]["status"]["conditions"]
            assert (cond["type"], cond["status"], cond["reason"]) == (
                "PodScheduled", "False", "Unschedulable"
            )  # fmt: skip
            assert cond["message"].startswith("placement: ")
    assert "nvidia.com/mig-1g.10gb" in said["serving/mig-inference"]["status"]["conditions"][0][
        "message"]  # fmt: skip
    # A CPU-only pod that fits is bound, not marked Unschedulable (the placed_cpu_jobs tier):
    # the cluster has CPU to spare for its 2 cores.
    assert "etl/nightly-report" in bound
    (job,) = [j for j in plan["instance"]["gpu"]["jobs"] if j["name"] == "etl/nightly-report"]
    assert not job.get("gpus") and not job.get("gpu_milli")  # imported as CPU-only
    assert "placed_cpu_jobs" in plan["solve"]


def test_ignored_fields_are_reported(plan: dict[str, Any]) -> None:
    ignored = plan["report"]["ignored"]["Pod rl/ray-head-0"]
    for field in (
        "spec.affinity.podAntiAffinity",
        "spec.topologySpreadConstraints",
        "spec.resourceClaims (DRA)",
        "hostPort",
        "resources.ephemeral-storage",
    ):
        assert field in ignored, field
    assert "MIG" in " ".join(plan["report"]["ignored"]["Node gpu-a100-0"])
    assert plan["report"]["excluded_nodes"] == {"gpu-b2-r2-spare": "spec.unschedulable"}
    left = plan["report"]["not_imported"]
    assert "schedulingGates" in left["research/gated-job"]
    assert "web/frontend-7d9c" in left  # tolerates no GPU taint: only cpu-0, not a GPU type
    stderr = plan["import_stderr"]
    assert "ignored spec.resourceClaims (DRA) of 1: Pod rl/ray-head-0" in stderr
    assert "left out (no new pods): spec.unschedulable: gpu-b2-r2-spare" in stderr


def test_running_pods_are_used_capacity() -> None:
    instance, _ = import_k8s(
        str(DATA / "nodes.json"), str(DATA / "pods.json"), str(DATA / "topology.yaml")
    )
    node = {n.name: n for n in instance.nodes}
    assert sum(m == 1000 for m in node["gpu-b1-r1-0"].gpu_milli_used) == 8
    assert node["gpu-b1-r1-0"].cpu_milli_used == 96_000
    assert sorted(node["gpu-b1-r2-1"].gpu_milli_used)[-1] == 500  # a running half GPU
    assert sum(node["gpu-b1-r2-0"].gpu_milli_used) == 0  # its pod Succeeded
    assert "gpu-b2-r2-spare" not in node
    assert [lv.name for lv in instance.levels] == [
        "nvlink", "node", "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block"
    ]  # fmt: skip
    # racks are told apart by their block (rack-r1 exists in both blocks)
    assert node["gpu-b1-r1-0"].groups[0] != node["gpu-b2-r1-0"].groups[0]


def test_export_refuses_a_solution_the_checker_rejects(
    plan: dict[str, Any], tmp_path: Path
) -> None:
    instance, solution = plan["paths"]
    doc = json.loads(solution.read_text())
    for jp in doc["gpu"]["placements"]:
        for w in jp["workers"]:
            w["node"] = "gpu-b1-r1-0"  # already full
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = run([*CLI, "export", "k8s", str(bad), "--instance", str(instance)])
    assert r.returncode == 2 and "checker" in r.stderr and r.stdout == ""


# -- malformed objects: exit 2 naming kind, name and path -----------------------------------


def _mutated(tmp_path: Path, file: str, change: Any) -> Path:
    doc = json.loads((DATA / file).read_text())
    change(doc)
    out = tmp_path / file
    out.write_text(json.dumps(doc))
    return out


def _pod(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in doc["items"] if p["metadata"]["name"] == name)


@pytest.mark.parametrize(
    ("file", "change", "said"),
    [
        (
            "pods.json",
            lambda d: _pod(d, "llm-ft-0")["spec"]["containers"][0]["resources"]["requests"].update(
                cpu="12x"
            ),
            "items[6].spec.containers[0].resources.requests.cpu (Pod research/llm-ft-0): got '12x'",
        ),
        (
            "pods.json",
            lambda d: _pod(d, "embedder-1")["metadata"]["annotations"].update(
                {"gpu-fraction": "1.5"}
            ),
            "metadata.annotations.gpu-fraction (Pod serving/embedder-1): got '1.5'",
        ),
        (
            "pods.json",
            lambda d: _pod(d, "llm-ft-1")["metadata"]["annotations"].update(
                {"kueue.x-k8s.io/podset-required-topology": "example.com/row"}
            ),
            "(Pod research/llm-ft-0): got 'example.com/row', expected a level of the topology",
        ),
        (
            "pods.json",
            lambda d: _pod(d, "urgent-debug")["spec"].update(containers=[]),
            "spec.containers (Pod research/urgent-debug)",
        ),
        (
            "nodes.json",
            lambda d: d["items"][2]["status"].pop("allocatable"),
            "items[2].status.allocatable (Node gpu-b1-r2-0)",
        ),
        (
            "nodes.json",
            lambda d: d["items"][1]["status"]["allocatable"].update({"nvidia.com/gpu": "1e9"}),
            "items[1].status.allocatable.nvidia.com/gpu (Node gpu-b1-r1-1): got '1000000000'",
        ),
        (
            "nodes.json",
            lambda d: d["items"][0]["status"]["allocatable"].update({"nvidia.com/gpu": "7.5"}),
            "items[0].status.allocatable.nvidia.com/gpu (Node gpu-b1-r1-0)",
        ),
        (
            "pods.json",
            # a class PRIORITY_CLASSES lacks, and no resolved spec.priority to fall back on
            lambda d: _pod(d, "urgent-debug")["spec"].update(
                priorityClassName="nope", priority=None
            ),
            "spec.priorityClassName (Pod research/urgent-debug): got 'nope'",
        ),
    ],
)
def test_malformed_objects_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, change: Any, said: str
) -> None:
    """The command line's own entry point in this process (one real process below)."""
    path = _mutated(tmp_path, file, change)
    args = [str(path) if a == str(DATA / file) else a for a in IMPORT[len(CLI) :]]
    code = main([*args, "--out", str(tmp_path / "i.json")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert said in err, err
    assert not (tmp_path / "i.json").exists()


def test_a_malformed_object_in_a_real_process(tmp_path: Path) -> None:
    path = _mutated(tmp_path, "pods.json", lambda d: _pod(d, "llm-ft-0")["spec"].update(nodeName=3))
    args = [str(path) if a == str(DATA / "pods.json") else a for a in IMPORT]
    r = run([*args, "--out", str(tmp_path / "i.json")])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines()[-1] == (
        f"placement: error: {path}: items[6].spec.nodeName (Pod research/llm-ft-0): "
        "got 3, expected a string"
    )


def test_a_rack_request_without_a_topology_names_the_flag(tmp_path: Path) -> None:
    """Issue 41: the README's sample import without --topology ended with no hint of it."""
    nodes, pods = str(DATA / "nodes.json"), str(DATA / "pods.json")
    r = run([*CLI, "import", "k8s", "--nodes", nodes, "--pods", pods, "--out", str(tmp_path / "i")])
    assert r.returncode == 2, r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "expected a level of the topology: kubernetes.io/hostname (no Topology was given: "
            "--topology names the cluster's Kueue or KAI one)"
        )
    )


def test_malformed_topology(tmp_path: Path) -> None:
    bad = tmp_path / "topology.json"
    bad.write_text(json.dumps({
        "apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
        "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]},
    }))  # fmt: skip
    with pytest.raises(InputError) as err:
        import_k8s(str(DATA / "nodes.json"), str(DATA / "pods.json"), str(bad))
    assert "spec.levels[0].nodeLabel (Topology t)" in str(err.value)


def test_incomplete_kueue_group_is_not_imported(tmp_path: Path) -> None:
    def drop(d: dict[str, Any]) -> None:
        d["items"] = [p for p in d["items"] if p["metadata"]["name"] != "llm-ft-1"]

    pods = _mutated(tmp_path, "pods.json", drop)
    instance, report = import_k8s(str(DATA / "nodes.json"), str(pods), str(DATA / "topology.yaml"))
    assert "research/llm-ft" not in instance.job_index
    assert "incomplete: 1 pending of 2" in report.not_imported["research/llm-ft-0"]


def test_gang_of_mixed_shapes_is_split_and_reported(tmp_path: Path) -> None:
    def grow(d: dict[str, Any]) -> None:
        pod = copy.deepcopy(_pod(d, "llm-ft-1"))
        pod["metadata"]["name"] = "llm-ft-launcher"
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "memory": "4Gi"}}
        d["items"].append(pod)
        for p in d["items"]:
            if p["metadata"].get("labels", {}).get("kueue.x-k8s.io/pod-group-name") == "llm-ft":
                p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "3"

    pods = _mutated(tmp_path, "pods.json", grow)
    instance, report = import_k8s(str(DATA / "nodes.json"), str(pods), str(DATA / "topology.yaml"))
    assert {"research/llm-ft", "research/llm-ft#2"} <= set(instance.job_index)
    assert any("different shapes" in f for f in report.ignored["PodGroup research/llm-ft"])


# -- no input crashes the importer --------------------------------------------------------------


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in a JSON document."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


WRONG = (None, 7, "x", [], {}, True, -1, 1.5)
"""A value of every JSON type (and a negative and a fraction) to put where another belongs."""


@pytest.mark.parametrize(
    "file", ["nodes.json", "pods.json", "podgroups.json", "priorityclasses.json"]
)
def test_every_field_with_a_wrong_type_is_an_input_error(tmp_path: Path, file: str) -> None:
    """Each field of the manifests (the first object of each shape) replaced by values of the
    wrong JSON types: the import succeeds or raises InputError (exit 2), never anything
    else. The KAI Topology in JSON keeps each import quick."""
    original = json.loads((DATA / file).read_text())
    seen: set[tuple[Any, ...]] = set()
    paths = []
    for path in _paths(original):
        shape = tuple("*" if isinstance(step, int) else step for step in path)
        if path and path[0] == "items" and shape not in seen:
            seen.add(shape)
            paths.append(path)
    target = tmp_path / file
    args = {
        "nodes_path": str(DATA / "nodes.json"),
        "pods_path": str(DATA / "pods.json"),
        "topology_path": str(DATA / "topology-kai.json"),
        "pod_groups_path": str(DATA / "podgroups.json"),
        "priority_classes_path": str(DATA / "priorityclasses.json"),
    }
    which = {
        "nodes.json": "nodes_path",
        "pods.json": "pods_path",
        "podgroups.json": "pod_groups_path",
        "priorityclasses.json": "priority_classes_path",
    }
    args[which[file]] = str(target)
    rejected = 0
    for k, path in enumerate(paths):
        doc = copy.deepcopy(original)
        holder = doc
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = WRONG[k % len(WRONG)]
        target.write_text(json.dumps(doc))
        try:
            import_k8s(**args)
        except InputError:
            rejected += 1
    assert rejected > len(paths) // 4  # most wrong types are named; the rest change nothing


def test_export_needs_pod_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An instance not made by the importer names no pods: exit 2 naming the field."""
    instance = REPO / "instances" / "gpu" / "tiny.json"
    solution = tmp_path / "tiny.solution.json"
    assert main(["solve", str(instance), "--backend", "greedy", "-q", "--out", str(solution)]) == 0
    code = main(["export", "k8s", str(solution), "--instance", str(instance)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{instance}: gpu.jobs[0].worker_names: got " in err
    assert "expected a Kubernetes pod as namespace/name" in err
