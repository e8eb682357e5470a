"""The fuzzing entry points: every way bad input reaches placement.

Each :class:`Target` takes raw bytes, feeds them to one entry point (an instance-file loader,
a public-format loader, or the gRPC request validation) and returns normally when the input
was accepted or rejected *clearly*. Anything else raises :class:`Crash`: an exception other
than :class:`InputError` (or, for the service, INVALID_ARGUMENT), or a rejection that names
no field or does not say what was expected.

The same targets serve the hypothesis property tests (tests/test_fuzz*.py) and the atheris
campaign (benchmarks/reliability/fuzz.py). Seeds are small valid inputs: bundled instances,
small public files from ``../shared/benchmarks`` where present, and hand-written ones.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from placement.api.files import read_instance
from placement.solver.errors import InputError
from placement.solver.family import family_names
from placement.solver.schema.v1 import service_pb2

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "benchmarks"


class Crash(Exception):
    """The entry point failed in a way a user cannot act on (a bug)."""


def check_clear(exc: InputError, file: str | None = None, needs_file: bool = False) -> None:
    """Raise :class:`Crash` unless ``exc`` names what was expected (and the file: ``file``
    itself, or with ``needs_file`` any file; a loader reading two files may blame either)."""
    if needs_file and not exc.file:
        raise Crash(f"error names no file: {exc}")
    if not exc.errors:
        raise Crash(f"InputError without a field error: {exc!r}")
    for e in exc.errors:
        if not isinstance(e.expected, str) or not e.expected.strip():
            raise Crash(f"InputError without an expectation: {e!r}")
        str(e)  # formatting must not fail
    text = str(exc)
    if not text.strip():
        raise Crash("empty error message")
    if file is not None and file not in text:
        raise Crash(f"error does not name the file {file}: {text}")


class Scratch:
    """A private folder for the files the loaders read (one per process)."""

    def __init__(self) -> None:
        # The campaign gives each process a folder it removes afterwards.
        base = os.environ.get("PLACEMENT_FUZZ_SCRATCH")
        if base is None and Path("/dev/shm").is_dir():
            base = "/dev/shm"  # memory-backed: the loaders read a file per input
        self.dir = Path(tempfile.mkdtemp(prefix="placement-fuzz-", dir=base))
        atexit.register(shutil.rmtree, self.dir, True)

    def write(self, name: str, data: bytes) -> str:
        path = self.dir / name
        path.write_bytes(data)
        return str(path)


_scratch: Scratch | None = None


def scratch() -> Scratch:
    global _scratch
    if _scratch is None:
        _scratch = Scratch()
    return _scratch


@dataclass
class Target:
    """One entry point."""

    name: str
    run: Callable[[bytes], str]
    """Feed one input; returns ``"accepted"`` or ``"rejected"``, raises :class:`Crash`."""
    seeds: Callable[[], list[bytes]]
    json_input: bool = True
    """Inputs are JSON text (the structural mutator applies)."""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    family: str = ""
    """The family whose input it reads (empty for the service's targets, which read all)."""
    module: str = ""
    """The module of the family's own loader it feeds (instrumented by the atheris campaign)."""


def _file_target(
    filename: str, load: Callable[[str], Any], one_file: bool = True
) -> Callable[[bytes], str]:
    def run(data: bytes) -> str:
        path = scratch().write(filename, data)
        try:
            load(path)
        except InputError as exc:
            check_clear(exc, path if one_file else None, needs_file=True)
            return "rejected"
        except RecursionError as exc:
            raise Crash(f"RecursionError: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - that is what we look for
            raise Crash(f"{type(exc).__name__}: {exc}") from exc
        return "accepted"

    return run


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _shared(*parts: str) -> list[bytes]:
    p = SHARED.joinpath(*parts)
    return [p.read_bytes()] if p.is_file() else []


# --- instance files ----------------------------------------------------------------------


def _instance_file(path: str) -> Any:
    return read_instance(path)


def _instance_seeds(family: str) -> Callable[[], list[bytes]]:
    def seeds() -> list[bytes]:
        # The family's hand-checkable ``tiny*`` file where it has one, else its smallest: the
        # seed stays the same when a smaller example is bundled (the adversarial tests mutate
        # its first job and expect a pending one).
        folder = REPO / "instances" / family
        files = sorted(
            folder.glob("*.json"), key=lambda p: (not p.stem.startswith("tiny"), p.stat().st_size)
        )
        return [_read(p) for p in files[:1]]

    return seeds


# --- public formats ----------------------------------------------------------------------

_OPENB_NODES = (
    b"sn,cpu_milli,memory_mib,num_gpu,gpu,model\n"
    b"openb-node-0001,64000,262144,2,2,P100\n"
    b"openb-node-0002,96000,786432,8,8,V100M32\n"
)
_OPENB_PODS = (
    b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    b"deletion_time,scheduled_time\n"
    b"openb-pod-0017,88000,327680,8,1000,,Burstable,Running,9437497,10769854,9437497\n"
    b"openb-pod-0022,6000,12288,1,460,,LS,Running,9679155,10769854,9679155\n"
    b"openb-pod-0023,4000,8192,1,1000,V100M32|P100,LS,Running,9679155,10769854,9679155\n"
)


def _openb_head(name: str, lines: int) -> list[bytes]:
    p = SHARED / "gpu" / "openb" / name
    if not p.is_file():
        return []
    with p.open("rb") as f:
        return [b"".join(f.readline() for _ in range(lines))]


def _openb_nodes(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.gpu.formats.openb import load_openb

    pods = scratch().write("pods-fixed.csv", _OPENB_PODS)
    return load_openb(path, pods)


def _openb_pods(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.gpu.formats.openb import load_openb

    nodes = scratch().write("nodes-fixed.csv", _OPENB_NODES)
    return load_openb(nodes, path)


_BRAUN = b"3 2 0\n10.5\n20\n7\n3.25\n1e3\n0.5\n"
_STG = b"3\n0 0 0\n1 4 1 0\n2 3 1 0\n3 5 2 1 2\n4 0 1 3\n# CP Length 9\n"
_WFCOMMONS = json.dumps(
    {
        "name": "tiny",
        "schemaVersion": "1.4",
        "workflow": {
            "tasks": [
                {
                    "name": "a",
                    "parents": [],
                    "runtimeInSeconds": 3.5,
                    "files": [{"link": "output", "name": "f1", "sizeInBytes": 1000}],
                },
                {
                    "name": "b",
                    "parents": ["a"],
                    "runtimeInSeconds": 2,
                    "files": [{"link": "input", "name": "f1", "sizeInBytes": 1000}],
                },
            ],
            "machines": [],
            "makespanInSeconds": 6,
        },
    }
).encode()
_GML = b"""graph [
  node [ id 0 label "A" Latitude 52.1 Longitude 4.3 ]
  node [ id 1 label "B" Latitude 52.4 Longitude 4.9 ]
  node [ id 2 label "C" Latitude 51.9 Longitude 5.1 ]
  edge [ source 0 target 1 ]
  edge [ source 1 target 2 ]
  edge [ source 2 target 0 ]
]
"""
_GRAPHML = b"""<?xml version="1.0" encoding="utf-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key attr.name="Latitude" attr.type="double" for="node" id="d1" />
<key attr.name="Longitude" attr.type="double" for="node" id="d2" />
<graph edgedefault="undirected">
<node id="0"><data key="d1">40.7</data><data key="d2">-74.0</data></node>
<node id="1"><data key="d1">41.9</data><data key="d2">-87.6</data></node>
<node id="2"><data key="d1">39.7</data><data key="d2">-104.9</data></node>
<edge source="0" target="1" /><edge source="1" target="2" />
</graph></graphml>
"""
_TARNAWSKI = json.dumps(
    {
        "maxSizePerFPGA": 10.0,
        "maxFPGAs": 2,
        "maxCPUs": 0,
        "nodes": [
            {"id": 1, "supportedOnFpga": 1, "fpgaLatency": 2.0, "size": 3.0},
            {"id": 2, "supportedOnFpga": 1, "fpgaLatency": 1.5, "size": 4.0},
            {"id": 3, "supportedOnFpga": 1, "fpgaLatency": 3.0, "size": 2.0},
        ],
        "edges": [
            {"sourceId": 1, "destId": 2, "cost": 0.5},
            {"sourceId": 2, "destId": 3, "cost": 0.25},
        ],
    }
).encode()


def _braun(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.dag.formats.loaders import load_braun

    return load_braun(path)


def _stg(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.dag.formats.loaders import load_stg

    return load_stg(path, processors=2)


def _wfcommons(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.dag.formats.loaders import load_wfcommons

    return load_wfcommons(path)


def _topcuoglu_exec(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.dag.formats.loaders import load_topcuoglu

    edges = scratch().write("edges-fixed.csv", _TOPCUOGLU_EDGES)
    return load_topcuoglu(path, edges)


def _topcuoglu_edges(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.dag.formats.loaders import load_topcuoglu

    exec_csv = scratch().write("exec-fixed.csv", _TOPCUOGLU_EXEC)
    return load_topcuoglu(exec_csv, path)


_TOPCUOGLU_EXEC = b"T,P1,P2\n1,14,16\n2,13,19\n3,11,13\n"
_TOPCUOGLU_EDGES = b"T,1,2,3\n1,0,18,12\n2,0,0,9\n3,0,0,0\n"


def _topology(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.entanglement.formats.topology_zoo import load_topology

    return load_topology(path, pairs=3, default_length_km=50.0)


def _tarnawski(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.partition.formats.tarnawski import load_tarnawski

    return load_tarnawski(path)


def _model_config(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.partition.formats.hf import load_model_config

    return load_model_config(path)


def _device_spec(path: str) -> Any:
    # lazy: a loader costs 0.2-0.6 s to import; each target pays only for the one it feeds
    from placement.models.partition.formats.hf import device_spec

    return device_spec(path)


# --- the gRPC request validation -----------------------------------------------------------

SERVICE_LIMITS = {"jobs": 2_000, "nodes": 2_000, "gpus": 20_000, "tasks": 2_000, "items": 20_000}
"""Size limits for the validation target (smaller than the defaults so that fuzzed inputs
stay fast; the limit logic is the same)."""


def _request_seeds() -> list[bytes]:
    from placement.api.client import instance_message  # lazy: ~0.1 s; only request seeds use it

    out = []
    for family in family_names():
        for doc in _instance_seeds(family)()[:1]:
            req = service_pb2.SolveRequest(request_id="fuzz")
            req.instance.CopyFrom(instance_message(json.loads(doc)))
            req.parameters.time_limit_s = 1.5
            req.parameters.backend = "greedy"
            out.append(req.SerializeToString())
    return out


def _request_seed(family: str) -> bytes:
    """The request seed of ``family`` (a small bundled instance of it, greedy, 1.5 s)."""
    for data in _request_seeds():
        if service_pb2.SolveRequest.FromString(data).instance.WhichOneof("family") == family:
            return data
    raise KeyError(f"no request seed for family {family!r} (no instances/{family}/*.json)")


def validate_request_bytes(data: bytes) -> str:
    """Decode a ``SolveRequest`` as gRPC would, then run the server's validation on it."""
    # lazy: grpc and the server cost ~0.2 s to import; only the request targets need them
    import grpc

    from placement.api.server.service import Abort, validate_solve_request

    try:
        req = service_pb2.SolveRequest.FromString(data)
    except DecodeError:
        return "rejected"  # gRPC refuses to deserialize it before any handler runs
    except RecursionError:
        return "rejected"
    try:
        validate_solve_request(req, SERVICE_LIMITS)
    except Abort as exc:
        if exc.code != grpc.StatusCode.INVALID_ARGUMENT:
            raise Crash(f"{exc.code.name}: {exc.message}") from exc
        if not exc.details or not exc.details[0].field_violations:
            raise Crash(f"INVALID_ARGUMENT naming no field: {exc.message}") from exc
        for v in exc.details[0].field_violations:
            if not v.field or not v.description:
                raise Crash(f"a field violation without field or description: {v}") from exc
        return "rejected"
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"{type(exc).__name__}: {exc}") from exc
    return "accepted"


def _request_json_seeds() -> list[bytes]:
    return [
        json.dumps({"instance": json.loads(d), "parameters": {"time_limit_s": 1}}).encode()
        for family in family_names()
        for d in _instance_seeds(family)()[:1]
    ]


def validate_request_json(data: bytes) -> str:
    """A request in its JSON form (as the Node.js or a REST gateway would send it), converted
    to the message and validated by the server."""
    try:
        doc = json.loads(data)
        req = json_format.ParseDict(doc, service_pb2.SolveRequest())
    except (
        ValueError,
        TypeError,
        AttributeError,
        OverflowError,  # protobuf's json_format on an integer beyond a double
        RecursionError,
        json_format.ParseError,
    ):
        return "rejected"  # not a message: the client library refuses to send it
    return validate_request_bytes(req.SerializeToString())


TARGETS: dict[str, Target] = {
    **{
        f"instance-{family}": Target(
            f"instance-{family}",
            _file_target("instance.json", _instance_file),
            _instance_seeds(family),
            family=family,
        )
        for family in family_names()
    },
    # The families' own public-format loaders (the one place that names them).
    "openb-nodes": Target(
        "openb-nodes",
        _file_target("nodes.csv", _openb_nodes, one_file=False),
        lambda: [_OPENB_NODES, *_openb_head("openb_node_list_gpu_node.csv", 30)],
        json_input=False,
        family="gpu",
        module="placement.models.gpu.formats.openb",
    ),
    "openb-pods": Target(
        "openb-pods",
        _file_target("pods.csv", _openb_pods, one_file=False),
        lambda: [_OPENB_PODS, *_openb_head("openb_pod_list_default.csv", 30)],
        json_input=False,
        family="gpu",
        module="placement.models.gpu.formats.openb",
    ),
    "braun": Target(
        "braun",
        _file_target("etc.txt", _braun),
        lambda: [_BRAUN],
        json_input=False,
        family="dag",
        module="placement.models.dag.formats.loaders",
    ),
    "stg": Target(
        "stg",
        _file_target("graph.stg", _stg),
        lambda: [_STG, *_shared("dag", "stg", "50", "rand0000.stg")],
        json_input=False,
        family="dag",
        module="placement.models.dag.formats.loaders",
    ),
    "topcuoglu-exec": Target(
        "topcuoglu-exec",
        _file_target("exec.csv", _topcuoglu_exec, one_file=False),
        lambda: [_TOPCUOGLU_EXEC],
        json_input=False,
        family="dag",
        module="placement.models.dag.formats.loaders",
    ),
    "topcuoglu-edges": Target(
        "topcuoglu-edges",
        _file_target("edges.csv", _topcuoglu_edges, one_file=False),
        lambda: [_TOPCUOGLU_EDGES],
        json_input=False,
        family="dag",
        module="placement.models.dag.formats.loaders",
    ),
    "wfcommons": Target(
        "wfcommons",
        _file_target("workflow.json", _wfcommons),
        lambda: [_WFCOMMONS, *_shared("dag", "wfcommons", "srasearch-chameleon-10a-001.json")],
        family="dag",
        module="placement.models.dag.formats.loaders",
    ),
    "gml": Target(
        "gml",
        _file_target("net.gml", _topology),
        lambda: [_GML, *_shared("quantum", "topologies", "Surfnet.gml")],
        json_input=False,
        family="entanglement",
        module="placement.models.entanglement.formats.topology_zoo",
    ),
    "graphml": Target(
        "graphml",
        _file_target("net.graphml", _topology),
        lambda: [_GRAPHML, *_shared("quantum", "topologies", "Abilene.graphml")],
        json_input=False,
        family="entanglement",
        module="placement.models.entanglement.formats.topology_zoo",
    ),
    "tarnawski": Target(
        "tarnawski",
        _file_target("layers.json", _tarnawski),
        lambda: [
            _TARNAWSKI,
            *_shared("partition", "tarnawski-layergraphs", "bert24_inference.json"),
        ],
        family="partition",
        module="placement.models.partition.formats.tarnawski",
    ),
    "model-config": Target(
        "model-config",
        _file_target("config.json", _model_config),
        lambda: [
            *_shared("partition", "llm-configs", "models", "bert-large.json"),
            *_shared("partition", "llm-configs", "models", "NousResearch_Llama-2-7b-hf.json"),
            b'{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, '
            b'"vocab_size": 100, "intermediate_size": 256}',
        ],
        family="partition",
        module="placement.models.partition.formats.hf",
    ),
    "device-spec": Target(
        "device-spec",
        _file_target("device.json", _device_spec),
        lambda: [_read(p) for p in sorted((REPO / "instances/partition/devices").glob("*.json"))],
        family="partition",
        module="placement.models.partition.formats.hf",
    ),
    "grpc-request": Target(
        "grpc-request", validate_request_bytes, _request_seeds, json_input=False
    ),
    "grpc-request-json": Target("grpc-request-json", validate_request_json, _request_json_seeds),
}


# --- a structural JSON mutator -------------------------------------------------------------

_NASTY: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**400,
    1e308,
    -1e308,
    5e-324,
    0.5,
    -0.0,
    "",
    "x",
    "NaN",
    "Infinity",
    "-1",
    "1e999",
    "\u0000",
    "\udcff"[:0] + "é",
    [],
    {},
    [0],
    {"": 0},
    "a" * 300,
]


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            out.extend(_paths(v, (*path, i)))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    r = rnd.random()
    if r < 0.45:
        return copy.deepcopy(rnd.choice(_NASTY))
    if r < 0.6:
        return rnd.choice([rnd.randint(-(10**6), 10**6), rnd.uniform(-1e6, 1e6)])
    if r < 0.7 and depth < 3:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if r < 0.8 and depth < 3:
        return {rnd.choice(["name", "id", "x", "jobs", "nodes"]): _random_value(rnd, depth + 1)}
    if r < 0.9:
        return "".join(rnd.choice('ab01-_. {}[]"\\é') for _ in range(rnd.randint(0, 12)))
    return rnd.choice([-rnd.random(), rnd.random() * 1e12, rnd.randint(0, 3)])


def mutate_doc(doc: Any, rnd: random.Random, steps: int = 1) -> Any:
    """Apply ``steps`` random structural mutations to a JSON document (a copy is changed)."""
    doc = json.loads(json.dumps(doc))
    for _ in range(steps):
        paths = _paths(doc)
        path = rnd.choice(paths)
        op = rnd.random()
        if not path:
            if op < 0.1:
                doc = _random_value(rnd)
            continue
        parent = _get(doc, path[:-1])
        key = path[-1]
        if op < 0.5:
            parent[key] = _random_value(rnd)
        elif op < 0.65:
            del parent[key]
        elif op < 0.8 and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))  # duplicate an entry
        elif op < 0.9:
            value = parent[key]
            if isinstance(value, int | float) and not isinstance(value, bool):
                parent[key] = rnd.choice([-value, value * 10 ** rnd.randint(1, 30), value + 1, 0])
            elif isinstance(value, str):
                parent[key] = rnd.choice(["", value * 2, value + "x", value[:1]])
            else:
                parent[key] = _random_value(rnd)
        else:
            if isinstance(parent, dict):
                parent[
                    rnd.choice(["extra", "Name", "jobs", key if isinstance(key, str) else "k"])
                ] = _random_value(rnd)
    return doc


def mutate_bytes_json(data: bytes, rnd: random.Random) -> bytes | None:
    """A structural mutation of JSON ``data`` (None when ``data`` is not JSON)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return json.dumps(mutate_doc(doc, rnd, steps=rnd.choice((1, 1, 1, 2, 3)))).encode()


def mutate_bytes_text(data: bytes, rnd: random.Random) -> bytes:
    """A token-level mutation of a text format (CSV, STG, ETC, GML, GraphML)."""
    text = data.decode("utf-8", "replace")
    tokens = text.replace(",", " , ").replace("\n", " \n ").split(" ")
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        if not tokens:
            break
        i = rnd.randrange(len(tokens))
        op = rnd.random()
        if op < 0.5:
            tokens[i] = str(rnd.choice(_NASTY[:16] + ["-5", "nan", "inf", "1e309", "", "abc"]))
        elif op < 0.7:
            del tokens[i]
        elif op < 0.85:
            tokens.insert(i, tokens[rnd.randrange(len(tokens))])
        else:
            tokens[i] = tokens[i] * rnd.randint(2, 5)
    out = " ".join(tokens).replace(" , ", ",").replace(" \n ", "\n")
    return out.encode("utf-8", "surrogatepass")


def mutate(target: Target, data: bytes, rnd: random.Random) -> bytes:
    """One structural mutation suited to the target's input format."""
    if target.json_input:
        out = mutate_bytes_json(data, rnd)
        if out is not None:
            return out
    if target.name == "grpc-request":
        return _mutate_request(data, rnd)
    return mutate_bytes_text(data, rnd)


def _mutate_request(data: bytes, rnd: random.Random) -> bytes:
    """Mutate a serialized SolveRequest through its JSON form (keeps it a valid message
    most of the time, so the validation beyond decoding is reached)."""
    try:
        req = service_pb2.SolveRequest.FromString(data)
        doc = json_format.MessageToDict(req, preserving_proto_field_name=True)
        doc = mutate_doc(doc, rnd, steps=rnd.choice((1, 1, 2, 3)))
        return json_format.ParseDict(doc, service_pb2.SolveRequest()).SerializeToString()
    except Exception:  # noqa: BLE001 - the mutated doc is not a message: flip bytes instead
        b = bytearray(data)
        for _ in range(rnd.randint(1, 8)):
            if b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)


def cleanup() -> None:
    """Remove the scratch folder."""
    global _scratch
    if _scratch is not None:
        shutil.rmtree(_scratch.dir, ignore_errors=True)
        _scratch = None
