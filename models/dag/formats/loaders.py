"""Readers of the field's public formats, each returning a validated :class:`DagInstance`.

- :func:`load_topcuoglu`: the HEFT paper's example (computation-cost CSV + edge-cost matrix);
- :func:`load_stg`: Kasahara's Standard Task Graph files on ``m`` identical processors;
- :func:`load_braun`: Braun et al.'s ETC files (independent tasks on heterogeneous machines);
- :func:`load_wfcommons`: WfCommons workflow JSON (schema 1.4 and 1.5+) on a machine set.

Every malformed input raises :class:`InputError` naming the file and the line or field.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from placement.models.dag.generate import MAX_MACHINES, machine_set
from placement.models.dag.instance import (
    DagEdge,
    DagInstance,
    DagLink,
    DagMachine,
    DagTask,
    finish,
)
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter, command_words
from placement.solver.jsonform import finite, parse_json_value, read_input_text


def _read_text(path: str | Path) -> str:
    return read_input_text(path, "a readable UTF-8 text file")


def _number(text: str, file: str, where: str, expected: str = "a number >= 0") -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError.single(where, text, expected, file=file) from None
    if not finite(value) or value < 0:
        raise InputError.single(where, text, expected, file=file)
    return value


# -------------------------------------------------------------------------------------------
# HEFT paper example


def load_topcuoglu(exec_csv: str | Path, edges_csv: str | Path, name: str = "") -> DagInstance:
    """The HEFT paper's example: ``exec_time.csv`` (task x processor costs, header row and
    column) and ``edges_data.csv`` (parent x child communication costs, 0 = no edge).

    Each processor is its own machine type (``P_0`` ...), in one zone whose self-link has
    bandwidth 1 and no latency, so an edge's data volume equals its communication cost.
    """
    exec_file, edge_file = str(exec_csv), str(edges_csv)
    rows = list(csv.reader(_read_text(exec_csv).splitlines()))
    if len(rows) < 2 or len(rows[0]) < 2:
        raise InputError.single("line 1", rows[:1], "a header: TP,P_0,P_1,...", file=exec_file)
    procs = [p.strip() for p in rows[0][1:]]
    tasks: list[DagTask] = []
    for i, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(procs) + 1:
            raise InputError.single(
                f"line {i}", row, f"a task name and {len(procs)} costs", file=exec_file
            )
        times = {
            p: _number(v, exec_file, f"line {i} column {j + 2}")
            for j, (p, v) in enumerate(zip(procs, row[1:], strict=True))
        }
        tasks.append(DagTask(name=row[0].strip(), time_by_type_s=times))
    edge_rows = list(csv.reader(_read_text(edges_csv).splitlines()))
    if not edge_rows:
        raise InputError.single("line 1", "", "a header: T,T0,T1,...", file=edge_file)
    names = [t.strip() for t in edge_rows[0][1:]]
    if len(names) != len(tasks):
        raise InputError.single(
            "line 1", len(names), f"{len(tasks)} task columns (one per task)", file=edge_file
        )
    # The two files name tasks differently (T_0 vs T0): match by position.
    edges: list[DagEdge] = []
    for i, row in enumerate(edge_rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(names) + 1 or i - 2 >= len(tasks):
            raise InputError.single(
                f"line {i}", row, f"a task name and {len(names)} costs", file=edge_file
            )
        for j, value in enumerate(row[1:]):
            cost = _number(value, edge_file, f"line {i} column {j + 2}")
            if cost > 0:
                edges.append(DagEdge(tasks[i - 2].name, tasks[j].name, cost))
    machines = [DagMachine(name=p, type=p) for p in procs]
    instance = DagInstance(
        machines=machines,
        tasks=tasks,
        edges=edges,
        links=[DagLink("default", "default", 1.0, 0.0)],
        name=name or "topcuoglu-2002",
        description=(
            "HEFT paper example (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): HEFT 80, optimum 73. "
            f"placement import topcuoglu {exec_file} {edge_file}"
        ),
    )
    return finish(instance, f"{exec_file} + {edge_file}")


# -------------------------------------------------------------------------------------------
# Standard Task Graph Set


def load_stg(path: str | Path, processors: int, name: str = "") -> DagInstance:
    """A Standard Task Graph file on ``processors`` identical processors, no communication.

    Format: the task count n, then n + 2 lines ``id cost npred pred...`` (tasks 0 and n + 1
    are zero-cost dummies, kept as tasks: they change no makespan); ``#`` lines are comments.
    """
    file = str(path)
    if processors < 1:
        raise InputError.single("processors", processors, "an integer >= 1", file=file)
    lines = [
        (i, line.split())
        for i, line in enumerate(_read_text(path).splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise InputError.single("line 1", "", "the task count", file=file)
    first_line, first = lines[0]
    try:
        n = int(first[0])
    except ValueError:
        raise InputError.single(
            f"line {first_line}", first[0], "the task count", file=file
        ) from None
    if n < 0 or len(lines) - 1 != n + 2:
        raise InputError.single(
            f"line {first_line}",
            n,
            f"{len(lines) - 1 - 2} tasks (n + 2 task lines follow)",
            file=file,
        )
    tasks: list[DagTask] = []
    edges: list[DagEdge] = []
    for k, (lineno, parts) in enumerate(lines[1:]):
        try:
            ident, cost, npred = int(parts[0]), int(parts[1]), int(parts[2])
            preds = [int(p) for p in parts[3:]]
        except (ValueError, IndexError):
            raise InputError.single(
                f"line {lineno}", " ".join(parts), "integers: id cost npred pred...", file=file
            ) from None
        if ident != k or cost < 0 or not finite(cost) or npred != len(preds):
            raise InputError.single(
                f"line {lineno}",
                " ".join(parts),
                f"task id {k}, a cost >= 0 and {npred} predecessor ids",
                file=file,
            )
        for p in preds:
            if not 0 <= p < k:
                raise InputError.single(
                    f"line {lineno}", p, f"a predecessor id in [0, {k - 1}]", file=file
                )
            edges.append(DagEdge(f"t{p}", f"t{k}", 0.0))
        tasks.append(DagTask(name=f"t{k}", work=float(cost)))
    machines = [DagMachine(name=f"p{i}") for i in range(processors)]
    instance = DagInstance(
        machines=machines,
        tasks=tasks,
        edges=edges,
        name=name or f"{Path(file).stem}-{processors}p",
        description=f"STG graph on {processors} processors: placement import stg {file} "
        f"--processors {processors}",
    )
    return finish(instance, file)


# -------------------------------------------------------------------------------------------
# Braun ETC


def load_braun(path: str | Path, name: str = "") -> DagInstance:
    """A Braun et al. ETC file: ``tasks machines 0`` then tasks x machines times, task-major.

    Machine ``m`` becomes type ``m<m>`` so that each task's row is its ETC row.
    """
    file = str(path)
    lines = _read_text(path).splitlines()
    header = lines[0].split() if lines else []
    try:
        n, k = int(header[0]), int(header[1])
    except (ValueError, IndexError):
        raise InputError.single(
            "line 1", " ".join(header), "a header: tasks machines [0]", file=file
        ) from None
    # Values with the line each sits on (one per line in the published files).
    values = [(i, tok) for i, line in enumerate(lines[1:], start=2) for tok in line.split()]
    if n < 1 or k < 1 or len(values) != n * k:
        raise InputError.single(
            "line 1",
            " ".join(header),
            f"tasks x machines = {max(n, 0) * max(k, 0)} values after the header "
            f"({len(values)} found)",
            file=file,
        )
    types = [f"m{m}" for m in range(k)]
    tasks = []
    for t in range(n):
        row = values[t * k : (t + 1) * k]
        times = {types[m]: _number(v, file, f"line {i}") for m, (i, v) in enumerate(row)}
        tasks.append(DagTask(name=f"t{t}", time_by_type_s=times))
    machines = [DagMachine(name=types[m], type=types[m]) for m in range(k)]
    instance = DagInstance(
        machines=machines,
        tasks=tasks,
        name=name or Path(file).name,
        description=f"Braun ETC instance: placement import braun {file}",
    )
    return finish(instance, file)


# -------------------------------------------------------------------------------------------
# WfCommons


def default_machine_set(seed: int = 0) -> tuple[list[DagMachine], list[DagLink]]:
    """A heterogeneous machine set in two zones (three machine types).

    Zone ``a``: two ``fast`` machines (speed 2, 4 slots) and two ``std`` (speed 1, 4 slots);
    zone ``b``: four ``slow`` machines (speed 0.5, 8 slots). Links: 1.25 GB/s and 0.1 ms
    inside a zone, 125 MB/s and 20 ms between zones.
    """
    del seed
    machines = [
        DagMachine("a-fast-0", "fast", 2.0, 4, 0, 4.0, "a"),
        DagMachine("a-fast-1", "fast", 2.0, 4, 0, 4.0, "a"),
        DagMachine("a-std-0", "std", 1.0, 4, 0, 1.5, "a"),
        DagMachine("a-std-1", "std", 1.0, 4, 0, 1.5, "a"),
        DagMachine("b-slow-0", "slow", 0.5, 8, 0, 0.8, "b"),
        DagMachine("b-slow-1", "slow", 0.5, 8, 0, 0.8, "b"),
        DagMachine("b-slow-2", "slow", 0.5, 8, 0, 0.8, "b"),
        DagMachine("b-slow-3", "slow", 0.5, 8, 0, 0.8, "b"),
    ]
    links = [
        DagLink("a", "a", 1.25e9, 1e-4),
        DagLink("b", "b", 1.25e9, 1e-4),
        DagLink("a", "b", 1.25e8, 0.02),
    ]
    return machines, links


def _wf_field(obj: Any, key: str, file: str, path: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise InputError.single(f"{path}.{key}", None, f"a field {key!r}", file=file)
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError.single(
            f"{path}.{key}", value, f"a {getattr(kind, '__name__', kind)}", file=file
        )
    return value


def _wf_list(obj: dict[str, Any], key: str, file: str, path: str, kind: type) -> list[Any]:
    """An optional list field whose items are all ``kind`` (empty when absent)."""
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(v, kind) and not isinstance(v, bool) for v in value
    ):
        raise InputError.single(
            f"{path}.{key}", value, f"a list of {getattr(kind, '__name__', kind)}", file=file
        )
    return value


def _wf_size(f: dict[str, Any], file: str, path: str) -> float:
    """A file's ``sizeInBytes`` (0 when absent): a finite number >= 0."""
    size = f.get("sizeInBytes", 0)
    if isinstance(size, bool) or not finite(size) or size < 0:
        raise InputError.single(f"{path}.sizeInBytes", size, "bytes >= 0", file=file)
    return float(size)


