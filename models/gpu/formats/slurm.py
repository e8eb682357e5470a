"""Slurm in: a cluster's nodes and network topology as a GPU instance (no jobs).

``placement import slurm --topology TOPOLOGY --nodes NODES`` reads

* the topology in one of the formats of Slurm's topology plugins (topology.conf(5) and
  topology.yaml(5), Slurm 25.05): ``topology/tree`` lines ``SwitchName=S Switches=...`` or
  ``SwitchName=S Nodes=...`` (the levels are the switch heights: ``switch1`` the leaf
  switches, ``switch2`` their parents, ...; a branch shorter than the tallest repeats its
  top switch, so every node has a domain at every level); ``topology/block`` lines
  ``BlockName=B Nodes=...`` with an optional ``BlockSizes=base,larger,...`` (level ``block``,
  then one level ``blockN`` per larger size N: consecutive blocks in file order, ``N / base``
  at a time); or a topology.yaml with ``tree: {switches: [{switch, children | nodes}]}`` or
  ``block: {block_sizes, blocks: [{block, nodes}]}`` (the topology with
  ``cluster_default: true``, else the first);
* the nodes as ``scontrol show node -o`` prints them (one ``NodeName=...`` line per node, with
  ``CPUTot``, ``RealMemory`` (MiB), ``Gres=gpu:TYPE:N``, ``CPUAlloc``, ``AllocMem`` and
  ``GresUsed=gpu:TYPE:K(IDX:0-3)``, ``State``) or as slurm.conf ``NodeName=`` lines (``CPUs``,
  ``RealMemory``, ``Gres``; ``NodeName=DEFAULT`` sets the defaults of the lines after it).
  Node and switch names are Slurm hostlist expressions (``node[01-16,20]``, several bracket
  groups, comma lists).

A node's CPU capacity that falls with density (docs/formulations/gpu.md, §5a)
comes from node features (``AvailableFeatures=`` of ``scontrol show node``, ``Features=`` of
slurm.conf), in characters legal in a feature name: ``cpuoverhead_150m`` (milli-cores per
job on the node; ``cpuoverhead_1`` is one core) and ``cpucurve_0_64_40_60_110_48``
(``PODS_CPU`` pairs, CPU in cores or ``NNNm`` milli-cores: 64 cores with no job, 60 with 40,
48 with 110). ``scontrol show node`` does not say how many jobs run on a node, so
``pods_used`` is 0: the curve counts only the work placed.

Work already running (``CPUAlloc``, ``AllocMem``, the GPU indices of ``GresUsed``) is used
capacity; a node whose ``State`` holds ``DOWN``, ``DRAIN``, ``FAIL``, ``MAINT`` or
``FUTURE`` takes no new work and is left out (reported). The instance has no jobs: add
them, or generate a mix for the cluster. Every ``KEY=VALUE`` we do not read is listed once
on stderr.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from placement.models.gpu import density
from placement.models.gpu.density import CpuCapacityPoint
from placement.models.gpu.instance import (
    MAX_GPUS_PER_NODE,
    MILLI,
    GpuInstance,
    GpuNode,
    TopologyLevel,
)
from placement.solver.errors import InputError, ValidationCollector
from placement.solver.family import validate
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import read_input_text

READ_NODE_KEYS = {
    "nodename",
    "cputot",
    "cpus",
    "realmemory",
    "gres",
    "cpualloc",
    "allocmem",
    "gresused",
    "state",
    "features",
    "feature",
    "availablefeatures",
}
EXCLUDED_STATES = ("DOWN", "DRAIN", "FAIL", "MAINT", "FUTURE")
BANDWIDTH_GBPS = {"nvlink": 300.0, "node": 64.0, "first_above_node": 50.0}
"""Nominal bandwidths: the files state none (``LinkSpeed`` is relative); halved per level."""


def expand_hostlist(expression: str) -> list[str]:
    """The names of a Slurm hostlist expression, in order.

    Examples
    --------
    >>> expand_hostlist("node[01-03,10],gpu7")
    ['node01', 'node02', 'node03', 'node10', 'gpu7']
    >>> expand_hostlist("r[1-2]n[1-2]")
    ['r1n1', 'r1n2', 'r2n1', 'r2n2']
    """
    names: list[str] = []
    for part in _split_outside_brackets(expression.strip()):
        if not part:
            raise ValueError("an empty name")
        names.extend(_expand_one(part))
    return names


def _split_outside_brackets(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("']' without '['")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError("'[' without ']'")
    parts.append("".join(cur))
    return parts


def _expand_one(part: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", part)
    if m is None:
        return [part]
    head, tail = part[: m.start()], part[m.end() :]
    out: list[str] = []
    for rng in m.group(1).split(","):
        lo, sep, hi = rng.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"a range like 01-16, not {rng!r}")
        width = len(lo)
        start, stop = int(lo), int(hi) if sep else int(lo)
        if stop < start or stop - start > 1_000_000:
            raise ValueError(f"an increasing range, not {rng!r}")
        for k in range(start, stop + 1):
            out.extend(head + str(k).zfill(width) + rest for rest in _expand_one(tail))
    return out


def _pairs(line: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` words of a line (values may not hold spaces, as in Slurm's files)."""
    out: list[tuple[str, str]] = []
    for word in line.split():
        key, sep, value = word.partition("=")
        if not sep and out:
            # scontrol prints some values with spaces (OS=Linux 6.8.0 #48-Ubuntu ...)
            out[-1] = (out[-1][0], f"{out[-1][1]} {word}")
        else:
            out.append((key, value))
    return out


