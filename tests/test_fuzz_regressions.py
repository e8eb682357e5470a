"""One test per defect the fuzzing campaign found (benchmarks/reliability/fuzz.py).

Before the fix each input raised something other than a clear :class:`InputError`
(OverflowError, TypeError, AttributeError), named no file, or allocated memory until the
machine's OOM killer stopped it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.reliability import targets as T
from placement.api.files import read_instance
from placement.models.dag.formats.loaders import load_stg, load_topcuoglu, load_wfcommons
from placement.models.gpu.formats.openb import load_openb
from placement.models.partition.formats.hf import device_spec, load_model_config
from placement.models.partition.formats.tarnawski import load_tarnawski
from placement.solver.errors import InputError
from placement.solver.jsonform import finite
from tests.conftest import REPO


def _error(call, *fragments: str) -> InputError:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        call()
    text = str(info.value)
    for f in fragments:
        assert f in text, (f, text)
    return info.value


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def test_an_integer_beyond_a_double_is_not_finite() -> None:
    assert not finite(10**400)
    assert finite(10**300) and not finite(float("nan"))


def test_instance_file_with_an_integer_beyond_a_double(tmp_path: Path) -> None:
    doc = json.loads((REPO / "instances/dag/etl-small.json").read_text())
    doc["dag"]["tasks"][0]["work"] = 10**400
    path = _write(tmp_path, "i.json", json.dumps(doc))
    err = _error(lambda: read_instance(path), "dag.tasks[0].work", "a number in [0, 1e9]")
    assert err.file == str(path)


def test_stg_cost_beyond_a_double(tmp_path: Path) -> None:
    path = _write(tmp_path, "g.stg", "1\n0 0 0\n1 " + "9" * 400 + " 1 0\n2 0 1 1\n")
    _error(lambda: load_stg(path, 2), str(path), "line 3")


@pytest.mark.parametrize(
    ("task", "where"),
    [
        ({"parents": 7}, "workflow.tasks[1].parents"),
        ({"parents": [["a"]]}, "workflow.tasks[1].parents"),
        ({"files": [3]}, "workflow.tasks[1].files"),
        ({"files": [{"link": "input", "name": "f1", "sizeInBytes": 10**400}]}, "sizeInBytes"),
        ({"files": [{"link": "input", "name": ["f1"], "sizeInBytes": 1}]}, "files[0].name"),
        ({"runtimeInSeconds": 10**400}, "runtimeInSeconds"),
    ],
)
def test_wfcommons_fields_of_the_wrong_type(tmp_path: Path, task: dict, where: str) -> None:
    doc = json.loads(T._WFCOMMONS)
    doc["workflow"]["tasks"][1].update(task)
    path = _write(tmp_path, "w.json", json.dumps(doc))
    _error(lambda: load_wfcommons(path), str(path), where)


def test_wfcommons_new_schema_fields_of_the_wrong_type(tmp_path: Path) -> None:
    doc = {
        "workflow": {
            "specification": {
                "tasks": [{"id": "a", "parents": [], "outputFiles": "f1"}],
                "files": [{"id": "f1", "sizeInBytes": "big"}],
            },
            "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 1}]},
        }
    }
    path = _write(tmp_path, "w.json", json.dumps(doc))
    _error(lambda: load_wfcommons(path), "workflow.specification.files[0].sizeInBytes")
    doc["workflow"]["specification"]["files"][0]["sizeInBytes"] = 5
    path = _write(tmp_path, "w.json", json.dumps(doc))
    _error(lambda: load_wfcommons(path), "outputFiles", "a list of str")


def test_tarnawski_huge_accelerator_count_is_refused_at_once(tmp_path: Path) -> None:
    doc = json.loads(T._TARNAWSKI)
    doc["maxFPGAs"] = 1e308  # used to build a list of 1e308 devices until the OOM killer
    path = _write(tmp_path, "t.json", json.dumps(doc))
    _error(lambda: load_tarnawski(path), "maxFPGAs", "an integer in [1, 10000]")


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["edges"][0].update(sourceId=[1]), "edges[0].sourceId"),
        (lambda d: d["nodes"][0].update(size=10**400), "nodes[0].size"),
        (lambda d: [n.update(size=1.7e308, colorClass=1) for n in d["nodes"]], "nodes"),
    ],
)
def test_tarnawski_bad_ids_and_sums(tmp_path: Path, change, where: str) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(T._TARNAWSKI)
    change(doc)
    path = _write(tmp_path, "t.json", json.dumps(doc))
    _error(lambda: load_tarnawski(path), str(path), where)


def test_openb_rows_with_missing_cells_and_errors_name_the_files(tmp_path: Path) -> None:
    pods = _write(tmp_path, "pods.csv", T._OPENB_PODS)
    nodes = _write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,num_gpu,gpu,model\nn1,1,1,1,1\n")
    # A short row: the missing model is a clear error (it was an AttributeError).
    _error(lambda: load_openb(nodes, pods), str(nodes), "gpu_type", "a GPU type name")
    nodes = _write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,num_gpu,gpu,model\n\0\n")
    _error(lambda: load_openb(nodes, pods), str(nodes))
    # A rule of the instance schema (here: duplicate node names) names both files.
    dup = T._OPENB_NODES + b"openb-node-0001,64000,262144,2,2,P100\n"
    nodes = _write(tmp_path, "nodes.csv", dup)
    _error(lambda: load_openb(nodes, pods), str(nodes), str(pods))


def test_topcuoglu_errors_name_both_files(tmp_path: Path) -> None:
    exec_csv = _write(tmp_path, "exec.csv", T._TOPCUOGLU_EXEC)
    # An edge back from task 2 to task 1: a cycle, found by the instance validation, which
    # used to blame the execution-time file alone.
    edges = _write(tmp_path, "edges.csv", "T,1,2,3\n1,0,18,12\n2,5e-324,0,9\n3,0,0,0\n")
    _error(lambda: load_topcuoglu(exec_csv, edges), str(exec_csv), str(edges))


@pytest.mark.parametrize("value", [10**400, 1e300, float("inf")])
def test_device_spec_figures_beyond_reason(tmp_path: Path, value: float) -> None:
    doc = json.loads((REPO / "instances/partition/devices/edge-4gb.json").read_text())
    doc["mem_per_GPU_in_GB"] = value if value != float("inf") else 1e308
    path = _write(tmp_path, "d.json", json.dumps(doc))
    _error(lambda: device_spec(path), "mem_per_GPU_in_GB", str(path))


def test_model_config_dimension_beyond_reason(tmp_path: Path) -> None:
    doc = {
        "num_hidden_layers": 2,
        "hidden_size": 10**30,
        "num_attention_heads": 4,
        "vocab_size": 100,
    }
    path = _write(tmp_path, "c.json", json.dumps(doc))
    _error(lambda: load_model_config(path), "hidden_size", "an integer in [1, 1000000000]")


def test_entanglement_negative_attenuation_is_reported_not_overflowed(tmp_path: Path) -> None:
    # A negative attenuation with links of known length made exp(-alpha * length) overflow.
    doc = json.loads((REPO / "instances/entanglement/tiny.json").read_text())
    doc["entanglement"]["attenuation_per_km"] = -290070.5
    for link in doc["entanglement"]["links"]:
        link.pop("success", None)
    path = _write(tmp_path, "e.json", json.dumps(doc))
    err = _error(lambda: read_instance(path), "entanglement.attenuation_per_km")
    assert [e.path for e in err.errors] == ["entanglement.attenuation_per_km"]


def test_gml_coordinate_beyond_a_double_is_no_coordinate(tmp_path: Path) -> None:
    from placement.models.entanglement.formats.topology_zoo import load_topology

    text = T._GML.decode().replace("Latitude 52.1", "Latitude " + "9" * 400)
    path = _write(tmp_path, "net.gml", text)
    # The node has no usable coordinate: an error without a default length, else the default.
    _error(lambda: load_topology(path, pairs=2), str(path))
    assert load_topology(path, pairs=2, default_length_km=50.0).nodes


@pytest.mark.parametrize(
    ("fmt", "name", "data"),
    [
        (
            "wfcommons",
            "w.json",
            json.dumps(
                {"workflow": {"tasks": [{"name": "a", "runtimeInSeconds": 1, "parents": 7}]}}
            ),
        ),
        (
            "tarnawski",
            "t.json",
            T._TARNAWSKI.decode().replace('"maxFPGAs": 2', '"maxFPGAs": 1e308'),
        ),
        ("stg", "g.stg", "1\n0 0 0\n1 " + "9" * 400 + " 1 0\n2 0 1 1\n"),
    ],
)
def test_the_command_line_exits_2_with_one_line(
    tmp_path: Path, fmt: str, name: str, data: str
) -> None:
    from tests.test_cli import assert_user_error, run

    path = _write(tmp_path, name, data)
    extra = ["--processors", "2"] if fmt == "stg" else []
    proc = run(
        "import", fmt, path, *extra, "--out", tmp_path / "out.json", cwd=tmp_path, timeout=120
    )
    assert_user_error(proc, str(path))
