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
    ),
    Suite(
        name="gpu-openb",
        family="gpu",
        help="the FGD paper's protocol on the Alibaba openb trace: six peers (reproduced), our "
        "online, batch and defragmenting modes, the offline LP bound, the trace with "
        "departures, the latency of a cycle",
        **suite_functions("placement.benchmarks.gpu.openb", "openb"),
        data="gpu/openb",
        time_limit_s=1.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter("trace", "path", repeated=True, help="pod lists (--trace FILE)"),
            Parameter("seeds", "str", help="seeds (--seeds A-B; default 42-51)"),
            Parameter("modes", "name_list", help="modes (--modes LIST; default: all)"),
        ),
    ),
)
