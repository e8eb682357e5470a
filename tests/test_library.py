"""The Python library a user meets: ``import placement``, typed instances validated like files,
numeric ranges, named solutions, ``Result``, and every example of docs/library.md run as
written (its printed output compared with the doc)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import placement
from placement.models.dag import DagEdge, DagInstance, DagLink, DagMachine, DagTask
from placement.models.gpu import FAMILY as GPU
from placement.models.gpu import GpuInstance, GpuJob, GpuNode, TopologyLevel
from placement.solver import InputError, SolveOptions, solve
from placement.solver.family import family_names, get_family
from tests.conftest import REPO

DOC = REPO / "docs" / "library.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
MARK = "----- end of block -----"


def _doc_examples() -> list[tuple[str, str | None]]:
    """(python code, the text block right after it or None), in the doc's order."""
    text = DOC.read_text()
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(text)]
    out = []
    for i, (lang, body, _, end) in enumerate(blocks):
        if lang != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = None
        if following and following[0] == "text" and not text[end : following[2]].strip():
            expected = following[1]
        out.append((body, expected))
    return out


def test_every_example_of_library_md_prints_what_the_doc_shows(tmp_path: Path) -> None:
    examples = _doc_examples()
    assert len(examples) >= 8
    script = "\n".join(f"{code}\nprint({MARK!r}, flush=True)" for code, _ in examples)
    (tmp_path / "examples.py").write_text(script)
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "examples.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = proc.stdout.split(MARK + "\n")
    for (code, expected), got in zip(examples, printed, strict=False):
        if expected is not None:
            assert got == expected, f"the doc's output differs for:\n{code}"


def test_every_declared_range_is_in_the_docs_table() -> None:
    text = DOC.read_text()
    for family in ("gpu", "dag", "partition", "entanglement", "mc"):
        get_family(family)
        ranges = importlib.import_module(f"placement.models.{family}.instance").RANGES
        for key, rng in ranges.items():
            assert f"| `{family}` | `{key}` | {rng.expected()} |" in text, key


# --- item 8: typed instances are validated as strictly as files ------------------------------

LEVELS = [TopologyLevel("nvlink", 300.0), TopologyLevel("node", 64.0)]
NODES = [GpuNode("n0", "A100", 8, 40_960, 4, 64_000, 512_000)]


def _cluster(job: GpuJob) -> GpuInstance:
    return GpuInstance(levels=LEVELS, nodes=NODES, jobs=[job])


def test_a_list_of_gpu_types_validates_and_solves() -> None:
    # Passed validate, then solve() raised TypeError: unhashable type: 'list'.
    instance = _cluster(GpuJob("g", workers=2, gpus=3, gpu_types=["A100"]))
    GPU.validate(instance)
    result = solve(instance, SolveOptions(time_limit_s=5, deterministic=True))
    assert result.status == "optimal"
    assert result.objective == 6.0
    assert instance.jobs[0].gpu_types == ("A100",)


