"""Reader for the Helix (ASPLOS 2025) artifact: a layer-placement max-flow instance (a
partition instance of mode LLM_SERVING_FLOW).

Mei et al., "Helix: Serving Large Language Models over Heterogeneous GPUs and Network via
Max-Flow", ASPLOS 2025; artifact Thesys-lab/Helix-ASPLOS25 (data under
``../shared/benchmarks/partition/helix``, its README says what each file is). The model is the
one of the artifact's MILP layout synthesizer (class ``ILPLayout``: ``from_ini``,
``step2``..``step7``; and ``get_typical_token_throughput`` with ``llama70b_typical_statistics``
of its model manager), read with the search tools in the stored copy of the repository (the
index shows neither its path nor its commit); no code copied:

* every compute node ``i`` holds one contiguous layer range ``[s_i, s_i + k_i)`` with
  ``1 <= k_i <= K(type_i)`` (the type's layer limit: half the VRAM for weights);
* a node holding ``k`` layers serves at most ``T(type, k)`` tokens/s: the "typical token
  throughput" of the per-machine model files (a function of the profiled prompt/decode layer
  times, the vLLM KV-cache blocks left at ``k`` layers and a workload ratio), capped by the
  NIC (``min(in, out) NIC speed / activation size``);
* a link ``u -> v`` carries at most ``bandwidth / size`` tokens/s, the size being the
  activation of one token between compute nodes and the token itself on source and sink
  links; links in the cluster file are bidirectional;
* without partial inference (the artifact's setting, ``allow_partial_inference = False``),
  edge ``u -> v`` may carry flow only when ``v`` starts where ``u`` ends; source edges need
  ``s_v = 0`` and sink edges ``s_u + k_u = L``;
* the objective is the max flow from source to sink (tokens/s).

What is read from where: the cluster (nodes, types, links, bandwidths) from the cluster file;
the node throughput table ``T(type, k)`` from the coefficients of the artifact's own MILP
(``node_throughput_constraint_i``) -- its inputs (the per-machine model files with the
workload-ratio estimates and the KV-cache high-water mark) are not in the data set, so the
table is taken as Helix evaluated it, and every node of one type must carry the same table;
the activation and token sizes from the MILP's link coefficients (``edge_flow_constr_*``:
size = bandwidth / coefficient), then every link capacity is recomputed from the cluster
file and checked against the MILP where the MILP has that link. Bandwidths keep the
artifact's unit convention (``mbps`` = 1e6 per second, which is what its coefficients show:
1000 * mbps / 61035.15625 = 16384 = 8192 hidden x 2 bytes for LLaMA-2 70B).

LLaMA-1 30B: the artifact holds no MILP over the whole 24-node cluster for it, only one per
single-type sub-cluster (``layout_llama30b/ilp/{a100,l4,t4}``); the per-type tables are taken
from those. The artifact's workload ratio depends on the cluster mix, so these tables are
Helix's figures for the sub-clusters, used on cluster24 -- written beside every 30B result.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path
from typing import Any

from placement.models.partition.instance import SINK, SOURCE
from placement.models.partition.serving_cluster import HelixCluster, HelixNode
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import read_input_text

MODELS: dict[str, dict[str, Any]] = {
    "llama2_70b": {
        "layers": 80,
        "layout": "layout_llama70b",
        # one MILP over cluster24 (the artifact's own Helix run)
        "lps": {"": "layout_llama70b/ilp/ilp_model.lp"},
        "helix": "layout_llama70b/ilp/ilp_sol.ini",
        "logged_objective": 1289.5557702751735,
    },
    "llama1_30b": {
        "layers": 60,
        "layout": "layout_llama30b",
        "lps": {
            "A100": "layout_llama30b/ilp/a100/ilp_model.lp",
            "L4": "layout_llama30b/ilp/l4/ilp_model.lp",
            "T4": "layout_llama30b/ilp/t4/ilp_model.lp",
        },
        "helix": None,
        "logged_objective": None,
    },
}
"""The two models of the artifact's single-cluster experiment and where their files are."""

LAYER_LIMITS: dict[str, dict[str, int]] = {
    "llama2_70b": {"A100": 12, "L4": 7, "T4": 4},
    "llama1_30b": {"A100": 18, "L4": 11, "T4": 7},
}
"""Most layers one node holds, from the artifact's per-machine model files (quoted in the data
README); the tables read from the MILPs must have exactly this many entries."""