def load_wfcommons(
    path: str | Path,
    machines: list[DagMachine] | None = None,
    links: list[DagLink] | None = None,
    name: str = "",
) -> DagInstance:
    """A WfCommons workflow instance (schema 1.4, or 1.5+ with ``specification`` and
    ``execution``) on a machine set (default: :func:`default_machine_set`).

    A task's work is its recorded runtime (seconds at speed 1); an edge's data volume is the
    size of the files the child reads that the parent writes (schema 1.4), or of the files
    both name (1.5+).
    """
    file = str(path)
    data = parse_json_value(_read_text(path), file=file)
    workflow = _wf_field(data, "workflow", file, "", dict)
    tasks: list[DagTask] = []
    edges: list[DagEdge] = []
    if "specification" in workflow:
        spec = _wf_field(workflow, "specification", file, "workflow", dict)
        execution = _wf_field(workflow, "execution", file, "workflow", dict)
        files: dict[str, float] = {}
        for j, f in enumerate(_wf_list(spec, "files", file, "workflow.specification", dict)):
            fp = f"workflow.specification.files[{j}]"
            files[_wf_field(f, "id", file, fp, str)] = _wf_size(f, file, fp)
        runtimes = {
            t.get("id"): t.get("runtimeInSeconds")
            for t in _wf_field(execution, "tasks", file, "workflow.execution", list)
            if isinstance(t, dict) and isinstance(t.get("id"), str)
        }
        spec_tasks = _wf_field(spec, "tasks", file, "workflow.specification", list)
        outputs: dict[str, set[str]] = {}
        inputs: dict[str, set[str]] = {}
        for i, t in enumerate(spec_tasks):
            p = f"workflow.specification.tasks[{i}]"
            ident = _wf_field(t, "id", file, p, str)
            runtime = runtimes.get(ident)
            if isinstance(runtime, bool) or not finite(runtime) or runtime < 0:
                raise InputError.single(
                    f"workflow.execution.tasks[id={ident}].runtimeInSeconds",
                    runtime,
                    "a runtime in seconds >= 0",
                    file=file,
                )
            tasks.append(DagTask(name=ident, work=float(runtime)))
            outputs[ident] = set(_wf_list(t, "outputFiles", file, p, str))
            inputs[ident] = set(_wf_list(t, "inputFiles", file, p, str))
        for i, t in enumerate(spec_tasks):
            p = f"workflow.specification.tasks[{i}]"
            for parent in _wf_list(t, "parents", file, p, str):
                if parent not in outputs:
                    raise InputError.single(f"{p}.parents", parent, "the id of a task", file=file)
                shared = outputs[parent] & inputs[t["id"]]
                edges.append(DagEdge(parent, t["id"], sum(files.get(f, 0.0) for f in shared)))
    else:
        raw = _wf_field(workflow, "tasks", file, "workflow", list)
        written: dict[str, dict[str, float]] = {}
        reads: dict[str, dict[str, float]] = {}
        for i, t in enumerate(raw):
            p = f"workflow.tasks[{i}]"
            task_name = _wf_field(t, "name", file, p, str)
            runtime = _wf_field(t, "runtimeInSeconds", file, p, (int, float))
            if not finite(runtime) or runtime < 0:
                raise InputError.single(f"{p}.runtimeInSeconds", runtime, "seconds >= 0", file=file)
            tasks.append(DagTask(name=task_name, work=float(runtime)))
            written[task_name], reads[task_name] = {}, {}
            for j, f in enumerate(_wf_list(t, "files", file, p, dict)):
                fp = f"{p}.files[{j}]"
                link = _wf_field(f, "link", file, fp, str)
                size = _wf_size(f, file, fp)
                fname = f.get("name", "")
                if not isinstance(fname, str):
                    raise InputError.single(f"{fp}.name", fname, "a file name", file=file)
                (written if link == "output" else reads)[task_name][fname] = size
        names = {t.name for t in tasks}
        seen: set[tuple[str, str]] = set()
        for i, t in enumerate(raw):
            child = t["name"]
            for parent in _wf_list(t, "parents", file, f"workflow.tasks[{i}]", str):
                if parent not in names:
                    raise InputError.single(
                        f"workflow.tasks[{i}].parents", parent, "the name of a task", file=file
                    )
                if (parent, child) in seen:
                    continue
                seen.add((parent, child))
                shared = set(written[parent]) & set(reads[child])
                edges.append(DagEdge(parent, child, sum(reads[child][f] for f in shared)))
    if machines is None:
        machines, links = default_machine_set()
    instance = DagInstance(
        machines=list(machines),
        tasks=tasks,
        edges=edges,
        links=list(links or []),
        name=name or Path(file).stem,
        description=f"WfCommons workflow on a generated machine set: placement import "
        f"wfcommons {file}",
    )
    return finish(instance, file)