def _file_error(tmp_path: Path, section: dict[str, Any]) -> str:
    path = tmp_path / "i.json"
    path.write_text(json.dumps({"gpu": section}))
    with pytest.raises(InputError) as info:
        placement.load(path)
    return str(info.value).removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    "field,value,expected",
    [
        ("gpus", "2", "gpu.jobs[0].gpus: got '2', expected an integer in [0, 1024] (whole GPUs)"),
        ("gpus", None, "gpu.jobs[0].gpus: got null, expected an integer in [0, 1024] (whole GPUs)"),
        ("gpus", 10**10, "gpu.jobs[0].gpus: got 10000000000, expected an integer in [0, 1024]"),
        ("traffic_gb", 1e15, "gpu.jobs[0].traffic_gb: got 1e+15, expected a number in [0, 1e5]"),
        ("priority", 0, "gpu.jobs[0].priority: got 0, expected an integer in [1, 1000]"),
        ("gpu_types", "A100", "gpu.jobs[0].gpu_types: got a string, expected a list"),
    ],
)
def test_a_typed_instance_gets_the_messages_of_files(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    with pytest.raises(InputError) as info:
        placement.load(_cluster(GpuJob("j", **{field: value})))
    typed = str(info.value)
    assert typed.startswith(expected), typed
    if isinstance(value, int | float):  # a file may write an integer as "2" (proto3 JSON)
        section = GPU.instance_to_dict(_cluster(GpuJob("j")))
        section["jobs"][0][field] = value
        assert _file_error(tmp_path, section) == typed


def test_a_typed_instance_of_the_wrong_class_says_so() -> None:
    with pytest.raises(InputError) as info:
        GPU.validate({"gpu": {}})
    assert str(info.value) == "instance: got a JSON object, expected a GpuInstance"


# --- item 7: huge numbers are refused before any backend ---------------------------------------


@pytest.mark.parametrize(
    "instance,edit,expected",
    [
        (
            "instances/dag/random-20x3.json",
            lambda d: d["dag"]["tasks"][0].update(work=1e300),
            "dag.tasks[0].work: got 1e+300, expected a number in [0, 1e9]",
        ),
        (
            "instances/gpu/tiny.json",
            lambda d: d["gpu"]["jobs"][0].update(traffic_gb=1e15),
            "gpu.jobs[0].traffic_gb: got 1e+15, expected a number in [0, 1e5] (GB)",
        ),
        (
            "instances/gpu/tiny.json",
            lambda d: d["gpu"]["cluster"]["levels"][1].update(bandwidth_gbps=1e-308),
            "gpu.cluster.levels[1].bandwidth_gbps: got 1e-308, expected a number in [0.01, 1e6]",
        ),
        (
            "instances/entanglement/tiny.json",
            lambda d: d["entanglement"]["requests"][0].update(weight=1e308),
            "entanglement.requests[0].weight: got 1e+308, expected a number in (0, 1e6]",
        ),
        (
            "instances/partition/tiny-chain.json",
            lambda d: d["partition"]["layers"][0].update(forward_flops=1e300),
            "partition.layers[0].forward_flops: got 1e+300, expected a number in [0, 1e21]",
        ),
    ],
)
def test_a_number_beyond_its_range_is_exit_2_naming_the_field(
    tmp_path: Path, instance: str, edit: Any, expected: str
) -> None:
    document = json.loads((REPO / instance).read_text())
    edit(document)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(document))
    proc = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "solve", str(path), "--time-limit", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_dag_schedules_past_the_scaled_integers_are_refused() -> None:
    """A transfer of 1e15 bytes at 1 byte/s (each field in range): no schedule ends within
    2^50 / tasks seconds, which CP-SAT's scaled times need."""
    tasks = [DagTask("a", work=1.0), DagTask("b", work=1.0)]
    machines = [DagMachine("m", zone="x"), DagMachine("n", zone="y")]
    links = [DagLink("x", "y", bandwidth_bytes_per_s=1.0)]
    edges = [DagEdge("a", "b", data_bytes=1e15)]
    with pytest.raises(InputError) as info:
        placement.load(DagInstance(machines=machines, tasks=tasks, edges=edges, links=links))
    assert "at most 2^50 / 2 tasks" in str(info.value)


