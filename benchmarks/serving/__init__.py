"""The serving family's benchmark suite; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

PARAMETERS = (
    Parameter(
        "requests", "positive_int", 3000, help="requests read from each trace (default 3000)"
    ),
    Parameter("budgets", "name_list", ("16", "32"), help="GPU budgets (default 16,32)"),
    Parameter(
        "loads",
        "name_list",
        ("0.5", "0.95", "1.5"),
        help="arrival rates as shares of the budget's fluid capacity (default 0.5,0.95,1.5)",
    ),
    Parameter("a100", "positive_int", 32, help="A100s available (default 32)"),
    Parameter("h100", "non_negative_int", 16, help="H100s available (default 16)"),
)
"""The suite's settings (``placement bench serving --param NAME=VALUE``)."""

SUITES = (
    Suite(
        name="serving",
        family="serving",
        help="goodput, TTFT, TPOT and end-to-end percentiles of our configuration against "
        "round-robin and least-outstanding vLLM-style clusters, AcceLLM's pairs, L4's stages, "
        "Splitwise's pools and DistServe's placement, in the simulator, on the Azure LLM "
        "traces at three rates and two GPU budgets",
        **suite_functions("placement.benchmarks.serving.suites"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        parameters=PARAMETERS,
    ),
    Suite(
        name="serving-lite",
        family="serving",
        help="Lite-GPU: a workload on H100s and on four times as many quarter-H100 GPUs, "
        "the exact fluid plan and its simulated goodput (roofline profiles)",
        **suite_functions("placement.benchmarks.serving.lite", "lite"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        parameters=(
            Parameter("requests", "positive_int", 3000, help="requests read (default 3000)"),
            Parameter("h100", "positive_int", 8, help="H100s (default 8; Lite-GPUs: 4x)"),
        ),
    ),
)
"""``placement bench serving``: per shared trace and GPU budget, three arrival rates
(light, near the fluid capacity, overloaded); at each, our configuration (the exact fluid
model's optimum, our router) and the peers replayed request by request in the simulator."""