def _lines(path: str, scontrol: bool = False, text: str | None = None) -> list[tuple[int, str]]:
    """Non-blank lines without comments; ``scontrol``: only whole-line comments go (its
    values may hold a ``#``). ``text``: these lines (a command's output) instead of the
    file's; ``path`` then only names them in messages."""
    if text is None:
        text = read_input_text(path, "a readable UTF-8 file")
    out = []
    for k, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip() if scontrol and " OS=" in raw else raw.split("#", 1)[0].strip()
        if line:
            out.append((k, line))
    return out


def _hosts(value: str, file: str, where: str) -> list[str]:
    try:
        return expand_hostlist(value)
    except ValueError as exc:
        raise InputError.single(where, value, f"a Slurm hostlist ({exc})", file=file) from None


# -------------------------------------------------------------------------------------------
# Topology


def _tree_groups(
    switches: dict[str, tuple[list[str], list[str]]], file: str
) -> tuple[list[str], dict[str, list[str]]]:
    """Level names and, per node, its switches innermost first (padded to equal depth)."""
    parent: dict[str, str] = {}
    for name, (children, _) in switches.items():
        for child in children:
            if child not in switches:
                raise InputError.single(
                    f"SwitchName={name}", child, "a switch defined in the file", file=file
                )
            if child in parent:
                raise InputError.single(
                    f"SwitchName={name}", child, "a switch with one parent", file=file
                )
            parent[child] = name
    paths: dict[str, list[str]] = {}
    for name, (_, nodes) in switches.items():
        chain, seen = [name], {name}
        while chain[-1] in parent:
            up = parent[chain[-1]]
            if up in seen:
                raise InputError.single(
                    f"SwitchName={name}", up, "a tree without cycles", file=file
                )
            seen.add(up)
            chain.append(up)
        for node in nodes:
            if node in paths:
                raise InputError.single(
                    f"SwitchName={name}", node, "a node under one leaf switch", file=file
                )
            paths[node] = chain
    depth = max((len(p) for p in paths.values()), default=0)
    for node, chain in paths.items():
        missing = depth - len(chain)
        if missing and len(chain) == 1:
            paths[node] = chain * depth
        elif missing:
            # a short branch: the switch below its root stands for the levels it lacks
            paths[node] = chain[:-1] + [chain[-2]] * missing + chain[-1:]
    return [f"switch{k + 1}" for k in range(depth)], paths