def test_a_solution_file_given_as_an_instance_says_so(tmp_path: Path) -> None:
    solution = tmp_path / "s.json"
    cli = [sys.executable, "-m", "placement.api.cli"]
    tiny = str(REPO / "instances/gpu/tiny.json")
    subprocess.run([*cli, "solve", tiny, "--out", str(solution), "-q"], check=True, timeout=120)
    proc = subprocess.run([*cli, "solve", str(solution)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("got a solution file, expected an instance file")
    proc = subprocess.run([*cli, "check", tiny, tiny], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("got an instance file, expected a solution file")


# --- import placement ---------------------------------------------------------------------------


def test_import_placement_loads_every_kind_of_source() -> None:
    path = REPO / "instances/gpu/tiny.json"
    text = path.read_text()
    from_path = placement.load(str(path))
    assert placement.load(path).jobs == from_path.jobs
    assert placement.load(text).jobs == from_path.jobs
    assert placement.load(json.loads(text)).jobs == from_path.jobs
    assert placement.load(from_path) is from_path
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", placement.__version__)


def test_placement_solve_and_check_with_a_solution_file() -> None:
    result = placement.solve("instances/gpu/tiny.json", time_limit_s=5)
    assert result.instance is not None and result.has_solution
    document = {"gpu": result.to_dict()["solution"]}
    assert placement.check("instances/gpu/tiny.json", document).feasible
    assert placement.check(result.instance, result.solution).feasible
    text = repr(result)
    assert text.startswith("Result(family='gpu', status=optimal, stop_reason=proven, ")
    assert "objective=10.3, bound=10.3, gap=0.00%" in text and len(text) < 200


def test_every_family_reads_its_solution_by_name() -> None:
    views = {
        "gpu": ("instances/gpu/tiny.json", lambda n: n.placements["gang"].workers[0].node),
        "dag": ("instances/dag/random-20x3.json", lambda n: n.runs["t0"].machine),
        "partition": ("instances/partition/tiny-chain.json", lambda n: n.device_of["layer0000"]),
        "entanglement": (
            "instances/entanglement/tiny.json",
            lambda n: next(iter(n.routes.values()))[0].nodes[0],
        ),
        "mc": ("instances/mc/tasks-20x4.json", lambda n: n.core_of["t000"]),
        "dispatch": ("instances/dispatch/trace-12x2.json", lambda n: n.server_of["j0"]),
        "sharding": ("instances/sharding/tables-20x8.json", lambda n: n.devices["t0000"][0]),
        "fl": ("instances/fl/fleet-100x3.json", lambda n: n.devices[("j0-vgg16-cifar10", 0)][0]),
        "serving": ("instances/serving/azure-conv-16gpu.json", lambda n: next(iter(n.instances))),
    }
    # Every registered family reads its solutions by name.
    assert set(views) == set(family_names())
    for family, (path, read) in views.items():
        result = placement.solve(path, time_limit_s=2, backend="greedy")
        name = read(result.named)
        assert isinstance(name, str) and name, family
        assert result.to_dict()["solution"] is not None, family


def test_the_engine_solve_keeps_its_instance_too() -> None:
    """``placement.solver.solve`` (what the CLI, batch and the service call) sets
    ``Result.instance``, so its results read by name and serialise their solution as well."""
    instance = placement.load("instances/dag/random-20x3.json")
    result = solve(instance, SolveOptions(time_limit_s=2, backend="greedy"))
    assert result.instance is instance
    assert result.named is not None and result.named.runs["t0"].machine
    assert result.to_dict()["solution"] is not None


def test_messages_carry_no_python_type_names(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        placement.load(None)
    assert str(info.value).startswith("got null, expected an instance: a file path")
    with pytest.raises(InputError) as info:
        placement.load("[1, 2]")
    assert str(info.value) == "got a JSON list, expected a JSON object"
    with pytest.raises(InputError) as info:
        SolveOptions(time_limit_s=None)  # type: ignore[arg-type]
    assert str(info.value).startswith("time_limit_s: got null, expected")


@pytest.mark.parametrize(
    "field,value,expected",
    [
        ("gpu_count", "8", "gpu.cluster.nodes[0].gpu_count: got '8', expected an integer in"),
        ("gpu_count", 10**12, "gpu.cluster.nodes[0].gpu_count: got 1e12, expected an integer"),
        ("groups", "rack", "gpu.cluster.nodes[0].groups: got a string, expected a list"),
    ],
)
def test_a_typed_node_of_the_wrong_shape_is_named_not_crashed(
    field: str, value: Any, expected: str
) -> None:
    # gpu_count="8" raised TypeError and 10**12 a MemoryError while the node was built.
    fields = dict(
        name="n0", gpu_type="A100", gpu_count=8, gpu_memory_mib=40_960,
        nvlink_domain_size=4, cpu_milli=64_000, memory_mib=512_000,
    )  # fmt: skip
    node = GpuNode(**{**fields, field: value})
    with pytest.raises(InputError) as info:
        placement.load(GpuInstance(levels=LEVELS, nodes=[node], jobs=[GpuJob("j")]))
    assert str(info.value).startswith(expected), str(info.value)
