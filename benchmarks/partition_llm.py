"""LLM placements: Llama-2-70B serving on a Helix-like heterogeneous cluster, and LLaMA-7B
inference latency on memory-limited edge devices.

    python benchmarks/partition_llm.py [--time-limit 60]

Writes docs/benchmarks/partition-helix.{md,csv} and partition-edge.{md,csv}.
"""

from __future__ import annotations

import argparse
import sys
import time

from partition_common import DEVICES, SHARED, load_average, run_exact, write_table

from placement.models.partition import Mode, PartitionInstance, check
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.dp import solve_dp
from placement.models.partition.explain import explain_infeasible
from placement.models.partition.greedy import bisection, petals
from placement.models.partition.hf import DeviceSpec, build_llm, device_spec, load_model_config
from placement.models.partition.milp import MilpEncoding

BATCH = 8
CONTEXT = 1024
RESERVE = 0.1
HELIX_LINK = 10e9 / 8  # 10 Gb/s between nodes, bytes/s
EDGE_LINK = 1e9 / 8  # 1 Gb/s Ethernet


def _tokens(instance: PartitionInstance, solution: object | None) -> float | None:
    if solution is None:
        return None
    report = check(instance, solution)
    return report.terms["tokens_per_s"] if report.feasible else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def helix(time_limit: float) -> None:
    shape = load_model_config(SHARED / "llm-configs/models/upstage_Llama-2-70b-instruct-v2.json")
    a100 = device_spec(SHARED / "llm-configs/gpus/a100-sxm-80gb.json")
    l4 = device_spec(DEVICES / "l4-24gb.json")
    t4 = device_spec(DEVICES / "t4-16gb.json")
    cluster: list[tuple[DeviceSpec, int]] = [(a100, 4), (l4, 8), (t4, 12)]

    def serving(devices: list[tuple[DeviceSpec, int]]) -> PartitionInstance:
        n_dev = sum(c for _, c in devices)
        return build_llm(
            shape,
            devices,
            mode=Mode.SERVING,
            batch_size=BATCH,
            context_length=CONTEXT,
            inter_node_bandwidth_bytes_per_s=HELIX_LINK,
            memory_reserve=RESERVE,
            in_flight_microbatches=n_dev,
        )

    inst = serving(cluster)
    rows = []
    t0 = time.perf_counter()
    dp = solve_dp(inst)
    dp_s = time.perf_counter() - t0
    assert dp.exact
    rows.append(
        [
            "ours: exact DP (one pipeline over all 24 GPUs)",
            _fmt(_tokens(inst, dp.solution)),
            "optimal (DP)",
            "0.00 %",
            f"{dp_s:.2f}",
            _stages(inst, dp.solution),
        ]
    )
    start = petals(inst)
    for label, encoding in (
        ("ours: CP-SAT on its own", CpSatEncoding(use_dp=False)),
        ("ours: MILP-HiGHS on its own", MilpEncoding(use_dp=False)),
    ):
        outcome, wall, ctx = run_exact(encoding, inst, time_limit, incumbent=start)
        best = ctx.best if ctx.best_report is not None else None
        gap = None
        if ctx.bound is not None and ctx.best_report is not None:
            gap = (ctx.best_report.objective - ctx.bound) / ctx.best_report.objective
        status = "optimal (proved)" if outcome.proven_optimal else outcome.stop_reason.value
        rows.append(
            [
                label,
                _fmt(_tokens(inst, best)),
                status,
                "-" if gap is None else f"{100 * gap:.2f} %",
                f"{wall:.2f}",
                _stages(inst, best),
            ]
        )
    rows.append(
        [
            "Petals-style greedy",
            _fmt(_tokens(inst, start)),
            "heuristic",
            "-",
            "-",
            _stages(inst, start),
        ]
    )
    bis = bisection(inst)
    rows.append(
        ["bisection greedy", _fmt(_tokens(inst, bis)), "heuristic", "-", "-", _stages(inst, bis)]
    )
    total = 0.0
    parts = []
    for spec, count in cluster:
        sub = serving([(spec, count)])
        res = solve_dp(sub)
        tok = _tokens(sub, res.solution)
        parts.append(f"{spec.name}: {_fmt(tok)}")
        total += tok or 0.0
    rows.append(
        [
            "separate pipelines per GPU type (each by the exact DP)",
            f"{total:.1f}",
            "optimal per type",
            "-",
            "-",
            "; ".join(parts),
        ]
    )
    for row in rows:
        row.append(load_average())
    header = ["placement", "tokens/s", "status", "proven gap", "time (s)", "stages", "load avg"]
    notes = f"""
Llama-2-70B ({shape.total_params() / 1e9:.1f} B parameters, fp16, grouped-query attention
with 8 KV heads; `llm-configs/models/upstage_Llama-2-70b-instruct-v2.json`) served on a
Helix-like cluster: 4 x A100-80GB (`a100-sxm-80gb.json` of llm-configs), 8 x L4-24GB and
12 x T4-16GB (`instances/partition/devices/`, from NVIDIA's datasheets), each GPU on its own
node, 10 Gb/s between nodes. Decode steps of micro-batches of {BATCH} sequences with
{CONTEXT} tokens of context; {RESERVE:.0%} of each GPU's memory kept free; a pipeline over n
GPUs keeps n micro-batches in flight (so every configuration serves
{BATCH} x 24 = {BATCH * 24} sequences at once), and every stage holds the KV cache of all of
them. Layer times are the roofline of `models/partition/hf.py` (50 % of the FP16 peak,
80 % of the memory bandwidth; decode is bandwidth-bound). Tokens/s = {BATCH} / the slowest
stage's time (its layers plus the transfers it sends and receives). CP-SAT and MILP run on
their own (no DP), starting from the Petals-style split, time limit {time_limit:g} s, 1
thread; `proven gap` is (objective - proven bound) / objective. Helix itself (Mei et al.,
ASPLOS 2025) plans a max-flow over several pipelines and is not reproduced here. Wall-clock on
a shared 2-core machine.
"""
    write_table(
        "partition-helix",
        "Partition: Llama-2-70B serving on a heterogeneous cluster",
        f"python benchmarks/partition_llm.py --time-limit {time_limit:g}",
        header,
        rows,
        notes,
    )


