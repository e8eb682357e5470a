"""The GPU family's benchmark suites; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

_CODE = "placement.benchmarks.gpu.suites"

SUITES = (
    Suite(
        name="gpu-synthetic",
        family="gpu",
        help="generated instances: greedy vs CP-SAT vs MILP-HiGHS vs MILP-CBC (objective, "
        "bound, gap, time, peak memory)",
        **suite_functions(_CODE, "synthetic"),
        time_limit_s=5.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter(
                "gpus",
                "name_list",
                ("1024", "10240"),
                help="cluster sizes in GPUs, of 1024 (200 jobs) and 10240 (2,000 jobs) "
                "(default: both)",
            ),
            Parameter("seeds", "name_list", ("1", "2", "3"), help="seeds (default: 1,2,3)"),
            Parameter(
                "backends",
                "name_list",
                ("greedy", "cpsat", "milp-highs", "milp-cbc"),
                help="backends (default: greedy,cpsat,milp-highs,milp-cbc)",
            ),
        ),
    ),
    Suite(
        name="gpu-openb",
        family="gpu",
        help="the FGD paper's protocol on the Alibaba openb trace: six peers (reproduced), our "
        "online and batch modes, the offline LP bound",
        **suite_functions(_CODE, "openb"),
        data="gpu/openb",
        time_limit_s=1.0,
        quick_time_limit_s=1.0,
    ),
)