def _block_groups(
    blocks: list[tuple[str, list[str]]], sizes: list[int], file: str
) -> tuple[list[str], dict[str, list[str]]]:
    base = sizes[0] if sizes else 0
    for k in range(1, len(sizes)):
        if sizes[k] <= sizes[k - 1] or sizes[k] % base:
            raise InputError.single(
                "BlockSizes", sizes, "increasing multiples of the base block size", file=file
            )
    levels = ["block"] + [f"block{s}" for s in sizes[1:]]
    paths: dict[str, list[str]] = {}
    for b, (name, nodes) in enumerate(blocks):
        # a level-N domain: N / base consecutive blocks of the file, named by its first one
        groups = [name] + [f"{blocks[b - b % (s // base)][0]}+{s // base - 1}" for s in sizes[1:]]
        for node in nodes:
            if node in paths:
                raise InputError.single(f"BlockName={name}", node, "a node in one block", file=file)
            paths[node] = groups
    return levels, paths


def read_topology(path: str) -> tuple[list[str], dict[str, list[str]]]:
    """The levels above the node (innermost first) and each node's domain per level."""
    if path.endswith((".yaml", ".yml")):
        return _read_topology_yaml(path)
    switches: dict[str, tuple[list[str], list[str]]] = {}
    blocks: list[tuple[str, list[str]]] = []
    sizes: list[int] = []
    for line_no, line in _lines(path):
        kv = {k.lower(): v for k, v in _pairs(line)}
        where = f"line {line_no}"
        if "switchname" in kv:
            name = kv["switchname"]
            children = _hosts(kv["switches"], path, where) if "switches" in kv else []
            nodes = _hosts(kv["nodes"], path, where) if "nodes" in kv else []
            if not children and not nodes:
                raise InputError.single(
                    where, line, "SwitchName=S with Switches= or Nodes=", file=path
                )
            switches[name] = (children, nodes)
        elif "blockname" in kv:
            if "nodes" not in kv:
                raise InputError.single(where, line, "BlockName=B Nodes=...", file=path)
            blocks.append((kv["blockname"], _hosts(kv["nodes"], path, where)))
        elif "blocksizes" in kv:
            try:
                sizes = [int(s) for s in kv["blocksizes"].split(",")]
            except ValueError:
                raise InputError.single(
                    f"{where}.BlockSizes", kv["blocksizes"], "node counts N,M,...", file=path
                ) from None
        else:
            raise InputError.single(
                where, line, "SwitchName=, BlockName= or BlockSizes= lines", file=path
            )
    if switches and blocks:
        raise InputError.single(
            "", "SwitchName and BlockName", "one plugin's lines (tree or block)", file=path
        )
    if switches:
        return _tree_groups(switches, path)
    if blocks:
        return _block_groups(blocks, sizes, path)
    raise InputError.single("", "no topology lines", "SwitchName= or BlockName= lines", file=path)


def _read_topology_yaml(path: str) -> tuple[list[str], dict[str, list[str]]]:
    # pyyaml only for topology.yaml; topology.conf needs nothing.
    import yaml

    text = read_input_text(path, "a readable UTF-8 file")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError.single("", str(exc).splitlines()[0], "valid YAML", file=path) from None
    except RecursionError:
        raise InputError.single(
            "", "deeply nested YAML", "at most a few hundred levels", file=path
        ) from None
    if not isinstance(doc, list) or not doc or not all(isinstance(t, dict) for t in doc):
        raise InputError.single("", type(doc).__name__, "a list of topologies", file=path)
    k = next((i for i, t in enumerate(doc) if t.get("cluster_default") is True), 0)
    topo, where = doc[k], f"[{k}]"
    if "tree" in topo:
        switches: dict[str, tuple[list[str], list[str]]] = {}
        for i, sw in enumerate(_list(topo["tree"], "switches", path, f"{where}.tree")):
            w = f"{where}.tree.switches[{i}]"
            name = sw.get("switch") if isinstance(sw, dict) else None
            if not isinstance(name, str) or not name:
                raise InputError.single(f"{w}.switch", name, "a switch name", file=path)
            children = (
                _hosts(str(sw["children"]), path, f"{w}.children") if sw.get("children") else []
            )
            nodes = _hosts(str(sw["nodes"]), path, f"{w}.nodes") if sw.get("nodes") else []
            switches[name] = (children, nodes)
        return _tree_groups(switches, path)
    if "block" in topo:
        block = topo["block"]
        sizes = block.get("block_sizes", []) if isinstance(block, dict) else None
        if isinstance(sizes, int):
            sizes = [sizes]
        if not isinstance(sizes, list) or not all(isinstance(s, int) and s > 0 for s in sizes):
            raise InputError.single(f"{where}.block.block_sizes", sizes, "node counts", file=path)
        blocks = []
        for i, b in enumerate(_list(block, "blocks", path, f"{where}.block")):
            w = f"{where}.block.blocks[{i}]"
            if not isinstance(b, dict) or not isinstance(b.get("block"), str) or "nodes" not in b:
                raise InputError.single(w, b, "{block: NAME, nodes: HOSTLIST}", file=path)
            blocks.append((b["block"], _hosts(str(b["nodes"]), path, f"{w}.nodes")))
        return _block_groups(blocks, sizes, path)
    if topo.get("flat") is True:
        return [], {}
    raise InputError.single(where, sorted(topo), "a topology with tree, block or flat", file=path)