def _stages(instance: PartitionInstance, solution: object | None) -> str:
    if solution is None:
        return "-"
    counts: dict[str, int] = {}
    for d, _, _ in solution.stages():  # type: ignore[attr-defined]
        t = instance.devices[d].type
        counts[t] = counts.get(t, 0) + 1
    return ", ".join(f"{c} x {t}" for t, c in counts.items())


def edge() -> None:
    shape = load_model_config(SHARED / "llm-configs/models/decapoda-research_llama-7b-hf.json")
    specs = {k: device_spec(DEVICES / f"edge-{k}.json") for k in ("4gb", "8gb", "16gb")}
    setups = [
        ("4 x 4 GB", [("4gb", 4)], CONTEXT),
        ("4 x 4 GB, 4096-token context", [("4gb", 4)], 4096),
        ("6 x 4 GB", [("4gb", 6)], CONTEXT),
        ("8 x 4 GB", [("4gb", 8)], CONTEXT),
        ("4 x 8 GB", [("8gb", 4)], CONTEXT),
        ("2 x 16 GB + 2 x 4 GB", [("16gb", 2), ("4gb", 2)], CONTEXT),
        ("1 x 16 GB + 4 x 4 GB", [("16gb", 1), ("4gb", 4)], CONTEXT),
        ("1 x 8 GB + 3 x 4 GB", [("8gb", 1), ("4gb", 3)], CONTEXT),
    ]
    rows = []
    for label, devs, context in setups:
        inst = build_llm(
            shape,
            [(specs[k], c) for k, c in devs],
            mode=Mode.INFERENCE,
            batch_size=1,
            context_length=context,
            inter_node_bandwidth_bytes_per_s=EDGE_LINK,
            memory_reserve=RESERVE,
        )
        t0 = time.perf_counter()
        dp = solve_dp(inst)
        dp_ms = (time.perf_counter() - t0) * 1000
        greedy = petals(inst)
        if dp.solution is None:
            shortfalls = explain_infeasible(inst)
            why = "; ".join(s["reason"] for s in shortfalls) or "no split found"
            rows.append(
                [label, context, "does not fit", "-", f"{dp_ms:.1f}", "-", why, load_average()]
            )
            continue
        opt = check(inst, dp.solution).objective
        g = check(inst, greedy).objective if greedy is not None else None
        rows.append(
            [
                label,
                context,
                f"{opt:.1f}",
                _fmt(g),
                f"{dp_ms:.1f}",
                _stages(inst, dp.solution),
                "",
                load_average(),
            ]
        )
    header = [
        "devices",
        "context (tokens)",
        "optimal latency per token (ms)",
        "Petals-style greedy (ms)",
        "DP time (ms)",
        "stages",
        "why it does not fit",
        "load avg",
    ]
    notes = f"""
LLaMA-7B ({shape.total_params() / 1e9:.2f} B parameters, fp16;
`llm-configs/models/decapoda-research_llama-7b-hf.json`), inference latency of one decode
step (batch 1) on edge devices linked by 1 Gb/s Ethernet, {RESERVE:.0%} of each device's
memory kept free. The devices are illustrative Jetson-Orin-class specs
(`instances/partition/devices/edge-*.json`: memory and bandwidth from NVIDIA's datasheets,
FP16 peaks our assumption). Latency = every layer's roofline time on its device plus every
transfer once; the optimum is the DP's (exact: one link speed). Where no split fits, the
reason is `explain_infeasible`'s (the same text `placement solve` prints). Wall-clock on a
shared 2-core machine.
"""
    write_table(
        "partition-edge",
        "Partition: LLaMA-7B on memory-limited edge devices",
        "python benchmarks/partition_llm.py",
        header,
        rows,
        notes,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"public benchmark data not found at {SHARED}")
    edge()
    helix(args.time_limit)


if __name__ == "__main__":
    main()
