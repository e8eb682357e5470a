"""The partition family's benchmark suites (``placement bench``).

* ``partition-tarnawski``: the 8 layer graphs of Tarnawski et al. (NeurIPS 2020) as the
  paper's problem: its optimum with proof and time (DP over ideals or the layer-graph IP),
  beside the order-contiguous optimum, PipeDream as the paper runs it and the previous
  model's value. One case per graph.
* ``partition-llm``: two tables. *helix*: Llama-2-70B serving on a Helix-like heterogeneous
  cluster (the DP, CP-SAT and MILP on their own, the greedies, separate pipelines per GPU
  type; one case per method). *edge*: LLaMA-7B inference latency on memory-limited edge
  devices (one case per device set).
* ``partition-chain``: the DP's time on homogeneous chains (1,000 and 4,000 layers x 64
  devices, seeds 1-3, memory fill 60 % and 5 %), its optimum checked against a MILP proof
  where one finishes. One case per chain.

Every solution a case produces (the DP's, each encoding's best, each greedy's) goes through
the family's independent checker again (:func:`placement.benchmarks.runner.recheck`); a row's
``invalid`` counts those it rejects plus the candidates an encoding reported that the
portfolio's checker dropped (both must be 0).
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import replace
from typing import Any

from placement.benchmarks.runner import INSTANCES, Rechecker, load_1min
from placement.benchmarks.tables import markdown_table
from placement.models.partition import check
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.dp import solve_dp
from placement.models.partition.explain import explain_infeasible
from placement.models.partition.formats.hf import build_llm, device_spec, load_model_config
from placement.models.partition.formats.tarnawski import load_tarnawski
from placement.models.partition.generate import generate
from placement.models.partition.greedy import bisection, petals
from placement.models.partition.ideals import enumerate_ideals, layer_graph
from placement.models.partition.instance import Mode, PartitionInstance, PartitionSolution
from placement.models.partition.layergraph_exact import order_split
from placement.models.partition.milp import MilpEncoding
from placement.models.partition.peers.pipedream import pipedream_split
from placement.models.partition.serving_plans import pack_pipelines
from placement.models.partition.serving_tp import TpModel, best_tp_plan, tp_plan_throughput
from placement.models.partition.tables import build_tables
from placement.solver import InputError, SolveOptions
from placement.solver.family import ExactOutcome
from placement.solver.testing import ExactContext

DEVICES = INSTANCES / "partition" / "devices"
"""The bundled device specs (L4, T4, edge devices; a source checkout)."""
TARNAWSKI_DATA = "partition/tarnawski-layergraphs"
LLM_DATA = "partition/llm-configs"
IDEALS_COUNT_CAP = 50_000
"""Ideals counted for the table (Inception-v3 has 36,596; GNMT millions)."""


# --- shared -----------------------------------------------------------------------------------


def run_exact(
    encoding: Any,
    instance: PartitionInstance,
    time_limit_s: float,
    incumbent: PartitionSolution | None = None,
    threads: int = 1,
) -> tuple[ExactOutcome, float, ExactContext]:
    """One exact encoding on its own (no DP unless the encoding uses it), with the portfolio's
    context: every solution it reports goes through the checker. Returns the outcome, the wall
    time and the context (its best checked solution, its bound, the candidates it dropped)."""
    run = ExactContext(instance, SolveOptions(time_limit_s=time_limit_s, threads=threads))
    if incumbent is not None:
        run.report(incumbent, "incumbent")
    started = time.perf_counter()
    outcome = encoding.solve(instance, run)
    if outcome.bound is not None:
        run.update_bound(outcome.bound)
    return outcome, time.perf_counter() - started, run


def _f(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals, ``-`` for none."""
    if value is None or value == "":
        return "-"
    return f"{float(value):.{digits}f}"


def _yes(proved: Any, stop: Any) -> str:
    return "yes" if proved in (True, "True") else f"no ({stop})"


# --- partition-tarnawski ----------------------------------------------------------------------


def cases_tarnawski(config: Any) -> list[dict[str, Any]]:
    """One case per layer graph (``--quick``: the smallest one; ``--param workloads=A,B``:
    those only)."""
    files = sorted(config.data_dir(TARNAWSKI_DATA).glob("*.json"))
    wanted = list(config.params.get("workloads") or ())
    if wanted:
        known = {p.stem for p in files}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise InputError.single(
                "--param workloads", unknown[0], "layer graphs among " + ", ".join(sorted(known))
            )
        files = [p for p in files if p.stem in wanted]
    if config.quick:
        files = sorted(files, key=lambda p: p.stat().st_size)[:1]
    return [{"case": p.stem, "path": str(p)} for p in files]