def _list(obj: Any, key: str, file: str, where: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, list):
        raise InputError.single(f"{where}.{key}", value, "a list", file=file)
    return value


# -------------------------------------------------------------------------------------------
# Nodes


def _gres_gpus(value: str, file: str, where: str) -> tuple[str, int, list[int]]:
    """GPU type, count and (for GresUsed) used indices of a Gres value."""
    gpu_type, count, used = "", 0, []
    for item in _split_outside_parens(value):
        if not item.startswith("gpu"):
            continue
        spec, _, extra = item.partition("(")
        fields = spec.split(":")
        try:
            n = int(fields[-1]) if len(fields) > 1 else 1
        except ValueError:
            raise InputError.single(where, value, "gpu:TYPE:N or gpu:N", file=file) from None
        if len(fields) == 3:
            gpu_type = fields[1]
        count += n
        idx = re.search(r"IDX:([^)]*)", extra)
        if idx and idx.group(1) != "N/A":
            for rng in idx.group(1).split(","):
                lo, sep, hi = rng.partition("-")
                bad = not lo.isdigit() or (sep and not hi.isdigit())
                if bad or not 0 <= int(hi if sep else lo) - int(lo) <= MAX_GPUS_PER_NODE:
                    raise InputError.single(
                        where, value, "GPU indices as IDX:0-3,5 or IDX:N/A", file=file
                    )
                used.extend(range(int(lo), int(hi if sep else lo) + 1))
    return gpu_type, count, used


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p and p != "(null)"]


def _int(kv: dict[str, str], key: str, file: str, where: str, default: int | None = None) -> int:
    raw = kv.get(key)
    if raw is None:
        if default is None:
            raise InputError.single(f"{where}.{key}", None, "an integer", file=file)
        return default
    raw = raw.rstrip("M") if key in ("realmemory", "allocmem") else raw
    if not raw.isdigit():
        raise InputError.single(f"{where}.{key}", raw, "a non-negative integer", file=file)
    return int(raw)


def _cpu_milli(raw: str) -> int | None:
    """``150m`` -> 150, ``2`` -> 2000; None when neither."""
    if raw.endswith("m") and raw[:-1].isdigit():
        return int(raw[:-1])
    return int(raw) * 1000 if raw.isdigit() else None


def _density_features(
    value: str, cpu_milli: int, file: str, where: str
) -> tuple[int, tuple[CpuCapacityPoint, ...]]:
    """The per-pod CPU overhead and the capacity curve of a node's features (0 and () when it
    has neither)."""
    overhead, points = 0, ()
    for feature in (f.strip() for f in value.split(",")):
        if feature.lower().startswith("cpuoverhead_"):
            milli = _cpu_milli(feature[len("cpuoverhead_") :])
            if milli is None:
                raise InputError.single(
                    where,
                    feature,
                    "cpuoverhead_NNNm (milli-cores) or cpuoverhead_N (cores)",
                    file=file,
                )
            overhead = milli
        elif feature.lower().startswith("cpucurve_"):
            parts = feature[len("cpucurve_") :].split("_")
            cpus = [_cpu_milli(c) for c in parts[1::2]]
            pods = parts[0::2]
            if len(parts) % 2 or not all(p.isdigit() for p in pods) or None in cpus:
                raise InputError.single(
                    where,
                    feature,
                    "cpucurve_ then PODS_CPU pairs, CPU in cores or NNNm, e.g. cpucurve_0_64_40_60",
                    file=file,
                )
            points = tuple(CpuCapacityPoint(int(p), c) for p, c in zip(pods, cpus, strict=True))
            v = ValidationCollector()
            density.validate(v, "", cpu_milli, 0, 0, 0, [(p.pods, p.cpu_milli) for p in points])
            if v.errors:
                raise InputError.single(
                    where,
                    feature,
                    "points in increasing pods, a non-increasing and concave curve "
                    f"({v.errors[0].expected})",
                    file=file,
                )
    return overhead, points