UNITS = {
    "bps": 1.0,
    "kbps": 1e3,
    "mbps": 1e6,
    "gbps": 1e9,
    "Sec": 1.0,
    "MilliSec": 1e-3,
}
"""The artifact's unit names as its cluster files use them (see the module docstring)."""


def _end(value: Any) -> int | str:
    return value if value in (SOURCE, SINK) else int(value)


# ----------------------------------------------------------------------------- file readers


def _ini(path: Path) -> configparser.ConfigParser:
    if not path.is_file():
        raise InputError.single("file", str(path), "an existing Helix artifact file")
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error as exc:
        raise InputError.single("file", str(path), f"an INI file ({exc})") from None
    return parser


def _quantity(text: str, where: str) -> float:
    """``1000 * mbps`` -> 1e9 in the artifact's units (only numbers, unit names, * and /)."""
    expr = text
    for unit, scale in UNITS.items():
        expr = re.sub(rf"\b{unit}\b", repr(scale), expr)
    if not re.fullmatch(r"[0-9eE.+\-*/() ]+", expr):
        raise InputError.single(where, text, "a number times one of " + ", ".join(UNITS))
    try:
        return float(eval(expr, {"__builtins__": {}}, {}))  # noqa: S307 -- digits and * / only
    except (SyntaxError, ZeroDivisionError, TypeError) as exc:
        raise InputError.single(where, text, f"an arithmetic expression ({exc})") from None


def read_cluster(path: Path) -> tuple[list[str], dict[tuple[int | str, int | str], float]]:
    """Node types (by index) and link bandwidths (both directions) of a Helix cluster file."""
    ini = _ini(path)
    try:
        total = int(ini["NodeNames"]["total_compute_nodes"])
        types = [ini[f"ComputeNode-{i}"]["type"].strip() for i in range(total)]
    except (KeyError, ValueError) as exc:
        raise InputError.single(
            f"{path}: ComputeNode", str(exc), "NodeNames.total_compute_nodes and ComputeNode-i.type"
        ) from None
    bandwidth: dict[tuple[int | str, int | str], float] = {}
    for section in ini.sections():
        if not section.startswith("Link-"):
            continue
        parts = section.split("-")
        if len(parts) != 3:
            raise InputError.single(f"{path}: [{section}]", section, "Link-<from>-<to>")
        u, v = (p if p in (SOURCE, SINK) else int(p) for p in parts[1:])
        bw = _quantity(ini[section]["bandwidth"], f"{path}: [{section}].bandwidth")
        bandwidth[(u, v)] = bw
        if u != SOURCE and v != SINK:
            bandwidth[(v, u)] = bw  # the artifact's links are bidirectional
    return types, bandwidth


_CONSTRAINT = re.compile(r"^ (\w+):", re.MULTILINE)
_TERM = re.compile(r"([-+]?)\s*([0-9.]+(?:e[-+]?[0-9]+)?)?\s*(hold_\d+_\d+|switch_\w+)")