def run_tarnawski(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The paper's problem on one layer graph: its optimum through the cpsat encoding (the DP
    over ideals, or the layer-graph IP where the ideals are too many), the best
    order-contiguous split, PipeDream as the paper runs it, and the previous model's value."""

    checked = Rechecker("partition")
    inst = load_tarnawski(case["path"])
    graph = layer_graph(inst)
    t0 = time.perf_counter()
    ideals = enumerate_ideals(graph, IDEALS_COUNT_CAP)
    count_s = time.perf_counter() - t0
    outcome, wall, ctx = run_exact(CpSatEncoding(), inst, config.time_limit_s, threads=1)
    checked.dropped(len(ctx.rejected))
    report = checked(inst, ctx.best)
    best = report.objective if report is not None else None
    t0 = time.perf_counter()
    order = order_split(inst, graph)
    order_s = time.perf_counter() - t0
    order_ms = None
    if order is not None and order.solution is not None:
        order_report = checked(inst, order.solution)
        order_ms = order_report.objective if order_report is not None else None
    pd = pipedream_split(inst)
    pd_report = checked(inst, pd.solution) if pd.solution is not None else None
    previous = load_tarnawski(case["path"], model="classes-in-order")
    old = solve_dp(previous)
    old_report = checked(previous, old.solution) if old.solution is not None else None
    row: dict[str, Any] = {
        "workload": case["case"],
        "nodes": len(inst.layers),
        "units": graph.n_units,
        "ideals": len(ideals) if ideals is not None else f">{IDEALS_COUNT_CAP}",
        "ideals_count_s": count_s,
        "optimum_ms": best,
        "proved": outcome.proven_optimal and best is not None,
        "bound_ms": outcome.bound,
        "stop": outcome.stop_reason.value,
        "method": outcome.message,
        "solve_s": wall,
        "order_ms": order_ms,
        "order_s": order_s,
        "pipedream_ms": pd_report.objective if pd_report is not None else None,
        "previous_ms": old_report.objective if old_report is not None else None,
        "load_1min": load_1min(),
    }
    return [{**row, **checked.columns()}]


def _how(method: str) -> str:
    """The exact method a row's proof came from, by the encoding's message."""
    if "within the incumbent" in method:
        return "DP over ideals within the incumbent"
    return "DP over ideals" if "DP over" in method else "IP (CP-SAT)"


def report_tarnawski(rows: list[dict[str, Any]], config: Any) -> str:
    """One line per layer graph."""
    header = [
        "workload",
        "nodes (units)",
        "ideals",
        "paper's problem: optimum max-load (ms)",
        "proved",
        "how",
        "time (s)",
        "order-contiguous optimum (ms)",
        "PipeDream as the paper runs it (ms)",
        "previous model's 'optimum' (ms)",
        "load avg",
        "invalid",
    ]
    table = [
        [
            r["workload"],
            f"{r['nodes']} ({r['units']})",
            r["ideals"],
            _f(r["optimum_ms"]),
            _yes(r["proved"], r["stop"])
            + ("" if r["proved"] in (True, "True") else f", bound {_f(r['bound_ms'])}"),
            _how(str(r["method"])),
            _f(r["solve_s"], 2),
            _f(r["order_ms"]),
            _f(r["pipedream_ms"]),
            _f(r["previous_ms"]),
            _f(r["load_1min"], 2),
            r["invalid"],
        ]
        for r in rows
    ]
    notes = f"""\
The layer graphs of Tarnawski et al. (NeurIPS 2020; {len(rows)} here), read from
`{TARNAWSKI_DATA}` of the public data with `placement import tarnawski` as **the paper's
problem**: every node a layer with its accelerator and CPU latency, 6 accelerators of 16 GiB
and 1 host CPU (no memory limit, pays no transfer), colour classes colocated, backward nodes
following their forward twins, convex splits (the devices' forward sets are the differences
of a chain of ideals), each node's output paid once by its device and once per distinct
consumer device, max-load objective (docs/formulations/partition.md, "Tarnawski et al.'s
problem").

- *optimum*: the `cpsat` encoding as the portfolio runs it, without an incumbent (time
  limit {config.time_limit_s:g} s, 1 thread): the DP over ideals where the forward graph
  has at most 1,000 ideals (`ideals`: counted up to {IDEALS_COUNT_CAP:,}); up to 100,000
  ideals, the same DP restricted to the states and moves a split within the order-contiguous
  optimum's max-load can use (*within the incumbent*: its value is the optimum,
  `models/partition/ideals_threshold.py`); else the layer-graph IP (CP-SAT) seeded with the
  order-contiguous optimum. *time*: its wall time, the order-contiguous seed included.
- *order-contiguous optimum*: the best split whose forward sets are ranges of the imported
  layer order (the DP over its prefixes), same cost model: an upper bound on the optimum.
- *PipeDream as the paper runs it*: `dp.cpp -pipeDream` of the authors' code: biconnected
  components fused, the graph linearised, the chain split optimally under the paper's cost
  model (`models/partition/peers/pipedream.py`).
- *previous model's 'optimum'*: what `placement solve` proved before (colour classes in one
  order, no CPU, per-edge transfers on both ends; `--model classes-in-order`): the optimum of
  another problem, on another accounting, shown for the record.

Every split of a row (the optimum, the order-contiguous and PipeDream splits, the previous
model's) goes through the family's checker again; `invalid` counts those it rejects (must be
0). `load avg` is the 1-minute load when the row finished (the machine is shared).
"""
    return notes + "\n" + "\n".join(markdown_table(header, table)) + "\n"


