"""The partition family's benchmark suites; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

_CODE = "placement.benchmarks.partition.suites"

SUITES = (
    Suite(
        name="partition-tarnawski",
        family="partition",
        help="Tarnawski et al. layer graphs as the paper's problem: optimum and proof (DP over ideals or IP), beside the order-contiguous optimum and PipeDream",
        **suite_functions(_CODE, "tarnawski"),
        data="partition/tarnawski-layergraphs",
        time_limit_s=10.0,
        parameters=(
            Parameter(
                "workloads",
                "name_list",
                (),
                help="layer graphs to run, e.g. inceptionv3_training (default: all 8)",
            ),
        ),
    ),
    Suite(
        name="partition-llm",
        family="partition",
        help="Llama-2-70B serving on a heterogeneous cluster (helix) and LLaMA-7B on edge devices (edge)",
        **suite_functions(_CODE, "llm"),
        data="partition/llm-configs",
        time_limit_s=60.0,
    ),
    Suite(
        name="partition-helix",
        family="partition",
        help="Helix's cluster24 (LLaMA-2 70B, LLaMA-1 30B): our exact placement beside Helix's, Petals', Swarm's and separate pipelines, one max-flow evaluator",
        **suite_functions("placement.benchmarks.partition.helix", "helix"),
        data="partition/helix",
        time_limit_s=60.0,
        quick_time_limit_s=5.0,
        exclusive=True,
    ),
    Suite(
        name="partition-qpart",
        family="partition",
        help="QPART's quantized edge split on generated requests: our proven optimum beside QPART's own rule (payload, accuracy loss, gap)",
        **suite_functions("placement.benchmarks.partition.edge_split", "qpart"),
        time_limit_s=60.0,
        quick_time_limit_s=5.0,
    ),
    Suite(
        name="partition-chain",
        family="partition",
        help="the DP on homogeneous chains up to 4,000 layers x 64 devices, checked against MILP proofs",
        **suite_functions(_CODE, "chain"),
        time_limit_s=30.0,
    ),
)