def read_lp(path: Path) -> tuple[dict[int, list[float]], dict[str, float]]:
    """From one Helix MILP (LP format): node -> [T(k=1), T(k=2), ...], edge -> capacity.

    Node throughputs are the ``hold_i_k`` coefficients of ``node_throughput_constraint_i``
    (negated: the constraint is inflow - sum_k T(k) hold_i_k <= 0); edge capacities the
    ``switch`` coefficients of ``edge_flow_constr_<u>_<v>`` (flow - cap * switch <= 0).
    """
    if not path.is_file():
        raise InputError.single("file", str(path), "the artifact's ilp_model.lp")
    text = read_input_text(path, "the artifact's ilp_model.lp as UTF-8 text")
    body = text.split("\nBounds", 1)[0]
    starts = [(m.start(), m.group(1)) for m in _CONSTRAINT.finditer(body)]
    tables: dict[int, list[float]] = {}
    edges: dict[str, float] = {}
    for n, (pos, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(body)
        if name.startswith("node_throughput_constraint_"):
            node = int(name.rsplit("_", 1)[1])
            row: dict[int, float] = {}
            for sign, coef, var in _TERM.findall(body[pos:end]):
                k = int(var.rsplit("_", 1)[1])
                row[k] = float(coef or 1.0) * (1.0 if sign == "-" else -1.0)
            tables[node] = [row[k] for k in range(1, len(row) + 1)]
        elif name.startswith("edge_flow_constr_"):
            terms = _TERM.findall(body[pos:end])
            if terms:
                sign, coef, _ = terms[0]
                edges[name.removeprefix("edge_flow_constr_")] = float(coef or 1.0) * (
                    1.0 if sign == "-" else -1.0
                )
    if not tables:
        raise InputError.single(str(path), "no node_throughput_constraint_*", "a Helix MILP")
    return tables, edges


def read_placement(path: Path, cluster: HelixCluster) -> dict[int, tuple[int, int]]:
    """A Helix solution file (``[Settings] offset``, ``[Solution] compute_node_j=[layers]``).

    Returns node index -> (first layer, layer count); node ``compute_node_j`` is the node
    named so in ``cluster``. A node's layers must be consecutive.
    """
    ini = _ini(path)
    index = cluster.index()
    placement: dict[int, tuple[int, int]] = {}
    if "Solution" not in ini:
        raise InputError.single(f"{path}", "no [Solution]", "a Helix solution file")
    for key, value in ini["Solution"].items():
        if key not in index:
            raise InputError.single(
                f"{path}: [Solution].{key}", key, f"a node of {cluster.name} ({len(index)} nodes)"
            )
        try:
            layers = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise InputError.single(
                f"{path}: [Solution].{key}", value, "a list of layer indices"
            ) from None
        if (
            not isinstance(layers, list)
            or not layers
            or not all(isinstance(x, int) for x in layers)
            or layers != list(range(layers[0], layers[0] + len(layers)))
        ):
            raise InputError.single(
                f"{path}: [Solution].{key}", value, "a non-empty list of consecutive layer indices"
            )
        placement[index[key]] = (layers[0], len(layers))
    return placement


# ----------------------------------------------------------------------------- the importer


def load_helix(directory: str | Path, model: str) -> HelixCluster:
    """Read the artifact folder ``directory`` into the cluster24 instance of ``model``.

    ``directory`` is the artifact's root (it holds ``single_cluster/``) or ``single_cluster``
    itself. Raises :class:`InputError` naming the file and what was expected.
    """
    if model not in MODELS:
        raise InputError.single("--model", model, " or ".join(MODELS))
    root = Path(directory)
    if (root / "single_cluster").is_dir():
        root = root / "single_cluster"
    spec = MODELS[model]
    lps = {
        sub: (root / rel, root / "config" / f"{sub.lower()}.ini" if sub else None)
        for sub, rel in spec["lps"].items()
    }
    needed = [root / "config" / "cluster24.ini"]
    needed += [f for pair in lps.values() for f in pair if f is not None]
    missing = [f.relative_to(root).as_posix() for f in needed if not f.is_file()]
    if missing:
        # Name the folder and what is missing in it, not the first file opened (issue 41).
        raise InputError.single(
            "DIR",
            str(directory),
            f"the Helix artifact folder (Thesys-lab/Helix-ASPLOS25 data, or its "
            f"single_cluster/), holding for {model}: {', '.join(missing)} "
            f"(missing in {root})",
        )
    cluster = build_cluster(
        root / "config" / "cluster24.ini",
        lps,
        num_layers=spec["layers"],
        name=f"helix-cluster24-{model}",
        limits=LAYER_LIMITS[model],
    )
    if any(spec["lps"]):
        notes = (
            *cluster.notes,
            "throughput tables from the artifact's single-type sub-cluster MILPs "
            "(no cluster24 MILP for this model)",
        )
        cluster = HelixCluster(
            cluster.name,
            cluster.num_layers,
            cluster.nodes,
            cluster.throughput,
            cluster.links,
            notes,
        )
    return cluster


def build_cluster(
    cluster_ini: Path,
    lps: dict[str, tuple[Path, Path | None]],
    num_layers: int,
    name: str,
    limits: dict[str, int] | None = None,
) -> HelixCluster:
    """A cluster file plus Helix MILPs -> the instance (see the module docstring).

    ``lps``: label -> (MILP file, the cluster file it was built on, None for ``cluster_ini``
    itself). Node types come from that cluster file; each type's table must be the same on
    every node and in every MILP; ``limits`` (type -> most layers) is checked against them.
    """
    types, bandwidth = read_cluster(cluster_ini)
    nodes = tuple(HelixNode(f"compute_node_{i + 2}", t) for i, t in enumerate(types))
    throughput: dict[str, tuple[float, ...]] = {}
    activation_size = token_size = None
    lp_edges_full: dict[str, float] = {}
    for lp_path, sub_ini in lps.values():
        tables, edges = read_lp(lp_path)
        if sub_ini is not None:  # a sub-cluster: its own cluster file gives the node types
            sub_types, sub_bw = read_cluster(sub_ini)
        else:
            sub_types, sub_bw = types, bandwidth
            lp_edges_full = edges
        for node, table in tables.items():
            if node >= len(sub_types):
                raise InputError.single(
                    f"{lp_path}: node_throughput_constraint_{node}",
                    node,
                    f"a node of its cluster file (0..{len(sub_types) - 1})",
                )
            t = sub_types[node]
            if t in throughput and (
                len(throughput[t]) != len(table)
                or any(
                    abs(a - b) > 1e-9 * max(1.0, abs(a))
                    for a, b in zip(throughput[t], table, strict=True)
                )
            ):
                raise InputError.single(
                    f"{lp_path}: node_throughput_constraint_{node}",
                    table[:3],
                    f"the same throughput table as the other {t} nodes",
                )
            throughput[t] = tuple(table)
        # sizes: bandwidth / the MILP's capacity of a source or sink link and of a node link
        for key, cap in edges.items():
            a, b = key.split("_", 1)
            if a == SOURCE:
                token_size = sub_bw[(SOURCE, int(b))] / cap
            elif b == SINK:
                token_size = sub_bw[(int(a), SINK)] / cap
            else:
                activation_size = sub_bw[(int(a), int(b))] / cap
    if activation_size is None or token_size is None:
        raise InputError.single(str(cluster_ini), "no edge_flow_constr", "a Helix MILP with links")
    missing = sorted(set(types) - set(throughput))
    if missing:
        raise InputError.single(str(cluster_ini), missing, "node types with a throughput table")
    for t, limit in (limits or {}).items():
        if t in set(types) and len(throughput.get(t, ())) != limit:
            raise InputError.single(
                f"{name} {t} throughput table", len(throughput.get(t, ())), f"{limit} entries"
            )

    links: dict[tuple[int | str, int | str], float] = {}
    for (u, v), bw in bandwidth.items():
        links[(u, v)] = bw / (token_size if SOURCE in (u, v) or SINK in (u, v) else activation_size)
    # cross-check against the MILP's own coefficients where it has the link
    for key, cap in lp_edges_full.items():
        a, b = key.split("_", 1)
        edge = (_end(a), _end(b))
        if edge not in links or abs(links[edge] - cap) > 1e-6 * cap:
            raise InputError.single(f"link {key}", links.get(edge), f"{cap} as in the MILP")
    notes = (
        f"{name}: node throughput T(type, k) from the Helix MILP coefficients; activation "
        f"size {activation_size:g}, token size {token_size:g} (artifact units)",
    )
    return HelixCluster(name, num_layers, nodes, throughput, links, notes)


IMPORTERS = (
    Importer(
        format="helix",
        family="partition",
        help="the Helix (ASPLOS 2025) artifact's cluster and model: a max-flow layer placement",
        description=(
            "Read the Helix artifact folder (Thesys-lab/Helix-ASPLOS25 data: cluster24.ini, "
            "the MILP files) into a partition instance of mode LLM_SERVING_FLOW: 24 devices, "
            "per-type throughput by layer count and layer limits, link capacities in "
            "tokens/s, the max-flow objective (see docs/formulations/partition.md, section 9)."
        ),
        parameters=(
            Parameter(
                "directory",
                "path",
                positional=True,
                metavar="DIR",
                help="the artifact folder (holding single_cluster/)",
            ),
            Parameter(
                "model",
                "str",
                "llama2_70b",
                choices=tuple(MODELS),
                shown=True,
                help="which model's instance (default: llama2_70b)",
            ),
        ),
        build=lambda p: load_helix(p["directory"], p["model"]).to_instance(),
    ),
)
"""``placement import helix``."""