# --- partition-chain --------------------------------------------------------------------------

CHAIN_FULL = {"sizes": ((1000, 64), (4000, 64)), "seeds": (1, 2, 3), "fills": (0.6, 0.05)}
CHAIN_QUICK = {"sizes": ((60, 4), (120, 8)), "seeds": (1,), "fills": (0.6, 0.05)}


def cases_chain(config: Any) -> list[dict[str, Any]]:
    """One case per (layers, devices, memory fill, seed), in the published table's order."""
    grid = CHAIN_QUICK if config.quick else CHAIN_FULL
    return [
        {
            "case": f"{n}x{d}, fill {fill}, seed {seed}",
            "layers": n,
            "devices": d,
            "seed": seed,
            "fill": fill,
        }
        for n, d in grid["sizes"]
        for fill in grid["fills"]
        for seed in grid["seeds"]
    ]


def run_chain(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The DP with the bisection bound (median of 5), the DP without it, and the MILP on its
    own from the bisection split, on one generated chain."""

    checked = Rechecker("partition")
    n, d = case["layers"], case["devices"]
    inst = generate(n, d, case["seed"], memory_fill=case["fill"])
    dp_times, total_times = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        tables = build_tables(inst)
        sol = bisection(inst, tables)
        upper = None if sol is None else int(round(check(inst, sol).objective * 1e6))
        t1 = time.perf_counter()
        result = solve_dp(inst, upper, tables=tables)
        t2 = time.perf_counter()
        dp_times.append(t2 - t1)
        total_times.append(t2 - t0)
    unpruned_ms: float | None = None
    try:
        t0 = time.perf_counter()
        plain = solve_dp(inst)
        unpruned_ms = (time.perf_counter() - t0) * 1000
        if not (plain.exact and result.objective_ns == plain.objective_ns):
            raise RuntimeError(f"{case['case']}: the DP with and without the bound disagree")
        checked(inst, plain.solution)
    except ValueError:
        pass  # the band without the bound exceeds MAX_BAND_CELLS
    if not (result.exact and result.solution is not None):
        raise RuntimeError(f"{case['case']}: the DP found no exact split")
    optimum = checked(inst, result.solution).objective
    greedy_report = checked(inst, sol)
    outcome, wall, ctx = run_exact(
        MilpEncoding(use_dp=False), inst, config.time_limit_s, incumbent=sol
    )
    checked.dropped(len(ctx.rejected))
    report = checked(inst, ctx.best)
    best = report.objective if report is not None else None
    row = {
        "layers": n,
        "devices": d,
        "seed": case["seed"],
        "memory_fill": case["fill"],
        "optimum_ms": optimum,
        "dp_ms_median5": 1000 * statistics.median(dp_times),
        "tables_bound_dp_ms_median5": 1000 * statistics.median(total_times),
        "dp_unbounded_ms": unpruned_ms,
        "bisection_ms": greedy_report.objective if greedy_report is not None else None,
        "milp_proved_equal": outcome.proven_optimal and best == optimum,
        "milp_stop": outcome.stop_reason.value,
        "milp_best_ms": best,
        "milp_s": wall,
        "load_1min": load_1min(),
    }
    return [{**row, **checked.columns()}]


def report_chain(rows: list[dict[str, Any]], config: Any) -> str:
    """One line per chain."""
    header = [
        "layers",
        "devices",
        "seed",
        "memory fill",
        "optimum step (ms)",
        "DP (ms, median of 5)",
        "tables + bisection bound + DP (ms)",
        "DP without the bound (ms)",
        "bisection greedy (ms)",
        "MILP-HiGHS on its own",
        "MILP (s)",
        "load avg",
        "invalid",
    ]
    table = []
    for r in rows:
        proved = r["milp_proved_equal"] in (True, "True")
        best = "None" if r["milp_best_ms"] in (None, "") else str(float(r["milp_best_ms"]))
        table.append(
            [
                r["layers"],
                r["devices"],
                r["seed"],
                r["memory_fill"],
                _f(r["optimum_ms"], 4),
                _f(r["dp_ms_median5"], 1),
                _f(r["tables_bound_dp_ms_median5"], 1),
                "over the table limit"
                if r["dp_unbounded_ms"] in (None, "")
                else _f(r["dp_unbounded_ms"], 0),
                _f(r["bisection_ms"], 4),
                "proved equal" if proved else f"{r['milp_stop']}, best {best}",
                _f(r["milp_s"], 1),
                _f(r["load_1min"], 2),
                r["invalid"],
            ]
        )
    notes = f"""\
Synthetic chains from `placement generate partition --layers N --devices D --seed S
--memory-fill F` (training pipeline; one device type, A100-like; model memory 60 % or 5 % of
the devices' memory: at 5 % memory hardly limits a stage, only the bound does; every device on
its own node, so one link speed and the DP is exact). "DP" is `solve_dp` given the tables and
the bisection greedy's objective as the pruning bound (median of 5 runs); the next column
adds building the tables and running the greedy; "without the bound" is the DP alone with
memory pruning only (one run; "over the table limit" where the band exceeds the DP's
`MAX_BAND_CELLS` and the DP declines). The MILP column runs the stage-path encoding on its own
(no DP; the bisection split as incumbent; 1 thread; time limit {config.time_limit_s:g} s) and
says whether it proved the DP's optimum. Wall-clock; `load avg` is the 1-minute load.
"""
    return notes + "\n" + "\n".join(markdown_table(header, table)) + "\n"


# --- partition-llm ----------------------------------------------------------------------------

BATCH = 8
CONTEXT = 1024
RESERVE = 0.1
HELIX_LINK = 10e9 / 8  # 10 Gb/s between nodes, bytes/s
EDGE_LINK = 1e9 / 8  # 1 Gb/s Ethernet

HELIX_FULL = {
    "model": "upstage_Llama-2-70b-instruct-v2.json",
    "cluster": (("a100", 4), ("l4", 8), ("t4", 12)),
}
HELIX_QUICK = {
    "model": "decapoda-research_llama-7b-hf.json",
    "cluster": (("a100", 1), ("l4", 1), ("t4", 1)),
}
HELIX_METHODS = ("dp", "cpsat", "milp", "greedy", "separate", "replicas", "tensor-parallel")
GPUS_PER_NODE = 4
"""The tensor-parallel rows: GPUs per node (A100 x 4 on one node, L4 and T4 four a node)."""
INTRA_NODE = {
    "a100": 300e9,  # NVLink 3: 600 GB/s both ways per A100 (NVIDIA A100 datasheet)
    "l4": 32e9,  # PCIe Gen4 x16: 64 GB/s both ways (NVIDIA L4 datasheet)
    "t4": 16e9,  # PCIe Gen3 x16: 32 GB/s both ways (NVIDIA T4 datasheet)
}
"""Intra-node bytes/s one way per GPU type, for the all-reduces of tensor-parallel stages."""
ALLREDUCE_LATENCY_S = 20e-6
"""Fixed cost of one all-reduce within a node (our assumption: NCCL's small-message
latency is of this order; decode all-reduces are small, so this term dominates)."""
EDGE_MODEL = "decapoda-research_llama-7b-hf.json"
EDGE_SETUPS = (
    ("4 x 4 GB", (("4gb", 4),), CONTEXT),
    ("4 x 4 GB, 4096-token context", (("4gb", 4),), 4096),
    ("6 x 4 GB", (("4gb", 6),), CONTEXT),
    ("8 x 4 GB", (("4gb", 8),), CONTEXT),
    ("4 x 8 GB", (("8gb", 4),), CONTEXT),
    ("2 x 16 GB + 2 x 4 GB", (("16gb", 2), ("4gb", 2)), CONTEXT),
    ("1 x 16 GB + 4 x 4 GB", (("16gb", 1), ("4gb", 4)), CONTEXT),
    ("1 x 8 GB + 3 x 4 GB", (("8gb", 1), ("4gb", 3)), CONTEXT),
)
EDGE_QUICK = (0, 1)
"""``--quick``: the first two setups (one fits, one does not: both code paths)."""


def cases_llm(config: Any) -> list[dict[str, Any]]:
    """The helix table, one case per method; the edge table, one case per device set."""
    helix = HELIX_QUICK if config.quick else HELIX_FULL
    out: list[dict[str, Any]] = [
        {"case": f"helix {m}", "table": "helix", "method": m, **helix} for m in HELIX_METHODS
    ]
    picks = EDGE_QUICK if config.quick else range(len(EDGE_SETUPS))
    for i in picks:
        label, devices, context = EDGE_SETUPS[i]
        out.append(
            {
                "case": f"edge {label}",
                "table": "edge",
                "setup": label,
                "devices": devices,
                "context": context,
            }
        )
    return out


def _helix_spec(config: Any, gpu: str) -> Any:
    """The A100 from llm-configs; the L4 and T4 bundled (llm-configs has neither)."""

    if gpu == "a100":
        return device_spec(config.data_dir(LLM_DATA) / "gpus" / "a100-sxm-80gb.json")
    return device_spec(DEVICES / {"l4": "l4-24gb.json", "t4": "t4-16gb.json"}[gpu])


def _serving(shape: Any, devices: list[tuple[Any, int]]) -> PartitionInstance:

    return build_llm(
        shape,
        devices,
        mode=Mode.SERVING,
        batch_size=BATCH,
        context_length=CONTEXT,
        inter_node_bandwidth_bytes_per_s=HELIX_LINK,
        memory_reserve=RESERVE,
        in_flight_microbatches=sum(c for _, c in devices),
    )


def _stages(instance: PartitionInstance, solution: PartitionSolution | None) -> str:
    if solution is None:
        return "-"
    counts: dict[str, int] = {}
    for d, _, _ in solution.stages():
        t = instance.devices[d].type
        counts[t] = counts.get(t, 0) + 1
    return ", ".join(f"{c} x {t}" for t, c in counts.items())


def run_llm(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """One method of the helix table or one device set of the edge table."""
    return _run_helix(case, config) if case["table"] == "helix" else _run_edge(case, config)


def _run_helix(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:

    checked = Rechecker("partition")

    def tokens(instance: PartitionInstance, solution: PartitionSolution | None) -> float | None:
        report = checked(instance, solution)
        return report.terms["tokens_per_s"] if report is not None and report.feasible else None

    shape = load_model_config(config.data_dir(LLM_DATA) / "models" / case["model"])
    cluster = [(_helix_spec(config, gpu), count) for gpu, count in case["cluster"]]
    n_gpus = sum(c for _, c in cluster)
    inst = _serving(shape, cluster)
    rows: list[dict[str, Any]] = []

    def row(
        label: str,
        tok: float | None,
        status: str,
        gap: float | None,
        wall: float | None,
        stages: str,
    ) -> None:
        rows.append(
            {
                "table": "helix",
                "setup": label,
                "tokens_per_s": tok,
                "status": status,
                "proven_gap": gap,
                "time_s": wall,
                "stages": stages,
            }
        )

    method = case["method"]
    if method == "dp":
        t0 = time.perf_counter()
        dp = solve_dp(inst)
        dp_s = time.perf_counter() - t0
        if not dp.exact:
            raise RuntimeError("helix: the DP is not exact on this cluster")
        row(
            f"ours: exact DP (one pipeline over all {n_gpus} GPUs)",
            tokens(inst, dp.solution),
            "optimal (DP)",
            0.0,
            dp_s,
            _stages(inst, dp.solution),
        )
    elif method in ("cpsat", "milp"):
        label, encoding = {
            "cpsat": ("ours: CP-SAT on its own", CpSatEncoding(use_dp=False)),
            "milp": ("ours: MILP-HiGHS on its own", MilpEncoding(use_dp=False)),
        }[method]
        start = petals(inst)
        outcome, wall, ctx = run_exact(encoding, inst, config.time_limit_s, incumbent=start)
        checked.dropped(len(ctx.rejected))
        best = ctx.best if ctx.best_report is not None else None
        gap = None
        if ctx.bound is not None and ctx.best_report is not None:
            gap = (ctx.best_report.objective - ctx.bound) / ctx.best_report.objective
        status = "optimal (proved)" if outcome.proven_optimal else outcome.stop_reason.value
        row(label, tokens(inst, best), status, gap, wall, _stages(inst, best))
    elif method == "greedy":
        start = petals(inst)
        row(
            "Petals-style greedy",
            tokens(inst, start),
            "heuristic",
            None,
            None,
            _stages(inst, start),
        )
        bis = bisection(inst)
        row("bisection greedy", tokens(inst, bis), "heuristic", None, None, _stages(inst, bis))
    elif method == "separate":
        total = 0.0
        parts = []
        for spec, count in cluster:
            sub = _serving(shape, [(spec, count)])
            tok = tokens(sub, solve_dp(sub).solution)
            parts.append(f"{spec.name}: {_f(tok, 1)}")
            total += tok or 0.0
        row(
            "separate pipelines per GPU type (each by the exact DP)",
            total,
            "optimal per type",
            None,
            None,
            "; ".join(parts),
        )
    elif method == "replicas":
        # Replicas: disjoint pipelines, each under the same memory model as the one-pipeline
        # rows (its own GPUs keep as many micro-batches in flight as it has GPUs). The best
        # pipeline on every count vector of GPUs per type is the exact DP's; the best set of
        # them, a DP over the GPUs left (models/partition/serving_plans.pack_pipelines).
        t0 = time.perf_counter()
        patterns: list[tuple[tuple[int, ...], float]] = []
        for counts in itertools.product(*(range(c + 1) for _, c in cluster)):
            if not any(counts):
                continue
            sub = _serving(
                shape, [(spec, n) for (spec, _), n in zip(cluster, counts, strict=True) if n]
            )
            dp = solve_dp(sub)
            if dp.solution is not None and not dp.exact:
                raise RuntimeError("helix replicas: the DP is not exact on a sub-cluster")
            patterns.append((counts, tokens(sub, dp.solution) or 0.0))
        total, chosen = pack_pipelines(tuple(c for _, c in cluster), patterns)
        names = [spec.name for spec, _ in cluster]
        parts = [
            " + ".join(f"{n} x {name}" for name, n in zip(names, patterns[j][0], strict=True) if n)
            + f": {_f(patterns[j][1], 1)}"
            for j in chosen
        ]
        row(
            "ours: replicas (disjoint pipelines, exact DP per pipeline, DP over the GPUs left)",
            total,
            "optimal (DP)",
            0.0,
            time.perf_counter() - t0,
            "; ".join(parts),
        )
    elif method == "tensor-parallel":
        _tensor_parallel_rows(case, config, shape, cluster, row, checked)
    else:
        raise ValueError(f"unknown helix method {method!r}")
    extra = {
        "model": case["model"],
        "model_params_b": shape.total_params() / 1e9,
        "gpus": n_gpus,
        "load_1min": load_1min(),
    }
    columns = checked.columns()
    for i, r in enumerate(rows):
        # The case's re-check counts go on its first row only (so that sums are right).
        r.update(extra, **(columns if i == 0 else {"solutions_checked": 0, "invalid": 0}))
    return rows


def _tensor_parallel_rows(
    case: dict[str, Any], config: Any, shape: Any, cluster: Any, row: Any, checked: Any
) -> None:
    """Plans of :mod:`placement.models.partition.serving_tp` on the same GPUs grouped
    {GPUS_PER_NODE} a node, all under its memory model (a pipeline of p stages keeps p
    micro-batches in flight): one pipeline, separate pipelines per GPU type, replicas,
    each without and with tensor-parallel stages. Each plan is scored by the plan
    evaluator (`tp_plan_throughput`); its single-GPU stages are also re-checked as a
    partition solution where the plan is one pipeline."""
    flat = _serving(shape, cluster)
    # Nodes of up to GPUS_PER_NODE GPUs of one type (the k-th GPU of a type on its node k // 4).
    seen: dict[str, int] = {}
    devices = []
    for dev in flat.devices:
        k = seen.get(dev.type, 0)
        seen[dev.type] = k + 1
        devices.append(replace(dev, node=f"{dev.type}-node{k // GPUS_PER_NODE}"))
    inst = replace(flat, devices=devices)
    names = {spec.name: gpu for (spec, _), (gpu, _) in zip(cluster, case["cluster"], strict=True)}
    tp = TpModel(
        degrees=(1, 2, 4),
        intra_node_bytes_per_s={name: INTRA_NODE[gpu] for name, gpu in names.items()},
        allreduce_latency_s=ALLREDUCE_LATENCY_S,
    )
    no_tp = TpModel(degrees=(1,))

    def describe(plan: Any) -> str:
        parts = []
        for stages in plan.pipelines:
            parts.append(
                " > ".join(
                    f"{inst.devices[s.devices[0]].type.split('-')[0]}"
                    + (f" x{len(s.devices)}" if len(s.devices) > 1 else "")
                    + f" [{s.layer_count}]"
                    for s in stages
                )
            )
        return "; ".join(parts)

    def plan_row(label: str, model: Any, types: Any = None, single: bool = False) -> None:
        t0 = time.perf_counter()
        total = 0.0
        plans = []
        for group in types or [None]:
            plan = best_tp_plan(inst, model, types=group, single_pipeline=single)
            value, errors = tp_plan_throughput(inst, model, plan)
            if errors:
                checked.dropped(1)
                value = 0.0
            total += value
            plans.append(describe(plan))
        row(
            label,
            total,
            "optimal over stage shapes",
            0.0,
            time.perf_counter() - t0,
            " / ".join(plans),
        )

    per_type = [(spec.name,) for spec, _ in cluster]
    plan_row("4-GPU nodes: one pipeline, no tensor parallelism", no_tp, single=True)
    plan_row("4-GPU nodes: separate pipelines per GPU type, no tensor parallelism", no_tp, per_type)
    plan_row("4-GPU nodes: separate pipelines per GPU type, tensor-parallel stages", tp, per_type)
    plan_row("4-GPU nodes: replicas, no tensor parallelism", no_tp)
    plan_row("4-GPU nodes: replicas and tensor-parallel stages", tp)


def _run_edge(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:

    checked = Rechecker("partition")
    shape = load_model_config(config.data_dir(LLM_DATA) / "models" / EDGE_MODEL)
    inst = build_llm(
        shape,
        [(device_spec(DEVICES / f"edge-{k}.json"), c) for k, c in case["devices"]],
        mode=Mode.INFERENCE,
        batch_size=1,
        context_length=case["context"],
        inter_node_bandwidth_bytes_per_s=EDGE_LINK,
        memory_reserve=RESERVE,
    )
    t0 = time.perf_counter()
    dp = solve_dp(inst)
    dp_ms = (time.perf_counter() - t0) * 1000
    greedy = petals(inst)
    row: dict[str, Any] = {
        "table": "edge",
        "setup": case["setup"],
        "context_tokens": case["context"],
        "dp_ms": dp_ms,
        "model": EDGE_MODEL,
        "model_params_b": shape.total_params() / 1e9,
    }
    if dp.solution is None:
        shortfalls = explain_infeasible(inst)
        checked(inst, greedy)
        row.update(
            optimum_ms=None,
            petals_ms=None,
            stages="-",
            why_not="; ".join(s["message"] for s in shortfalls) or "no split found",
        )
    else:
        g = checked(inst, greedy)
        row.update(
            optimum_ms=checked(inst, dp.solution).objective,
            petals_ms=g.objective if g is not None else None,
            stages=_stages(inst, dp.solution),
            why_not="",
        )
    row["load_1min"] = load_1min()
    return [{**row, **checked.columns()}]


def report_llm(rows: list[dict[str, Any]], config: Any) -> str:
    """The helix table, then the edge table."""
    helix = sorted(
        (r for r in rows if r["table"] == "helix"), key=lambda r: _HELIX_ORDER.get(r["setup"], 0)
    )
    edge_order = {label: i for i, (label, _, _) in enumerate(EDGE_SETUPS)}
    edge = sorted((r for r in rows if r["table"] == "edge"), key=lambda r: edge_order[r["setup"]])
    out: list[str] = []
    if helix:
        first = helix[0]
        gpus = int(first["gpus"])
        cluster = HELIX_QUICK["cluster"] if config.quick else HELIX_FULL["cluster"]
        names = {
            "a100": "A100-80GB (`a100-sxm-80gb.json` of llm-configs)",
            "l4": "L4-24GB",
            "t4": "T4-16GB",
        }
        described = ", ".join(f"{c} x {names[g]}" for g, c in cluster)
        out += [
            f"## {first['model'].removesuffix('.json')} serving on a heterogeneous cluster",
            "",
            f"""\
`{first["model"]}` ({float(first["model_params_b"]):.1f} B parameters, fp16) of llm-configs
served on a Helix-like cluster: {described} (L4 and T4 from `instances/partition/devices/`,
NVIDIA's datasheets), each GPU on its own node, 10 Gb/s between nodes. Decode steps of
micro-batches of {BATCH} sequences with {CONTEXT} tokens of context; {RESERVE:.0%} of each
GPU's memory kept free; a pipeline over n GPUs keeps n micro-batches in flight (so every
configuration serves {BATCH} x {gpus} = {BATCH * gpus} sequences at once), and every stage
holds the KV cache of all of them. Layer times are the roofline of `models/partition/formats/hf.py`
(50 % of the FP16 peak, 80 % of the memory bandwidth; decode is bandwidth-bound). Tokens/s =
{BATCH} / the slowest stage's time (its layers plus the transfers it sends and receives).
CP-SAT and MILP run on their own (no DP), starting from the Petals-style split, time limit
{config.time_limit_s:g} s, 1 thread; `proven gap` is (objective - proven bound) / objective.
Helix itself (Mei et al., ASPLOS 2025) plans a max-flow over several pipelines and is not
reproduced here (`placement bench partition-helix` runs its own setting). *replicas*: disjoint
pipelines, each keeping as many micro-batches in flight as it has GPUs. The *4-GPU nodes*
rows group the same GPUs {GPUS_PER_NODE} a node and plan with
`models/partition/serving_tp.py`, all under its one memory model (a pipeline of p stages
keeps p micro-batches in flight): stages of 1, 2 or 4 GPUs of one node running their layers
tensor-parallel (Megatron-LM: two all-reduces per block; intra-node
{", ".join(f"{g.upper()} {bw / 1e9:g} GB/s" for g, bw in INTRA_NODE.items())},
{ALLREDUCE_LATENCY_S * 1e6:g} us per all-reduce), exact over the stage shapes; stages are
written type [layers], `xN` a tensor-parallel group, `;` between pipelines, `/` between GPU
types. Wall-clock; `load avg` is the 1-minute load when the method finished.
""",
        ]
        header = [
            "placement",
            "tokens/s",
            "status",
            "proven gap",
            "time (s)",
            "stages",
            "load avg",
            "invalid",
        ]
        table = []
        for r in helix:
            gap = r["proven_gap"]
            table.append(
                [
                    r["setup"],
                    _f(r["tokens_per_s"], 1),
                    r["status"],
                    "-" if gap in (None, "") else f"{100 * float(gap):.2f} %",
                    _f(r["time_s"], 2),
                    r["stages"],
                    _f(r["load_1min"], 2),
                    r["invalid"],
                ]
            )
        out += markdown_table(header, table) + [""]
    if edge:
        first = edge[0]
        out += [
            "## LLaMA-7B on memory-limited edge devices",
            "",
            f"""\
LLaMA-7B ({float(first["model_params_b"]):.2f} B parameters, fp16; `{EDGE_MODEL}` of
llm-configs), inference latency of one decode step (batch 1) on edge devices linked by 1 Gb/s
Ethernet, {RESERVE:.0%} of each device's memory kept free. The devices are illustrative
Jetson-Orin-class specs (`instances/partition/devices/edge-*.json`: memory and bandwidth from
NVIDIA's datasheets, FP16 peaks our assumption). Latency = every layer's roofline time on its
device plus every transfer once; the optimum is the DP's (exact: one link speed). Where no
split fits, the reason is `explain_infeasible`'s (the same text `placement solve` prints).
Wall-clock.
""",
        ]
        header = [
            "devices",
            "context (tokens)",
            "optimal latency per token (ms)",
            "Petals-style greedy (ms)",
            "DP time (ms)",
            "stages",
            "why it does not fit",
            "load avg",
            "invalid",
        ]
        table = [
            [
                r["setup"],
                r["context_tokens"],
                "does not fit" if r["optimum_ms"] in (None, "") else _f(r["optimum_ms"], 1),
                _f(r["petals_ms"], 1),
                _f(r["dp_ms"], 1),
                r["stages"],
                r["why_not"],
                _f(r["load_1min"], 2),
                r["invalid"],
            ]
            for r in edge
        ]
        out += markdown_table(header, table) + [""]
    return "\n".join(out)


_HELIX_ORDER = {
    "ours: CP-SAT on its own": 1,
    "ours: MILP-HiGHS on its own": 2,
    "Petals-style greedy": 3,
    "bisection greedy": 4,
    "separate pipelines per GPU type (each by the exact DP)": 5,
    "ours: replicas (disjoint pipelines, exact DP per pipeline, DP over the GPUs left)": 6,
    "4-GPU nodes: one pipeline, no tensor parallelism": 7,
    "4-GPU nodes: separate pipelines per GPU type, no tensor parallelism": 8,
    "4-GPU nodes: separate pipelines per GPU type, tensor-parallel stages": 9,
    "4-GPU nodes: replicas, no tensor parallelism": 10,
    "4-GPU nodes: replicas and tensor-parallel stages": 11,
}
"""Row order of the helix table (the DP's row, whose label names the GPU count, is 0)."""