# -------------------------------------------------------------------------------------------
# ``placement import``


def _wfcommons(params: dict[str, Any]) -> DagInstance:
    if params["machine_seed"] is None:
        return load_wfcommons(params["path"])
    machines, links = machine_set(params["machine_seed"], params["machines"])
    instance = load_wfcommons(params["path"], machines, links)
    words = command_words(_WFCOMMONS, params, ("machine_seed", "machines"))
    instance.description += " " + " ".join(words)
    return instance


_WFCOMMONS = (
    Parameter(
        "path",
        "path",
        positional=True,
        metavar="WORKFLOW.json",
        help="a WfCommons instance (1.4, 1.5+)",
    ),
    Parameter(
        "machine_seed",
        "seed",
        None,
        help="place it on a generated machine set with this seed (models.dag.generate."
        "machine_set) instead of the default one",
    ),
    Parameter(
        "machines",
        "positive_int",
        8,
        maximum=MAX_MACHINES,
        help="machines in the generated set (with --machine-seed; default 8, at least 3)",
    ),
)

IMPORTERS = (
    Importer(
        format="topcuoglu",
        family="dag",
        help="the HEFT paper's example graph (exec_time.csv and edges_data.csv)",
        description=(
            "Read the 10-task, 3-processor example of Topcuoglu et al. (2002): each processor "
            "its own machine type, communication costs as bytes over a unit-bandwidth link."
        ),
        parameters=(
            Parameter(
                "exec_csv",
                "path",
                positional=True,
                metavar="EXEC.csv",
                help="task x processor costs",
            ),
            Parameter(
                "edges_csv",
                "path",
                positional=True,
                metavar="EDGES.csv",
                help="parent x child communication costs",
            ),
        ),
        build=lambda p: load_topcuoglu(p["exec_csv"], p["edges_csv"]),
    ),
    Importer(
        format="stg",
        family="dag",
        help="a Standard Task Graph (Kasahara) file on identical processors",
        description="Read an STG file (P|prec|Cmax): tasks with integer costs, no communication.",
        parameters=(
            Parameter(
                "path",
                "path",
                positional=True,
                metavar="GRAPH.stg",
                help="a Standard Task Graph file",
            ),
            Parameter("processors", "positive_int", required=True, help="identical processors"),
        ),
        build=lambda p: load_stg(p["path"], p["processors"]),
    ),
    Importer(
        format="braun",
        family="dag",
        help="a Braun et al. ETC file (independent tasks, heterogeneous machines)",
        description="Read an expected-time-to-compute matrix: each machine its own type.",
        parameters=(
            Parameter(
                "path",
                "path",
                positional=True,
                metavar="ETC",
                help="a Braun et al. ETC file (e.g. u_c_hihi.0)",
            ),
        ),
        build=lambda p: load_braun(p["path"]),
    ),
    Importer(
        format="wfcommons",
        family="dag",
        help="a WfCommons workflow JSON (schema 1.4 or 1.5+) on a generated machine set",
        description=(
            "Read a WfCommons workflow (task runtimes, file sizes between tasks) onto eight "
            "machines of three types in two zones (models.dag.loaders.default_machine_set), or "
            "onto a seeded generated machine set (--machine-seed)."
        ),
        parameters=_WFCOMMONS,
        build=_wfcommons,
    ),
)
"""``placement import topcuoglu | stg | braun | wfcommons``."""