def read_nodes(
    path: str, unread: set[str], text: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per node its name, CPUs, memory, GPU type/count/used indices, allocations; and the
    nodes left out with their state. ``text``: the lines themselves (``path`` names them)."""
    nodes: list[dict[str, Any]] = []
    excluded: dict[str, str] = {}
    defaults: dict[str, str] = {}
    for line_no, line in _lines(path, scontrol=True, text=text):
        pairs = _pairs(line)
        if not pairs or pairs[0][0].lower() != "nodename":
            continue  # other slurm.conf lines (PartitionName=, ...) are not ours
        where = f"line {line_no}"
        kv = {k.lower(): v for k, v in pairs}
        if kv["nodename"].upper() == "DEFAULT":
            defaults = {k: v for k, v in kv.items() if k != "nodename"}
            continue
        kv = {**defaults, **kv}
        unread.update(k for k, _ in pairs if k.lower() not in READ_NODE_KEYS)
        cpus = _int(kv, "cputot" if "cputot" in kv else "cpus", path, where, 1)
        memory = _int(kv, "realmemory", path, where, 1)
        gpu_type, gpus, _ = _gres_gpus(kv.get("gres", ""), path, f"{where}.Gres")
        if gpus > MAX_GPUS_PER_NODE:
            raise InputError.single(
                f"{where}.Gres", kv.get("gres"), f"at most {MAX_GPUS_PER_NODE} GPUs", file=path
            )
        _, _, used = _gres_gpus(kv.get("gresused", ""), path, f"{where}.GresUsed")
        if any(i >= gpus for i in used):
            raise InputError.single(
                f"{where}.GresUsed", kv.get("gresused"), f"GPU indices below {gpus}", file=path
            )
        key = next((k for k in ("availablefeatures", "features", "feature") if k in kv), "")
        features = kv.get(key, "")
        key = {"availablefeatures": "AvailableFeatures", "feature": "Feature"}.get(key, "Features")
        overhead, curve = _density_features(
            features, cpus * 1000, path, f"{where}.{key} (node {kv['nodename']})"
        )
        for name in _hosts(kv["nodename"], path, f"{where}.NodeName"):
            state = kv.get("state", "").upper()
            if any(s in state for s in EXCLUDED_STATES):
                excluded[name] = state
                continue
            nodes.append(
                {
                    "name": name,
                    "cpus": cpus,
                    "memory_mib": memory,
                    "gpu_type": gpu_type or ("gpu" if gpus else ""),
                    "gpus": gpus,
                    "used": sorted(set(used)),
                    "cpu_alloc": min(_int(kv, "cpualloc", path, where, 0), cpus),
                    "mem_alloc": min(_int(kv, "allocmem", path, where, 0), memory),
                    "cpu_overhead": overhead,
                    "cpu_curve": curve,
                }
            )
    if not nodes and not excluded:
        raise InputError.single(
            "",
            "no NodeName= lines",
            "scontrol show node -o or slurm.conf NodeName lines",
            file=path,
        )
    return nodes, excluded


def import_slurm(topology_path: str, nodes_path: str, name: str = "slurm") -> GpuInstance:
    """A Slurm cluster's nodes and topology as a GPU instance without jobs.

    Raises
    ------
    InputError
        Naming the file, the line (or YAML path) and what was expected.
    """
    levels_above, paths = read_topology(topology_path)
    unread: set[str] = set()
    raw, excluded = read_nodes(nodes_path, unread)
    nodes, outside = build_nodes(levels_above, paths, raw)
    if not nodes:
        raise InputError.single(
            "", "every node down or drained", "at least one usable node", file=nodes_path
        )
    for line in (
        [f"left out (state {s}): {n}" for n, s in sorted(excluded.items())]
        + (
            [f"nodes in no switch or block (a domain of their own): {', '.join(outside)}"]
            if outside
            else []
        )
        + ([f"ignored node fields: {', '.join(sorted(unread))}"] if unread else [])
    ):
        print(f"placement: import slurm: {line}", file=sys.stderr)
    instance = GpuInstance(
        levels=levels_of(levels_above),
        nodes=nodes,
        jobs=[],
        name=name,
        description=(
            f"Slurm cluster from {Path(topology_path).name} and {Path(nodes_path).name}: "
            f"{len(nodes)} nodes, levels {', '.join(['nvlink', 'node', *levels_above])}; no jobs"
        ),
    )
    validate(instance)
    return instance


def levels_of(levels_above: list[str]) -> list[TopologyLevel]:
    """The instance's levels: nvlink, node, then the topology's levels above the node."""
    levels = [
        TopologyLevel("nvlink", BANDWIDTH_GBPS["nvlink"]),
        TopologyLevel("node", BANDWIDTH_GBPS["node"]),
    ]
    bw = BANDWIDTH_GBPS["first_above_node"]
    for lv in levels_above:
        levels.append(TopologyLevel(lv, bw))
        bw /= 2
    return levels


def build_nodes(
    levels_above: list[str], paths: dict[str, list[str]], raw: list[dict[str, Any]]
) -> tuple[list[GpuNode], list[str]]:
    """The instance's nodes from :func:`read_nodes`' dicts and the topology's paths; and the
    names of the nodes in no switch or block (each then a domain of its own)."""
    nodes, outside = [], []
    for nd in raw:
        groups = paths.get(nd["name"])
        if groups is None and levels_above:
            outside.append(nd["name"])
            groups = [f"{nd['name']} (no {lv})" for lv in levels_above]
        milli = [MILLI if g in nd["used"] else 0 for g in range(nd["gpus"])]
        # A curve below the nominal CPUs with no job: what is allocated counts up to it.
        curve = nd.get("cpu_curve", ())
        cpu_used = min(nd["cpu_alloc"] * 1000, curve[0].cpu_milli if curve else nd["cpus"] * 1000)
        nodes.append(
            GpuNode(
                name=nd["name"],
                gpu_type=nd["gpu_type"],
                gpu_count=nd["gpus"],
                gpu_memory_mib=0,
                nvlink_domain_size=0,
                cpu_milli=nd["cpus"] * 1000,
                memory_mib=nd["memory_mib"],
                cpu_milli_used=cpu_used,
                memory_mib_used=nd["mem_alloc"],
                groups=tuple(groups or ()),
                gpu_milli_used=tuple(milli),
                cpu_overhead_milli_per_pod=nd.get("cpu_overhead", 0),
                cpu_capacity_curve=nd.get("cpu_curve", ()),
            )
        )
    return nodes, outside


IMPORTERS = (
    Importer(
        format="slurm",
        family="gpu",
        help="a Slurm cluster's topology.conf/topology.yaml and nodes (no jobs)",
        description=(
            "Read a Slurm cluster: its network topology (topology.conf of the tree or block "
            "plugin, or topology.yaml) and its nodes ('scontrol show node -o' lines or slurm.conf "
            "NodeName lines with Gres=gpu:TYPE:N; hostlist expressions such as node[01-16,20]). "
            "Allocated CPUs, memory and GPU indices (GresUsed IDX) are used capacity; down or "
            "drained nodes are left out. The instance has no jobs."
        ),
        parameters=(
            Parameter(
                "topology",
                "path",
                required=True,
                metavar="TOPOLOGY",
                help="topology.conf (tree or block) or topology.yaml",
            ),
            Parameter(
                "nodes",
                "path",
                required=True,
                metavar="NODES",
                help="scontrol show node -o output, or slurm.conf NodeName lines",
            ),
            Parameter("name", "str", "slurm", help="instance name (default: slurm)"),
        ),
        build=lambda p: import_slurm(p["topology"], p["nodes"], name=p["name"]),
    ),
)
