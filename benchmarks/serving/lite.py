"""``placement bench serving-lite``: what many small GPUs buy against a few large ones (the
Lite-GPU question, HotOS 2025), as the exact fluid plan says and as the simulator measures.

The same workload (the length classes of an Azure trace's first ``requests`` requests) on
``h100`` H100s and on four times as many Lite-GPUs, each a quarter of an H100 in memory,
bandwidth and throughput (:data:`placement.models.serving.profiles.LITE`, a modelling choice),
Llama-2-13B with **roofline** profiles (not measurements) at tensor-parallel degrees 1 to 8,
at the same price per unit of silicon. Per GPU kind: the exact model's most goodput under a
budget of all the GPUs at 20 times the trace's rate (the fluid capacity), its plan, and the
plan's simulated goodput at 0.9 of that capacity; then the least cost serving every request
at the trace's own rate.
"""

from __future__ import annotations

import os
from typing import Any

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.serving import FAMILY
from placement.models.serving.formats.azure import read_trace, trace_instance
from placement.models.serving.instance import GpuType
from placement.models.serving.profiles import (
    GPUS,
    LITE,
    MODELS,
    PRICE_PER_GPU_HOUR,
    roofline_profile,
)
from placement.models.serving.replay import SimRequest, nearest_class, simulate
from placement.models.serving.sim.check_replay import check_replay
from placement.solver import SolveOptions, solve

TRACES = {"conv": "serving/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"}
MODEL = "llama2-13b"


def cases_lite(config: Any) -> list[dict[str, Any]]:
    """One case per trace."""
    p = config.params
    return [
        {
            "trace": name,
            "path": str(config.data_dir(rel)),
            "requests": 400 if config.quick else int(p.get("requests", 3000)),
            "h100": int(p.get("h100", 8)),
            "time_limit_s": config.time_limit_s,
        }
        for name, rel in TRACES.items()
    ]


def _instance(case: dict[str, Any], kind: str, scale: float, budget: int) -> Any:
    base = trace_instance(case["path"], 8, 0, budget, scale, MODEL, limit=case["requests"])
    count = case["h100"] * (4 if kind == "lite" else 1)
    spec = LITE if kind == "lite" else GPUS["h100"]
    model = MODELS[MODEL]
    profiles = []
    for tp in (1, 2, 4, 8):
        if 0.9 * tp * spec.memory_bytes - model.weights_bytes >= 1024 * model.kv_bytes_per_token:
            profiles.append(roofline_profile(spec, model, tp))
    base.gpu_types = [GpuType(kind, count, PRICE_PER_GPU_HOUR[kind], spec.memory_bytes)]
    base.profiles = profiles
    base.gpu_budget = budget
    FAMILY.validate(base)
    return base


def run_lite(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Both GPU kinds: fluid capacity and plan, simulated goodput, least cost."""
    del config
    base = {"trace": case["trace"]}
    if not os.path.exists(case["path"]):
        return [{**base, "gpus": "-", "note": f"skipped: {case['path']} not found", "invalid": 0}]
    trace = read_trace(case["path"], case["requests"])
    options = SolveOptions(time_limit_s=case["time_limit_s"])
    slice_rate = _instance(case, "h100", 1.0, case["h100"]).arrival_rate_per_s
    rows = []
    for kind in ("h100", "lite"):
        count = case["h100"] * (4 if kind == "lite" else 1)
        checker = Rechecker("serving")
        big = _instance(case, kind, 20.0, count)
        capacity = solve(big, options)
        checker.result(big, capacity)
        cap = capacity.objective
        scale = 0.9 * cap / slice_rate
        near = _instance(case, kind, scale, count)
        plan = solve(near, options)
        checker.result(near, plan)
        requests = [
            SimRequest(
                i, r.arrival_s / scale, r.input_tokens, r.output_tokens,
                nearest_class(near, r.input_tokens, r.output_tokens),
            )
            for i, r in enumerate(trace)
        ]  # fmt: skip
        replay = simulate(near, plan.solution, requests)
        cheapest = solve(_instance(case, kind, 1.0, 0), options)
        named = FAMILY.named_solution(near, plan.solution).instances
        rows.append(
            {
                **base,
                "gpus": f"{count} {kind}",
                "fluid_capacity_per_s": cap,
                "status": capacity.status.value,
                "plan": " + ".join(f"{n} {k}" for k, n in named.items()),
                "rate_per_s": near.arrival_rate_per_s,
                "fluid_goodput_per_s": plan.objective,
                "sim_goodput_per_s": round(replay.goodput_per_s, 3),
                "least_cost_per_hour": cheapest.objective if cheapest.solution else "",
                "least_cost_rate_per_s": round(slice_rate, 3),
                "note": "; ".join(check_replay(replay)[:1]),
                "invalid": checker.invalid + (1 if check_replay(replay) else 0),
            }
        )
    return rows


def report_lite(rows: list[dict[str, Any]], config: Any) -> str:
    """One table: per GPU kind, the fluid capacity and plan, simulated goodput, least cost."""
    del config
    return "\n".join(
        [
            "Llama-2-13B, **roofline profiles (not measurements)**; the Lite-GPU is a "
            "modelling choice (a quarter of an H100 in every figure, at a quarter of its "
            "price). `fluid capacity`: the exact model's most goodput with every GPU, proved "
            "**for the fluid model**; `simulated`: the plan for 0.9 of that capacity replayed "
            "on the trace's requests; `least cost`: the cheapest plan serving every class at the "
            "trace's own rate (relative price per hour).",
            "",
            *markdown_table(
                [
                    "trace",
                    "GPUs",
                    "fluid capacity",
                    "status",
                    "plan near capacity",
                    "rate",
                    "simulated goodput",
                    "least cost",
                    "at rate",
                    "invalid",
                ],
                [
                    [
                        r["trace"],
                        r["gpus"],
                        r.get("fluid_capacity_per_s", ""),
                        r.get("status", ""),
                        r.get("plan", r.get("note", "")),
                        r.get("rate_per_s", ""),
                        r.get("sim_goodput_per_s", ""),
                        r.get("least_cost_per_hour", ""),
                        r.get("least_cost_rate_per_s", ""),
                        r["invalid"],
                    ]
                    for r in rows
                ],
                "llrllrrrrr",
            ),  # fmt: skip
        ]
    )
